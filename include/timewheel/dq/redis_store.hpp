//
// timewheel/dq/redis_store.hpp
//
// The durable queue's store on Redis: standalone (redis::connection) or Cluster
// (redis::cluster), every operation one atomic Lua script per shard, the store's clock only.
//
// Layout: a queue named Q has S shards; a task with id X lives in shard hash(X) mod S, and
// every key of shard s carries the hash tag {Q:s}, so that each script touches one Cluster
// slot. The keys, their types and contents are in one table,
// <timewheel/dq/detail/redis_keys.hpp>; docs/dq.md has the figures and the reasons.
//
// hash() is djb2 over the id's bytes modulo 2^32 (h = 5381; h = h * 33 + byte), over its hash
// tag's bytes only when it holds one ({tag}, as Redis Cluster reads it: key layout 3), so that
// a schedule's occurrences live on its shard: redis_store::shard_of() gives it.
//
#ifndef TIMEWHEEL_DQ_REDIS_STORE_HPP
#define TIMEWHEEL_DQ_REDIS_STORE_HPP

#include <timewheel/dq/store.hpp>

#include <timewheel/redis/cluster_config.hpp>
#include <timewheel/redis/config.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

namespace timewheel::dq {

/// The settings of a dq::redis_store.
struct redis_store_options {
    /// The queue's name: the prefix of its keys and of its wake-up channel (`<name>:wake`).
    /// Must not contain `{` or `}`.
    std::string name = "dq";

    /// Shards (1..16384). Written to the queue's config key at first use; a store opened
    /// later with another count fails every operation with dq::error::not_configured.
    std::size_t shards = 64;

    /// Record buckets per shard (1..65536), fixed with the shard count. Each bucket is a
    /// small hash; Redis keeps it compact (listpack) while it holds at most
    /// hash-max-listpack-entries fields (512 by default; a task takes one field per 64 bytes
    /// of record, two for a 100-byte payload). 1024 keeps 1M such tasks at about 30 fields a
    /// bucket with 64 shards; beyond about 16M a bucket turns into a hashtable (correct, and
    /// about 70 bytes a task larger).
    std::size_t buckets = 1024;

    /// What the store accepts.
    dq::limits limits;

    /// Finished and cancelled tasks are remembered (so that a re-submit answers `exists`) for
    /// this long, and at most `done_max` per shard.
    duration done_retention = std::chrono::hours(24 * 7);
    std::size_t done_max = 100000;

    /// Dead letters are kept this long, and at most `dead_max` per shard.
    duration dead_retention = std::chrono::hours(24 * 30);
    std::size_t dead_max = 100000;

    /// The execution log keeps about this many entries per shard (XADD MAXLEN ~).
    std::size_t log_maxlen = 1000;

    /// Durability: when not 0, every write (submit, cancel, reschedule, claim, start, renew,
    /// acknowledge, release, dead letters, schedules) is followed, on the same connection
    /// and in the same pipeline, by `WAIT wait_replicas wait_timeout`; when fewer replicas
    /// acknowledged, the operation fails with dq::error::not_replicated (its write is made
    /// on the master and may still be lost if the master dies before a replica has it).
    /// 0 (the default): no WAIT; Redis replicates asynchronously, and a failover loses what
    /// the promoted replica had not received yet (usually the last few milliseconds of
    /// writes). On a Cluster each shard's write is followed by its own WAIT on that shard's
    /// master (redis::cluster sends a WAIT with the command before it, and again after it
    /// when that command is redirected), so a call that touches shards on three masters
    /// waits for a replica of each.
    std::size_t wait_replicas = 0;

    /// How long WAIT waits for the replicas (> 0; keep it below the connection's
    /// request_timeout).
    std::chrono::milliseconds wait_timeout{1000};
};

namespace detail {
class redis_store_impl;
} // namespace detail

/// A dq::store on Redis, standalone or Cluster.
/**
 * @code
 * boost::asio::io_context io;
 * dq::redis_store store(io.get_executor(), redis::config{.port = 6379}, {.name = "mail"});
 * dq::queue q(store);
 * q.async_submit({.id = "welcome:42", .due = 30s, .payload = body}, handler);
 * @endcode
 *
 * Every operation is one round trip (one script per shard concerned) and atomic per task.
 * Errors: bad input fails with the dq::error naming it before anything is sent; Redis out of
 * memory (maxmemory with noeviction) fails a write with dq::error::store_full and writes
 * nothing; a transport failure keeps its redis::error code (request_timeout after the
 * config's request_timeout when the server is unreachable).
 *
 * Ids must not contain NUL bytes (dq::error::invalid_id): the record's chunks are keyed on
 * `id NUL n`.
 *
 * @par Thread Safety
 * @e Distinct @e objects: Safe.@n
 * @e Shared @e objects: Unsafe. Use from the executor only.
 */
class redis_store final : public store {
public:
    /// A store on one Redis server.
    redis_store(const executor_type& ex, redis::config cfg, redis_store_options opt = {});

    /// A store on a Redis Cluster.
    redis_store(const executor_type& ex, redis::cluster_config cfg, redis_store_options opt = {});

