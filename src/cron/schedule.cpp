// cron::schedule: the interval rule. (Cron expressions and zones: being written, issue 28.)
#include <timewheel/cron/schedule.hpp>

#include <date/date.h>

namespace timewheel::cron {

namespace detail {
class rule {
public:
    virtual ~rule() = default;
    virtual std::optional<time_point> next_after(time_point t) const = 0;
    virtual bool is_interval() const noexcept = 0;
    virtual const std::string& zone() const noexcept = 0;
    virtual std::string local_time(time_point t) const = 0;
};

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
    std::string local_time(time_point t) const override { return date::format("%FT%TZ", t); }

private:
    std::chrono::milliseconds interval_;
    time_point anchor_;
    std::string utc_ = "UTC";
};
} // namespace
} // namespace detail

schedule schedule::parse(std::string_view, std::string_view) {
    throw parse_error("cron expressions are not built yet", 0, 0);
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
