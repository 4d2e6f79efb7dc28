// A zone of the tz database, as the cron rule reads it: the offset at an instant (the span
// of constant offset around it), and the instants of a wall-clock time.
//
// Why not the date library alone: Debian's zoneinfo files list explicit transitions up to
// 2037 and give the rule after that as a POSIX TZ string at their end
// (`CET-1CEST,M3.5.0,M10.5.0/3`), which the date library's USE_OS_TZDB reader ignores: from
// 2038 on it would keep the last listed offset all year. This reads that string once, when
// the zone is found, and applies it after the last listed transition; before it, the date
// library answers.
#ifndef TIMEWHEEL_SRC_CRON_ZONE_HPP
#define TIMEWHEEL_SRC_CRON_ZONE_HPP

#include <chrono>
#include <optional>
#include <string_view>

namespace date {
class time_zone;
}

namespace timewheel::cron::detail {

using sys_seconds = std::chrono::sys_seconds;
using local_seconds_t = std::chrono::local_time<std::chrono::seconds>;

/// A span of constant offset: [begin, end).
struct span {
    sys_seconds begin;
    sys_seconds end;
    std::chrono::seconds offset;
};

/// The instants of a wall-clock time.
struct wall_time {
    enum kind_type { unique, nonexistent, ambiguous } kind;
    sys_seconds first; // unique, ambiguous: the (earlier) instant; nonexistent: the gap's end
};

// A POSIX TZ rule with daylight saving (the part after the last listed transition).
struct posix_rule {
    struct date_rule {
        int month;                 // 1-12
        int week;                  // 1-5 (5: the last)
        int weekday;               // 0 Sunday - 6
        std::chrono::seconds time; // local time of the change (may be < 0 or > 24 h)
    };
    std::chrono::seconds standard; // UTC offset (east positive)
    std::chrono::seconds daylight;
    date_rule start; // to daylight, at standard time
    date_rule end;   // to standard, at daylight time
};

/// Parses a POSIX TZ string; none unless it has daylight saving rules of the M form.
std::optional<posix_rule> parse_posix_tz(std::string_view text);

class zone_rules {
public:
    /// The zone `name`; throws cron::unknown_zone.
    static zone_rules find(std::string_view name);

    span at(sys_seconds u) const;
    wall_time at(local_seconds_t l) const;

private:
    zone_rules(const date::time_zone* tz, std::optional<posix_rule> tail, sys_seconds tail_begin)
        : tz_(tz)
        , tail_(tail)
        , tail_begin_(tail_begin) {}

    const date::time_zone* tz_;
    std::optional<posix_rule> tail_;
    sys_seconds tail_begin_; // the last listed transition: tail_ applies from there
};

} // namespace timewheel::cron::detail

#endif // TIMEWHEEL_SRC_CRON_ZONE_HPP
