//
// timewheeld/dispatch/dispatcher.hpp
//
// The worker side of timewheeld: what makes a due task's callback. A dispatcher runs on
// one of the service's threads, next to the API: a dq::worker over that thread's store, a
// callback::client, and the attempts whose callback answered 202 and wait for their result.
//
// A run of a task:
//   1. its payload is parsed as a callback (callback/payload.hpp); one that does not parse
//      fails permanently (it cannot get better);
//   2. the callback is called with the task id as Idempotency-Key and the attempt number;
//   3. the verdict becomes the run's outcome: success -> success; retry -> retry, after
//      Retry-After when the answer gave one; fail -> failure with the error text;
//      accepted (202) -> the job waits (its lease renewed by the worker) for a result
//      reported through POST /v1/tasks/{id}/result (result_router), or for the result
//      deadline, after which the attempt counts as failed and is retried.
//      A retry for which the client never contacted the receiver (callback::reach::held:
//      the origin's back-off after a 429, the rate limit, no connection slot before the
//      deadline, the node stopping) is a deferral (dq::outcome::defer): delayed, after the
//      Retry-After the client gives (or 1 s; at once when stopping), its attempt not
//      counted. So a receiver's Timewheel-Attempt counts the requests that were tried.
//   4. a callback with on_success or on_failure has its completion notice stored
//      (service/notice.hpp) before an end is reported, and on the last attempt before the
//      call; a notice task ("<id>~notice") runs as the notice, not as a callback.
//
// Waiting for a result takes no callback slot (dq::job::yield_slot), up to
// max_awaiting_results per thread; beyond, it keeps its slot. A waiting attempt whose lease
// is lost (it ran out and another node took the task) ends at once (a retry, refused as
// stale): a later result for it is answered as for no waiting attempt.
//
// Stopping (SIGTERM) stops the worker gracefully: no more claims, prefetched tasks given
// back, running callbacks waited for until the deadline; attempts waiting for a result are
// given back at once as retries (their result may then reach another node's attempt, or be
// refused: the receiver sees the same Idempotency-Key again).
//
#ifndef TIMEWHEELD_DISPATCH_DISPATCHER_HPP
#define TIMEWHEELD_DISPATCH_DISPATCHER_HPP

#include <timewheeld/callback/client.hpp>
#include <timewheeld/callback/payload.hpp>
#include <timewheeld/dispatch/result_router.hpp>
#include <timewheeld/service/metrics.hpp>
#include <timewheeld/service/node_stats.hpp>
#include <timewheeld/service/result_sink.hpp>
#include <timewheeld/service/settings.hpp>

#include <timewheel/dq/store.hpp>
#include <timewheel/dq/worker.hpp>

#include <boost/asio/any_completion_handler.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/system/error_code.hpp>

#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

namespace timewheeld::dispatch {

/// The settings of a dispatcher.
struct options {
    callback::client_options client;
    callback::payload_limits payload;
    /// After a 202, how long the attempt waits for its result before it is retried.
    std::chrono::milliseconds result_deadline{300000};
    /// Attempts waiting for their result without a callback slot (see the top of this file).
    std::size_t max_awaiting_results = 10000;
    /// The lease of a claim (dq::claim_options::lease); 0: 30 s, or 3 x the callback
    /// timeout when longer.
    std::chrono::milliseconds lease{0};
    /// Callbacks in flight at once (dq::worker_options::concurrency).
    std::size_t concurrency = 64;
    /// The worker's name in the execution log.
    std::string worker_name = "timewheeld";
};

/// The dispatcher options the service's settings describe.
options options_from(const service::settings& s);

/// The callbacks of one thread.
/**
 * @par Thread Safety
 * Use it on its io_context's thread only (that io_context must be run by one thread).
 */
class dispatcher {
public:
    /// A dispatcher on `store` (whose executor is `io`'s), filling `metrics` (and, when
    /// given, shard `stats_shard` of `stats` with this node's figures for GET /v1/stats),
    /// reachable by results through `router`. Not yet claiming. All must outlive it.
    /** @throws std::invalid_argument for options out of range. */
    dispatcher(boost::asio::io_context& io, timewheel::dq::store& store, const options& opt,
               service::service_metrics& metrics, result_router& router,
               service::node_stats* stats = nullptr, std::size_t stats_shard = 0);
    ~dispatcher();

    dispatcher(const dispatcher&) = delete;
    dispatcher& operator=(const dispatcher&) = delete;

    /// Starts claiming due tasks.
    void start();

    /// Stops gracefully (see the top of this file), then calls `handler(ec)`: ec as
    /// dq::worker::async_stop gives it (timed_out when callbacks still ran at `deadline`).
    void stop(std::chrono::steady_clock::time_point deadline,
              boost::asio::any_completion_handler<void(boost::system::error_code)> handler);

    /// Hands a reported result to the attempt of `id` waiting here. On this thread.
    service::deliver_result deliver(const std::string& id, std::uint32_t attempt,
                                    timewheel::dq::outcome outcome);

    const timewheel::dq::worker& worker() const noexcept;
    boost::asio::io_context& io() noexcept;

    struct state; // detail

private:
    std::shared_ptr<state> state_;
};

} // namespace timewheeld::dispatch

#endif // TIMEWHEELD_DISPATCH_DISPATCHER_HPP
