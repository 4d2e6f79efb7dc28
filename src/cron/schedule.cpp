// cron::schedule: the front of the rules (rule.hpp), the interval rule, and the one format
// of instants (iso8601).
#include "rule.hpp"

#include <cstdio>
#include <cstdlib>

namespace timewheel::cron {

namespace detail {

std::string iso8601(time_point t, std::chrono::seconds offset, bool zulu) {
    using namespace std::chrono;
    const auto local = t + offset;
    const auto day = floor<days>(local);
    const year_month_day date{day};
    const hh_mm_ss<milliseconds> time{local - day};
    char buffer[64];
    int n = std::snprintf(buffer, sizeof buffer, "%04d-%02u-%02uT%02d:%02d:%02d",
                          static_cast<int>(date.year()), static_cast<unsigned>(date.month()),
                          static_cast<unsigned>(date.day()), static_cast<int>(time.hours().count()),
                          static_cast<int>(time.minutes().count()),
                          static_cast<int>(time.seconds().count()));
    if (time.subseconds().count() != 0)
        n += std::snprintf(buffer + n, sizeof buffer - n, ".%03d",
                           static_cast<int>(time.subseconds().count()));
    if (zulu) {
        std::snprintf(buffer + n, sizeof buffer - n, "Z");
    } else {
        const auto s = offset.count();
        const auto a = std::llabs(s);
        n += std::snprintf(buffer + n, sizeof buffer - n, "%c%02lld:%02lld", s < 0 ? '-' : '+',
                           a / 3600, a / 60 % 60);
        if (a % 60 != 0)
            std::snprintf(buffer + n, sizeof buffer - n, ":%02lld", a % 60);
    }
    return buffer;
}

namespace {
class interval_rule final : public rule {
public:
    interval_rule(std::chrono::milliseconds interval, time_point anchor)
        : interval_(interval)
        , anchor_(anchor) {}
    std::optional<time_point> next_after(time_point t) const override {
        if (t < anchor_)
            return anchor_;
        const auto n = (t - anchor_) / interval_ + 1;
        return anchor_ + n * interval_;
    }
    bool is_interval() const noexcept override { return true; }
    const std::string& zone() const noexcept override { return utc_; }
    std::string local_time(time_point t) const override {
        return iso8601(t, std::chrono::seconds{0}, true);
    }

private:
    std::chrono::milliseconds interval_;
    time_point anchor_;
    std::string utc_ = "UTC";
};
} // namespace
} // namespace detail

schedule schedule::parse(std::string_view expression, std::string_view zone) {
    return schedule(detail::make_zoned_rule(expression, zone));
}

schedule schedule::every(std::chrono::milliseconds interval, time_point anchor) {
    if (interval <= std::chrono::milliseconds::zero())
        throw std::invalid_argument("cron::schedule::every: the interval must be positive");
    return schedule(std::make_shared<detail::interval_rule>(interval, anchor));
}

std::optional<time_point> schedule::next_after(time_point t) const {
    return rule_->next_after(t);
}
bool schedule::is_interval() const noexcept {
    return rule_->is_interval();
}
const std::string& schedule::zone() const noexcept {
    return rule_->zone();
}
std::string schedule::local_time(time_point t) const {
    return rule_->local_time(t);
}

} // namespace timewheel::cron
