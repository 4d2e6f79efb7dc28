//
// src/wheel.cpp
//
// The parts of wheel that are not on the per-entry hot path.
//

#include <timewheel/wheel.hpp>

#include <stdexcept>
#include <string>

namespace timewheel {

wheel::wheel(tick_type start, wheel_options options)
    : now_(start)
    , levels_(options.levels) {
    if (options.levels == 0 || options.levels > max_levels) {
        throw std::invalid_argument("timewheel::wheel: levels must be in [1, " +
                                    std::to_string(max_levels) + "], got " +
                                    std::to_string(options.levels));
    }
}

// The lists' destructors unlink (auto-unlink hooks) whatever is still armed.
wheel::~wheel() = default;

void wheel::check_budget(std::size_t budget) {
    if (budget == 0) {
        throw std::invalid_argument("timewheel::wheel::advance: budget must be at least 1");
    }
}

std::optional<wheel::slot_ref> wheel::next_slot() const noexcept {
    // Every occupied slot of a level starts before every occupied slot of the levels above:
    // a level-L entry lies in now's current 64^(L+1) block, a level-(L+1) entry beyond it.
    for (unsigned level = 0; level < levels_; ++level) {
        // The top level's slot of now holds the next rotation only: search it last.
        const unsigned first =
            (static_cast<unsigned>(now_ >> (6 * level)) + (level == levels_ - 1 ? 1 : 0)) & 63;
        while (occupied_[level] != 0) {
            const unsigned offset =
                static_cast<unsigned>(std::countr_zero(std::rotr(occupied_[level], first)));
            const unsigned index = (first + offset) & 63;
            if (slots_[level][index].empty()) {
                occupied_[level] &= ~(std::uint64_t{1} << index); // an entry died armed here
                continue;
            }
            return slot_ref{level, index, slot_start(level, index)};
        }
    }
    return std::nullopt;
}

std::optional<tick_type> wheel::next_expiry() const noexcept {
    if (!run_queue_.empty()) {
        return now_;
    }
    if (const std::optional<slot_ref> next = next_slot()) {
        return next->start;
    }
    return std::nullopt;
}

} // namespace timewheel
