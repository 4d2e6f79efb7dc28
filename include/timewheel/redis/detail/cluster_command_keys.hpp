//
// timewheel/redis/detail/cluster_command_keys.hpp
//
// Which arguments of a command are keys, for routing in a Redis Cluster: a table of the
// commands the durable queue and common applications use, in the shape of Redis's own COMMAND
// key specs (first, last, step), plus the numkeys rule of EVAL/EVALSHA/FCALL and the STREAMS
// rule of XREAD. Commands outside the table route as keyless (any master, which redirects with
// MOVED if the command had keys after all); cluster::async_exec takes an explicit key for them.
//

#ifndef TIMEWHEEL_REDIS_DETAIL_CLUSTER_COMMAND_KEYS_HPP
#define TIMEWHEEL_REDIS_DETAIL_CLUSTER_COMMAND_KEYS_HPP

#include <timewheel/redis/key_slot.hpp>

#include <algorithm>
#include <array>
#include <charconv>
#include <cstddef>
#include <optional>
#include <span>
#include <string_view>

namespace timewheel::redis::detail {

/// How the keys of a command are found among its arguments (argument 0 is the command name).
enum class key_rule : unsigned char {
    none,    ///< no key (PING, PUBLISH, SCRIPT LOAD...): any master serves it
    range,   ///< arguments first, first+step, ... up to last (negative: from the end)
    numkeys, ///< argument `first` is a count n, the next n arguments are keys (EVAL, FCALL)
    streams, ///< after the STREAMS keyword, the first half of the rest (XREAD, XREADGROUP)
};

struct command_key_spec {
    std::string_view name; // upper case
    key_rule rule;
    int first = 0;
    int last = 0;
    int step = 1;
};

// Sorted by name for binary search. `last` follows COMMAND INFO: -1 is the last argument, -2
// the one before it.
inline constexpr std::array command_key_specs = std::to_array<command_key_spec>({
    {"APPEND", key_rule::range, 1, 1, 1},
    {"BITCOUNT", key_rule::range, 1, 1, 1},
    {"COPY", key_rule::range, 1, 2, 1},
    {"DECR", key_rule::range, 1, 1, 1},
    {"DECRBY", key_rule::range, 1, 1, 1},
    {"DEL", key_rule::range, 1, -1, 1},
    {"ECHO", key_rule::none},
    {"EVAL", key_rule::numkeys, 2},
    {"EVALSHA", key_rule::numkeys, 2},
    {"EVALSHA_RO", key_rule::numkeys, 2},
    {"EVAL_RO", key_rule::numkeys, 2},
    {"EXISTS", key_rule::range, 1, -1, 1},
    {"EXPIRE", key_rule::range, 1, 1, 1},
    {"EXPIREAT", key_rule::range, 1, 1, 1},
    {"FCALL", key_rule::numkeys, 2},
    {"FCALL_RO", key_rule::numkeys, 2},
    {"FUNCTION", key_rule::none},
    {"GET", key_rule::range, 1, 1, 1},
    {"GETDEL", key_rule::range, 1, 1, 1},
    {"GETEX", key_rule::range, 1, 1, 1},
    {"GETSET", key_rule::range, 1, 1, 1},
    {"HDEL", key_rule::range, 1, 1, 1},
    {"HEXISTS", key_rule::range, 1, 1, 1},
    {"HGET", key_rule::range, 1, 1, 1},
    {"HGETALL", key_rule::range, 1, 1, 1},
    {"HINCRBY", key_rule::range, 1, 1, 1},
    {"HKEYS", key_rule::range, 1, 1, 1},
    {"HLEN", key_rule::range, 1, 1, 1},
    {"HMGET", key_rule::range, 1, 1, 1},
    {"HMSET", key_rule::range, 1, 1, 1},
    {"HSET", key_rule::range, 1, 1, 1},
    {"HSETNX", key_rule::range, 1, 1, 1},
    {"HVALS", key_rule::range, 1, 1, 1},
    {"INCR", key_rule::range, 1, 1, 1},
    {"INCRBY", key_rule::range, 1, 1, 1},
    {"INFO", key_rule::none},
    {"LLEN", key_rule::range, 1, 1, 1},
    {"LPOP", key_rule::range, 1, 1, 1},
    {"LPUSH", key_rule::range, 1, 1, 1},
    {"LRANGE", key_rule::range, 1, 1, 1},
    {"MGET", key_rule::range, 1, -1, 1},
    {"MSET", key_rule::range, 1, -1, 2},
    {"MSETNX", key_rule::range, 1, -1, 2},
    {"PERSIST", key_rule::range, 1, 1, 1},
    {"PEXPIRE", key_rule::range, 1, 1, 1},
    {"PEXPIREAT", key_rule::range, 1, 1, 1},
    {"PING", key_rule::none},
    {"PSETEX", key_rule::range, 1, 1, 1},
    {"PTTL", key_rule::range, 1, 1, 1},
    {"PUBLISH", key_rule::none}, // a Cluster broadcasts classic Pub/Sub from any node
    {"RENAME", key_rule::range, 1, 2, 1},
    {"RPOP", key_rule::range, 1, 1, 1},
    {"RPUSH", key_rule::range, 1, 1, 1},
    {"SADD", key_rule::range, 1, 1, 1},
    {"SCARD", key_rule::range, 1, 1, 1},
    {"SCRIPT", key_rule::none},
    {"SET", key_rule::range, 1, 1, 1},
    {"SETEX", key_rule::range, 1, 1, 1},
    {"SETNX", key_rule::range, 1, 1, 1},
    {"SISMEMBER", key_rule::range, 1, 1, 1},
    {"SMEMBERS", key_rule::range, 1, 1, 1},
    {"SPUBLISH", key_rule::range, 1, 1, 1}, // the shard channel is the key
    {"SREM", key_rule::range, 1, 1, 1},
    {"SSUBSCRIBE", key_rule::range, 1, -1, 1},
    {"STRLEN", key_rule::range, 1, 1, 1},
    {"SUNSUBSCRIBE", key_rule::range, 1, -1, 1},
    {"TIME", key_rule::none},
    {"TTL", key_rule::range, 1, 1, 1},
    {"TYPE", key_rule::range, 1, 1, 1},
    {"UNLINK", key_rule::range, 1, -1, 1},
    {"XACK", key_rule::range, 1, 1, 1},
    {"XADD", key_rule::range, 1, 1, 1},
    {"XDEL", key_rule::range, 1, 1, 1},
    {"XLEN", key_rule::range, 1, 1, 1},
    {"XRANGE", key_rule::range, 1, 1, 1},
    {"XREAD", key_rule::streams},
    {"XREADGROUP", key_rule::streams},
    {"XREVRANGE", key_rule::range, 1, 1, 1},
    {"XTRIM", key_rule::range, 1, 1, 1},
    {"ZADD", key_rule::range, 1, 1, 1},
    {"ZCARD", key_rule::range, 1, 1, 1},
    {"ZCOUNT", key_rule::range, 1, 1, 1},
    {"ZINCRBY", key_rule::range, 1, 1, 1},
    {"ZMSCORE", key_rule::range, 1, 1, 1},
    {"ZPOPMIN", key_rule::range, 1, 1, 1},
    {"ZRANGE", key_rule::range, 1, 1, 1},
    {"ZRANGEBYSCORE", key_rule::range, 1, 1, 1},
    {"ZRANGESTORE", key_rule::range, 1, 2, 1},
    {"ZRANK", key_rule::range, 1, 1, 1},
    {"ZREM", key_rule::range, 1, 1, 1},
    {"ZREMRANGEBYRANK", key_rule::range, 1, 1, 1},
    {"ZREMRANGEBYSCORE", key_rule::range, 1, 1, 1},
    {"ZREVRANGE", key_rule::range, 1, 1, 1},
    {"ZREVRANGEBYSCORE", key_rule::range, 1, 1, 1},
    {"ZSCORE", key_rule::range, 1, 1, 1},
});

constexpr bool command_key_specs_sorted() {
    for (std::size_t i = 1; i < command_key_specs.size(); ++i)
        if (!(command_key_specs[i - 1].name < command_key_specs[i].name))
            return false;
    return true;
}
static_assert(command_key_specs_sorted(), "command_key_specs must stay sorted by name");

/// The spec of command @p name (any case), or nullptr when the table does not know it.
inline command_key_spec const* find_command_key_spec(std::string_view name) noexcept {
    constexpr std::size_t longest = 24;
    if (name.empty() || name.size() > longest)
        return nullptr;
    char upper[longest];
    for (std::size_t i = 0; i < name.size(); ++i) {
        char const c = name[i];
        upper[i] = (c >= 'a' && c <= 'z') ? static_cast<char>(c - 'a' + 'A') : c;
    }
    std::string_view const key(upper, name.size());
    auto const it = std::lower_bound(
        command_key_specs.begin(), command_key_specs.end(), key,
        [](command_key_spec const& spec, std::string_view n) { return spec.name < n; });
    if (it == command_key_specs.end() || it->name != key)
        return nullptr;
    return &*it;
}

/// What routing needs to know about one command.
struct command_route {
    enum kind_type : unsigned char {
        keyless,    ///< no key: any master
        keyed,      ///< every key is in `slot`
        cross_slot, ///< keys in different slots: refused client-side
        malformed,  ///< the arguments do not fit the key spec (e.g. numkeys too large)
    } kind = keyless;
    std::uint16_t slot = 0;
};

/// Calls @p f(key) for every key of the command @p args (args[0] is the name), following the
/// table; returns false when the arguments do not fit the spec. Unknown commands have no keys.
template <typename Arg, typename F>
bool for_each_command_key(std::span<Arg const> args, F&& f) {
    if (args.empty())
        return true;
    auto const* spec = find_command_key_spec(std::string_view(args[0]));
    if (spec == nullptr)
        return true;
    int const argc = static_cast<int>(args.size());
    switch (spec->rule) {
    case key_rule::none:
        return true;
    case key_rule::range: {
        int const last = spec->last < 0 ? argc + spec->last : spec->last;
        if (spec->first >= argc || last >= argc)
            return false;
        for (int i = spec->first; i <= last; i += spec->step)
            f(std::string_view(args[static_cast<std::size_t>(i)]));
        return true;
    }
    case key_rule::numkeys: {
        if (spec->first >= argc)
            return false;
        std::string_view const count = args[static_cast<std::size_t>(spec->first)];
        int n = 0;
        auto const [end, ec] = std::from_chars(count.data(), count.data() + count.size(), n);
        if (ec != std::errc{} || end != count.data() + count.size() || n < 0 ||
            n > argc - spec->first - 1)
            return false;
        for (int i = 0; i < n; ++i)
            f(std::string_view(args[static_cast<std::size_t>(spec->first + 1 + i)]));
        return true;
    }
    case key_rule::streams: {
        int at = 1;
        auto is_streams = [](std::string_view a) {
            constexpr std::string_view word = "STREAMS";
            return a.size() == word.size() &&
                   std::equal(a.begin(), a.end(), word.begin(),
                              [](char x, char y) { return (x & ~0x20) == y; });
        };
        while (at < argc && !is_streams(std::string_view(args[static_cast<std::size_t>(at)])))
            ++at;
        int const rest = argc - at - 1;
        if (at >= argc || rest <= 0 || rest % 2 != 0)
            return false;
        for (int i = 0; i < rest / 2; ++i)
            f(std::string_view(args[static_cast<std::size_t>(at + 1 + i)]));
        return true;
    }
    }
    return true;
}

/// Where the command @p args goes in a Cluster: the slot of its keys, any master when it has
/// none, or why it cannot be sent.
template <typename Arg>
command_route route_command(std::span<Arg const> args) {
    command_route route;
    bool const fits = for_each_command_key(args, [&](std::string_view key) {
        auto const s = key_slot(key);
        if (route.kind == command_route::keyless) {
            route.kind = command_route::keyed;
            route.slot = s;
        } else if (route.kind == command_route::keyed && route.slot != s) {
            route.kind = command_route::cross_slot;
        }
    });
    if (!fits)
        route.kind = command_route::malformed;
    return route;
}

} // namespace timewheel::redis::detail

#endif // TIMEWHEEL_REDIS_DETAIL_CLUSTER_COMMAND_KEYS_HPP
