#include <timewheeld/callback/retry_after.hpp>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <ctime>
#include <iomanip>
#include <locale>
#include <sstream>
#include <string>

namespace timewheeld::callback {

namespace {
std::string_view trim(std::string_view s) {
    while (!s.empty() && (s.front() == ' ' || s.front() == '\t'))
        s.remove_prefix(1);
    while (!s.empty() && (s.back() == ' ' || s.back() == '\t'))
        s.remove_suffix(1);
    return s;
}

// The three forms of RFC 9110 5.6.7, in UTC. std::get_time with the classic locale, so
// that the month and day names are English whatever the process's locale.
std::optional<std::time_t> parse_http_date(std::string_view s) {
    static const char* const formats[] = {
        "%a, %d %b %Y %H:%M:%S GMT", // IMF-fixdate
        "%A, %d-%b-%y %H:%M:%S GMT", // RFC 850
        "%a %b %d %H:%M:%S %Y",      // asctime
    };
    for (const char* f : formats) {
        std::tm tm{};
        std::istringstream in{std::string(s)};
        in.imbue(std::locale::classic());
        in >> std::get_time(&tm, f);
        if (in.fail())
            continue;
        in >> std::ws;
        if (!in.eof())
            continue;
        return timegm(&tm);
    }
    return std::nullopt;
}
} // namespace

std::optional<std::chrono::seconds> parse_retry_after(std::string_view value,
                                                      std::chrono::system_clock::time_point now) {
    value = trim(value);
    if (value.empty())
        return std::nullopt;
    // A huge wait still means "much later", within what any clock can add without
    // overflowing (68 years).
    constexpr std::int64_t most = std::int64_t{1} << 31;
    if (std::all_of(value.begin(), value.end(),
                    [](char c) { return std::isdigit(static_cast<unsigned char>(c)); })) {
        std::int64_t n = 0;
        auto [ptr, ec] = std::from_chars(value.data(), value.data() + value.size(), n);
        if (ec == std::errc::result_out_of_range || n > most)
            n = most;
        else if (ec != std::errc{} || ptr != value.data() + value.size())
            return std::nullopt;
        return std::chrono::seconds(n);
    }
    auto t = parse_http_date(value);
    if (!t)
        return std::nullopt;
    // In seconds, never as a system_clock time_point: nanoseconds since 1970 overflow in
    // 2262, and a receiver may well name the year 9999. A date is at most a few hundred
    // billion seconds away, far from overflowing an int64; the clamp keeps it sane.
    const std::int64_t when = *t;
    const std::int64_t now_s =
        std::chrono::duration_cast<std::chrono::seconds>(now.time_since_epoch()).count();
    if (when <= now_s)
        return std::chrono::seconds(0);
    // Rounded up: waiting a fraction of a second too little would come back too early; from
    // a now of 10.5 s, a date at 70 s is 60 s away (when - floor(now)).
    const auto wait = static_cast<std::uint64_t>(when) - static_cast<std::uint64_t>(now_s);
    return std::chrono::seconds(
        static_cast<std::int64_t>(std::min(wait, static_cast<std::uint64_t>(most))));
}

} // namespace timewheeld::callback
