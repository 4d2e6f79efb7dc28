//
// timewheel/redis/detail/cluster_commands.hpp
//
// Reads the commands of a formatted request back: a request keeps its commands as one RESP
// buffer, and the Cluster client must see each command's arguments to route it by key.
//

#ifndef TIMEWHEEL_REDIS_DETAIL_CLUSTER_COMMANDS_HPP
#define TIMEWHEEL_REDIS_DETAIL_CLUSTER_COMMANDS_HPP

#include <charconv>
#include <cstddef>
#include <string_view>
#include <vector>

namespace timewheel::redis::detail {

/// One command of a RESP payload: its bytes and its arguments (views into the payload).
struct cluster_command {
    std::size_t begin = 0;
    std::size_t end = 0;
    std::vector<std::string_view> args;
};

/// Reads the command at @p pos of @p payload (a RESP array of bulk strings, as a request
/// formats it) into @p out and returns true, or returns false when the bytes are not one.
inline bool read_command(std::string_view payload, std::size_t pos, cluster_command& out) {
    auto read_number = [&](char marker, std::size_t& n) {
        if (pos >= payload.size() || payload[pos] != marker)
            return false;
        auto const eol = payload.find("\r\n", pos + 1);
        if (eol == std::string_view::npos)
            return false;
        auto const [end, ec] = std::from_chars(payload.data() + pos + 1, payload.data() + eol, n);
        if (ec != std::errc{} || end != payload.data() + eol)
            return false;
        pos = eol + 2;
        return true;
    };
    out.begin = pos;
    out.args.clear();
    std::size_t count = 0;
    if (!read_number('*', count))
        return false;
    for (std::size_t i = 0; i < count; ++i) {
        std::size_t length = 0;
        if (!read_number('$', length) || payload.size() - pos < length + 2 ||
            payload.substr(pos + length, 2) != "\r\n")
            return false;
        out.args.push_back(payload.substr(pos, length));
        pos += length + 2;
    }
    out.end = pos;
    return true;
}

} // namespace timewheel::redis::detail

#endif // TIMEWHEEL_REDIS_DETAIL_CLUSTER_COMMANDS_HPP
