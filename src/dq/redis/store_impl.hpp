//
// src/dq/redis/store_impl.hpp
//
// The state behind a dq::redis_store, shared with its requests in flight (a completion may
// come after the store is gone): the backend, the key names and script header of each shard,
// the shard schedule, the wake-up subscription. Each operation builds one request of script
// calls (one per shard it touches), sends it after the queue's config is checked once, and
// decodes the replies (replies.hpp). The operations are in store_producer.cpp and
// store_worker.cpp, what they share in store_impl.cpp; the templates that send a request and
// group work by shard are here.
//
#ifndef TIMEWHEEL_DQ_REDIS_STORE_IMPL_HPP
#define TIMEWHEEL_DQ_REDIS_STORE_IMPL_HPP

#include "backend.hpp"
#include "replies.hpp"
#include "scripts.hpp"
#include "shard_schedule.hpp"

#include <timewheel/dq/redis_store.hpp>

#include <timewheel/redis/script.hpp>
#include <timewheel/redis/subscriber.hpp>

#include <boost/asio/append.hpp>
#include <boost/asio/dispatch.hpp>
#include <boost/asio/post.hpp>

#include <memory>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace timewheel::dq::detail {

// Arguments of one script call: the operation's own, after the shard's common header.
struct call_args {
    explicit call_args(std::size_t n = 8) { args.reserve(n); }
    std::vector<std::string> args;
    void add(std::string_view s) { args.emplace_back(s); }
    void add(std::int64_t v) { args.push_back(replies::number(v)); }
};

class redis_store_impl : public std::enable_shared_from_this<redis_store_impl> {
public:
    using executor_type = store::executor_type;
    using error_code = boost::system::error_code;

    redis_store_impl(const executor_type& ex, std::unique_ptr<backend> b, redis::config sub_cfg,
                     redis_store_options opt);

    const executor_type& get_executor() const noexcept { return ex_; }
    const redis_store_options& options() const noexcept { return opt_; }
    std::size_t shard_of(std::string_view id) const noexcept {
        return redis_store::hash(id) % opt_.shards;
    }
    void close();

    // Producer (store_producer.cpp).
    void submit(task t, store::handler<void(error_code, submit_result, std::string)> h);
    void cancel(std::string id, store::handler<void(error_code, cancel_result)> h);
    // An operation on one id whose reply is 'ok' or an error.
    void simple(const scripts::function& s, std::string id, std::optional<due_time> due,
                store::handler<void(error_code)> h);
    void status(std::string id, store::handler<void(error_code, task_status)> h);
    void list_dead(std::string cursor, std::size_t count,
                   store::handler<void(error_code, dead_page)> h);

    // Worker (store_worker.cpp).
    void claim(const claim_options& opt, store::handler<void(error_code, claim_result)> h);
    void start(std::vector<lease_ref> leases,
               store::handler<void(error_code, std::vector<start_result>)> h);
    void renew(std::vector<lease_ref> leases, duration lease,
               store::handler<void(error_code, std::vector<ack_result>)> h);
    void acknowledge(std::vector<ack> acks,
                     store::handler<void(error_code, std::vector<ack_result>)> h);
    void release(std::vector<lease_ref> leases, store::handler<void(error_code)> h);
    void wait_wakeup(store::handler<void(error_code, time_point)> h);

    // Schedules (store_schedules.cpp).
    void schedule_op(std::string_view op, std::string id, const schedule_spec* spec,
                     store::handler<void(error_code, std::string)> h);
    void get_schedule(std::string id, store::handler<void(error_code, schedule_status)> h);
    void list_schedules(std::string cursor, std::size_t count,
                        store::handler<void(error_code, schedule_page)> h);
    void due_schedules(duration window, std::size_t batch,
                       store::handler<void(error_code, due_schedules_result)> h);
    void materialise(std::vector<materialisation> ms,
                     store::handler<void(error_code, std::vector<materialise_result>)> h);

    // Named queues' settings (store_queues.cpp).
    void create_queue(queue_spec spec, store::handler<void(error_code, create_queue_result)> h);
    void update_queue(queue_spec spec, store::handler<void(error_code)> h);
    void get_queue(std::string id, store::handler<void(error_code, queue_status)> h);
    void list_queues(std::string id_prefix, std::string cursor, std::size_t count,
                     store::handler<void(error_code, queue_page)> h);
    void delete_queue(std::string id, store::handler<void(error_code)> h);

    // Monitoring and the clock (store_impl.cpp).
    void earliest_due(store::handler<void(error_code, time_point, std::optional<time_point>)> h);

