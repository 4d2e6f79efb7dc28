//
// timewheel/wheel.hpp
//
// The core: a hierarchical timing wheel over integer ticks.
//
// It knows nothing of clocks, threads or Asio. Time is a `tick_type` that only moves
// forward through advance(); the caller decides what a tick means. Everything above it
// (wheel_service, wheel_timer, the features) converts clock time to ticks and drives it.
//
// Design, in the manner of ratas, Tokio's driver and the 2016 rework of Linux's timer wheel:
//
// * `levels` levels (default 6, at most 8) of 256 slots. A slot at level L spans 256^L
//   ticks, a level spans 256^(L+1); six levels cover 2^48 ticks (8,900 years at 1 ms) and
//   eight the whole tick range. Each level keeps a 256-bit occupancy bitmap (four words),
//   so the next occupied slot is found with a few count-trailing-zeros per level, and the
//   first level with a bit set holds the earliest deadline: next_expiry() is O(levels).
//   256 slots rather than 64 because a timeout of 1-60 s at 1 ms ticks then sits at level 1
//   and is re-filed once (at level 2 of a 64-slot wheel it was re-filed twice), and each
//   re-filing is a walk over entries that are cold by then.
// * An entry is filed at the level given by the highest byte in which its deadline differs
//   from now(). When now() reaches the start of a slot above level 0, the slot's entries
//   are re-filed into finer levels (cascading) or, once due, queued to fire. advance() jumps
//   from occupied slot to occupied slot, so catching up after a long stall costs the same
//   as a short one; and it returns at once, without looking at a bitmap, when no slot
//   starts before its target (the wheel keeps a lower bound of the next slot's start).
// * A slot above level 0 is 16 lists, picked by the entry's index at the level below
//   (so entries that will share a finer slot, and so every entry of one tick, share a
//   list, in arm order), or for an entry that fires when the slot comes due, by a hash of
//   its deadline (every entry of one deadline shares a list). Cascading walks the non-empty lists
//   in turn: up to 16 independent chains of cold entries whose cache misses overlap, where one list
//   would wait for each entry before it can load the next (at 1M entries, a whole memory latency
//   per entry).
// * A level-0 slot holds the entries of one tick. When it comes due it is spliced whole
//   onto the run queue (two pointer writes) and its entries fire from there, one walk.
// * A deadline beyond the range is filed in the top level by its own bits. A top-level
//   slot comes due at the earliest slot start of its entries, whatever their rotation, and
//   re-files those of later rotations: a deadline many ranges away costs one visit per
//   re-filing, not one per rotation, so catching up stays flat in the lag. An entry never
//   fires before its deadline, over the whole tick range: deadlines are stored as given.
// * Slack: an entry that accepts up to `slack` ticks of lateness has its deadline rounded
//   up to the coarsest granularity (256^k) that honours it (unless that would pass the
//   largest tick: then it is exact). The rounded deadline is the start of a slot at every
//   level up to k, so once it is filed at a level <= k it fires in place without cascading.
//   Idle timeouts and cache expiry want this. Entries that fire in place share their
//   slot's start as fire tick, so their list is picked by their deadline instead (see
//   below); the slot's walk then has up to 16 chains, not one.
// * Moving later is lazy: only the deadline is stored, and the entry is re-filed when its
//   old slot comes due. A connection re-armed on every read is re-filed about once per
//   timeout period. Moving to a time before the start of the entry's slot relinks it.
// * Arming stages: the entry is linked behind the last one armed (in cache, where a slot's
//   list tail is a cold entry at a million timers) and filed into its slot with the other
//   arms of its batch, every 16 arms and before advance() or drain() looks at the slots.
//   An arm then does little besides touching its own entry, so the processor overlaps the
//   cache misses of several arms; filing touches entries still in cache. A staged entry is
//   armed like any other: cancel, move, destroy and next_expiry() treat it as filed.
// * Entries are intrusive: a circular doubly linked list node inside wheel_entry, slots are
//   list heads. The wheel owns nothing and never allocates. Unlinking needs no wheel, so
//   cancel() and destroying an armed entry only rewrite the two neighbours; the slot's
//   occupancy bit, if it went stale, is cleared the next time the wheel looks at the slot.
// * Cascading re-files every entry of a slot before any handler runs, so an entry that a
//   handler arms for the same tick as a cascading one goes behind it (FIFO), and a callback
//   may arm, move, cancel or destroy any entry, itself included.
//
// Thread safety: a wheel and its entries belong to one thread (or strand) at a time.
//

#ifndef TIMEWHEEL_WHEEL_HPP
#define TIMEWHEEL_WHEEL_HPP

