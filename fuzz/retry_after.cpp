//
// fuzz/retry_after.cpp
//
// timewheeld::callback::parse_retry_after: a receiver's Retry-After header, hostile bytes.
// The first 4 bytes are `now` (seconds since 1970, so any time to 2106), the rest the
// header's value. Invariants (besides no UB, which UBSan checks):
//   - an answer is never negative, and never more than 2^31 s (the cap of delta-seconds);
//   - a value of digits alone is delta-seconds: the number itself (capped), whatever `now`;
//   - a date gives the same instant whatever `now`: now + wait is the same for two nows
//     before it (to the second, as the wait is rounded up).
//
#include "check.hpp"

#include <timewheeld/callback/retry_after.hpp>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <string_view>

namespace cb = timewheeld::callback;
using namespace std::chrono;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size < 4) {
        return 0;
    }
    std::uint32_t secs = 0;
    std::memcpy(&secs, data, 4);
    const system_clock::time_point now{seconds(secs)};
    const std::string_view value(reinterpret_cast<const char*>(data + 4), size - 4);

    const auto wait = cb::parse_retry_after(value, now);
    if (!wait) {
        return 0;
    }
    constexpr seconds most{std::int64_t{1} << 31};
    FUZZ_CHECK(*wait >= seconds(0), "never a negative wait");

    auto trimmed = value;
    while (!trimmed.empty() && (trimmed.front() == ' ' || trimmed.front() == '\t')) {
        trimmed.remove_prefix(1);
    }
    while (!trimmed.empty() && (trimmed.back() == ' ' || trimmed.back() == '\t')) {
        trimmed.remove_suffix(1);
    }
    const bool delta = std::all_of(trimmed.begin(), trimmed.end(), [](char c) {
        return std::isdigit(static_cast<unsigned char>(c));
    });
    if (delta) {
        FUZZ_CHECK(*wait <= most, "delta-seconds are capped");
        // The number, capped: compare without overflowing on long inputs.
        const auto digits =
            trimmed.substr(std::min(trimmed.find_first_not_of('0'), trimmed.size()));
        std::int64_t n = 0;
        bool big = digits.size() > 10;
        for (const char c : digits.substr(0, std::min<std::size_t>(digits.size(), 10))) {
            n = n * 10 + (c - '0');
        }
        if (big || n > most.count()) {
            n = most.count();
        }
        FUZZ_CHECK(wait->count() == n, "delta-seconds are the number given");
        return 0;
    }
    // A date: the instant it names does not depend on `now` (short of the cap, which a date
    // past 2038 or so reaches from any now).
    FUZZ_CHECK(*wait <= most, "a date's wait is capped");
    if (*wait > seconds(0) && *wait + seconds(3600) < most) {
        const auto when = now + *wait; // within a second after the date (rounded up)
        const auto earlier = now - seconds(3600);
        const auto wait2 = cb::parse_retry_after(value, earlier);
        FUZZ_CHECK(wait2.has_value(), "a date parses whatever now is");
        FUZZ_CHECK(earlier + *wait2 == when, "a date names one instant");
    }
    return 0;
}
