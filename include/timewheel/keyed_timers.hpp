//
// timewheel/keyed_timers.hpp
//
// Keyed timers: a map from keys to values, each with a deadline, that calls one function
// with the key and value when the deadline passes. The go-zero TimingWheel, on an io_context.
//
// What it is for: expiring cache keys, sessions, pending requests, anything named by a key
// whose deadline is set, pushed back or dropped many times before it fires. Callers speak in
// keys (`set_timer`, `move_timer`, `remove_timer`), never in timer objects.
//
// Design and trade-offs:
//
// * Each key is one slot of an open-addressing hash table owned by the keyed_timers (linear
//   probing, at most 3/4 full): the slot is a wheel_service entry (40 bytes) plus the hash, a
//   back pointer, the key and the value. With millions of keys an operation on a random key
//   costs a cache miss or two, and every set or move reads the clock, whose fence keeps the
//   processor from overlapping one operation's misses with the next: so the slots hold the
//   entries themselves, and a lookup lands on the entry it then moves, one miss where a
//   chained table (bucket, then node) or a std::unordered_map of timers pays two to four.
//   Arrays of 2 MiB or more are advised for transparent huge pages (Linux), sparing the TLB.
// * Slots are reused and the array never shrinks, so a warm keyed_timers with steady churn
//   (set, move, remove, fire) allocates nothing; it grows, doubling, when the number of keys
//   reaches a new peak. The prices: memory stays at its peak (4/3 to 8/3 slots a key),
//   and entries move within the table (when it grows, and when a removal shifts the rest of
//   its probe cluster back), so Key and Value must be nothrow move-constructible, and the
//   execute and drain functions get a key and value moved out of the table.
// * The deadlines live in the io_context's wheel (see wheel_service): set and move are O(1);
//   moving later is lazy (one store), which is what a cache that refreshes a key on every
//   read wants. Deadlines are rounded up to the service's tick, so a timer never fires early,
//   and a delay shorter than a tick fires on the next tick (not a rotation later, go-zero
//   #5510). After the thread was blocked, the wheel catches up on the next run and fires
//   everything that came due, in deadline order (go-zero #3619).
// * The execute function runs on the io_context's thread from inside the wheel's expiry loop,
//   with the entry already removed: during the call the key is not in the keyed_timers, so
//   move_timer() on it returns false and reinserts nothing (go-zero #205), and set_timer() on
//   it adds a new entry. The key and value are destroyed when the call returns.
// * Lookups are heterogeneous when the hash and the equality are transparent, as the defaults
//   are for std::string keys: a std::string key is found by a std::string_view or a literal
//   without constructing a string.
// * No locks: a keyed_timers belongs to the thread that runs its io_context, like the wheel.
//

#ifndef TIMEWHEEL_KEYED_TIMERS_HPP
#define TIMEWHEEL_KEYED_TIMERS_HPP

#include <timewheel/detail/keyed_timers_table.hpp>
#include <timewheel/wheel_service.hpp>

#include <boost/asio/execution.hpp>
#include <boost/asio/execution_context.hpp>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>

namespace timewheel {

/// The default hash of keyed_timers keys: std::hash, made transparent for strings.
/**
 * For std::basic_string keys it hashes through std::basic_string_view and declares
 * @c is_transparent, so that a keyed_timers with std::string keys can be searched with a
 * std::string_view or a string literal. For other keys it is std::hash<Key>.
 */
template <typename Key>
struct default_key_hash : std::hash<Key> {};

/// The transparent hash of std::basic_string keys.
template <typename Char, typename Traits, typename Allocator>
struct default_key_hash<std::basic_string<Char, Traits, Allocator>> {
    using is_transparent = void;

