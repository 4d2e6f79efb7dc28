//
// fuzz/redis_topology.cpp
//
// The replies that tell the Redis clients where the servers are: CLUSTER SLOTS, read by
// `redis::detail::parse_cluster_slots` into the slot map (`cluster_slot_map::assign`), and
// SENTINEL get-master-addr-by-name, read by `redis::detail::parse_master_address`. Bytes go
// through hiredis's reader with the client's reply builder (as in redis_reply.cpp); every
// complete reply is given to both parsers. Invariants:
//   - neither parser throws, whatever the reply's types and shape;
//   - an accepted slot map has 1 to 16384 ranges, each within 0..16383, no slot twice, a
//     port in 1..65535 and a host of 1..255 bytes (an empty or "?" host is the one asked);
//     assigned to a map, each of its slots is served by its range's master and no other
//     slot is known;
//   - an accepted master address is an array of two strings, the host as sent (1..255
//     bytes), the port the decimal sent, in 1..65535.
//
#include "check.hpp"

#include <timewheel/redis/detail/cluster_slot_map.hpp>
#include <timewheel/redis/detail/connection_impl.hpp>
#include <timewheel/redis/detail/reply_reader.hpp>
#include <timewheel/redis/response.hpp>

#include <charconv>
#include <cstdint>
#include <deque>
#include <string_view>
#include <vector>

namespace {

namespace redis = timewheel::redis;
namespace rd = timewheel::redis::detail;

constexpr std::string_view asked = "asked.example";

redis::response* next_sink(void* self) {
    return &static_cast<std::deque<redis::response>*>(self)->emplace_back();
}

void check_slots(const redis::reply& r) {
    std::vector<rd::cluster_slot_range> ranges;
    if (!rd::parse_cluster_slots(r, asked, ranges)) {
        return;
    }
    FUZZ_CHECK(!ranges.empty() && ranges.size() <= redis::hash_slot_count,
               "a slot map has 1 to 16384 ranges");
    std::vector<int> range_of(redis::hash_slot_count, -1);
    for (std::size_t i = 0; i < ranges.size(); ++i) {
        const auto& x = ranges[i];
        FUZZ_CHECK(x.first <= x.last && x.last < redis::hash_slot_count, "a range is in bounds");
        FUZZ_CHECK(x.master.port > 0, "a port is 1..65535");
        FUZZ_CHECK(!x.master.host.empty() && x.master.host.size() <= 255, "a host is 1..255 bytes");
        for (unsigned s = x.first; s <= x.last; ++s) {
            FUZZ_CHECK(range_of[s] < 0, "no slot is served twice");
            range_of[s] = static_cast<int>(i);
        }
    }
    rd::cluster_slot_map map;
    map.assign(ranges);
    for (unsigned s = 0; s < redis::hash_slot_count; ++s) {
        const auto owner = map.owner(static_cast<std::uint16_t>(s));
        if (range_of[s] < 0) {
            FUZZ_CHECK(owner == rd::cluster_slot_map::unknown, "an unnamed slot is unknown");
        } else {
            FUZZ_CHECK(owner < map.nodes().size() &&
                           map.nodes()[owner] ==
                               ranges[static_cast<std::size_t>(range_of[s])].master,
                       "a slot is served by its range's master");
        }
    }
}

void check_master_address(const redis::reply& r) {
    const auto a = rd::parse_master_address(r);
    if (!a) {
        return;
    }
    FUZZ_CHECK(r.is_array() && r.size() == 2 && r[0].is_string() && r[1].is_string(),
               "an address is two strings");
    FUZZ_CHECK(a->host == r[0].as_string() && !a->host.empty() && a->host.size() <= 255,
               "the host is the one sent, 1..255 bytes");
    const auto p = r[1].as_string();
    unsigned sent = 0;
    const auto [end, ec] = std::from_chars(p.data(), p.data() + p.size(), sent);
    FUZZ_CHECK(ec == std::errc() && end == p.data() + p.size() && sent == a->port && sent > 0,
               "the port is the decimal sent, 1..65535");
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    std::deque<redis::response> replies;
    // A budget that fits a 3-master, 3-replica cluster's answer several times over.
    rd::reply_reader reader(&next_sink, &replies, 65536);
    if (!reader.feed(reinterpret_cast<const char*>(data), size)) {
        return 0;
    }
    std::size_t complete = 0;
    while (reader.next() == rd::reply_reader::result::reply) {
        ++complete;
    }
    for (std::size_t i = 0; i < complete; ++i) {
        check_slots(replies[i][0]);
        check_master_address(replies[i][0]);
    }
    return 0;
}