    // Listing and counting (store_queries.cpp).
    void list_tasks(task_query q, std::optional<task_position> from,
                    store::handler<void(error_code, task_page, std::optional<task_position>)> h);
    void count_tasks(store::handler<void(error_code, task_counts)> h);

private:
    // A page being gathered from the shards, in rounds (store_queries.cpp).
    struct list_walk;
    void list_round(std::shared_ptr<list_walk> w);
    void list_read(std::shared_ptr<list_walk> w);

public:
    void now(store::handler<void(error_code, time_point)> h);

private:
    // A submit waits in `submits_` until the end of the executor's turn; then the turn's
    // submits go as one script call per shard (flush_submits, store_producer.cpp). One call a
    // task cost Redis more for the call (the request, the prelude, the clock, the wake-up)
    // than for the task.
    struct pending_submit {
        task t;
        store::handler<void(error_code, submit_result, std::string)> h;
    };
    void flush_submits();

    struct exec_state {
        redis::request req;
        redis::response resp;
        bool read_only = false; // no WAIT after it (redis_store_options::wait_replicas)
        // On a Cluster, where each writing script is followed by its WAIT in `req`.
        std::vector<std::size_t> waits;
        // One server: the WAIT after a write, and the first of the two answers to come.
        redis::request wait_req;
        redis::response wait_resp;
        int answers = 0;
        error_code first_ec;
    };

    // Groups items by shard: one script call per shard, results put back in order.
    struct grouping {
        std::vector<std::size_t> shards;               // shard of each call
        std::vector<std::vector<std::size_t>> members; // item indexes of each call
    };

    template <typename Handler, typename... Args>
    void post(Handler h, Args&&... args) {
        boost::asio::post(ex_, boost::asio::append(std::move(h), std::forward<Args>(args)...));
    }

    template <typename Handler, typename... Args>
    void finish(Handler h, Args&&... args) {
        boost::asio::dispatch(ex_, boost::asio::append(std::move(h), std::forward<Args>(args)...));
    }

    std::string token_base();
    // lua/queues.lua or queues_read.lua with the queues' keys, and a WAIT after a write on a
    // Cluster (as push_shard_script); `st` is read_only for a read.
    void push_queue_script(exec_state& st, const scripts::function& s,
                           const std::vector<std::string>& args);
    // lua/queues.lua's `op` on spec.id (and spec); completes with its answer.
    void queue_write(std::string op, const queue_spec& spec,
                     store::handler<void(error_code, std::string)> h);
    void push_shard_script(exec_state& st, const scripts::function& s, std::size_t shard,
                           call_args& a);
    error_code time_only_reply(const redis::response& resp, claim_result& out);
    error_code claim_replies(const redis::response& resp, const std::vector<std::size_t>& visit,
                             const std::vector<std::size_t>& limits, claim_result& out);
    grouping group(const std::vector<std::string_view>& ids) const;
    static std::vector<std::string_view> ids_of(const std::vector<lease_ref>& leases);

    // Runs `st`'s request (after the queue's config is checked once) and calls
    // fn(ec, response) on the executor.
    template <typename Fn>
    void run(std::shared_ptr<exec_state> st, Fn fn) {
        if (configured_) {
            send(std::move(st), std::move(fn));
            return;
        }
        auto cfg = std::make_shared<exec_state>();
        const auto& config = scripts::config();
        cfg->req.push_fcall(*config.library, config.name, 1, config_key_,
                            replies::number(static_cast<std::int64_t>(opt_.shards)),
                            replies::number(static_cast<std::int64_t>(opt_.buckets)));
        auto self = shared_from_this();
        backend_->exec(cfg->req, cfg->resp,
                       [self, cfg, st = std::move(st), fn = std::move(fn)](error_code ec,
                                                                           std::size_t) mutable {
                           if (!ec) {
                               auto r = cfg->resp[0];
                               if (r.is_error()) {
                                   ec = replies::script_error(r);
                               } else if (!r.is_integer() || r.as_integer() != 1) {
                                   ec = error::not_configured;
                               } else {
                                   self->configured_ = true;
                               }
                           }
                           if (ec) {
                               fn(ec, st->resp);
                               return;
                           }
                           self->send(std::move(st), std::move(fn));
                       });
    }