#include <timewheel/detail/config.hpp>

#include <array>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>

namespace timewheel {

/// Integer time of a wheel. What one tick means is the caller's choice.
using tick_type = std::uint64_t;

class wheel;

namespace detail {

// A node of a circular doubly linked list; a list's head is a node of its own. An unlinked
// entry has next_ == nullptr.
struct wheel_link {
    wheel_link* next_ = nullptr;
    wheel_link* prev_ = nullptr;
};

} // namespace detail

/// The part of a user's object that a wheel files: a list hook, a deadline and a
/// little state (32 bytes on LP64).
/**
 * Embed it in your own object (as a member or a base) and recover the object in the
 * expiry handler given to wheel::advance(). The wheel never allocates and never owns an
 * entry.
 *
 * Destroying an armed entry removes it from its wheel. Moving an entry transfers its place
 * in the wheel: the moved-to entry is armed exactly where the moved-from one was, and the
 * moved-from entry is left unarmed. The wheel must outlive the entries armed in it, or
 * they must be cancelled first; a wheel's destructor disarms what is still armed.
 *
 * @par Thread Safety
 * @e Distinct @e objects: Safe.@n
 * @e Shared @e objects: Unsafe. An entry is used on the thread of the wheel it is armed in.
 */
class wheel_entry {
public:
    /// An unarmed entry.
    wheel_entry() noexcept = default;

    /// Takes over @c other's deadline, slack and place in its wheel; @c other is unarmed.
    wheel_entry(wheel_entry&& other) noexcept;

    /// Disarms this entry, then takes over @c other's deadline, slack and place.
    wheel_entry& operator=(wheel_entry&& other) noexcept;

    wheel_entry(const wheel_entry&) = delete;
    wheel_entry& operator=(const wheel_entry&) = delete;

    /// Disarms the entry (unlinks it from its slot).
    ~wheel_entry() {
        if (armed()) {
            unlink();
        }
    }

    /// Whether the entry is waiting in a wheel.
    bool armed() const noexcept { return link_.next_ != nullptr; }

    /// The deadline last given to wheel::arm() or wheel::move(), exactly as given: any
    /// value of tick_type is accepted and read back unchanged.
    tick_type deadline() const noexcept { return deadline_; }

    /// The lateness, in ticks, that the entry accepts (0: exact), as given to arm() but
    /// saturated at 2^32 - 1 (larger slacks round no further: see wheel).
    tick_type slack() const noexcept { return static_cast<std::uint32_t>(meta_); }

private:
    friend class wheel;

    // The tick at which the entry fires: its deadline rounded up to its slack granularity,
    // or the deadline itself if rounding up would pass the largest tick.
    tick_type fire_tick() const noexcept;

    void unlink() noexcept {
        // Both neighbours read before either is written: the compiler cannot know that the
        // stores do not alias the entry, and would otherwise read the entry again.
        detail::wheel_link* const next = link_.next_;
        detail::wheel_link* const prev = link_.prev_;
        prev->next_ = next;
        next->prev_ = prev;
        link_.next_ = nullptr;
    }

    // The first member: the wheel recovers the entry from its node (standard layout).
    detail::wheel_link link_;
    tick_type deadline_ = 0;
    // One word, written by one store when the entry is filed (each store an arm makes to
    // the cold entry holds a store-buffer entry until its line arrives):
    //   bits 0-31  the slack as requested, saturated at 32 bits
    //   bits 32-47 the slot: level * 256 + index, wheel::run_queue_slot or wheel::staged_slot
    //   bits 48-55 the slack level: the fire tick is a multiple of 256^level
    std::uint64_t meta_ = 0;

