//
// fuzz/rfc3339.cpp
//
// timewheeld::service::parse_rfc3339 and format_rfc3339 (due_at of the API, the times of its
// answers). The input is a string to parse; its first 8 bytes are also a time to format.
// Invariants:
//   - parse either throws std::invalid_argument (with a message) or gives a time in
//     [1970-01-01, dq::max_due];
//   - format(parse(s)) parses back to the same time, and formats to the same text;
//   - any time in that range formats to text that parses back to it.
//
#include "check.hpp"

#include <timewheeld/service/task_json.hpp>

#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <string_view>

namespace {

namespace service = timewheeld::service;
namespace dq = timewheel::dq;

void round_trip(dq::time_point t) {
    const std::string text = service::format_rfc3339(t);
    FUZZ_CHECK(text.size() == 24 && text[10] == 'T' && text.back() == 'Z',
               "format_rfc3339 gives YYYY-MM-DDTHH:MM:SS.mmmZ");
    dq::time_point back{};
    try {
        back = service::parse_rfc3339(text);
    } catch (const std::invalid_argument&) {
        FUZZ_CHECK(false, "a formatted time parses");
    }
    FUZZ_CHECK(back == t, "format then parse gives the same time");
    FUZZ_CHECK(service::format_rfc3339(back) == text, "formatting is stable");
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string_view s(reinterpret_cast<const char*>(data), size);
    try {
        const auto t = service::parse_rfc3339(s);
        FUZZ_CHECK(t >= dq::time_point{} && t <= dq::max_due, "a parsed time is in range");
        round_trip(t);
    } catch (const std::invalid_argument& e) {
        FUZZ_CHECK(std::strlen(e.what()) > 0, "a refusal says why");
    }
    if (size >= 8) {
        std::uint64_t raw = 0;
        std::memcpy(&raw, data, 8);
        const auto span = static_cast<std::uint64_t>(dq::max_due.time_since_epoch().count()) + 1;
        round_trip(dq::time_point(dq::duration(static_cast<std::int64_t>(raw % span))));
    }
    return 0;
}