    // With wait_replicas on one server, a write is followed by WAIT as a request of its own,
    // issued in the same turn on the same connection: the connection writes both in one
    // write, in order, so WAIT waits for exactly the script's writes; its reply stays out of
    // the script's response (the callers read theirs by count). The operation completes when
    // both have answered, with the script's failure first. On a Cluster the scripts of one
    // request may go to different masters, each needing its own WAIT: push_shard_script put
    // one after each writing script, the cluster sends each with its script (redis::cluster
    // "WAIT"), and send_waited() takes their replies out of the response.
    template <typename Fn>
    void send(std::shared_ptr<exec_state> st, Fn fn) {
        if (!st->waits.empty()) {
            send_waited(std::move(st), std::move(fn));
            return;
        }
        auto* req = &st->req;
        auto* resp = &st->resp;
        if (opt_.wait_replicas == 0 || st->read_only) {
            backend_->exec(*req, *resp,
                           [st = std::move(st), fn = std::move(fn)](
                               error_code ec, std::size_t) mutable { fn(ec, st->resp); });
            return;
        }
        st->wait_req.push("WAIT", static_cast<std::int64_t>(opt_.wait_replicas),
                          static_cast<std::int64_t>(opt_.wait_timeout.count()));
        auto both = std::make_shared<Fn>(std::move(fn));
        const auto want = opt_.wait_replicas;
        auto answered = [st, both, want](error_code ec, bool is_wait) {
            if (!ec && is_wait) {
                const auto r = st->wait_resp[0];
                if (!r.is_integer() || r.as_integer() < 0 ||
                    static_cast<std::uint64_t>(r.as_integer()) < want) {
                    ec = error::not_replicated;
                }
            }
            if (++st->answers == 1) {
                st->first_ec = ec;
                return;
            }
            // The script's own failure (or the connection's) names the cause best.
            (*both)(st->first_ec ? st->first_ec : ec, st->resp);
        };
        backend_->exec(*req, *resp,
                       [answered](error_code ec, std::size_t) { answered(ec, false); });
        backend_->exec(st->wait_req, st->wait_resp,
                       [answered](error_code ec, std::size_t) { answered(ec, true); });
    }

    template <typename Fn>
    void send_waited(std::shared_ptr<exec_state> st, Fn fn) {
        auto* req = &st->req;
        auto* resp = &st->resp;
        backend_->exec(*req, *resp,
                       [st = std::move(st), fn = std::move(fn),
                        want = opt_.wait_replicas](error_code ec, std::size_t) mutable {
                           if (!ec) {
                               ec = take_waits(*st, want);
                           }
                           fn(ec, st->resp);
                       });
    }

    // Checks the WAIT replies of a Cluster request (each >= `want`, or not_replicated) and
    // leaves in st.resp the scripts' replies alone, in their order.
    static error_code take_waits(exec_state& st, std::uint64_t want);

    // Runs one script per shard over `ids`; `decode` reads each result letter (nothing for a
    // letter the script never answers).
    template <typename Result, typename Push, typename Decode>
    void per_shard(const scripts::function& script, const std::vector<std::string_view>& ids,
                   Push push, Decode decode,
                   store::handler<void(error_code, std::vector<Result>)> h) {
        const auto g = group(ids);
        auto st = std::make_shared<exec_state>();
        for (std::size_t c = 0; c < g.shards.size(); ++c) {
            // Sized once: an ack is 5 arguments a task (vector growth was 4 allocations).
            call_args a(1 + 5 * g.members[c].size());
            push(a, g.members[c]);
            push_shard_script(*st, script, g.shards[c], a);
        }
        run(st, [self = shared_from_this(), h = std::move(h), g, n = ids.size(),
                 decode](error_code ec, redis::response& resp) mutable {
            std::vector<Result> out(n);
            if (!ec) {
                for (std::size_t c = 0; c < g.shards.size() && !ec; ++c) {
                    auto rep = resp[c];
                    if (rep.is_error()) {
                        ec = replies::script_error(rep);
                        break;
                    }
                    // One known letter an item, or the reply is not the script's.
                    const auto letters = rep.is_string() ? rep.as_string() : std::string_view();
                    if (!rep.is_string() || letters.size() != g.members[c].size()) {
                        ec = error::store_error;
                        break;
                    }
                    for (std::size_t k = 0; k < letters.size() && !ec; ++k) {
                        if (const auto r = decode(letters[k])) {
                            out[g.members[c][k]] = *r;
                        } else {
                            ec = error::store_error;
                        }
                    }
                }
            }
            if (ec) {
                out.clear();
            }
            self->finish(std::move(h), ec, std::move(out));
        });
    }

    executor_type ex_;
    std::unique_ptr<backend> backend_;
    redis::config sub_cfg_;
    redis_store_options opt_;
    std::string channel_;
    std::string config_key_;
    std::vector<std::vector<std::string>> keys_; // per shard, redis_keys::shard_keys in order
    std::vector<std::string> prefixes_;
    std::vector<std::string> header_; // ARGV[1..3] of every shard script
    std::unique_ptr<redis::subscriber> sub_;
    std::mt19937_64 rng_;
    shard_schedule schedule_;
    bool subscribed_ = false;
    std::vector<pending_submit> submits_;
    bool configured_ = false;
    bool closed_ = false;
};

} // namespace timewheel::dq::detail

#endif // TIMEWHEEL_DQ_REDIS_STORE_IMPL_HPP
