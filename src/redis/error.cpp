//
// src/redis/error.cpp
//
// The redis::error category.
//

#include <timewheel/redis/error.hpp>

namespace timewheel::redis {

namespace {

class category final : public boost::system::error_category {
public:
    const char* name() const noexcept override { return "timewheel.redis"; }

    std::string message(int ev) const override {
        switch (static_cast<error>(ev)) {
        case error::connection_lost:
            return "the connection to the Redis server was lost before the reply arrived";
        case error::request_timeout:
            return "the Redis request timed out before its reply arrived";
        case error::connect_timeout:
            return "connecting to the Redis server timed out";
        case error::handshake_failed:
            return "the Redis server refused AUTH, SELECT or CLIENT SETNAME";
        case error::protocol_error:
            return "the Redis server sent bytes that are not valid RESP";
        case error::server_error:
            return "the Redis server answered with an error reply";
        case error::unexpected_type:
            return "the Redis reply is not of the type it was read as";
        case error::nil_reply:
            return "the Redis reply is nil";
        case error::index_out_of_range:
            return "the Redis reply index is out of range";
        case error::closed:
            return "the Redis connection was closed";
        case error::no_master:
            return "no Redis Sentinel gave the master's address";
        case error::not_master:
            return "the Redis server reached is not a master (ROLE)";
        }
        return "unknown timewheel.redis error " + std::to_string(ev);
    }
};

} // namespace

const boost::system::error_category& error_category() noexcept {
    static const category instance;
    return instance;
}

} // namespace timewheel::redis
