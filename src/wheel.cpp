//
// src/wheel.cpp
//
// The parts of wheel that are not on the per-entry hot path.
//

#include <timewheel/wheel.hpp>

#include <algorithm>
#include <stdexcept>
#include <string>

namespace timewheel {

wheel::wheel(tick_type start, wheel_options options)
    : now_(start)
    , levels_given_(options.levels)
    , levels_(std::min(options.levels, used_levels)) {
    if (options.levels == 0 || options.levels > max_levels) {
        throw std::invalid_argument("timewheel::wheel: levels must be in [1, " +
                                    std::to_string(max_levels) + "], got " +
                                    std::to_string(options.levels));
    }
    run_queue_.next_ = run_queue_.prev_ = &run_queue_;
    staged_.next_ = staged_.prev_ = &staged_;
    top_start_.fill(no_tick);
    for (link& head : level0_) {
        head.next_ = head.prev_ = &head;
    }
    for (unsigned level = 1; level < levels_; ++level) {
        for (unsigned index = 0; index < slots; ++index) {
            for (link& head : upper_[(level - 1) * slots + index]) {
                head.next_ = head.prev_ = &head;
            }
        }
    }
}

// Disarms what is still armed: the entries outlive their lists' heads.
wheel::~wheel() {
    drain([](wheel_entry&) {});
}

void wheel::throw_bad_budget() {
    throw std::invalid_argument("timewheel::wheel::advance: budget must be at least 1");
}

void wheel::file_staged() noexcept {
    staged_room_ = stage_batch;
    refile(staged_);
}

void wheel::refile(link& head) noexcept {
    // Detached whole, then walked in order: filing relinks each entry (perhaps into this
    // very list), and the last one's next is still the head, where the walk ends.
    link* node = head.next_;
    head.next_ = head.prev_ = &head;
    while (node != &head) {
        link* const next = node->next_;
        wheel_entry& entry = entry_of(node);
        file(entry, entry.meta_ & ~wheel_entry::slot_mask);
        node = next;
    }
}

std::optional<wheel::slot_ref> wheel::next_upper_slot() const noexcept {
    // Every occupied slot of a level starts before every occupied slot of the levels above:
    // a level-L entry lies in now's current 256^(L+1) block, a level-(L+1) entry beyond it.
    // Below the top level the first occupied slot from now's, in index order, is the
    // earliest; the top level's slots may hold any rotation, so the earliest start wins.
    // next_slot() has searched level 0 unless it is the top level.
    const unsigned top = levels_ - 1;
    for (unsigned level = 1; level < top; ++level) {
        const unsigned index =
            first_occupied(level, static_cast<unsigned>(now_ >> (slot_bits * level)) % slots);
        if (index != slots) {
            return slot_ref{level, index, slot_start(level, index)};
        }
    }
    std::uint64_t* const bits = &occupied_[top * words];
    std::optional<slot_ref> best;
    for (unsigned word = 0; word < words; ++word) {
        for (std::uint64_t w = bits[word]; w != 0; w &= w - 1) {
            const unsigned index = word * 64 + static_cast<unsigned>(std::countr_zero(w));
            if (slot_empty(top, index)) {
                bits[word] &= ~(std::uint64_t{1} << (index % 64)); // a stale bit
                top_start_[index] = no_tick;
            } else if (!best || top_start_[index] < best->start) {
                best = slot_ref{top, index, top_start_[index]};
            }
        }
    }
    return best;
}

std::optional<tick_type> wheel::next_expiry() const noexcept {
    if (run_queue_.next_ != &run_queue_) {
        return now_;
    }
    // The staged entries (at most stage_batch) as they will be filed: the answer is the one
    // the wheel gives once they are.
    std::optional<tick_type> earliest;
    for (const link* node = staged_.next_; node != &staged_; node = node->next_) {
        const wheel_entry& entry = entry_of(node);
        if (entry.deadline_ <= now_) {
            return now_;
        }
        const tick_type start = place(entry.fire_tick()).start;
        earliest = earliest ? std::min(*earliest, start) : start;
    }
    if (const std::optional<slot_ref> next = next_slot()) {
        earliest = earliest ? std::min(*earliest, next->start) : next->start;
    }
    return earliest;
}

} // namespace timewheel
