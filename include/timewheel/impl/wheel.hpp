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
#include <type_traits>

namespace timewheel {
namespace detail {

inline constexpr unsigned wheel_slot_bits = 8;

inline constexpr tick_type granularity(unsigned level) noexcept {
    return tick_type{1} << (wheel_slot_bits * level);
}

// The tick at which an entry with this deadline and slack level fires: the deadline rounded
// up to a multiple of 256^slack_level, or the deadline itself if rounding up would pass the
// largest tick (there is nothing to round up to: it fires exactly).
inline constexpr tick_type fire_tick(tick_type deadline, unsigned slack_level) noexcept {
    const tick_type mask = granularity(slack_level) - 1;
    const tick_type up = deadline + mask;
    return up < deadline ? deadline : up & ~mask;
}

} // namespace detail

inline wheel_entry::wheel_entry(wheel_entry&& other) noexcept
    : deadline_(other.deadline_)
    , meta_(other.meta_) {
    if (other.armed()) {
        link_ = other.link_;
        link_.prev_->next_ = &link_;
        link_.next_->prev_ = &link_;
        other.link_.next_ = nullptr;
    }
}

inline wheel_entry& wheel_entry::operator=(wheel_entry&& other) noexcept {
    if (this != &other) {
        if (armed()) {
            unlink();
        }
        deadline_ = other.deadline_;
        meta_ = other.meta_;
        if (other.armed()) {
            link_ = other.link_;
            link_.prev_->next_ = &link_;
            link_.next_->prev_ = &link_;
            other.link_.next_ = nullptr;
        }
    }
    return *this;
}

inline tick_type wheel_entry::fire_tick() const noexcept {
    return detail::fire_tick(deadline_, slack_level());
}

inline wheel_entry& wheel::entry_of(link* node) noexcept {
    static_assert(std::is_standard_layout_v<wheel_entry>);
    return *reinterpret_cast<wheel_entry*>(node);
}

inline const wheel_entry& wheel::entry_of(const link* node) noexcept {
    return *reinterpret_cast<const wheel_entry*>(node);
}

inline void wheel::link_back(link& head, link& node) noexcept {
    link* const tail = head.prev_;
    // The store to the tail between the two to the node: the compiler cannot know that the
    // tail is not the node, so it keeps two plain stores instead of building a vector.
    node.next_ = &head;
    tail->next_ = &node;
    node.prev_ = tail;
    head.prev_ = &node;
}

inline wheel::link& wheel::list_of(unsigned slot, unsigned shift, tick_type fire, tick_type start,
                                   tick_type deadline) noexcept {
    if (slot < slots) {
        return level0_[slot];
    }
    unsigned list;
    if (start == fire) {
        // Fires in place when the slot comes due (the start of a slot at this level: a slack
        // entry rounded up, or an exact one on a round tick). Its index at the level below
        // is 0, as for every such entry of the slot: by that index they would all share one
        // list, and the slot's walk would be one chain, a memory latency per entry (the
        // idle timeouts, moved lazily and re-filed by that walk). Spread them by deadline:
        // the entries of one deadline still share a list, in arm order.
        list = static_cast<unsigned>((deadline * 0x9e3779b97f4a7c15u) >> (64 - list_bits));
    } else {
        // Every entry bound for one slot of the level below shares a list.
        list = static_cast<unsigned>(fire >> (shift - slot_bits)) % lists;
    }
    return upper_[slot - slots][list];
}

inline wheel::slot_ref wheel::place(tick_type fire) const noexcept {
    // The level is the highest byte in which the fire tick differs from now (63 ^ clz is
    // the index of the highest set bit, one instruction).
    const unsigned significant =
        static_cast<unsigned>(std::countl_zero((now_ ^ fire) | (slots - 1))) ^ 63u;
    const unsigned level = std::min(significant / slot_bits, levels_ - 1);
    const unsigned shift = slot_bits * level;
    // The slot of the fire tick comes due at the fire tick with the level's digits cleared.
    return slot_ref{level, static_cast<unsigned>(fire >> shift) % slots, (fire >> shift) << shift};
}

// Files the entry by its deadline and `meta` (its slack and slack level; no slot), storing
// meta with the slot. Every instruction here counts: at 1M entries an arm waits for its
// cold entry, and how many arms' misses overlap is bounded by how many arms fit in the
// processor's reorder window.
inline void wheel::file(wheel_entry& entry, std::uint64_t meta) noexcept {
    const tick_type deadline = entry.deadline_;
    if (deadline <= now_) { // due now, even if its slack would round it up
        link_back(run_queue_, entry.link_);
        entry.meta_ = meta | std::uint64_t{run_queue_slot} << wheel_entry::slot_shift;
        return;
    }
    // Most entries have no slack: the rounding below is a dozen instructions they skip.
    tick_type fire = deadline;
    if (const auto slack_level = static_cast<std::uint8_t>(meta >> wheel_entry::slack_level_shift);
        slack_level != 0) {
        fire = detail::fire_tick(deadline, slack_level);
    }
    const slot_ref at = place(fire);
    const unsigned slot = at.level * slots + at.index;
    link& list = list_of(slot, slot_bits * at.level, fire, at.start, deadline);
    // A slot's bit is clear only while all its lists are empty (a slot that comes due is
    // emptied as its bit is cleared), so only an entry that starts a list can find it clear.
    // Testing the list, whose tail link_back() reads anyway, spares the others the bit's
    // arithmetic; the stores below are conditional for the same reason, and each store
    // skipped frees a store-buffer entry.
    const bool starts_list = list.prev_ == &list;
    link_back(list, entry.link_);
    if (starts_list) {
        occupied_[slot / 64] |= std::uint64_t{1} << (slot % 64);
    }
    entry.meta_ = meta | std::uint64_t{slot} << wheel_entry::slot_shift;
    // A top-level slot holds entries of any rotation: it comes due at the earliest.
    if (at.level == levels_ - 1 && at.start < top_start_[at.index]) {
        top_start_[at.index] = at.start;
    }
    if (at.start < horizon_) {
        horizon_ = at.start;
    }
}

inline tick_type wheel::slot_start(unsigned level, unsigned index) const noexcept {
    if (level == levels_ - 1) {
        return top_start_[index];
    }
    // Below the top level, an occupied slot lies in now's block of the level above.
    const unsigned shift = slot_bits * level;
    const unsigned span_bits = shift + slot_bits;
    return ((now_ >> span_bits) << span_bits) + (tick_type{index} << shift);
}

inline bool wheel::slot_empty(unsigned level, unsigned index) const noexcept {
    if (level == 0) {
        return level0_[index].next_ == &level0_[index];
    }
    for (const link& head : upper_[(level - 1) * slots + index]) {
        if (head.next_ != &head) {
            return false;
        }
    }
    return true;
}

// The first slot of `level` at or after index `first` that holds an entry (slots: none),
// clearing the stale bits it meets on the way.
inline unsigned wheel::first_occupied(unsigned level, unsigned first) const noexcept {
    std::uint64_t* const bits = &occupied_[level * words];
    for (;;) {
        unsigned index = slots;
        for (unsigned word = first / 64; word < words; ++word) {
            const std::uint64_t mask =
                word == first / 64 ? ~std::uint64_t{0} << (first % 64) : ~std::uint64_t{0};
            if (const std::uint64_t w = bits[word] & mask) {
                index = word * 64 + static_cast<unsigned>(std::countr_zero(w));
                break;
            }
        }
        if (index == slots || !slot_empty(level, index)) {
            return index;
        }
        bits[index / 64] &= ~(std::uint64_t{1} << (index % 64)); // a stale bit
    }
}

inline std::optional<wheel::slot_ref> wheel::next_slot() const noexcept {
    // An occupied slot of level 0 starts before every slot above it (unless level 0 is the
    // top level, whose slots may hold any rotation).
    if (levels_ > 1) {
        if (const unsigned index = first_occupied(0, static_cast<unsigned>(now_) % slots);
            index != slots) {
            return slot_ref{0, index, slot_start(0, index)};
        }
    }
    return next_upper_slot();
}

inline void wheel::arm(wheel_entry& entry, tick_type deadline, tick_type slack) noexcept {
    if (entry.armed()) {
        entry.unlink();
    }
    entry.deadline_ = deadline;
    std::uint64_t meta = std::uint64_t{staged_slot} << wheel_entry::slot_shift;
    if (slack != 0) {
        meta |= std::min<tick_type>(slack, std::numeric_limits<std::uint32_t>::max());
        // The coarsest granularity 256^k with 256^k - 1 <= slack.
        const tick_type accepted = slack == no_tick ? slack : slack + 1;
        const unsigned bits = 63 - static_cast<unsigned>(std::countl_zero(accepted));
        meta |= std::uint64_t{std::min(bits / slot_bits, levels_ - 1)}
                << wheel_entry::slack_level_shift;
    }
    // Staged: behind the last entry armed, which is in cache. The entry is filed into its
    // slot with the others of its batch (file_staged()).
    link_back(staged_, entry.link_);
    entry.meta_ = meta;
    if (--staged_room_ == 0) {
        file_staged();
    }
}

inline bool wheel::move(wheel_entry& entry, tick_type deadline) noexcept {
    if (!entry.armed()) {
        return false;
    }
    if (deadline >= entry.deadline_ && entry.deadline_ > now_) {
        // Later and not yet due: the fire tick only grows, so the entry's slot still comes
        // due first. The idle-timeout path: one compare and one store, no slot arithmetic.
        entry.deadline_ = deadline;
        return true;
    }
    entry.deadline_ = deadline;
    const unsigned slot = entry.slot();
    if (slot >= staged_slot) {
        return true; // staged or due: filed by the deadline it has when the wheel gets to it
    }
    if (deadline <= now_ || slot_start(slot / slots, slot % slots) > entry.fire_tick()) {
        entry.unlink();
        file(entry, entry.meta_ & ~wheel_entry::slot_mask);
    }
    return true;
}

inline bool wheel::cancel(wheel_entry& entry) noexcept {
    if (!entry.armed()) {
        return false;
    }
    entry.unlink(); // the slot's occupancy bit may go stale: next_slot() clears it
    return true;
}

template <typename Handler>
inline std::size_t wheel::advance(tick_type now, std::size_t budget, Handler&& handler) {
    if (budget == 0) {
        throw_bad_budget();
    }
    if (now < horizon_ && run_queue_.next_ == &run_queue_ && staged_room_ == stage_batch) {
        now_ = std::max(now_, now); // no slot starts by `now`: nothing to do
        return 0;
    }
    return advance_due(now, budget, handler);
}

template <typename Handler>
std::size_t wheel::advance_due(tick_type now, std::size_t budget, Handler& handler) {
    assert(!advancing_ && "wheel::advance called from an expiry handler");
    struct advancing_guard {
        bool& flag;
        explicit advancing_guard(bool& f)
            : flag(f) {
            flag = true;
        }
        ~advancing_guard() { flag = false; }
    } guard{advancing_};

    std::size_t fired = 0;
    for (;;) {
        for (;;) {
            if (staged_.next_ != &staged_) {
                file_staged(); // armed by a handler: due ones fire in this call
            }
            if (run_queue_.next_ == &run_queue_) {
                break;
            }
            if (fired == budget) {
                return fired;
            }
            wheel_entry& entry = entry_of(run_queue_.next_);
            entry.unlink();
            if (entry.deadline_ > now_) {
                file(entry, entry.meta_ & ~wheel_entry::slot_mask); // moved later
                continue;
            }
            ++fired;
            handler(entry);
        }
        const std::optional<slot_ref> next = next_slot();
        if (!next || next->start > now) {
            horizon_ = next ? next->start : no_tick;
            break;
        }
        now_ = next->start;
        const unsigned slot = next->level * slots + next->index;
        occupied_[slot / 64] &= ~(std::uint64_t{1} << (slot % 64));
        if (next->level == levels_ - 1) {
            top_start_[next->index] = no_tick; // what stays for a later rotation sets it again
        }
        if (next->level == 0 && levels_ > 1) {
            // One tick's entries, in firing order: they become the run queue (empty here).
            link& slot = level0_[next->index];
            run_queue_.next_ = slot.next_;
            run_queue_.prev_ = slot.prev_;
            run_queue_.next_->prev_ = &run_queue_;
            run_queue_.prev_->next_ = &run_queue_;
            slot.next_ = slot.prev_ = &slot;
        } else {
            // Re-file what is not yet due before any handler runs, so that an entry armed
            // by a handler for the same tick as a cascading one goes behind it (FIFO). The
            // level 0 of a one-level wheel is its top level: a slot there holds the entries
            // of later rotations too.
            cascade(next->level, next->index);
        }
    }
    now_ = std::max(now_, now);
    return fired;
}

inline void wheel::cascade(unsigned level, unsigned index) noexcept {
    if (level == 0) {
        refile(level0_[index]); // one list: nothing to walk side by side
        return;
    }
    // The slot's lists are detached, then walked in turn, one entry of each non-empty list
    // per round, so that the loads of the next entries of up to `lists` chains are in flight
    // together: at 1M entries each step of a chain is a cache (and TLB) miss, and one chain
    // walked alone costs a whole memory latency per entry. A chain that ends is replaced by
    // the last one still walking. Each list still ends at its (now empty) head.
    std::array<link, lists>& heads = upper_[(level - 1) * slots + index];
    std::array<link*, lists> at;
    std::array<link*, lists> end;
    unsigned walking = 0;
    for (link& head : heads) {
        if (head.next_ != &head) {
            at[walking] = head.next_;
            __builtin_prefetch(head.next_, 1);
            end[walking] = &head;
            ++walking;
            head.next_ = head.prev_ = &head;
        }
    }
    while (walking != 0) {
        for (unsigned i = 0; i < walking;) {
            link* const node = at[i];
            link* const next = node->next_;
            __builtin_prefetch(next, 1);
            wheel_entry& entry = entry_of(node);
            file(entry, entry.meta_ & ~wheel_entry::slot_mask);
            if (next == end[i]) {
                --walking;
                at[i] = at[walking];
                end[i] = end[walking];
            } else {
                at[i] = next;
                ++i;
            }
        }
    }
}

template <typename Handler>
std::size_t wheel::drain(Handler&& handler) {
    link drained;
    drained.next_ = drained.prev_ = &drained;
    const auto take = [&drained](link& head) {
        if (head.next_ != &head) {
            head.next_->prev_ = drained.prev_;
            drained.prev_->next_ = head.next_;
            head.prev_->next_ = &drained;
            drained.prev_ = head.prev_;
            head.next_ = head.prev_ = &head;
        }
    };
    file_staged(); // so that due entries come first
    take(run_queue_);
    for (unsigned level = 0; level < levels_; ++level) {
        for (unsigned index = 0; index < slots; ++index) {
            if (level == 0) {
                take(level0_[index]);
            } else {
                for (link& head : upper_[(level - 1) * slots + index]) {
                    take(head);
                }
            }
        }
        std::fill_n(&occupied_[level * words], words, 0);
    }
    top_start_.fill(no_tick);
    horizon_ = no_tick;
    // If the handler throws, the entries not yet visited are left disarmed.
    struct disarm_rest {
        link& list;
        ~disarm_rest() {
            for (link* node = list.next_; node != &list;) {
                link* const next = node->next_;
                node->next_ = nullptr;
                node = next;
            }
        }
    } rest{drained};
    std::size_t visited = 0;
    while (drained.next_ != &drained) {
        wheel_entry& entry = entry_of(drained.next_);
        entry.unlink();
        ++visited;
        handler(entry);
    }
    return visited;
}

} // namespace timewheel

#endif // TIMEWHEEL_IMPL_WHEEL_HPP
