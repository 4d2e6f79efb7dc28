// Matching a parsed cron expression against a naive calendar, and the search for the next
// match. The search walks the sorted field sets: months that do not match are skipped whole,
// days one at a time, and within a day the first matching hour, minute and second are each
// one bit scan. So a call costs O(days walked), never O(minutes).
#include "fields.hpp"

#include <bit>

namespace timewheel::cron::detail {
namespace {

using namespace std::chrono;

// The first set bit at or above `from`, or -1.
int next_bit(std::uint64_t set, int from) noexcept {
    if (from >= 64)
        return -1;
    const std::uint64_t rest = set & (~std::uint64_t{0} << from);
    return rest == 0 ? -1 : std::countr_zero(rest);
}

unsigned last_day_of(year_month ym) noexcept {
    return static_cast<unsigned>((ym / last).day());
}

// The weekday nearest to day d of the month (Quartz's dW): never in another month.
unsigned nearest_weekday_of(year_month ym, unsigned d, unsigned last_d) noexcept {
    const weekday w{sys_days{ym / day{d}}};
    if (w == Saturday)
        return d == 1 ? 3 : d - 1;
    if (w == Sunday)
        return d == last_d ? d - 2 : d + 1;
    return d;
}

} // namespace

bool fields::matches_day(year_month_day date) const noexcept {
    const auto m = static_cast<unsigned>(date.month());
    if ((months >> m & 1) == 0)
        return false;
    const auto d = static_cast<unsigned>(date.day());
    const year_month ym = date.year() / date.month();
    const unsigned last_d = last_day_of(ym);
    bool dom = (days >> d & 1) != 0 || (last_day && d == last_d);
    if (!dom && last_weekday_of_month)
        dom = d == nearest_weekday_of(ym, last_d, last_d) && weekday{sys_days{date}} != Saturday &&
              weekday{sys_days{date}} != Sunday;
    for (std::uint32_t rest = nearest_weekday; !dom && rest != 0; rest &= rest - 1) {
        const auto target = static_cast<unsigned>(std::countr_zero(rest));
        dom = target <= last_d && nearest_weekday_of(ym, target, last_d) == d;
    }
    const unsigned w = weekday{sys_days{date}}.c_encoding();
    const bool dow = (weekdays >> w & 1) != 0 ||
                     ((last_of_weekday >> w & 1) != 0 && d + 7 > last_d) ||
                     (nth_weekday >> (8 * ((d - 1) / 7 + 1) + w) & 1) != 0;
    // Vixie cron's rule (fields.hpp).
    if (days_star || weekdays_star)
        return dom && dow;
    return dom || dow;
}

std::optional<local_seconds> fields::next_match(local_seconds from, local_seconds limit) const {
    auto day_start = floor<std::chrono::days>(from);
    auto time = hh_mm_ss<std::chrono::seconds>{from - day_start};
    int h0 = static_cast<int>(time.hours().count());
    int m0 = static_cast<int>(time.minutes().count());
    int s0 = static_cast<int>(time.seconds().count());
    const int first_m = next_bit(minutes, 0);
    const int first_s = next_bit(seconds, 0);
    while (day_start < limit) {
        const year_month_day date{day_start};
        if ((months >> static_cast<unsigned>(date.month()) & 1) == 0) {
            // Skip to the first day of the next month (a whole month never matches).
            const year_month next = date.year() / date.month() + std::chrono::months{1};
            day_start = local_days{next / 1};
            h0 = m0 = s0 = 0;
            continue;
        }
        if (matches_day(date)) {
            int h = next_bit(hours, h0);
            if (h == h0) {
                int m = next_bit(minutes, m0);
                if (m == m0) {
                    const int s = next_bit(seconds, s0);
                    if (s >= 0)
                        return day_start + std::chrono::hours{h} + std::chrono::minutes{m} +
                               std::chrono::seconds{s};
                    m = next_bit(minutes, m0 + 1);
                }
                if (m >= 0)
                    return day_start + std::chrono::hours{h} + std::chrono::minutes{m} +
                           std::chrono::seconds{first_s};
                h = next_bit(hours, h0 + 1);
            }
            if (h >= 0)
                return day_start + std::chrono::hours{h} + std::chrono::minutes{first_m} +
                       std::chrono::seconds{first_s};
        }
        day_start += std::chrono::days{1};
        h0 = m0 = s0 = 0;
    }
    return std::nullopt;
}

bool fields::can_match() const noexcept {
    // Only the day-of-month alone can rule out every date (30 February); with a day-of-week
    // or an optional form some date always matches, within 400 years at most.
    if (days_star || !weekdays_star || last_day || last_weekday_of_month || nearest_weekday != 0)
        return true;
    static constexpr unsigned longest[13] = {0, 31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    for (unsigned m = 1; m <= 12; ++m)
        if ((months >> m & 1) != 0 && (days & ((std::uint32_t{2} << longest[m]) - 1)) != 0)
            return true;
    return false;
}

} // namespace timewheel::cron::detail
