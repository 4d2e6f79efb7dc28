// A parsed cron expression: which seconds, minutes, hours, days and months match, as bit
// sets, and the search for the next matching time on a naive calendar (no zone: the zone's
// rules are applied on top of it, in zoned_rule.cpp).
//
// Why bit sets: a field has at most 60 values, so "the first matching value >= x" is one
// count of trailing zeros, and the search walks days, never minutes (see next_match).
#ifndef TIMEWHEEL_SRC_CRON_FIELDS_HPP
#define TIMEWHEEL_SRC_CRON_FIELDS_HPP

#include <chrono>
#include <cstdint>
#include <optional>
#include <string_view>

namespace timewheel::cron::detail {

/// Wall-clock seconds of an unspecified zone.
using local_seconds = std::chrono::local_time<std::chrono::seconds>;

struct fields {
    std::uint64_t seconds = 0;  // bit s: second s matches (0-59)
    std::uint64_t minutes = 0;  // 0-59
    std::uint32_t hours = 0;    // 0-23
    std::uint32_t days = 0;     // bit d: day of month d (1-31)
    std::uint32_t months = 0;   // bit m: month m (1-12)
    std::uint32_t weekdays = 0; // bit w: day of week w (0 Sunday - 6 Saturday)

    // The optional forms (Quartz's). `L` in day-of-month, `LW`, `nW`, `wL`, `w#n`.
    bool last_day = false;              // L: the last day of the month
    bool last_weekday_of_month = false; // LW: the last Monday-Friday of the month
    std::uint32_t nearest_weekday = 0;  // bit d: dW, the weekday nearest to day d
    std::uint32_t last_of_weekday = 0;  // bit w: wL, the last such weekday of the month
    std::uint64_t nth_weekday = 0;      // bit 8 * n + w: w#n, the n-th such weekday (n 1-5)

    // Vixie cron's rule: a day matches when day-of-month OR day-of-week matches if both are
    // restricted (neither field starts with `*` or `?`), when both match otherwise.
    bool days_star = false;
    bool weekdays_star = false;

    /// Whether the hour field matches all 24 hours: such a schedule follows elapsed time
    /// across DST changes (docs/cron.md).
    bool every_hour() const noexcept { return hours == 0xFFFFFFu; }

    /// Whether the date matches the day fields and the month field.
    bool matches_day(std::chrono::year_month_day d) const noexcept;

    /// The first matching wall-clock time >= from, before `limit`; none if there is none.
    /// Walks days (a month at a time across months that do not match), never minutes.
    std::optional<local_seconds> next_match(local_seconds from, local_seconds limit) const;

    /// False when no date can ever match (`0 0 30 2 *`), so a search need not walk 400 years
    /// to find out.
    bool can_match() const noexcept;
};

/// Parses a cron expression (5 or 6 fields, or a macro). Throws cron::parse_error.
fields parse_fields(std::string_view expression);

} // namespace timewheel::cron::detail

#endif // TIMEWHEEL_SRC_CRON_FIELDS_HPP
