//
// timewheel/dq/worker.hpp
//
// The consumer's side of the durable queue: a worker claims the tasks that come due within
// a short horizon, holds them in the io_context's timing wheel until their due time (on
// the store's clock, translated to steady_clock with a measured offset), confirms each
// tick's batch with one store::start call, and runs a handler that reports exactly once
// how the run ended. Acknowledgements are batched, running tasks' leases are renewed, and
// a concurrency limit bounds the handlers running at once.
//
// The store is the authority: it refuses a start before the due time by its clock
// (too_early: the worker re-arms), and a lease that was cancelled, rescheduled or taken
// over since the claim (stale: the worker drops it). So the worker's clock estimate only
// decides precision, never correctness. A worker that dies loses nothing: its leases
// expire and the tasks come back.
//

#ifndef TIMEWHEEL_DQ_WORKER_HPP
#define TIMEWHEEL_DQ_WORKER_HPP

#include <timewheel/dq/store.hpp>

#include <boost/asio/any_completion_handler.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/system/error_code.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

namespace timewheel::dq {

namespace detail {
class worker_impl;
struct worker_record;
} // namespace detail

/// Settings of a dq::worker.
struct worker_options {
    /// What each claim asks for: the horizon (tasks due by now + horizon are claimed into
    /// the local wheel), the most tasks per claim, the lease, and the worker's name (for
    /// the store's execution log).
    claim_options claim;
    /// The most handlers running at once (at least 1). A task that fires while the limit
    /// is reached waits, prefetched, for a handler to finish.
    std::size_t concurrency = 64;
    /// The most tasks held claimed but not yet started (at least 1; 0 means twice
    /// claim.batch). The worker claims no more than this leaves room for, counting what the
    /// claims in flight may bring: with room for two batches, a second claim is in flight
    /// while the tasks of the last one are handled.
    std::size_t prefetch = 0;
    /// Acknowledgements are sent when this many are pending (at least 1)...
    std::size_t ack_batch = 256;
    /// ... or this long after the first of them was reported.
    duration ack_delay{1};
    /// The longest time between two claims (the safety net under the wake-ups).
    duration poll{1000};
    /// The backoff after a failed store operation: from min, doubling up to max, with full
    /// jitter; reset by the next success.
    duration backoff_min{50};
    duration backoff_max{2000};
    /// Called for each failed store operation (the operation's name and its error), on the
    /// worker's executor. The worker retries by itself; this is for the log.
    std::function<void(std::string_view what, boost::system::error_code)> on_error;
    /// Called for each wake-up received from the store (worker_stats::wakeups), on the
    /// worker's executor: for a metric that shows whether wake-ups still arrive.
    std::function<void()> on_wakeup;
};

/// What a worker has done so far (monotonic counters, and the handlers running now).
struct worker_stats {
    std::uint64_t claims = 0;           ///< claim calls answered
    std::uint64_t claimed = 0;          ///< tasks claimed into the wheel
    std::uint64_t start_batches = 0;    ///< start calls answered
    std::uint64_t started = 0;          ///< tasks started (handler called)
    std::uint64_t started_by_claim = 0; ///< of those, started by their claim (already due)
    std::uint64_t stale = 0;            ///< starts refused as stale (cancelled, rescheduled, taken)
    std::uint64_t too_early = 0;        ///< starts refused as early by the store's clock: re-armed
    std::uint64_t succeeded = 0;        ///< reports of success
    std::uint64_t retried = 0;          ///< reports of retry (abandoned jobs included)
    std::uint64_t failed = 0;           ///< reports of permanent failure
    std::uint64_t deferred = 0;         ///< reports of defer (attempt given back)
    std::uint64_t abandoned = 0;        ///< jobs destroyed without a report (reported as retry)
    std::uint64_t handler_exceptions = 0; ///< exceptions thrown by the handler
    std::uint64_t ack_batches = 0;        ///< acknowledge calls answered
    std::uint64_t acked = 0;              ///< acks the store recorded
    std::uint64_t ack_stale = 0;          ///< acks refused as stale (the lease had been lost)
    std::uint64_t renewals = 0;           ///< leases renewed
    std::uint64_t renew_stale = 0;        ///< renewals refused as stale
    std::uint64_t lease_lost = 0;         ///< of those, jobs told (job::on_lease_lost)
    std::uint64_t released = 0;           ///< prefetched tasks given back (stopping)
    std::uint64_t wakeups = 0;            ///< wake-ups received from the store
    std::uint64_t store_errors = 0;       ///< store operations that failed (all kinds)
    std::size_t running = 0;              ///< handlers running now (started, not reported)
    std::size_t awaiting = 0;             ///< jobs that yielded their slot, not reported
    std::size_t max_running = 0;          ///< the most handlers that ever ran at once
    std::size_t held = 0;                 ///< tasks claimed and not yet started, now
};

/// One run of a task, handed to the worker's handler, which reports how it ended once.
/**
 * A job is movable: a handler may keep it and report later, from the worker's executor.
 * Destroying a job that has not reported reports a retry with the error "abandoned".
 * After the report the job is empty (valid() is false) and its accessors must not be used.
 *
 * A run that waits on something outside the worker for long (a result someone reports
 * later) may give its concurrency slot back (yield_slot()): it keeps its lease, renewed,
 * and still has to report. A lease can be lost meanwhile (it ran out while the worker
 * could not renew it, and another worker took the task over): on_lease_lost() tells.
 *
 * @par Thread Safety
 * Use a job only on the worker's executor.
 */
class job {
public:
    /// An empty job.
    job() noexcept = default;
    job(job&& other) noexcept
        : impl_(std::move(other.impl_))
        , record_(std::exchange(other.record_, nullptr)) {}
    job& operator=(job&& other) noexcept {
        if (this != &other) {
            abandon();
            impl_ = std::move(other.impl_);
            record_ = std::exchange(other.record_, nullptr);
        }
        return *this;
    }
    job(const job&) = delete;
    job& operator=(const job&) = delete;

