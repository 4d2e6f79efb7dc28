//
// fuzz/redis_reply.cpp
//
// The Redis client's reply path: bytes from a server into hiredis's reader with timewheel's
// reply builder (detail::reply_reader, as the connection feeds it), replies built into
// redis::response, then read through the public response/reply API. The first byte sets
// how the rest is split into reads (as a socket splits it) and which replies go to a null
// sink (a cancelled request's reply: parsed and dropped). Invariants:
//   - the reader accepts or refuses the bytes without UB; after a refusal it stays refused;
//     a reply larger than the reader's budget (4 KiB here) is refused, never held;
//   - each response holds one root per reply built into it; every node's subtree ends
//     within the nodes; every string lies within the byte buffer;
//   - reading every reply through reply (type, size, operator[], as_string, as_integer...)
//     stays within the response: an array's size() elements are all there;
//   - response::append copies a reply into another response that reads the same.
//
#include "check.hpp"

#include <timewheel/redis/detail/reply_reader.hpp>
#include <timewheel/redis/response.hpp>

#include <algorithm>
#include <cstdint>
#include <deque>
#include <string_view>

namespace {

namespace redis = timewheel::redis;
using redis::detail::reply_reader;

struct sinks {
    std::deque<redis::response> responses; // one per reply built (or null when dropped)
    std::uint8_t drop_mask = 0;
    std::size_t asked = 0;
    bool last_built = false;

    static redis::response* next(void* self) {
        auto& s = *static_cast<sinks*>(self);
        const bool drop = (s.drop_mask >> (s.asked++ % 8)) & 1;
        s.last_built = !drop;
        if (drop) {
            return nullptr;
        }
        return &s.responses.emplace_back();
    }
};

// Walks reply `r` as a user would; `depth` bounds the walk (hiredis nests at most 7 deep).
void walk(const redis::reply& r, const redis::response& resp, int depth) {
    FUZZ_CHECK(depth < 64, "replies are not nested without bound");
    switch (r.type()) {
    case redis::reply_type::array: {
        const std::size_t n = r.size();
        FUZZ_CHECK(n <= resp.nodes().size(), "an array's elements are all stored");
        for (std::size_t i = 0; i < n; ++i) {
            walk(r[i], resp, depth + 1);
        }
        break;
    }
    case redis::reply_type::string:
    case redis::reply_type::status: {
        const auto s = r.as_string();
        FUZZ_CHECK(s.data() >= resp.data().data() &&
                       s.data() + s.size() <= resp.data().data() + resp.data().size(),
                   "a string lies within the byte buffer");
        break;
    }
    case redis::reply_type::error:
        FUZZ_CHECK(r.error_message().size() <= resp.data().size(), "an error's text is stored");
        break;
    case redis::reply_type::integer:
        (void)r.as_integer();
        break;
    case redis::reply_type::nil:
        FUZZ_CHECK(!r.as_optional_string(), "nil reads as nothing");
        break;
    }
}

void check_response(const redis::response& resp) {
    const auto& nodes = resp.nodes();
    for (std::size_t i = 0; i < nodes.size(); ++i) {
        FUZZ_CHECK(nodes[i].next > i && nodes[i].next <= nodes.size(),
                   "a node's subtree ends within the nodes");
        if (nodes[i].type != redis::reply_type::array) {
            FUZZ_CHECK(nodes[i].offset + nodes[i].length <= resp.data().size(),
                       "a string lies within the byte buffer");
        }
    }
    for (std::size_t i = 0; i < resp.size(); ++i) {
        walk(resp[i], resp, 0);
        redis::response copy;
        copy.append(resp[i]);
        const auto root = nodes[0].next; // the reply's subtree: nodes [0, root)
        FUZZ_CHECK(copy.size() == 1 && copy.nodes().size() == root, "append copies one reply");
        walk(copy[0], copy, 0);
    }
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size < 2) {
        return 0;
    }
    sinks s;
    s.drop_mask = data[0];
    // Reads of 1 to 16 bytes, or everything at once.
    const std::size_t chunk = data[1] % 17 == 0 ? size : data[1] % 17;
    const std::string_view bytes(reinterpret_cast<const char*>(data + 2), size - 2);

    // A small budget, so that inputs of a few KiB reach the limits of a reply too.
    reply_reader reader(&sinks::next, &s, 4096);
    std::size_t replies = 0;
    bool failed = false;
    for (std::size_t at = 0; at < bytes.size() && !failed; at += chunk) {
        const auto part = bytes.substr(at, chunk);
        if (!reader.feed(part.data(), part.size())) {
            failed = true;
            break;
        }
        for (;;) {
            const auto r = reader.next();
            if (r == reply_reader::result::protocol_error) {
                failed = true;
                break;
            }
            if (r == reply_reader::result::incomplete) {
                break;
            }
            ++replies;
        }
    }
    if (failed) {
        FUZZ_CHECK(!reader.feed("+OK\r\n", 5) ||
                       reader.next() == reply_reader::result::protocol_error,
                   "a reader in error stays in error");
    }
    // Every reply asked for a sink once; a reply still in progress asked too.
    FUZZ_CHECK(s.asked == replies || s.asked == replies + 1, "one sink per reply");
    // A reply still in progress is never read (its request is not complete).
    if (s.asked == replies + 1 && s.last_built) {
        s.responses.pop_back();
    }
    for (const auto& resp : s.responses) {
        FUZZ_CHECK(resp.size() == 1, "each reply is one root of its response");
        FUZZ_CHECK(resp.data().size() + 32 * resp.nodes().size() <= 4096,
                   "a reply stays within the reader's budget");
        check_response(resp);
    }
    return 0;
}
