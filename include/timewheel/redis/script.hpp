//
// timewheel/redis/script.hpp
//
// A Lua script known by its SHA1. Requests call it with EVALSHA; when the server answers
// NOSCRIPT (first use, SCRIPT FLUSH, or a restart without persistence) the connection sends
// the body with EVAL in its place, which also loads it, and the caller sees only the result.
//
// A Lua library of Redis Functions (Redis 7.0 or later): loaded once per connection with
// FUNCTION LOAD, its functions called with FCALL. Its code runs once, at load, so helpers it
// defines are made once, not on every call as a script's are.
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

/// A library of Redis Functions, named after a hash of its code.
/**
 * The name is `<prefix>_<first 12 hex digits of the code's SHA1>`: two versions of a program
 * on one Redis (a rolling upgrade) each load their own library. The body sent with FUNCTION
 * LOAD is `#!lua name=NAME`, then `local LIBRARY = 'NAME'` (NAME being that name), then the
 * code: the code registers its functions under names that start with LIBRARY, so that they
 * do not clash across versions either (function names are global in Redis).
 *
 * @code
 * static const redis::library lib("counters", R"(
 *   redis.register_function(LIBRARY .. '_incr', function(keys, args)
 *     return redis.call('INCRBY', keys[1], args[1])
 *   end))");
 * static const std::string incr = lib.function_name("incr");
 * redis::request req;
 * req.push_fcall(lib, incr, 1, "counter", 5); // FCALL counters_<hash>_incr 1 counter 5
 * @endcode
 *
 * A redis::connection sends FUNCTION LOAD ahead of the first FCALL of a library on each
 * connection (an "already exists" answer is harmless), and once more, with the call resent,
 * when the server answers "Function not found" (FUNCTION FLUSH, a restart without
 * persistence, a failover to a node that lacks it). A library must outlive every request that
 * calls it until that request completes (libraries are usually static objects).
 */
class library {
public:
    /// Builds the name and the body from `prefix` (letters, digits, '_') and the Lua code.
    library(std::string_view prefix, std::string_view code);

    /// `<prefix>_<12 hex digits>`.
    const std::string& name() const noexcept { return name_; }

    /// What FUNCTION LOAD sends: the shebang line, the LIBRARY local, the code.
    const std::string& body() const noexcept { return body_; }

    /// `NAME_FUNCTION` (the library's name, `_`, `function`): the name the code registers
    /// `function` under.
    std::string function_name(std::string_view function) const;

private:
    std::string name_;
    std::string body_;
};

} // namespace timewheel::redis

#endif // TIMEWHEEL_REDIS_SCRIPT_HPP
