//
// timewheeld/dispatch/result_router.hpp
//
// Where POST /v1/tasks/{id}/result goes: to the attempt that waits for it, on whichever
// thread of this node holds it, or, with a Redis store, on whichever node.
//
// Between nodes (forward_over_redis): every node subscribes to `<queue>:results` and to a
// reply channel of its own, `<queue>:results:<node>` (on a Cluster, `{<queue>}:results` and
// `{<queue>}:results:<node>` with SSUBSCRIBE on the master of their slot, and SPUBLISH: its
// count is that master's subscribers, which are every node's). A report that no attempt here waits
// for is published on `<queue>:results`; PUBLISH answers how many subscribers received it,
// the sender among them. Each receiver hands the report to its own attempts and publishes
// what happened (accepted, wrong attempt, nothing waits here) on the sender's reply
// channel. The sender answers as soon as it knows:
//   - one receiver took it: accepted (200), or had another attempt waiting: wrong_attempt
//     (409);
//   - every receiver said nothing waits there: not_pending (404);
//   - the replies did not all come within `reply_within`: forwarded (202): the report went
//     out, and the holder, if any, may still take it;
//   - the PUBLISH failed: unavailable (503), nothing was sent.
// Pub/sub loses what a node receives while it is disconnected from Redis: such a node is
// not counted by PUBLISH, so the sender does not wait for it, and the attempt it holds
// ends at its result deadline as if no report had come (a retry), which is the contract of
// a report that comes too late.
//
#ifndef TIMEWHEELD_DISPATCH_RESULT_ROUTER_HPP
#define TIMEWHEELD_DISPATCH_RESULT_ROUTER_HPP

#include <timewheeld/service/result_sink.hpp>

#include <timewheel/redis/cluster_config.hpp>
#include <timewheel/redis/config.hpp>

#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

namespace timewheeld::dispatch {

class dispatcher;

/// The result sink over the service's dispatchers, and over the other nodes' on Redis.
/**
 * @par Thread Safety
 * Every member may be called from any thread.
 */
class result_router final : public service::result_sink {
public:
    result_router();
    /// Stops forwarding (its thread joined); reports in flight are dropped unanswered, which
    /// only happens once the API has stopped.
    ~result_router() override;

    result_router(const result_router&) = delete;
    result_router& operator=(const result_router&) = delete;

    /// From now on, reports that no attempt of this node waits for go to the other nodes
    /// of the Redis at `cfg` that serve the queue `queue` (see the top of this file), and
    /// theirs come here. Runs on a thread of its own, with two connections to Redis.
    /** @throws std::logic_error if called twice. */
    void forward_over_redis(timewheel::redis::config cfg, std::string queue,
                            std::chrono::milliseconds reply_within = std::chrono::seconds(2));

    /// As above on a Redis Cluster (7.0 or later): the channels are `{<queue>}:results` and
    /// `{<queue>}:results:<node>` (one hash slot), sharded pub/sub (SPUBLISH, SSUBSCRIBE)
    /// on the master of that slot, followed when it fails over.
    void forward_over_redis(timewheel::redis::cluster_config cfg, std::string queue,
                            std::chrono::milliseconds reply_within = std::chrono::seconds(2));
    void
    deliver(std::string id, std::uint32_t attempt, timewheel::dq::outcome outcome,
            boost::asio::any_completion_handler<void(service::deliver_result)> handler) override;

    struct forwarder; // detail

private:
    friend class dispatcher;
    void add(const std::string& id, dispatcher* d);
    void remove(const std::string& id, dispatcher* d);
    /// To an attempt of this node only.
    void deliver_here(std::string id, std::uint32_t attempt, timewheel::dq::outcome outcome,
                      boost::asio::any_completion_handler<void(service::deliver_result)> handler);

    std::mutex mutex_;
    std::unordered_map<std::string, dispatcher*> waiting_;
    std::unique_ptr<forwarder> forwarder_; // set once, before the API serves
};

} // namespace timewheeld::dispatch

#endif // TIMEWHEELD_DISPATCH_RESULT_ROUTER_HPP
