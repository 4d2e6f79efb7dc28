//
// fuzz/cron_expression.cpp
//
// cron::schedule::parse (the expression parser, the zone lookup) and next_after/local_time on
// what it accepts. The first byte picks a zone (one of a few, or the next bytes up to a NUL
// as a name), the next 8 bytes are an instant, the rest is the expression.
// Invariants:
//   - parse either gives a schedule or throws parse_error (field 0-6, position within the
//     text, a message that names the field as written when field > 0) or unknown_zone;
//   - next_after(t) is strictly after t, and next_after of it again strictly after that;
//   - local_time formats any instant (an ISO 8601 date and time, then an offset);
//   - parsing the same text twice gives the same answers.
//
#include "check.hpp"

#include <timewheel/cron/schedule.hpp>

#include <array>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

namespace {

namespace cron = timewheel::cron;

constexpr std::array<const char*, 7> zones{"UTC",          "Europe/Berlin",  "Australia/Lord_Howe",
                                           "Pacific/Apia", "Asia/Kathmandu", "America/Santiago",
                                           "Mars/Olympus"};

const char* const field_names[] = {"",          "field 1 (", "field 2 (", "field 3 (",
                                   "field 4 (", "field 5 (", "field 6 ("};

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size < 9)
        return 0;
    std::string zone = zones[data[0] % zones.size()];
    std::size_t at = 1;
    if (data[0] >= 0xF0) { // a zone name from the input
        const auto* end = static_cast<const std::uint8_t*>(std::memchr(data + 1, 0, size - 1));
        const std::size_t n = end != nullptr ? static_cast<std::size_t>(end - data) - 1 : 0;
        zone.assign(reinterpret_cast<const char*>(data + 1), n);
        at = 1 + n + (end != nullptr ? 1 : 0);
    }
    if (size < at + 8)
        return 0;
    std::int64_t raw = 0;
    std::memcpy(&raw, data + at, 8);
    at += 8;
    // Instants from year -10000 to 12000: beyond the search's bounds on both sides.
    constexpr std::int64_t span = 22000LL * 366 * 86400 * 1000;
    const cron::time_point t{std::chrono::milliseconds{
        static_cast<std::int64_t>(static_cast<std::uint64_t>(raw) % span) - span / 22 * 12}};
    const std::string_view text(reinterpret_cast<const char*>(data + at), size - at);
    try {
        const auto s = cron::schedule::parse(text, zone);
        const auto again = cron::schedule::parse(text, zone);
        FUZZ_CHECK(!s.is_interval(), "a cron expression is not an interval");
        const auto n = s.next_after(t);
        FUZZ_CHECK(n == again.next_after(t), "the same text gives the same answer");
        if (n) {
            FUZZ_CHECK(*n > t, "next_after is strictly after");
            const auto m = s.next_after(*n);
            FUZZ_CHECK(!m || *m > *n, "the occurrence after is strictly after");
            const std::string local = s.local_time(*n);
            // YYYY-MM-DDTHH:MM:SS+HH:MM; the year may be signed or longer than 4 digits (the
            // search reaches back to year -30000 when asked from further back).
            const std::size_t date_end = local.find('T');
            FUZZ_CHECK(date_end != std::string::npos && date_end >= 10 &&
                           local.size() >= date_end + 15 &&
                           (local[date_end + 9] == '+' || local[date_end + 9] == '-' ||
                            local[date_end + 9] == '.'),
                       "local_time is a date, a time and an offset");
        }
        const std::string local = s.local_time(t);
        FUZZ_CHECK(!local.empty(), "local_time formats any instant");
    } catch (const cron::parse_error& e) {
        FUZZ_CHECK(e.field() >= 0 && e.field() <= 6, "the field is 0 to 6");
        FUZZ_CHECK(e.position() <= text.size(), "the position is within the text");
        const std::string what = e.what();
        FUZZ_CHECK(!what.empty(), "a refusal says why");
        if (e.field() > 0)
            FUZZ_CHECK(what.rfind(field_names[e.field()], 0) == 0,
                       "the message names the field as written");
    } catch (const cron::unknown_zone& e) {
        FUZZ_CHECK(std::string(e.what()).rfind("unknown time zone \"", 0) == 0,
                   "an unknown zone is named");
    }
    return 0;
}