    /// Closes the connections: outstanding operations complete with redis::error::closed.
    ~redis_store() override;

    redis_store(const redis_store&) = delete;
    redis_store& operator=(const redis_store&) = delete;

    /// The options as given.
    const redis_store_options& options() const noexcept;

    /// The shard of an id: hash(id) mod shards.
    std::size_t shard_of(std::string_view id) const noexcept;

    /// djb2 of the id's bytes, modulo 2^32; of its hash tag's only when it holds one (the
    /// bytes between its first '{' and the first '}' after it, when not empty: Redis
    /// Cluster's rule), so that "{report}@2026-03-29T07:00:00.000Z" is on report's shard.
    static std::uint32_t hash(std::string_view id) noexcept;

    /// Closes the connections and the wake-up subscription.
    void close();

    executor_type get_executor() const override;
    const dq::limits& get_limits() const noexcept override;

    void wait_wakeup(handler<void(boost::system::error_code, time_point)> h) override;
    void now(handler<void(boost::system::error_code, time_point)> h) override;
    /// TIME on the store's connection, like now(): a round trip to the server, within the
    /// connection's request_timeout.
    void probe(handler<void(boost::system::error_code, time_point)> h) override;
    /// One small read-only script per shard, in one pipeline (for monitoring).
    void earliest_due(
        handler<void(boost::system::error_code, time_point, std::optional<time_point>)> h) override;

private:
    // dq::store's operations, their input checked there. (submit_many is store's default:
    // the submits of one turn of the executor already go as one pipeline, a script call
    // per shard for up to 128 tasks: see src/dq/redis/store_producer.cpp.)
    void do_submit(task t,
                   handler<void(boost::system::error_code, submit_result, std::string)> h) override;
    void do_cancel(std::string id,
                   handler<void(boost::system::error_code, cancel_result)> h) override;
    void do_reschedule(std::string id, due_time due,
                       handler<void(boost::system::error_code)> h) override;
    void do_status(std::string id,
                   handler<void(boost::system::error_code, task_status)> h) override;
    void do_list_dead(std::string cursor, std::size_t count,
                      handler<void(boost::system::error_code, dead_page)> h) override;
    void do_requeue_dead(std::string id, due_time due,
                         handler<void(boost::system::error_code)> h) override;
    void do_delete_dead(std::string id, handler<void(boost::system::error_code)> h) override;
    void do_claim(const claim_options& opt,
                  handler<void(boost::system::error_code, claim_result)> h) override;
    void do_start(std::vector<lease_ref> leases,
                  handler<void(boost::system::error_code, std::vector<start_result>)> h) override;
    void do_renew(std::vector<lease_ref> leases, duration lease,
                  handler<void(boost::system::error_code, std::vector<ack_result>)> h) override;
    void
    do_acknowledge(std::vector<ack> acks,
                   handler<void(boost::system::error_code, std::vector<ack_result>)> h) override;
    void do_release(std::vector<lease_ref> leases,
                    handler<void(boost::system::error_code)> h) override;
    void
    do_list_tasks(task_query q, std::optional<task_position> from,
                  handler<void(boost::system::error_code, task_page, std::optional<task_position>)>
                      h) override;
    void do_count_tasks(handler<void(boost::system::error_code, task_counts)> h) override;

    // Schedules (src/dq/redis/store_schedules.cpp).
    void
    do_create_schedule(schedule_spec spec,
                       handler<void(boost::system::error_code, create_schedule_result)> h) override;
    void do_replace_schedule(schedule_spec spec,
                             handler<void(boost::system::error_code)> h) override;
    void do_get_schedule(std::string id,
                         handler<void(boost::system::error_code, schedule_status)> h) override;
    void do_list_schedules(std::string cursor, std::size_t count,
                           handler<void(boost::system::error_code, schedule_page)> h) override;
    void do_delete_schedule(std::string id, handler<void(boost::system::error_code)> h) override;
    void do_create_queue(queue_spec spec,
                         handler<void(boost::system::error_code, create_queue_result)> h) override;
    void do_update_queue(queue_spec spec, handler<void(boost::system::error_code)> h) override;
    void do_get_queue(std::string id,
                      handler<void(boost::system::error_code, queue_status)> h) override;
    void do_list_queues(std::string id_prefix, std::string cursor, std::size_t count,
                        handler<void(boost::system::error_code, queue_page)> h) override;
    void do_delete_queue(std::string id, handler<void(boost::system::error_code)> h) override;
    void do_pause_schedule(std::string id, bool paused,
                           handler<void(boost::system::error_code)> h) override;
    void do_trigger_schedule(std::string id,
                             handler<void(boost::system::error_code, std::string)> h) override;
    void
    do_due_schedules(duration window, std::size_t batch,
                     handler<void(boost::system::error_code, due_schedules_result)> h) override;
    void do_materialise(
        std::vector<materialisation> m,
        handler<void(boost::system::error_code, std::vector<materialise_result>)> h) override;

    std::shared_ptr<detail::redis_store_impl> impl_;
};

} // namespace timewheel::dq

#endif // TIMEWHEEL_DQ_REDIS_STORE_HPP
