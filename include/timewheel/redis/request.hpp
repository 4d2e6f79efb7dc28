//
// timewheel/redis/request.hpp
//
// A request: one or more Redis commands, formatted in RESP into one buffer as they are
// pushed, sent together, and answered by one reply each, in order. Arguments are
// binary-safe: strings and string_views (embedded NULs and any bytes), integers and
// floating-point numbers (written as Redis reads them). A request is reusable: clear() keeps
// its buffer, so a request pushed and sent in a loop allocates nothing once warm.
//

#ifndef TIMEWHEEL_REDIS_REQUEST_HPP
#define TIMEWHEEL_REDIS_REQUEST_HPP

#include <timewheel/redis/script.hpp>

#include <charconv>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <ranges>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

namespace timewheel::redis {

/// A type that can be an argument of a command: bytes (anything convertible to
/// std::string_view), an integer, or a floating-point number. bool is written as 0 or 1.
template <typename T>
concept argument =
    std::convertible_to<const T&, std::string_view> || std::integral<T> || std::floating_point<T>;

/// Commands to send together, formatted in RESP as they are pushed.
/**
 * @code
 * redis::request req;
 * req.push("SET", "key", value);              // value: any bytes
 * req.push("INCRBY", "counter", 5);
 * req.push("GET", "key");
 * req.push_range("RPUSH", "list", items);     // items: a range of arguments
 * @endcode
 *
 * Each command gets exactly one reply. Commands that change the protocol state of the
 * connection (SUBSCRIBE and its kin, MONITOR, RESET, HELLO, QUIT, and blocking commands that
 * hold the connection) must not be sent on a redis::connection: use redis::subscriber for
 * pub/sub. MULTI/EXEC is fine (each of MULTI, the queued commands and EXEC gets its reply).
 *
 * @par Thread Safety
 * @e Distinct @e objects: Safe.@n
 * @e Shared @e objects: Unsafe. A request must not be changed, and must stay alive, while an
 * async_exec that was given it is outstanding.
 */
class request {
public:
    /// A command that calls a script with EVALSHA or a function with FCALL: where it sits in
    /// the payload, so that the connection can resend it as EVAL when the server answers
    /// NOSCRIPT, or load the function's library ahead of it (and resend it when the server
    /// answers "Function not found").
    struct script_call {
        std::size_t command;         ///< index of the command in the request
        std::size_t begin;           ///< offset of the command in payload()
        std::size_t rest;            ///< offset of the numkeys argument (after the SHA1 or name)
        std::size_t end;             ///< offset one past the command
        const redis::script* script; ///< EVALSHA's script, or null
        const redis::library* library = nullptr; ///< FCALL's library, or null
    };

    request() = default;

    /// Appends one command; `command` is its name ("SET") or its first word.
    template <argument... Args>
    request& push(std::string_view command, const Args&... args) {
        append_header(1 + sizeof...(Args));
        append_arg(command);
        (append_arg(args), ...);
        ++commands_;
        return *this;
    }

    /// Appends one command whose arguments are a range (a vector of strings, of integers...).
    template <std::ranges::forward_range Range>
    requires argument<std::ranges::range_value_t<Range>> request&
    push_range(std::string_view command, const Range& args) {
        append_header(1 + static_cast<std::size_t>(std::ranges::distance(args)));
        append_arg(command);
        for (const auto& a : args) {
            append_arg(a);
        }
        ++commands_;
        return *this;
    }

    /// Appends one command with a key followed by a range of arguments ("RPUSH key a b c").
    template <std::ranges::forward_range Range>
    requires argument<std::ranges::range_value_t<Range>> request&
    push_range(std::string_view command, std::string_view key, const Range& args) {
        append_header(2 + static_cast<std::size_t>(std::ranges::distance(args)));
        append_arg(command);
        append_arg(key);
        for (const auto& a : args) {
            append_arg(a);
        }
        ++commands_;
        return *this;
    }

    /// Appends `EVALSHA <sha1> numkeys keys_and_args...`: the first `numkeys` arguments are
    /// the keys (KEYS[1..]), the rest ARGV. A NOSCRIPT answer is handled by the connection.
    template <argument... Args>
    request& push_script(const redis::script& s, std::size_t numkeys,
                         const Args&... keys_and_args) {
        return push_call({commands_, payload_.size(), 0, 0, &s}, "EVALSHA", s.sha1(), numkeys,
                         keys_and_args...);
    }

    /// Appends `EVALSHA <sha1> <keys.size()> keys... args...` from two ranges.
    template <std::ranges::forward_range Keys, std::ranges::forward_range Args>
    requires argument<std::ranges::range_value_t<Keys>> &&
        argument<std::ranges::range_value_t<Args>>
            request& push_script_range(const redis::script& s, const Keys& keys, const Args& args) {
        return push_call_range({commands_, payload_.size(), 0, 0, &s}, "EVALSHA", s.sha1(), keys,
                               args);
    }