    std::size_t operator()(std::basic_string_view<Char, Traits> key) const noexcept {
        return std::hash<std::basic_string_view<Char, Traits>>{}(key);
    }
};

/// Keyed timers on an io_context's wheel: each key has a value and a deadline, and an
/// execute function is called with both when the deadline passes.
/**
 * The calls of go-zero's TimingWheel, with the same meaning:
 *
 * @li set_timer(key, value, delay): adds the key, or replaces the value and deadline of an
 * existing key. (go-zero: SetTimer.)
 * @li move_timer(key, delay): changes the deadline of a pending key; false if there is none.
 * (MoveTimer.)
 * @li remove_timer(key): drops a pending key without calling execute. (RemoveTimer.)
 * @li drain(fn): calls fn(key, value) for every pending key and empties the wheel. (Drain.)
 * @li stop(): drops every pending key; every later set, move, remove or drain throws
 * std::logic_error and changes nothing. (Stop.)
 *
 * @par Execution
 * @c execute(key, value) is called on the thread that runs the io_context, from inside the
 * wheel's expiry loop, never from inside a member function of the keyed_timers. The key has
 * already been removed when it is called: contains(key) is false, move_timer(key) returns
 * false, set_timer(key, ...) adds a new entry (a key may re-arm itself). It may call any
 * member function, on any key, except destroy the keyed_timers. The value may be moved from;
 * key and value are destroyed when execute returns. If execute throws, the exception
 * propagates out of the io_context's run() and the entry is gone; the other due entries
 * fire on the next run().
 *
 * @par Precision
 * An entry never fires before its deadline, measured with std::chrono::steady_clock. It fires
 * within one tick of the wheel (1 ms by default, see wheel_service_options) plus the slack
 * given at construction, plus the time the io_context takes to get to it. A zero or negative
 * delay means "due now": the entry fires on the next turn of the io_context, not inside
 * set_timer(). Entries that come due while the thread is blocked all fire, in deadline order,
 * when the io_context runs again.
 *
 * @par Complexity
 * set_timer, move_timer, remove_timer, contains: O(1) on average (one hash lookup plus an
 * O(1) wheel operation); no allocation, except set_timer of a new key when the number of
 * keys reaches a new peak and the slot array doubles (reserve() avoids that). drain and stop:
 * O(capacity). Memory: the array holds 4/3 to 8/3 slots per key, 72 bytes a slot for 8-byte
 * keys and values (151 bytes a key measured at a million keys, against 348 for an
 * std::unordered_map of steady_timers).
 *
 * @par Thread Safety
 * @e Distinct @e objects: Safe from the thread that runs their io_context.@n
 * @e Shared @e objects: Unsafe. A keyed_timers may be set up from another thread before that
 * thread starts running the io_context.
 *
 * @par Lifetime
 * A keyed_timers can be neither copied nor moved: its entries point back to it. Destroy it
 * before its io_context; destroying it drops its entries without calling execute. When the
 * io_context shuts down first, the entries are dropped then, also without calling execute.
 *
 * @par Example
 * @code
 * boost::asio::io_context io;
 * timewheel::keyed_timers<std::string, session> sessions(
 *     io, [](const std::string& id, session& s) { s.close("idle for 30 s"); });
 * sessions.set_timer("alice", session{...}, std::chrono::seconds(30));
 * // on every request from alice (O(1), lazy):
 * sessions.move_timer(std::string_view("alice"), std::chrono::seconds(30));
 * io.run();
 * @endcode
 *
 * @tparam Key Nothrow move-constructible, hashable with @c Hash, comparable with @c KeyEqual.
 * @tparam Value Nothrow move-constructible; constructed in place (or assigned, when set_timer
 * replaces it), and destroyed when its entry ends.
 * @tparam Hash Hash of keys; if it and @c KeyEqual declare @c is_transparent, lookups accept
 * any type they can hash and compare with a key.
 * @tparam KeyEqual Equality of keys.
 */
template <typename Key, typename Value, typename Hash = default_key_hash<Key>,
          typename KeyEqual = std::equal_to<>>
class keyed_timers {
    static constexpr bool transparent = requires {
        typename Hash::is_transparent;
        typename KeyEqual::is_transparent;
    };

public:
    /// The type of the keys.
    using key_type = Key;

