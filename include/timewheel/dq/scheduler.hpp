//
// timewheel/dq/scheduler.hpp
//
// The materialiser of durable schedules: every so often it asks the store for the schedules
// whose next occurrence comes due within a window ahead of the store's clock, computes their
// occurrences with cron::schedule, applies the misfire policy to those already past, and
// commits each schedule's occurrences as ordinary delayed tasks in one atomic step of the
// store (store::materialise) that compares the schedule's revision. Any number of nodes may
// run one on the same store, with no leader: the compare makes every occurrence exactly one
// task, and a node that crashes between steps leaves nothing half done.
//
// Materialising a window ahead keeps the queue's precision: an occurrence's task exists
// before the workers' claim horizon reaches it, and they fire it to the millisecond.
//
#ifndef TIMEWHEEL_DQ_SCHEDULER_HPP
#define TIMEWHEEL_DQ_SCHEDULER_HPP

#include <timewheel/dq/store.hpp>

#include <boost/asio/any_completion_handler.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/system/error_code.hpp>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string_view>

namespace timewheel::dq {

namespace detail {
class scheduler_impl;
} // namespace detail

/// Settings of a dq::scheduler.
struct scheduler_options {
    /// Occurrences due by the store's clock + window are materialised (well above the
    /// workers' claim horizon, and above `period`, so that a pass never comes too late).
    duration window{5000};
    /// The time between two passes (a pass that filled its batch is followed at once by
    /// another).
    duration period{1000};
    /// An occurrence more than this far in the past when it is materialised is missed: the
    /// schedule's misfire policy decides whether it runs.
    duration grace{60000};
    /// The most schedules a pass reads from each shard of the store.
    std::size_t batch = 1000;
    /// The most occurrences one schedule gets in one pass (the rest in the next).
    std::size_t max_occurrences = 256;
    /// The most occurrences one schedule's rule is asked for in one pass (a schedule far
    /// behind catches up over several passes: bounded work per pass).
    std::size_t max_steps = 10000;
    /// Called for each failed store operation or rule (what failed, and its error), on the
    /// scheduler's executor. The scheduler retries at its next pass; this is for the log.
    std::function<void(std::string_view what, boost::system::error_code)> on_error;
};

/// What a scheduler has done so far (monotonic counters).
struct scheduler_stats {
    std::uint64_t passes = 0;          ///< passes completed (successful or not)
    std::uint64_t created = 0;         ///< occurrence tasks created
    std::uint64_t skipped_misfire = 0; ///< occurrences skipped by a misfire policy
    std::uint64_t skipped_overlap = 0; ///< occurrences skipped by overlap_policy::forbid
    std::uint64_t lost = 0;            ///< materialisations another node (or a write) beat
    std::uint64_t errors = 0;          ///< failed store operations
};

/// Materialises the schedules of a store into tasks.
/**
 * @code
 * dq::scheduler sched(store, {});
 * sched.async_run([](boost::system::error_code ec) { // operation_aborted after stop()
 * });
 * @endcode
 *
 * It runs on the store's executor; call it from there.
 *
 * @par Thread Safety
 * @e Distinct @e objects: Safe.@n
 * @e Shared @e objects: Unsafe.
 */
class scheduler {
public:
    using executor_type = store::executor_type;

    /// Uses `s`, which must outlive the scheduler and its operations.
    scheduler(dq::store& s, scheduler_options options = {});

    /// Stops (as stop()).
    ~scheduler();

    scheduler(const scheduler&) = delete;
    scheduler& operator=(const scheduler&) = delete;

    executor_type get_executor() const;

    /// Runs passes every options.period until stop(); store errors are retried at the next
    /// pass. One run at a time.
    /**
     * @par Completion Signature
     * @code void(boost::system::error_code ec) @endcode
     * boost::asio::error::operation_aborted once stopped (after the store operation in
     * flight, if any, completed).
     */
    template <typename Token = boost::asio::default_completion_token_t<executor_type>>
    auto async_run(Token&& token = {}) {
        return boost::asio::async_initiate<Token, void(boost::system::error_code)>(
            [this](auto handler) {
                run(boost::asio::any_completion_handler<void(boost::system::error_code)>(
                    std::move(handler)));
            },
            token);
    }

    /// One pass, now (for tests and tools): completes with its store error, if any, and
    /// whether the pass filled a batch (more may be due at once).
    /**
     * @par Completion Signature
     * @code void(boost::system::error_code ec, bool more) @endcode
     */
    template <typename Token = boost::asio::default_completion_token_t<executor_type>>
    auto async_pass(Token&& token = {}) {
        return boost::asio::async_initiate<Token, void(boost::system::error_code, bool)>(
            [this](auto handler) {
                pass(boost::asio::any_completion_handler<void(boost::system::error_code, bool)>(
                    std::move(handler)));
            },
            token);
    }

    /// Stops running: the run completes with operation_aborted.
    void stop();

    /// The counters so far.
    const scheduler_stats& stats() const noexcept;

private:
    void run(boost::asio::any_completion_handler<void(boost::system::error_code)> h);
    void pass(boost::asio::any_completion_handler<void(boost::system::error_code, bool)> h);

    std::shared_ptr<detail::scheduler_impl> impl_;
};

} // namespace timewheel::dq

#endif // TIMEWHEEL_DQ_SCHEDULER_HPP