    /// Appends `FCALL <function> numkeys keys_and_args...`, `function` being one of the
    /// library's (library::function_name). The connection loads the library first.
    template <argument... Args>
    request& push_fcall(const redis::library& lib, std::string_view function, std::size_t numkeys,
                        const Args&... keys_and_args) {
        return push_call({commands_, payload_.size(), 0, 0, nullptr, &lib}, "FCALL", function,
                         numkeys, keys_and_args...);
    }

    /// Appends `FCALL <function> <keys.size()> keys... args...` from two ranges.
    template <std::ranges::forward_range Keys, std::ranges::forward_range Args>
    requires argument<std::ranges::range_value_t<Keys>> &&
        argument<std::ranges::range_value_t<Args>>
            request& push_fcall_range(const redis::library& lib, std::string_view function,
                                      const Keys& keys, const Args& args) {
        return push_call_range({commands_, payload_.size(), 0, 0, nullptr, &lib}, "FCALL", function,
                               keys, args);
    }

    /// The number of commands, which is the number of replies the request gets.
    std::size_t size() const noexcept { return commands_; }

    /// True when no command was pushed.
    bool empty() const noexcept { return commands_ == 0; }

    /// Removes every command and keeps the buffer's capacity.
    void clear() noexcept {
        payload_.clear();
        script_calls_.clear();
        commands_ = 0;
    }

    /// Reserves room for `bytes` bytes of formatted commands.
    void reserve(std::size_t bytes) { payload_.reserve(bytes); }

    /// The commands as formatted in RESP: what is written to the socket.
    std::string_view payload() const noexcept { return payload_; }

    /// The script and function calls among the commands, in order.
    const std::vector<script_call>& script_calls() const noexcept { return script_calls_; }

private:
    // `<verb> <name> numkeys rest...` (EVALSHA sha1, FCALL function), recorded in `call`
    // (made before the command's first byte) for the connection's resend.
    template <argument... Args>
    request& push_call(script_call call, std::string_view verb, std::string_view name,
                       std::size_t numkeys, const Args&... rest) {
        append_header(3 + sizeof...(Args));
        append_arg(verb);
        append_arg(name);
        call.rest = payload_.size();
        append_arg(numkeys);
        (append_arg(rest), ...);
        return end_call(call);
    }

    template <typename Keys, typename Args>
    request& push_call_range(script_call call, std::string_view verb, std::string_view name,
                             const Keys& keys, const Args& args) {
        const auto nkeys = static_cast<std::size_t>(std::ranges::distance(keys));
        append_header(3 + nkeys + static_cast<std::size_t>(std::ranges::distance(args)));
        append_arg(verb);
        append_arg(name);
        call.rest = payload_.size();
        append_arg(nkeys);
        for (const auto& k : keys) {
            append_arg(k);
        }
        for (const auto& a : args) {
            append_arg(a);
        }
        return end_call(call);
    }

    request& end_call(script_call call) {
        call.end = payload_.size();
        script_calls_.push_back(call);
        ++commands_;
        return *this;
    }

    void append_header(std::size_t count) {
        payload_.push_back('*');
        append_number(count);
    }

    void append_number(std::size_t n) {
        char digits[24];
        auto r = std::to_chars(digits, digits + sizeof digits, n);
        // (pointer, length), not an iterator pair: g++ 12 warns falsely (-Wrestrict) on the
        // iterator form once inlined.
        payload_.append(digits, static_cast<std::size_t>(r.ptr - digits));
        payload_.append("\r\n", 2);
    }

    void append_bytes(std::string_view bytes) {
        payload_.push_back('$');
        append_number(bytes.size());
        payload_.append(bytes.data(), bytes.size());
        payload_.append("\r\n", 2);
    }

    template <typename T>
    void append_arg(const T& value) {
        if constexpr (std::convertible_to<const T&, std::string_view>) {
            append_bytes(std::string_view(value));
        } else if constexpr (std::same_as<T, bool>) {
            append_bytes(value ? std::string_view("1") : std::string_view("0"));
        } else {
            char text[64];
            auto r = std::to_chars(text, text + sizeof text, value);
            append_bytes(std::string_view(text, static_cast<std::size_t>(r.ptr - text)));
        }
    }

    std::string payload_;
    std::vector<script_call> script_calls_;
    std::size_t commands_ = 0;
};

} // namespace timewheel::redis

#endif // TIMEWHEEL_REDIS_REQUEST_HPP