    /// The type of the values.
    using mapped_type = Value;

    /// The hash of the keys.
    using hasher = Hash;

    /// The equality of the keys.
    using key_equal = KeyEqual;

    /// The clock deadlines are measured with.
    using clock_type = wheel_service::clock_type;

    /// The duration type of the clock.
    using duration = clock_type::duration;

    /// The time point type of the clock.
    using time_point = clock_type::time_point;

    /// The function called with each key and value whose deadline has passed.
    using execute_function = std::function<void(const Key&, Value&)>;

    /// Constructs an empty keyed_timers on the wheel of @c context (an io_context).
    /**
     * @param context The io_context whose wheel_service files the deadlines.
     * @param execute Called with each key and value whose deadline passes.
     * @param slack Lateness every entry accepts: entries are then filed at the coarsest wheel
     * level that honours it and fire there without being re-filed (see wheel::arm). Zero
     * means exact (within one tick).
     * @param hash The hash of keys.
     * @param equal The equality of keys.
     * @throws std::invalid_argument if @c execute is empty ("execute") or @c slack is negative
     * ("slack").
     */
    template <typename ExecutionContext>
    requires std::is_convertible_v<ExecutionContext&, boost::asio::execution_context&>
    keyed_timers(ExecutionContext& context, execute_function execute, duration slack = {},
                 const Hash& hash = Hash(), const KeyEqual& equal = KeyEqual());

    /// Constructs an empty keyed_timers on the wheel of @c ex's io_context.
    /**
     * See the overload taking an execution context.
     */
    template <typename Executor>
    requires boost::asio::execution::is_executor<Executor>::value
    keyed_timers(const Executor& ex, execute_function execute, duration slack = {},
                 const Hash& hash = Hash(), const KeyEqual& equal = KeyEqual())
        : keyed_timers(boost::asio::query(ex, boost::asio::execution::context), std::move(execute),
                       slack, hash, equal) {}

    /// Drops every pending entry without calling execute, and frees the nodes.
    ~keyed_timers();

    keyed_timers(const keyed_timers&) = delete;
    keyed_timers& operator=(const keyed_timers&) = delete;

    /// Sets the timer of @c key to fire after @c delay with @c value.
    /**
     * Adds the key if it is not pending; otherwise replaces its value (by assignment) and its
     * deadline (moving it later is lazy, O(1)). A zero or negative delay means due now.
     *
     * @param key The key; with transparent hash and equality, anything they accept (a
     * std::string_view for std::string keys), converted to @c Key only if the key is new.
     * @param value The value, assigned or constructed from @c value.
     * @param delay The time from now until the deadline.
     * @throws std::logic_error if stop() was called; nothing changes.
     * @throws Whatever constructing or assigning the key or value throws, or std::bad_alloc;
     * a new key is then not added.
     *
     * @par Complexity
     * O(1) on average; allocates only when the number of entries reaches a new peak.
     */
    template <typename K = Key, typename V = Value>
    void set_timer(K&& key, V&& value, duration delay);

    /// Sets the timer of @c key to fire at @c expiry with @c value; see set_timer().
    template <typename K = Key, typename V = Value>
    void set_timer_at(K&& key, V&& value, time_point expiry);

    /// Moves the deadline of a pending key to @c delay from now.
    /**
     * Later: O(1), one store (the entry is re-filed when its old slot comes due). Earlier:
     * O(1), relinked. The value is unchanged.
     *
     * @returns false, and changes nothing, if @c key is not pending: never set, removed,
     * drained, or already fired (also while its execute call is running).
     * @throws std::logic_error if stop() was called.
     */
    template <typename K = Key>
    bool move_timer(const K& key, duration delay);