    /// Reports a retry with the error "abandoned" if nothing was reported.
    ~job() { abandon(); }

    /// Whether this job still has to report.
    bool valid() const noexcept { return record_ != nullptr; }
    explicit operator bool() const noexcept { return valid(); }

    /// The task: its id, payload, attempt (1 for the first run), due time and policy.
    const claimed_task& task() const noexcept;
    const std::string& id() const noexcept { return task().id; }
    const std::string& payload() const noexcept { return task().payload; }
    std::uint32_t attempt() const noexcept { return task().attempt; }
    time_point due() const noexcept { return task().due; }

    /// Reports the run's end: success, retry (after `retry_after`, or the policy's
    /// backoff) or permanent failure.
    /** @throws std::logic_error if the job is empty (already reported). */
    void report(outcome o);
    void succeed() { report(outcome::success()); }
    void retry(std::string error, std::optional<duration> after = std::nullopt) {
        report(outcome::retry(std::move(error), after));
    }
    void fail(std::string error) { report(outcome::failure(std::move(error))); }
    /// Reports that the task was not run after all (held back by the handler's own flow
    /// control): delayed by `after`, its attempt not counted (outcome::defer).
    void defer(std::string why, duration after) { report(outcome::defer(std::move(why), after)); }

    /// Gives this run's concurrency slot back to the worker, which may start another task
    /// at once; the run is counted in worker_stats::awaiting until it reports, its lease
    /// still renewed. Its payload is released (payload() is empty afterwards), so that many
    /// waiting jobs cost little. Once per job; nothing more after the first call.
    /** @throws std::logic_error if the job is empty. */
    void yield_slot();

    /// Calls `f` once, on the worker's executor (never from inside this call), when a
    /// renewal finds this run's lease lost: the task was taken over (its lease ran out
    /// and another claim took it) or is gone. The run's report will be refused as stale:
    /// the holder should end it soon. The job stays valid and must still report. A second
    /// call replaces the first `f`; an empty `f` forgets it. `f` must not throw.
    /** @throws std::logic_error if the job is empty. */
    void on_lease_lost(std::function<void()> f);

    /// Whether a renewal found the lease lost.
    bool lease_lost() const noexcept;

private:
    friend class detail::worker_impl;
    job(std::shared_ptr<detail::worker_impl> impl, detail::worker_record* record) noexcept
        : impl_(std::move(impl))
        , record_(record) {}
    void abandon() noexcept;

    std::shared_ptr<detail::worker_impl> impl_;
    detail::worker_record* record_ = nullptr;
};

/// Runs the tasks of a store with a handler, at their due time, through the local wheel.
/**
 * The handler takes one of three forms, told apart by what it returns:
 *
 * @li `void(dq::job)`: it owns the job and reports through it, now or later (and may
 *     give its slot back while it waits: job::yield_slot());
 * @li `dq::outcome(const dq::job&)`: a plain function whose return value is the report
 *     (an exception it throws is reported as a retry with the exception's message);
 * @li `boost::asio::awaitable<dq::outcome>(const dq::job&)`: a coroutine, spawned on the
 *     worker's executor; what it returns (or throws) is the report.
 *
 * @code
 * dq::redis_store store(io.get_executor(), redis_config, {.name = "mail"});
 * dq::worker w(store, {.claim = {.worker = "mailer-1"}, .concurrency = 32},
 *              [](const dq::job& j) -> dq::outcome {
 *                  return send_mail(j.payload()) ? dq::outcome::success()
 *                                                : dq::outcome::retry("smtp busy");
 *              });
 * w.start();
 * // ... later, to leave:
 * w.async_stop(std::chrono::steady_clock::now() + 5s, [&](boost::system::error_code) {
 *     io.stop();
 * });
 * @endcode
 *
 * The worker runs on the store's executor (an io_context run by one thread), and uses that
 * io_context's wheel_service. Several workers, in one process or several, may share a
 * store's queue.
 *
 * @par How it runs a task
 * A claim leases the tasks due within `claim.horizon` and gives the store's time; each
 * task is armed in the wheel at its due time translated to steady_clock with the clock
 * offset of the claim with the smallest round trip (a sample loses 1 ms of credit per
 * second of age, so that drift is followed). The tasks that fire in one turn are confirmed
 * with one store::start; the handler runs for each one `started`, in due order; a
 * `too_early` one is re-armed, a `stale` one dropped. The next claim is timed by the
 * claim's next due time, by the store's wake-ups, and at least every `poll`.
 *
 * @par Failures of the store
 * A failed operation is counted (stats().store_errors), reported to `on_error`, and
 * retried after a backoff; nothing is lost: a lease that runs out returns its task.
 *
 * @par Thread Safety
 * @e Distinct @e objects: Safe.@n
 * @e Shared @e objects: Unsafe. Use a worker, and its jobs, on its executor only.
 */
class worker {
public:
    using executor_type = store::executor_type;

