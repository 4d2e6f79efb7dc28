// cron_task's run loop and handle: the parts that do not depend on the callable. The design
// (system clock occurrences on a steady wheel, never early, re-checked every minute) is at
// the top of include/timewheel/cron/cron_task.hpp.
#include <timewheel/cron/cron_task.hpp>

namespace timewheel::cron {
namespace detail {

using std::chrono::system_clock;
using timewheel::detail::entry_event;

bool cron_state::arm_next(time_point after) {
    const auto next = schedule_.next_after(after);
    if (!next) {
        done_ = true;
        return false;
    }
    scheduled_ = *next;
    arm_for(system_clock::now());
    return true;
}

void cron_state::arm_for(system_clock::time_point now) {
    // The wait, rounded up so that the steady deadline is never before the occurrence.
    auto wait = std::chrono::ceil<wheel_service::duration>(scheduled_ - now);
    if (wait > std::chrono::duration_cast<wheel_service::duration>(recheck))
        wait = std::chrono::duration_cast<wheel_service::duration>(recheck);
    try {
        service_->arm(*this, timewheel::detail::after<wheel_service::clock_type>(wait), slack_);
    } catch (...) {
        service_->cancel(*this);
        done_ = true;
        throw;
    }
}

void cron_state::on_event(wheel_service&, service_entry& entry, entry_event event) {
    auto& self = static_cast<cron_state&>(entry);
    const auto finish = [&self] {
        self.running_ = false;
        self.done_ = true;
        if (!self.owned_)
            self.destroy_(&self);
    };
    if (event == entry_event::shutdown) {
        finish();
        return;
    }
    const auto now = system_clock::now();
    if (now < self.scheduled_) {
        // Early by the system clock (it was set back, or this is a recheck): wait more.
        try {
            self.arm_for(now);
        } catch (...) {
            finish();
            throw;
        }
        return;
    }
    const cron_run run{self.runs_, self.scheduled_, now};
    ++self.runs_;
    self.running_ = true;
    try {
        self.invoke_(self, run);
    } catch (...) {
        finish();
        throw;
    }
    self.running_ = false;
    if (self.done_) { // cancelled while running
        finish();
        return;
    }
    // Missed occurrences (a blocked thread, a clock set ahead) are skipped: the next one is
    // the first after this run started, or after this occurrence if that is later.
    const auto started = std::chrono::floor<std::chrono::milliseconds>(now);
    try {
        if (!self.arm_next(std::max(self.scheduled_, started)))
            finish();
    } catch (...) {
        finish(); // a detached task frees itself even when arming throws
        throw;
    }
}

} // namespace detail

bool cron_task::cancel() noexcept {
    if (state_ == nullptr)
        return false;
    const bool was_active = state_->active();
    if (!state_->done_) {
        state_->done_ = true;
        if (!state_->running_)
            state_->service_->cancel(*state_);
    }
    return was_active;
}

void cron_task::detach() noexcept {
    if (state_ == nullptr)
        return;
    state_->owned_ = false;
    if (state_->done_ && !state_->running_)
        state_->destroy_(state_);
    state_ = nullptr;
}

void cron_task::reset() noexcept {
    if (state_ == nullptr)
        return;
    cancel();
    state_->owned_ = false;
    if (!state_->running_)
        state_->destroy_(state_);
    state_ = nullptr;
}

} // namespace timewheel::cron
