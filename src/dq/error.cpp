//
// src/dq/error.cpp
//
// The dq::error category.
//

#include <timewheel/dq/error.hpp>

#include <string>

namespace timewheel::dq {

namespace {

class category final : public boost::system::error_category {
public:
    const char* name() const noexcept override { return "timewheel.dq"; }

    std::string message(int ev) const override {
        switch (static_cast<error>(ev)) {
        case error::empty_id:
            return "the task id is empty";
        case error::id_too_long:
            return "the task id is longer than the store's limit (limits::max_id_bytes)";
        case error::invalid_id:
            return "the task id holds bytes the store cannot key on";
        case error::payload_too_large:
            return "the task payload is larger than the store's limit (limits::max_payload_bytes)";
        case error::due_out_of_range:
            return "the due time is before the Unix epoch or after dq::max_due";
        case error::zero_attempts:
            return "the retry policy allows zero attempts (max_attempts must be at least 1)";
        case error::invalid_backoff:
            return "the retry policy's backoff is negative, or its base exceeds its cap";
        case error::invalid_argument:
            return "an argument of the durable-queue operation is out of range";
        case error::not_found:
            return "no such task";
        case error::wrong_state:
            return "the task is not in a state that allows this operation";
        case error::stale_lease:
            return "the lease is stale: the task's token has changed since it was claimed";
        case error::store_full:
            return "the store has no room for the write (SQLite: the disk is full; Redis: "
                   "maxmemory with noeviction)";
        case error::store_error:
            return "the store answered with an unexpected error";
        case error::not_configured:
            return "the queue's configuration in the store (shards, buckets, key layout "
                   "version) differs from this store's";
        case error::store_timeout:
            return "the store did not complete the operation within its timeout";
        case error::schedule_conflict:
            return "a schedule with this id exists with another spec";
        case error::invalid_schedule_id:
            return "the schedule id holds '{' or '}' (its occurrences' task ids use them as a "
                   "hash tag)";
        case error::invalid_rule:
            return "the schedule needs exactly one of a cron expression and an interval "
                   "(every) greater than zero";
        case error::invalid_cron:
            return "the schedule's cron expression does not parse";
        case error::unknown_zone:
            return "the schedule's time zone is not in the tz database (an interval takes only "
                   "UTC)";
        case error::invalid_window:
            return "the schedule's start_at or end_at is out of range, or end_at is not after "
                   "start_at";
        case error::not_replicated:
            return "the write was not acknowledged by enough replicas in time (WAIT): it may be "
                   "lost if the master fails";
        case error::store_too_old:
            return "the store's server is too old: dq::redis_store needs Redis 7.0 or later "
                   "(Redis Functions: FUNCTION LOAD and FCALL)";
        case error::invalid_queue:
            return "a queue name must be 1 to 64 bytes of [a-z0-9_-], optionally after one "
                   "namespace of the same alphabet and a slash (acme/billing)";
        case error::queue_conflict:
            return "a queue with this name exists with another spec";
        case error::queue_not_empty:
            return "the queue still holds tasks (delayed, claimed or dead)";
        case error::default_queue:
            return "the default queue cannot be created, changed or deleted";
        }
        return "unknown timewheel.dq error " + std::to_string(ev);
    }
};

} // namespace

const boost::system::error_category& error_category() noexcept {
    static const category instance;
    return instance;
}

} // namespace timewheel::dq
