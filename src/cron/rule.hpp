// The rules behind cron::schedule: a schedule is a shared, immutable rule, so that copying
// one is a reference count and sharing one between threads needs no lock. Two rules: a fixed
// interval (schedule.cpp) and a cron expression on a zone's wall clock (zoned_rule.cpp).
#ifndef TIMEWHEEL_SRC_CRON_RULE_HPP
#define TIMEWHEEL_SRC_CRON_RULE_HPP

#include <timewheel/cron/schedule.hpp>

namespace timewheel::cron::detail {

class rule {
public:
    virtual ~rule() = default;
    virtual std::optional<time_point> next_after(time_point t) const = 0;
    virtual bool is_interval() const noexcept = 0;
    virtual const std::string& zone() const noexcept = 0;
    virtual std::string local_time(time_point t) const = 0;
};

/// `t` shifted by `offset`, as ISO 8601: 2026-03-29T03:00:00+02:00, milliseconds only when
/// not zero, the offset's seconds only when not zero (old local mean times); `Z` instead of
/// the offset when `zulu`. The one place that formats an instant for cron (schedule.cpp).
std::string iso8601(time_point t, std::chrono::seconds offset, bool zulu);

/// The rule of a cron expression in a zone (zoned_rule.cpp). Throws parse_error for the
/// expression (read first), unknown_zone for the zone.
std::shared_ptr<const rule> make_zoned_rule(std::string_view expression, std::string_view zone);

} // namespace timewheel::cron::detail

#endif // TIMEWHEEL_SRC_CRON_RULE_HPP
