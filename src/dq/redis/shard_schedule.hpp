//
// src/dq/redis/shard_schedule.hpp
//
// Which shards a claim visits, and the store's estimate of Redis's clock.
//
// A claim script costs Redis a fixed ~15 us even on an empty shard, so a claim runs only on
// the shards with something due by now + horizon, each given a larger part of the batch. The
// schedule keeps, per shard, a next-due (store ms) that is never later than the shard's
// earliest delayed task: it comes from each claim's reply (the shard's earliest), lowered by
// wake-ups (which carry the shard) and reset to unknown by this store's own writes. Lease
// expiries and anything missed while unsubscribed are caught by a full visit of every shard
// at least every full_visit_interval; without a subscription every claim is a full visit.
//
#ifndef TIMEWHEEL_DQ_REDIS_SHARD_SCHEDULE_HPP
#define TIMEWHEEL_DQ_REDIS_SHARD_SCHEDULE_HPP

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <string_view>
#include <vector>

namespace timewheel::dq::detail {

class shard_schedule {
public:
    explicit shard_schedule(std::size_t shards);

    /// The shards the next claim visits, in the order to visit them: every shard (rotating
    /// the first) when unsubscribed or due for a full visit, else the earliest of those whose
    /// next-due is by the estimated now + horizon, one per tasks_per_visit of the batch.
    std::vector<std::size_t> shards_to_visit(std::int64_t horizon_ms, std::size_t batch,
                                             bool subscribed);

    /// A wake-up's payload is "<due> {Q:s}:": the shard's next-due is now at most `due`.
    void saw_wakeup(std::string_view payload, std::int64_t due);

    /// This store wrote to `shard` (or a claim there failed): its next-due is unknown.
    void forget(std::size_t shard);

    /// A claim's reply: the shard's earliest delayed due ms, or -1 when none.
    void saw_next_due(std::size_t shard, std::int64_t due);

    /// A reading of Redis's clock (ms).
    void saw_server_time(std::int64_t ms);

    /// The earliest next-due of all shards (now for an unknown shard), or -1 when none.
    std::int64_t next_due() const;

private:
    static constexpr std::int64_t unknown_due = std::numeric_limits<std::int64_t>::min();
    static constexpr std::int64_t no_due = std::numeric_limits<std::int64_t>::max();
    static constexpr std::size_t tasks_per_visit = 64;
    static constexpr auto full_visit_interval = std::chrono::milliseconds(250);

    // The store's clock now, estimated from the last reading.
    std::int64_t estimated_now() const;

    std::vector<std::int64_t> next_due_; // per shard, store ms
    std::size_t rotation_ = 0;
    std::int64_t server_ms_ = 0; // the store's clock at the last reply
    std::chrono::steady_clock::time_point server_seen_at_{};
    std::chrono::steady_clock::time_point last_full_visit_{};
};

} // namespace timewheel::dq::detail

#endif // TIMEWHEEL_DQ_REDIS_SHARD_SCHEDULE_HPP