    /// Moves the deadline of a pending key to @c expiry; see move_timer().
    template <typename K = Key>
    bool move_timer_at(const K& key, time_point expiry);

    /// Drops a pending key without calling execute; its key and value are destroyed.
    /**
     * @returns false if @c key is not pending.
     * @throws std::logic_error if stop() was called.
     */
    template <typename K = Key>
    bool remove_timer(const K& key);

    /// Empties the keyed_timers, calling <tt>fn(const Key&, Value&)</tt> for every pending
    /// entry, in no particular order, instead of execute.
    /**
     * The entries are removed before the first call: @c fn may set new keys (they are not
     * drained) and may move the value out. Each key and value is destroyed after its call.
     * If @c fn throws, the entries not yet visited are dropped without a call.
     *
     * @returns The number of entries drained.
     * @throws std::logic_error if stop() was called, or if called from inside @c fn.
     */
    template <typename Function>
    std::size_t drain(Function&& fn);

    /// Drops every pending entry without calling execute, and refuses every later set, move,
    /// remove and drain with std::logic_error. Calling it again does nothing.
    void stop() noexcept;

    /// Whether stop() was called.
    bool stopped() const noexcept { return stopped_; }

    /// Number of pending entries.
    std::size_t size() const noexcept { return table_.size(); }

    /// Whether no entry is pending.
    bool empty() const noexcept { return table_.size() == 0; }

    /// Whether @c key is pending. O(1) on average.
    template <typename K = Key>
    bool contains(const K& key) const;

    /// The deadline of a pending key, rounded up to the wheel's tick (the entry fires at or
    /// after it); nothing if @c key is not pending. A key set with a deadline that had
    /// already passed is due now: its expiry is then the wheel's current tick.
    template <typename K = Key>
    std::optional<time_point> expiry(const K& key) const;

    /// Makes room for @c count pending entries, so that reaching that many allocates nothing.
    /**
     * O(size()) if the slot array grows (every entry moves to the new array), else O(1).
     *
     * @throws std::bad_alloc; nothing changes.
     */
    void reserve(std::size_t count);

    /// The lateness each entry accepts, as given at construction.
    duration slack() const noexcept { return slack_; }

    /// The service whose wheel files the deadlines.
    wheel_service& service() const noexcept { return *service_; }

private:
    using slot_type = detail::keyed_timers_slot<Key, Value>;
    using table_type = detail::slot_table<slot_type>;

    static_assert(std::is_nothrow_move_constructible_v<Key> &&
                      std::is_nothrow_move_constructible_v<Value>,
                  "keyed_timers: Key and Value must be nothrow move-constructible (entries move "
                  "within the table)");

    // The argument a lookup is made with: K itself when transparent, else a Key.
    template <typename K>
    static constexpr bool direct_lookup =
        transparent || std::is_same_v<std::remove_cvref_t<K>, Key>;

    static void on_event(wheel_service& service, detail::service_entry& entry,
                         detail::entry_event event);

    template <typename K>
    std::uint64_t hash_of(const K& key) const {
        return table_type::stored_hash(detail::mix_hash(hash_(key)));
    }
    template <typename K>
    slot_type* find(const K& key) const;
    template <typename K, typename V>
    void set_impl(K&& key, V&& value, time_point expiry);
    void check_running(const char* function) const;
    void erase(slot_type* slot) noexcept;
    void drop_all() noexcept;

    wheel_service* service_;
    execute_function execute_;
    duration slack_;
    [[no_unique_address]] Hash hash_;
    [[no_unique_address]] KeyEqual equal_;
    table_type table_;
    bool stopped_ = false;
    bool draining_ = false;
    bool shut_down_ = false; // the io_context shut down: the service is gone or going
};

} // namespace timewheel

#include <timewheel/impl/keyed_timers.hpp>

#endif // TIMEWHEEL_KEYED_TIMERS_HPP
