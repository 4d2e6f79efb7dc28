//
// timewheeld/service/result_sink.hpp
//
// Where POST /v1/tasks/{id}/result hands a reported result: the seam between the API and
// the callbacks in flight. A callback that answers 202 leaves its dq::job pending (the
// lease renewed) until the result is reported or the result deadline passes (then the
// attempt counts as failed and is retried). The callback side implements this interface
// over its pending jobs; the server is given one with server::set_result_sink().
//
// Without a sink, or when no attempt of that id waits on any node, the endpoint answers
// 404 `no_pending_attempt`. With several nodes, the report may reach a node that does not
// hold the job: the sink then forwards it to the others (docs/server.md, "Report an
// asynchronous result").
//
#ifndef TIMEWHEELD_SERVICE_RESULT_SINK_HPP
#define TIMEWHEELD_SERVICE_RESULT_SINK_HPP

#include <timewheel/dq/task.hpp>

#include <boost/asio/any_completion_handler.hpp>

#include <cstdint>
#include <string>

namespace timewheeld::service {

/// What a sink did with a reported result.
enum class deliver_result {
    accepted,      ///< the pending job reported it: it is (or will be) acknowledged
    not_pending,   ///< no attempt of this task waits for a result here
    wrong_attempt, ///< an attempt waits, but not the one reported (a late report)
    forwarded,     ///< sent to the other nodes, none of which said yet what it did with it
    unavailable,   ///< it had to go to the other nodes, and could not be sent (store down)
};

/// Receives the results reported for callbacks that answered 202.
class result_sink {
public:
    virtual ~result_sink() = default;

    /// Reports `outcome` for attempt `attempt` of task `id`. May be called from any of the
    /// API's threads; `handler` may be invoked on any thread (the API posts back to its own).
    virtual void deliver(std::string id, std::uint32_t attempt, timewheel::dq::outcome outcome,
                         boost::asio::any_completion_handler<void(deliver_result)> handler) = 0;
};

} // namespace timewheeld::service

#endif // TIMEWHEELD_SERVICE_RESULT_SINK_HPP
