//
// timewheel/redis/error.hpp
//
// The errors of the Redis client: an error_code enum with its own category, whose messages
// name the failure, and server_error, the exception that carries the text of a server's error
// reply ("ERR wrong number of arguments...", "WRONGTYPE ...", "NOSCRIPT ...").
//

#ifndef TIMEWHEEL_REDIS_ERROR_HPP
#define TIMEWHEEL_REDIS_ERROR_HPP

#include <boost/system/error_code.hpp>
#include <boost/system/system_error.hpp>

#include <ostream>
#include <string>
#include <string_view>
#include <type_traits>

namespace timewheel::redis {

/// What went wrong, as a boost::system::error_code in redis::error_category().
/**
 * Cancellation is reported as boost::asio::error::operation_aborted, as in Asio; everything
 * else the client reports is one of these.
 */
enum class error {
    /// The connection was lost (reset, closed by the server, or declared dead by the health
    /// check) after the request was written and before all of its replies arrived. The
    /// request may or may not have been executed by the server.
    connection_lost = 1,

    /// The request's timeout (config::request_timeout) passed before its replies arrived.
    /// If it had been written, its replies are read and discarded when they come.
    request_timeout,

    /// Connecting did not finish within config::connect_timeout.
    connect_timeout,

    /// The server refused the connection set-up: AUTH, SELECT or CLIENT SETNAME failed.
    handshake_failed,

    /// The bytes received are not valid RESP; the connection is closed and re-opened.
    protocol_error,

    /// The server answered with an error reply (its text is in the reply and in
    /// server_error::what()).
    server_error,

    /// A reply was read as a type it does not have (for example a bulk string as an integer).
    unexpected_type,

    /// A reply was read as a value but it is nil.
    nil_reply,

    /// A reply or element index is out of range.
    index_out_of_range,

    /// The connection was closed by its owner (connection::close() or its destructor), or was
    /// lost with config::reconnect off.
    closed,

    /// No Sentinel of config::sentinels gave the master's address (unreachable, silent, or
    /// an answer that is not an address, or the master is unknown to them).
    no_master,

    /// The server the connection reached is not a master (its ROLE says replica or sentinel):
    /// an old master back as a replica after a failover. The connection is re-opened.
    not_master,
};

/// The category of redis::error values; its name is "timewheel.redis".
const boost::system::error_category& error_category() noexcept;

/// Makes an error_code from a redis::error (found by argument-dependent lookup).
inline boost::system::error_code make_error_code(error e) noexcept {
    return {static_cast<int>(e), error_category()};
}

/// Writes the message of `e` (for logs and test diagnostics).
inline std::ostream& operator<<(std::ostream& os, error e) {
    return os << make_error_code(e).message();
}

/// The exception thrown when a reply that is a server error is read as a value.
/**
 * code() is redis::error::server_error; what() starts with the server's own text, e.g.
 * "WRONGTYPE Operation against a key holding the wrong kind of value".
 */
class server_error : public boost::system::system_error {
public:
    explicit server_error(std::string_view server_message)
        : boost::system::system_error(make_error_code(error::server_error),
                                      std::string(server_message))
        , server_message_(server_message) {}

    /// The text of the server's error reply, exactly as sent (without the leading '-').
    const std::string& server_message() const noexcept { return server_message_; }

private:
    std::string server_message_;
};

} // namespace timewheel::redis

/// @cond
template <>
struct boost::system::is_error_code_enum<timewheel::redis::error> : std::true_type {};
/// @endcond

#endif // TIMEWHEEL_REDIS_ERROR_HPP
