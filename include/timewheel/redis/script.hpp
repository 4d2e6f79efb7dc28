//
// timewheel/redis/script.hpp
//
// A Lua script known by its SHA1. Requests call it with EVALSHA; when the server answers
// NOSCRIPT (first use, SCRIPT FLUSH, or a restart without persistence) the connection sends
// the body with EVAL in its place, which also loads it, and the caller sees only the result.
//

#ifndef TIMEWHEEL_REDIS_SCRIPT_HPP
#define TIMEWHEEL_REDIS_SCRIPT_HPP

#include <string>
#include <string_view>

namespace timewheel::redis {

/// A Lua script and its SHA1, computed once on construction.
/**
 * @code
 * static const redis::script incr_by(R"(return redis.call('INCRBY', KEYS[1], ARGV[1]))");
 * redis::request req;
 * req.push_script(incr_by, 1, "counter", 5); // EVALSHA <sha1> 1 counter 5
 * @endcode
 *
 * A script must outlive every request that calls it until that request completes (scripts
 * are usually static objects).
 */
class script {
public:
    /// Keeps the body and computes its SHA1.
    explicit script(std::string body);

    /// The Lua source.
    const std::string& body() const noexcept { return body_; }

    /// The SHA1 of the body as 40 lower-case hex digits, as EVALSHA and SCRIPT LOAD use it.
    std::string_view sha1() const noexcept { return {sha1_, 40}; }

private:
    std::string body_;
    char sha1_[40];
};

} // namespace timewheel::redis

#endif // TIMEWHEEL_REDIS_SCRIPT_HPP
