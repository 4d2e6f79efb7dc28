// A cron expression on the wall clock of an IANA zone, and the DST policy (docs/cron.md).
//
// The policy, in the terms of this file:
// * A schedule that names its hours maps each matching wall-clock time L to one instant
//   f(L): L's instant when it is unique; its earlier instant when the clock repeats it (a
//   fold); the end of the gap when the clock skips it. f never decreases as L grows, so the
//   next occurrence after t is f of the first matching L whose f(L) > t, and all the matches
//   in one gap collapse into one instant: they fire once.
// * A schedule for every hour follows elapsed time: an instant fires when its wall-clock time
//   matches. Within a span of constant offset (a date::sys_info) that is a plain calendar
//   search on the shifted clock, so the search goes span by span.
//
// The zone comes from the system's tz database (zone.hpp): Debian's date library is built
// with USE_OS_TZDB=1 (it reads /usr/share/zoneinfo and has no remote API, so it never
// downloads), plus the zone file's own rule after its last listed transition.
#include "fields.hpp"
#include "rule.hpp"
#include "zone.hpp"

#include <algorithm>
#include <memory>

namespace timewheel::cron::detail {
namespace {

using namespace std::chrono;
using namespace std::chrono_literals;

// The search ends after this many years (the Gregorian calendar repeats every 400 years, so
// a pattern found nowhere in 401 never matches), and at the end of year 9999 (dq::max_due).
constexpr int horizon_years = 401;
constexpr auto last_instant = sys_days{year{9999} / December / 31} + 23h + 59min + 59s;
constexpr auto first_instant = sys_days{year{-30000} / January / 1};

class zoned_rule final : public rule {
public:
    zoned_rule(fields f, zone_rules z, std::string name)
        : fields_(f)
        , zone_(z)
        , name_(std::move(name))
        , possible_(f.can_match()) {}

    std::optional<time_point> next_after(time_point t) const override {
        if (!possible_ || t >= last_instant)
            return std::nullopt;
        // Occurrences are whole seconds: the first candidate is the first whole second > t.
        const sys_seconds after = std::max(floor<seconds>(t), sys_seconds{first_instant}) + 1s;
        const year start_year = year_month_day{floor<days>(after)}.year();
        const sys_seconds end =
            std::min(sys_seconds{sys_days{std::min(start_year + years{horizon_years}, year{10000}) /
                                          January / 1}},
                     sys_seconds{last_instant} + 1s);
        const auto found =
            fields_.every_hour() ? by_elapsed_time(after, end) : by_wall_clock(after, end);
        if (!found)
            return std::nullopt;
        return time_point{*found};
    }

    bool is_interval() const noexcept override { return false; }
    const std::string& zone() const noexcept override { return name_; }

    std::string local_time(time_point t) const override {
        return iso8601(t, zone_.at(floor<seconds>(t)).offset, false);
    }

private:
    // Every hour: the first instant in [after, end) whose wall-clock time matches.
    std::optional<sys_seconds> by_elapsed_time(sys_seconds after, sys_seconds end) const {
        for (sys_seconds u = after; u < end;) {
            const auto info = zone_.at(u);
            const sys_seconds span_end = std::min(info.end, end);
            const local_seconds lo{(u + info.offset).time_since_epoch()};
            const local_seconds hi{(span_end + info.offset).time_since_epoch()};
            const auto l = fields_.next_match(lo, hi);
            if (l && *l < hi)
                return sys_seconds{(*l - info.offset).time_since_epoch()};
            u = span_end;
        }
        return std::nullopt;
    }

    // Named hours: f(L) of the first matching L with f(L) >= after (see the top).
    std::optional<sys_seconds> by_wall_clock(sys_seconds after, sys_seconds end) const {
        // No L below the wall-clock time of any instant >= after can map to one: start at
        // the lowest such wall-clock time in the next two days (a fold after `after` comes
        // back to earlier wall-clock times; transitions are months apart).
        local_seconds from = local_seconds::max();
        for (sys_seconds u = after; u < after + 48h;) {
            const auto info = zone_.at(u);
            from = std::min(from, local_seconds{(u + info.offset).time_since_epoch()});
            u = info.end;
        }
        // No zone is more than 26 hours from UTC: a wall-clock time past this is past `end`.
        const local_seconds limit{(end + 26h).time_since_epoch()};
        for (auto l = fields_.next_match(from, limit); l && *l < limit;
             l = fields_.next_match(*l + 1s, limit)) {
            // f(L): the instant, the earlier of a fold's two, or the end of a gap.
            const sys_seconds u = zone_.at(*l).first;
            if (u >= end)
                return std::nullopt;
            if (u >= after)
                return u;
        }
        return std::nullopt;
    }

    fields fields_;
    zone_rules zone_;
    std::string name_;
    bool possible_;
};

} // namespace

std::shared_ptr<const rule> make_zoned_rule(std::string_view expression, std::string_view zone) {
    fields f = parse_fields(expression);
    return std::make_shared<zoned_rule>(f, zone_rules::find(zone), std::string(zone));
}

} // namespace timewheel::cron::detail
