//
// timewheel/redis/detail/op_base.hpp
//
// What the connection keeps of a request in flight: the request and the response it fills,
// its place in the queues, its deadline and, when the server answered NOSCRIPT or "Function
// not found", the commands resent in place of the failed ones (EVAL for an EVALSHA, the same
// FCALL behind a new FUNCTION LOAD). The completion is a function pointer, so
// that the connection is not a template: exec_op (a user's request) and the connection's own
// requests (handshake, PING, SUBSCRIBE) complete differently.
//

#ifndef TIMEWHEEL_REDIS_DETAIL_OP_BASE_HPP
#define TIMEWHEEL_REDIS_DETAIL_OP_BASE_HPP

#include <timewheel/redis/request.hpp>
#include <timewheel/redis/response.hpp>

#include <boost/intrusive/list_hook.hpp>
#include <boost/system/error_code.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace timewheel::redis::detail {

class connection_impl;

class op_base : public boost::intrusive::list_base_hook<> {
public:
    /// Completes the operation. `post` is true when the caller may be inside the initiating
    /// function or a cancellation handler: the handler must then be posted, not dispatched.
    using complete_fn = void (*)(op_base*, boost::system::error_code, std::size_t, bool post);

    enum class state : std::uint8_t {
        idle,     // not in the connection
        queued,   // waiting to be written (in the pending list)
        awaiting, // written, waiting for replies (in the awaiting ring)
        done,     // completed or completion posted
    };

    explicit op_base(complete_fn fn) noexcept
        : complete_(fn) {}

    void complete(boost::system::error_code ec, std::size_t n, bool post) {
        complete_(this, ec, n, post);
    }

    const request* req_ = nullptr;
    response* resp_ = nullptr;               // null: replies are read and dropped
    std::shared_ptr<connection_impl> owner_; // keeps the connection alive for cancellation
    std::chrono::steady_clock::time_point deadline_{};
    std::uint64_t seq_ = 0;                   // position in the awaiting ring
    std::size_t replies_ = 0;                 // replies expected for what is being sent
    std::size_t received_ = 0;                // replies received in the first pass
    std::size_t next_script_ = 0;             // cursor in req_->script_calls()
    std::vector<std::size_t> retry_commands_; // answered NOSCRIPT or "Function not found"
    std::string retry_payload_;               // what is resent: EVAL forms, FCALLs
    state state_ = state::idle;
    bool has_deadline_ = false;
    bool retrying_ = false;
    bool handshake_ = false; // may be written before the handshake ends

private:
    complete_fn complete_;
};

} // namespace timewheel::redis::detail

#endif // TIMEWHEEL_REDIS_DETAIL_OP_BASE_HPP
