//
// timewheel/impl/wheel.hpp
//
// Inline definitions of the hot paths of wheel (arm, move, cancel, advance).
//

#ifndef TIMEWHEEL_IMPL_WHEEL_HPP
#define TIMEWHEEL_IMPL_WHEEL_HPP

#include <algorithm>
#include <bit>
#include <cassert>

namespace timewheel {
namespace detail {

// Deadlines are clamped here so that rounding up to a slack granularity cannot overflow.
inline constexpr tick_type max_deadline = tick_type{1} << 62;

inline constexpr tick_type granularity(unsigned level) noexcept {
    return tick_type{1} << (6 * level);
}

} // namespace detail

inline wheel_entry::wheel_entry(wheel_entry&& other) noexcept
    : deadline_(other.deadline_)
    , slack_(other.slack_)
    , slot_(other.slot_)
    , slack_level_(other.slack_level_) {
    hook_.swap_nodes(other.hook_);
}

inline wheel_entry& wheel_entry::operator=(wheel_entry&& other) noexcept {
    if (this != &other) {
        hook_.unlink();
        hook_.swap_nodes(other.hook_);
        deadline_ = other.deadline_;
        slack_ = other.slack_;
        slot_ = other.slot_;
        slack_level_ = other.slack_level_;
    }
    return *this;
}

inline tick_type wheel_entry::fire_tick() const noexcept {
    const tick_type mask = detail::granularity(slack_level_) - 1;
    return (deadline_ + mask) & ~mask;
}

inline void wheel::file(wheel_entry& entry) noexcept {
    if (entry.deadline_ <= now_) { // due now, even if its slack would round it up
        run_queue_.push_back(entry);
        entry.slot_ = run_queue_slot;
        return;
    }
    const tick_type fire = entry.fire_tick();
    // The level is the highest 6-bit group in which the fire tick differs from now.
    const unsigned significant = 63 - static_cast<unsigned>(std::countl_zero((now_ ^ fire) | 63));
    const unsigned level = std::min(significant / 6, levels_ - 1);
    const unsigned index = static_cast<unsigned>(fire >> (6 * level)) & 63;
    slots_[level][index].push_back(entry);
    occupied_[level] |= std::uint64_t{1} << index;
    entry.slot_ = static_cast<std::uint16_t>(level * 64 + index);
}

inline void wheel::clear_if_empty(std::uint16_t slot) const noexcept {
    if (slot != run_queue_slot && slots_[slot / 64][slot % 64].empty()) {
        occupied_[slot / 64] &= ~(std::uint64_t{1} << (slot % 64));
    }
}

inline tick_type wheel::slot_start(unsigned level, unsigned index) const noexcept {
    const tick_type span = detail::granularity(level + 1);
    const tick_type start = (now_ & ~(span - 1)) + index * detail::granularity(level);
    // Only the top level wraps: its slots at or before now's belong to the next rotation.
    return start <= now_ && level == levels_ - 1 ? start + span : start;
}

inline void wheel::arm(wheel_entry& entry, tick_type deadline, tick_type slack) noexcept {
    if (entry.armed()) {
        entry.hook_.unlink();
        clear_if_empty(entry.slot_);
    }
    entry.deadline_ = std::min(deadline, detail::max_deadline);
    entry.slack_ = static_cast<std::uint32_t>(
        std::min<tick_type>(slack, std::numeric_limits<std::uint32_t>::max()));
    // The coarsest granularity 64^k with 64^k - 1 <= slack.
    const tick_type accepted = slack == std::numeric_limits<tick_type>::max() ? slack : slack + 1;
    const unsigned bits = 63 - static_cast<unsigned>(std::countl_zero(accepted));
    entry.slack_level_ = static_cast<std::uint8_t>(std::min(bits / 6, levels_ - 1));
    file(entry);
}

inline bool wheel::move(wheel_entry& entry, tick_type deadline) noexcept {
    if (!entry.armed()) {
        return false;
    }
    const tick_type target = std::min(deadline, detail::max_deadline);
    if (target >= entry.deadline_ && entry.deadline_ > now_) {
        // Later and not yet due: the fire tick only grows, so the entry's slot still comes
        // due first. The idle-timeout path: one compare and one store, no slot arithmetic.
        entry.deadline_ = target;
        return true;
    }
    entry.deadline_ = target;
    if (entry.slot_ == run_queue_slot) {
        return true; // the run queue re-files entries that are not yet due
    }
    const unsigned level = entry.slot_ / 64;
    if (entry.deadline_ <= now_ || slot_start(level, entry.slot_ % 64) > entry.fire_tick()) {
        entry.hook_.unlink();
        clear_if_empty(entry.slot_);
        file(entry);
    }
    return true;
}

inline bool wheel::cancel(wheel_entry& entry) noexcept {
    if (!entry.armed()) {
        return false;
    }
    entry.hook_.unlink();
    clear_if_empty(entry.slot_);
    return true;
}

template <typename Handler>
std::size_t wheel::advance(tick_type now, std::size_t budget, Handler&& handler) {
    check_budget(budget);
    assert(!advancing_ && "wheel::advance called from an expiry handler");
    struct advancing_guard {
        bool& flag;
        explicit advancing_guard(bool& f) : flag(f) { flag = true; }
        ~advancing_guard() { flag = false; }
    } guard{advancing_};

    std::size_t fired = 0;
    for (;;) {
        while (!run_queue_.empty()) {
            if (fired == budget) {
                return fired;
            }
            wheel_entry& entry = run_queue_.front();
            run_queue_.pop_front();
            if (entry.deadline_ > now_) {
                file(entry); // moved later
                continue;
            }
            ++fired;
            handler(entry);
        }
        const std::optional<slot_ref> next = next_slot();
        if (!next || next->start > now) {
            break;
        }
        now_ = next->start;
        occupied_[next->level] &= ~(std::uint64_t{1} << next->index);
        // Re-file what is not yet due before any handler runs, so that an entry armed by a
        // handler for the same tick as a cascading one goes behind it (FIFO).
        list_type spliced;
        spliced.splice(spliced.end(), slots_[next->level][next->index]);
        while (!spliced.empty()) {
            wheel_entry& entry = spliced.front();
            spliced.pop_front();
            file(entry); // due: onto the run queue, in order
        }
    }
    if (now > now_) {
        now_ = now;
    }
    return fired;
}

template <typename Handler>
std::size_t wheel::drain(Handler&& handler) {
    list_type drained;
    drained.splice(drained.end(), run_queue_);
    for (unsigned level = 0; level < levels_; ++level) {
        for (list_type& slot : slots_[level]) {
            drained.splice(drained.end(), slot);
        }
        occupied_[level] = 0;
    }
    std::size_t visited = 0;
    while (!drained.empty()) {
        wheel_entry& entry = drained.front();
        drained.pop_front();
        ++visited;
        handler(entry);
    }
    return visited;
}

} // namespace timewheel

#endif // TIMEWHEEL_IMPL_WHEEL_HPP
