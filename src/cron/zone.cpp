// A zone of the tz database with its rules past the last listed transition (zone.hpp).
#include "zone.hpp"

#include <timewheel/cron/schedule.hpp>

#include <date/tz.h>

#include <algorithm>
#include <array>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <string>

namespace timewheel::cron::detail {
namespace {

using namespace std::chrono;

bool digit(char c) noexcept {
    return c >= '0' && c <= '9';
}

bool read_int(std::string_view s, std::size_t& i, int& out) {
    if (i >= s.size() || !digit(s[i]))
        return false;
    out = 0;
    while (i < s.size() && digit(s[i]) && out < 10000)
        out = out * 10 + (s[i++] - '0');
    return true;
}

// [+-]hh[:mm[:ss]]
bool read_hms(std::string_view s, std::size_t& i, seconds& out) {
    int sign = 1;
    if (i < s.size() && (s[i] == '+' || s[i] == '-'))
        sign = s[i++] == '-' ? -1 : 1;
    int h = 0, m = 0, sec = 0;
    if (!read_int(s, i, h))
        return false;
    if (i < s.size() && s[i] == ':') {
        ++i;
        if (!read_int(s, i, m))
            return false;
        if (i < s.size() && s[i] == ':') {
            ++i;
            if (!read_int(s, i, sec))
                return false;
        }
    }
    out = sign * (hours{h} + minutes{m} + seconds{sec});
    return true;
}

bool read_name(std::string_view s, std::size_t& i) {
    const std::size_t start = i;
    if (i < s.size() && s[i] == '<') {
        while (i < s.size() && s[i] != '>')
            ++i;
        if (i == s.size())
            return false;
        ++i;
        return true;
    }
    while (i < s.size() && ((s[i] >= 'A' && s[i] <= 'Z') || (s[i] >= 'a' && s[i] <= 'z')))
        ++i;
    return i - start >= 3;
}

// Mm.w.d[/time]
bool read_date(std::string_view s, std::size_t& i, posix_rule::date_rule& r) {
    if (i >= s.size() || s[i] != 'M')
        return false;
    ++i;
    if (!read_int(s, i, r.month) || i >= s.size() || s[i++] != '.' || !read_int(s, i, r.week) ||
        i >= s.size() || s[i++] != '.' || !read_int(s, i, r.weekday))
        return false;
    if (r.month < 1 || r.month > 12 || r.week < 1 || r.week > 5 || r.weekday > 6)
        return false;
    r.time = hours{2};
    if (i < s.size() && s[i] == '/') {
        ++i;
        return read_hms(s, i, r.time);
    }
    return true;
}

// The day of a date rule in year y.
sys_days day_of(const posix_rule::date_rule& r, year y) {
    const year_month ym = y / month{static_cast<unsigned>(r.month)};
    const sys_days first{ym / 1};
    const int first_weekday = static_cast<int>(weekday{first}.c_encoding());
    int d = 1 + (r.weekday - first_weekday + 7) % 7 + 7 * (r.week - 1);
    const int last_day = static_cast<int>(static_cast<unsigned>((ym / last).day()));
    while (d > last_day)
        d -= 7;
    return first + days{d - 1};
}

std::string footer_of(std::string_view name) {
    const char* dir = std::getenv("TZDIR");
    const std::string path =
        std::string(dir != nullptr && *dir != '\0' ? dir : "/usr/share/zoneinfo") + "/" +
        std::string(name);
    std::ifstream in(path, std::ios::binary);
    if (!in)
        return {};
    std::string data;
    data.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    // TZif version 2 and later end with "\n<POSIX TZ>\n".
    if (data.size() < 2 || data.back() != '\n')
        return {};
    const auto start = data.rfind('\n', data.size() - 2);
    if (start == std::string::npos)
        return {};
    return data.substr(start + 1, data.size() - start - 2);
}

} // namespace

std::optional<posix_rule> parse_posix_tz(std::string_view s) {
    posix_rule r{};
    std::size_t i = 0;
    seconds value{};
    if (!read_name(s, i) || !read_hms(s, i, value))
        return std::nullopt;
    r.standard = -value; // POSIX counts west positive
    if (i == s.size() || !read_name(s, i))
        return std::nullopt; // no daylight saving
    r.daylight = r.standard + hours{1};
    if (i < s.size() && s[i] != ',') {
        if (!read_hms(s, i, value))
            return std::nullopt;
        r.daylight = -value;
    }
    if (i >= s.size() || s[i++] != ',' || !read_date(s, i, r.start) || i >= s.size() ||
        s[i++] != ',' || !read_date(s, i, r.end) || i != s.size())
        return std::nullopt;
    return r;
}

zone_rules zone_rules::find(std::string_view name) {
    // locate_zone throws std::runtime_error for a name it does not know; refuse the absurd
    // ones before asking (a name is at most a few dozen bytes of letters, digits, "/_-+"),
    // which also keeps the footer's path inside the zoneinfo directory.
    const bool plausible = !name.empty() && name.size() <= 64 && name.front() != '/' &&
                           std::all_of(name.begin(), name.end(), [](char c) {
                               return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
                                      (c >= '0' && c <= '9') || c == '/' || c == '_' || c == '-' ||
                                      c == '+';
                           });
    const date::time_zone* tz = nullptr;
    if (plausible) {
        try {
            tz = date::locate_zone(name);
        } catch (const std::runtime_error&) {
        }
    }
    if (tz == nullptr) {
        const bool long_name = name.size() > 64;
        throw unknown_zone("unknown time zone \"" + std::string(name.substr(0, 64)) +
                           (long_name ? "...\"" : "\""));
    }
    const auto last_span = tz->get_info(sys_seconds{sys_days{year{9999} / 1 / 1}});
    return zone_rules(tz, parse_posix_tz(footer_of(name)), last_span.begin);
}

span zone_rules::at(sys_seconds u) const {
    if (!tail_ || u < tail_begin_) {
        const auto info = tz_->get_info(u);
        return {info.begin, info.end, info.offset};
    }
    // After the last listed transition: the POSIX rule's transitions around u.
    const auto& r = *tail_;
    const year y = std::clamp(year_month_day{floor<days>(u)}.year(), year{-30000}, year{30000});
    std::array<std::pair<sys_seconds, seconds>, 6> changes{};
    std::size_t n = 0;
    for (year k = y - years{1}; k <= y + years{1}; k += years{1}) {
        changes[n++] = {sys_seconds{day_of(r.start, k)} + r.start.time - r.standard, r.daylight};
        changes[n++] = {sys_seconds{day_of(r.end, k)} + r.end.time - r.daylight, r.standard};
    }
    std::sort(changes.begin(), changes.end());
    span s{tail_begin_, sys_seconds::max(), tz_->get_info(tail_begin_).offset};
    for (const auto& [t, offset] : changes) {
        if (t <= tail_begin_)
            continue;
        if (t <= u) {
            s.begin = t;
            s.offset = offset;
        } else {
            s.end = t;
            break;
        }
    }
    return s;
}

wall_time zone_rules::at(local_seconds_t l) const {
    const sys_seconds as_utc{l.time_since_epoch()};
    if (!tail_ || as_utc < tail_begin_ - days{2}) {
        const auto info = tz_->get_info(date::local_seconds{l.time_since_epoch()});
        switch (info.result) {
        case date::local_info::nonexistent:
            return {wall_time::nonexistent, info.first.end};
        case date::local_info::ambiguous:
            return {wall_time::ambiguous, as_utc - info.first.offset};
        default:
            return {wall_time::unique, as_utc - info.first.offset};
        }
    }
    // The spans within a day either side hold every instant whose wall-clock time is l.
    int found = 0;
    sys_seconds first{};
    for (span s = at(as_utc - hours{26}); s.begin <= as_utc + hours{26}; s = at(s.end)) {
        const sys_seconds u = as_utc - s.offset;
        if (s.begin <= u && u < s.end && found++ == 0)
            first = u;
        if (found == 0 && s.begin + s.offset > as_utc)
            return {wall_time::nonexistent, s.begin}; // l lies before this span's first
        if (s.end == sys_seconds::max())
            break;
    }
    if (found == 0) // not reached: the spans cover every instant
        return {wall_time::unique, as_utc - at(as_utc).offset};
    return {found > 1 ? wall_time::ambiguous : wall_time::unique, first};
}

} // namespace timewheel::cron::detail