    /// A worker on `s` (which must outlive it) that runs `handler`. Not yet claiming.
    /** @throws std::invalid_argument naming the option out of range. */
    template <typename Handler>
    worker(dq::store& s, worker_options options, Handler handler)
        : worker(s, std::move(options), wrap(s.get_executor(), std::move(handler)), 0) {}

    /// Stops at once: no more acks are sent, prefetched and running tasks come back when
    /// their leases run out. Jobs still held report nothing.
    ~worker();

    worker(const worker&) = delete;
    worker& operator=(const worker&) = delete;

    executor_type get_executor() const;

    /// Starts claiming. Call once, on the worker's executor.
    void start();

    /// Stops gracefully: no more claims; prefetched tasks not started are released (another
    /// worker may run them at once); running handlers are waited for until `deadline`;
    /// pending acks are flushed.
    /**
     * @par Completion Signature
     * @code void(boost::system::error_code ec) @endcode
     * Success when everything finished before the deadline; boost::asio::error::timed_out
     * when handlers were still running at the deadline (their leases will run out, their
     * later reports are still sent); boost::asio::error::in_progress for a second stop.
     *
     * @par Per-Operation Cancellation
     * Not supported: the deadline bounds the wait.
     */
    template <typename Token = boost::asio::default_completion_token_t<executor_type>>
    auto async_stop(std::chrono::steady_clock::time_point deadline, Token&& token = {}) {
        return boost::asio::async_initiate<Token, void(boost::system::error_code)>(
            [](auto handler, worker* self, std::chrono::steady_clock::time_point d) {
                self->stop(d, boost::asio::any_completion_handler<void(boost::system::error_code)>(
                                  std::move(handler)));
            },
            token, this, deadline);
    }

    /// The counters.
    const worker_stats& stats() const noexcept;

    /// The store's clock as this worker estimates it now.
    time_point store_now() const noexcept;

    /// The round trip of the claim whose clock sample is in use (zero before the first).
    std::chrono::steady_clock::duration clock_rtt() const noexcept;

private:
    using erased_handler = std::function<void(job)>;

    worker(dq::store& s, worker_options options, erased_handler handler, int);
    void stop(std::chrono::steady_clock::time_point deadline,
              boost::asio::any_completion_handler<void(boost::system::error_code)> handler);

    template <typename T>
    struct is_awaitable_outcome : std::false_type {};
    template <typename Executor>
    struct is_awaitable_outcome<boost::asio::awaitable<outcome, Executor>> : std::true_type {};

    template <typename Handler>
    static erased_handler wrap(const executor_type& ex, Handler handler) {
        if constexpr (std::is_invocable_v<Handler&, job> &&
                      std::is_void_v<std::invoke_result_t<Handler&, job>>) {
            (void)ex;
            return erased_handler(std::move(handler));
        } else {
            static_assert(std::is_invocable_v<Handler&, const job&>,
                          "dq::worker: a handler takes a dq::job (and returns void), or a "
                          "const dq::job& (and returns a dq::outcome or an awaitable of one)");
            using result = std::invoke_result_t<Handler&, const job&>;
            if constexpr (is_awaitable_outcome<result>::value) {
                return [ex, h = std::move(handler)](job j) mutable {
                    boost::asio::co_spawn(
                        ex,
                        [](Handler& h, job j) -> boost::asio::awaitable<void> {
                            outcome o;
                            try {
                                o = co_await h(std::as_const(j));
                            } catch (const std::exception& e) {
                                o = outcome::retry(e.what());
                            }
                            j.report(std::move(o));
                        }(h, std::move(j)),
                        boost::asio::detached);
                };
            } else {
                static_assert(std::is_convertible_v<result, outcome>,
                              "dq::worker: a handler taking a const dq::job& returns a "
                              "dq::outcome or an awaitable<dq::outcome>");
                (void)ex;
                return [h = std::move(handler)](job j) mutable {
                    outcome o;
                    try {
                        o = h(std::as_const(j));
                    } catch (const std::exception& e) {
                        o = outcome::retry(e.what());
                    }
                    j.report(std::move(o));
                };
            }
        }
    }

    std::shared_ptr<detail::worker_impl> impl_;
};

} // namespace timewheel::dq

#endif // TIMEWHEEL_DQ_WORKER_HPP