    static constexpr unsigned slot_shift = 32;
    static constexpr unsigned slack_level_shift = 48;
    static constexpr std::uint64_t slot_mask = std::uint64_t{0xffff} << slot_shift;
    unsigned slot() const noexcept { return static_cast<std::uint16_t>(meta_ >> slot_shift); }
    unsigned slack_level() const noexcept {
        return static_cast<std::uint8_t>(meta_ >> slack_level_shift);
    }
};

/// Options of a wheel.
struct wheel_options {
    /// Number of levels of 256 slots, in [1, wheel::max_levels]. The range of the wheel
    /// is 256^levels ticks: 6 levels at 1 ms ticks cover about 8,900 years, 8 levels the
    /// whole tick range.
    unsigned levels = 6;
};

/// A hierarchical timing wheel over integer ticks.
/**
 * @par Precision
 * An entry never fires before its deadline, whatever the deadline and whatever now():
 * every value of tick_type is a valid deadline, stored and read back (deadline()) as
 * given, and the wheel's time never wraps. An exact entry (slack 0) fires in the first
 * advance() whose @c now reaches its deadline, and now() then equals its deadline. An entry
 * with slack @c s fires at a tick in [deadline, deadline + s]. A deadline at or before now()
 * means "due now": the entry fires in the next advance(). Among entries armed for the same
 * deadline and not moved since, those that fire in the same tick fire in arm order: exact
 * entries of one tick, and entries due now, fire first armed first. Entries with slack
 * that a tick serves from different deadlines have no set order among themselves or among
 * that tick's exact entries. A moved entry has no set place among the entries of its new
 * tick.
 *
 * @par Complexity
 * arm(), move(), cancel(): O(1), no allocation (an arm is staged, and filed with up to 15
 * others: see the design notes in wheel.hpp). next_expiry(): O(levels), plus the up to 16
 * arms not yet filed. advance(): O(1) per entry fired or re-filed plus O(levels) per
 * occupied slot visited, whatever the distance @c now jumps.
 *
 * @par Thread Safety
 * @e Distinct @e objects: Safe.@n
 * @e Shared @e objects: Unsafe.
 */
class wheel {
public:
    /// The most levels a wheel accepts. Eight levels of 256 slots already cover the whole
    /// tick range (256^8 = 2^64); 9 and 10 are accepted for the sake of code written for
    /// the former 64-slot levels, work as 8, and levels() reports the number given.
    static constexpr unsigned max_levels = 10;

    /// Constructs an empty wheel whose time is @c start.
    /**
     * @throws std::invalid_argument if @c options.levels is 0 or above max_levels.
     */
    explicit wheel(tick_type start = 0, wheel_options options = {});

    /// Disarms every entry still armed.
    ~wheel();

    wheel(const wheel&) = delete;
    wheel& operator=(const wheel&) = delete;

    /// The wheel's time: the target of the last complete advance(), or while advance() is
    /// calling back, the tick being expired.
    tick_type now() const noexcept { return now_; }

    /// Number of levels.
    unsigned levels() const noexcept { return levels_given_; }

    /// Number of ticks the wheel files without re-filing: 256^levels, or with 8 levels the
    /// largest tick_type (the whole range, 2^64 - 1).
    tick_type range() const noexcept {
        return levels_ >= used_levels ? std::numeric_limits<tick_type>::max()
                                      : tick_type{1} << (slot_bits * levels_);
    }

    /// Arms @c entry to fire at @c deadline, accepting up to @c slack ticks of lateness.
    /**
     * An armed entry is first disarmed (wherever it is armed), so arm() also restarts an
     * entry. A deadline at or before now() is due now.
     */
    TIMEWHEEL_ALWAYS_INLINE void arm(wheel_entry& entry, tick_type deadline,
                                     tick_type slack = 0) noexcept;

    /// Changes the deadline of an armed entry, keeping its slack.
    /**
     * Later, or within the same slot: O(1) and no relinking; the entry is re-filed when its
     * old slot comes due. Earlier than the start of its slot: relinked.
     *
     * @returns false, and does nothing, if @c entry is not armed (for example because it
     * has just fired).
     */
    bool move(wheel_entry& entry, tick_type deadline) noexcept;

    /// Disarms @c entry. Returns false if it was not armed; cancelling twice is safe.
    bool cancel(wheel_entry& entry) noexcept;

    /// The tick of the earliest occupied slot: a lower bound of the next deadline, and the
    /// tick at which advance() next has work (firing, or re-filing entries into finer
    /// levels). now() if entries are due; nothing if the wheel is empty.
    std::optional<tick_type> next_expiry() const noexcept;

    /// Whether no entry is armed.
    bool empty() const noexcept { return !next_expiry(); }

    /// Fires, in deadline order, every entry due by @c now, calling
    /// <tt>handler(wheel_entry&)</tt> for each with the entry already disarmed.
    /**
     * The handler may arm, move, cancel or destroy any entry, the one it was given
     * included, but must not call advance(). If it throws, the exception propagates and
     * the entries not yet fired stay due.
     *
     * @param now Target time; a value below now() is taken as now().
     * @param budget Most entries to fire in this call. When it runs out, now() stays at the
     * tick being expired, and the next call resumes there.
     * @param handler Called as <tt>handler(wheel_entry&)</tt> for each entry that fires.
     * @returns The number of entries fired.
     * @throws std::invalid_argument if @c budget is 0.
     */
    template <typename Handler>
    TIMEWHEEL_ALWAYS_INLINE std::size_t advance(tick_type now, std::size_t budget,
                                                Handler&& handler);

