//
// timewheel/cron/schedule.hpp
//
// When a recurring job runs: a cron expression read on the wall clock of an IANA time zone,
// or a fixed interval. A cron::schedule answers one question, the first occurrence after an
// instant, and it is a value (cheap to copy, immutable, safe to share between threads).
//
// It is the rule behind dq's durable schedules and behind cron_task on the local wheel. The
// zones come from the system's tz database (Debian's tzdata, read through Howard Hinnant's
// date library), so a zone's rules are those of the machine.
//
#ifndef TIMEWHEEL_CRON_SCHEDULE_HPP
#define TIMEWHEEL_CRON_SCHEDULE_HPP

#include <chrono>
#include <cstddef>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>

namespace timewheel::cron {

/// Instants, in UTC, to the millisecond.
using time_point = std::chrono::sys_time<std::chrono::milliseconds>;

/// A cron expression or a time zone that cannot be used. what() says which field, where and
/// why, e.g. `field 2 (hour): 25 is out of range 0-23`.
class parse_error : public std::invalid_argument {
public:
    parse_error(const std::string& what, int field, std::size_t position)
        : std::invalid_argument(what)
        , field_(field)
        , position_(position) {}

    /// The field of the expression, 1 to 6 as written (seconds count when there are six);
    /// 0 when the expression as a whole is wrong (the number of fields, an unknown macro).
    int field() const noexcept { return field_; }

    /// The offset in the expression's text where the fault starts.
    std::size_t position() const noexcept { return position_; }

private:
    int field_;
    std::size_t position_;
};

/// A time zone name that the tz database does not know.
class unknown_zone : public std::invalid_argument {
public:
    using std::invalid_argument::invalid_argument;
};

namespace detail {
class rule;
} // namespace detail

/// A cron expression on a zone's wall clock, or a fixed interval from an anchor.
class schedule {
public:
    /// A cron expression: 5 fields (minute hour day-of-month month day-of-week) or 6 (seconds
    /// first), or a macro (\@hourly \@daily \@weekly \@monthly \@yearly), read in `zone` (an IANA
    /// name). Lists, ranges, steps, month and day names, `L`, `W` and `#` (docs/cron.md).
    /// Day-of-month and day-of-week follow Vixie cron: either matches when both are
    /// restricted, both must otherwise. At most 256 bytes. Throws parse_error (the
    /// expression, read first) or unknown_zone.
    static schedule parse(std::string_view expression, std::string_view zone = "UTC");

    /// Every `interval` from `anchor` (anchor, anchor + interval, ...), in UTC: no zone, no
    /// daylight saving. Throws std::invalid_argument unless interval > 0.
    static schedule every(std::chrono::milliseconds interval, time_point anchor);

    /// The first occurrence strictly after `t`; none when the expression never matches again
    /// (`0 0 30 2 *`, 30 February), nor within 401 years of `t`, nor before the end of year
    /// 9999.
    ///
    /// Where the zone's clock skips or repeats times (daylight saving), a schedule that names
    /// its hours fires once per matching wall-clock time (a skipped time at the end of the
    /// gap, a repeated one at its first instant); a schedule for every hour follows elapsed
    /// time (both passes of a fold, nothing for skipped times). docs/cron.md has the table.
    /// Allocates nothing; O(days searched), never minute by minute.
    std::optional<time_point> next_after(time_point t) const;

    /// True for every(), false for parse().
    bool is_interval() const noexcept;

    /// The zone's name ("UTC" for an interval).
    const std::string& zone() const noexcept;

    /// `t` on the zone's wall clock, ISO 8601 with its offset: 2026-03-29T03:00:00+02:00
    /// (milliseconds shown when not zero).
    std::string local_time(time_point t) const;

private:
    explicit schedule(std::shared_ptr<const detail::rule> r) noexcept
        : rule_(std::move(r)) {}
    std::shared_ptr<const detail::rule> rule_;
};

} // namespace timewheel::cron

#endif // TIMEWHEEL_CRON_SCHEDULE_HPP