    /// Disarms every armed entry, calling <tt>handler(wheel_entry&)</tt> for each with the
    /// entry already disarmed, due entries first, then in the order of their slots. now() is
    /// unchanged. The handler may arm entries again; those are not visited.
    /**
     * @returns The number of entries visited. If the handler throws, the entries not yet
     * visited are left disarmed.
     */
    template <typename Handler>
    std::size_t drain(Handler&& handler);

    /// Fires every entry due by @c now; see the overload with a budget.
    template <typename Handler>
    std::size_t advance(tick_type now, Handler&& handler) {
        return advance(now, std::numeric_limits<std::size_t>::max(),
                       static_cast<Handler&&>(handler));
    }

private:
    using link = detail::wheel_link;

    static constexpr unsigned slot_bits = 8;
    static constexpr unsigned slots = 1u << slot_bits;
    static constexpr unsigned words = slots / 64; // of an occupancy bitmap
    static constexpr unsigned list_bits = 4;
    static constexpr unsigned lists = 1u << list_bits; // per slot above level 0
    static constexpr unsigned used_levels = 8;         // 256^8: the whole tick range
    static constexpr std::uint16_t run_queue_slot = 0xffff;
    static constexpr std::uint16_t staged_slot = 0xfffe;
    static constexpr unsigned stage_batch = 16; // arms staged before they are filed
    static constexpr tick_type no_tick = std::numeric_limits<tick_type>::max();

    struct slot_ref {
        unsigned level;
        unsigned index;
        tick_type start;
    };

    static wheel_entry& entry_of(link* node) noexcept;
    static const wheel_entry& entry_of(const link* node) noexcept;
    // The slot an entry firing at `fire` (after now) is filed in, and that slot's start.
    TIMEWHEEL_ALWAYS_INLINE slot_ref place(tick_type fire) const noexcept;
    static void link_back(link& head, link& node) noexcept;
    link& list_of(unsigned slot, unsigned shift, tick_type fire, tick_type start,
                  tick_type deadline) noexcept;
    bool slot_empty(unsigned level, unsigned index) const noexcept;
    TIMEWHEEL_ALWAYS_INLINE void file(wheel_entry& entry, std::uint64_t meta) noexcept;
    void cascade(unsigned level, unsigned index) noexcept;
    void file_staged() noexcept; // out of line: once per stage_batch arms
    void refile(link& head) noexcept;
    // advance() once it has work: apart, so that the test for none is inlined alone.
    template <typename Handler>
    std::size_t advance_due(tick_type now, std::size_t budget, Handler& handler);
    tick_type slot_start(unsigned level, unsigned index) const noexcept;
    // The earliest occupied slot. Level 0 is searched inline (it answers most calls: one per
    // tick that fires), the levels above out of line.
    std::optional<slot_ref> next_slot() const noexcept;
    std::optional<slot_ref> next_upper_slot() const noexcept;
    unsigned first_occupied(unsigned level, unsigned first) const noexcept;
    [[noreturn]] static void throw_bad_budget();

    tick_type now_;
    // No occupied slot starts before this tick (a lower bound; no_tick: none may be
    // occupied). advance() to a tick below it has nothing to do unless the run queue holds
    // entries.
    tick_type horizon_ = no_tick;
    unsigned levels_given_;
    unsigned levels_; // in use: at most used_levels
    bool advancing_ = false;
    link run_queue_; // due entries, in firing order
    // Bits may be stale (set over an empty slot) after an armed entry was cancelled or
    // destroyed; next_slot() clears them when it meets them. A bit is never clear over a
    // non-empty list: file() relies on it, and sets the bit only when it starts a list.
    // Indexed by slot number (level * slots + index) / 64.
    mutable std::array<std::uint64_t, used_levels * words> occupied_{};
    // Per top-level slot, the earliest start (fire tick with the lower digits cleared) of
    // the entries filed there, whatever their rotation: the slot comes due then, so that
    // a deadline many ranges away costs one visit, not one per rotation.
    mutable std::array<tick_type, slots> top_start_;
    std::array<link, slots> level0_;
    // The lists of the slots above level 0, indexed by slot number - slots.
    std::array<std::array<link, lists>, (used_levels - 1) * slots> upper_;
    // Last, so that the lists above keep their alignment.
    link staged_; // armed and not yet filed, in arm order
    // Arms left before the next file_staged() (cancels not counted back). A countdown, so
    // that arm() tests it with the decrement's own flags.
    unsigned staged_room_ = stage_batch;
};

} // namespace timewheel

#include <timewheel/impl/wheel.hpp>

#endif // TIMEWHEEL_WHEEL_HPP
