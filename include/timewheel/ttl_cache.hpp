//
// timewheel/ttl_cache.hpp
//
// A time-to-live cache on an io_context's timing wheel, with an LRU limit, expiry jitter,
// a singleflight asynchronous fetch and hit/miss statistics: go-zero's collection.Cache,
// for Asio.
//
// What it costs, and why:
//
// * One allocation per entry, at most. A node holds the key, the value, its hook in the
//   hash index, its hook in the LRU list and its wheel entry. Expiry, refresh (set() of a
//   cached key) and eviction allocate nothing; erased and expired nodes are kept on a
//   bounded spare list (ttl_cache_options::spare_nodes) and reused by the next insertions.
//   The index (Boost.Intrusive, stored hashes, power-of-two buckets) allocates only when it
//   doubles its bucket array, which starts inside the cache object.
// * Expiry is a wheel entry per node (wheel_service): arming is O(1); a refresh whose
//   deadline is still within the new jitter band keeps it, and one that pushes it back is
//   one store (the wheel re-files the entry lazily). Each entry
//   accepts some lateness, its slack: min(ttl/64, 1 s). It is filed at the coarsest wheel
//   level that honours the slack, so that it fires there without being re-filed, and
//   expiries close in time share a wakeup.
// * Jitter (default ±5%, go-zero's "unstable expiry"): each entry lives ttl·(1 + u) with u
//   uniform in [−jitter, +jitter], drawn from a per-cache splitmix64 generator, so that
//   entries stored together do not all expire, and get fetched again, together.
// * The LRU list is kept only when there is a limit; get() on an unlimited cache touches
//   only the entry it finds.
//
// Trade-offs: an entry is removed when the io_context runs the wheel after its deadline;
// until then get() still returns it (go-zero does the same). While entries are cached, the
// io_context has work (the wheel waits for their expiry), so run() returns only once the
// cache is empty. The cache belongs to the thread that runs its io_context, like every timer
// of the wheel. Every set() reads steady_clock once; at a million entries a refresh costs
// about what a lookup followed by a clock read costs, the clock read ordering the lookup's
// cache misses.
//

#ifndef TIMEWHEEL_TTL_CACHE_HPP
#define TIMEWHEEL_TTL_CACHE_HPP

#include <timewheel/callback_timer.hpp>
#include <timewheel/detail/thread_check.hpp>
#include <timewheel/detail/ttl_cache_node.hpp>
#include <timewheel/detail/ttl_cache_take.hpp>
#include <timewheel/wheel_service.hpp>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/execution.hpp>
#include <boost/asio/execution_context.hpp>
#include <boost/system/error_code.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

namespace timewheel {

/// Settings of a ttl_cache, besides its default time to live.
struct ttl_cache_options {
    /// The value of @c limit that means "no limit".
    static constexpr std::size_t unlimited = std::numeric_limits<std::size_t>::max();

    /// Most entries kept; storing one more evicts the least recently used. At least 1.
    std::size_t limit = unlimited;

    /// Deviation of each entry's time to live, in [0, 1): an entry stored with time to live
    /// @c ttl lives ttl·(1 + u), with u uniform in [−jitter, +jitter]. 0 turns jitter off.
    double jitter = 0.05;

    /// A name for the statistics (ttl_cache_stats::name).
    std::string name;

    /// Most removed nodes kept for reuse by later insertions (0: free them at once).
    std::size_t spare_nodes = 1024;

    /// Seed of the jitter generator; 0 picks one from the clock and the cache's address.
    std::uint64_t seed = 0;
};

/// Why a ttl_cache removed an entry, as told to its removal listener.
enum class ttl_cache_removal {
    expired, ///< Its time to live ran out.
    evicted, ///< The cache was at its limit and the entry was the least recently used.
};

/// Counters of a ttl_cache: cumulative from ttl_cache::stats(), per interval in reports.
struct ttl_cache_stats {
    /// The cache's name (valid while the cache lives).
    std::string_view name;
    /// Lookups that found their key: get(), get_ptr(), and async_take() calls served from
    /// the cache or from a fetch already in flight.
    std::uint64_t hits = 0;
    /// Lookups that did not: get(), get_ptr(), and async_take() calls that started a fetch.
    std::uint64_t misses = 0;
    /// Entries removed because the cache was at its limit.
    std::uint64_t evictions = 0;
    /// Entries removed because their time to live ran out.
    std::uint64_t expirations = 0;
    /// Entries in the cache when the statistics were taken.
    std::size_t size = 0;

    /// hits / (hits + misses), or 0 with no lookup.
    double hit_ratio() const noexcept {
        const std::uint64_t total = hits + misses;
        return total == 0 ? 0.0 : static_cast<double>(hits) / static_cast<double>(total);
    }
};

/// One line in the manner of go-zero's minutely cache log, for example
/// <tt>cache(users) - hits: 970, misses: 30, hit_ratio: 97.0%, evictions: 0,
/// expirations: 12, elements: 988</tt>.
inline std::string to_string(const ttl_cache_stats& stats);

/// A cache whose entries expire after a time to live, on an io_context's timing wheel.
/**
 * @tparam Key The key type: hashable with @c Hash, comparable with @c KeyEqual.
 * @tparam Value The value type: assignable (set() of a cached key assigns); also
 * copy-constructible for get() and async_take(), which return copies, and
 * default-constructible for async_take() (the value passed with an error). A move-only
 * value works with set(), get_ptr() and the listener.
 * @tparam Hash The hash. If it and @c KeyEqual both have an @c is_transparent member type,
 * the lookup functions accept any key type they accept (for example @c std::string_view
 * for @c std::string keys) without building a @c Key.
 * @tparam Allocator Allocates the nodes and the bucket arrays (rebound). The operations of
 * async_take() use their handlers' associated allocators; a fetch in flight is allocated with
 * @c new.
 *
 * @par Expiry
 * An entry stored at time @c t with time to live @c ttl (the cache's, or set()'s own) is
 * given a deadline <tt>t + ttl·(1 + u)</tt>, with u uniform in [−jitter, +jitter]. It is never
 * removed before its deadline, and is removed when the io_context first runs the wheel after
 * <tt>deadline + slack_for(ttl·(1 + u)) + one tick</tt> (1 ms by default). Until then it is
 * still found. Storing a key again restarts its time to live: its new deadline lies in
 * <tt>[t + ttl·(1 − jitter), t + ttl·(1 + jitter)]</tt>, and if its current deadline already
 * does, it keeps it (a refresh then costs the wheel nothing).
 *
 * @par Limit
 * With a limit, the cache keeps its entries in least-recently-used order: set(), get(),
 * get_ptr() and async_take() hits make an entry the most recent; contains() and expiry() do
 * not. Storing a new key in a full cache evicts the least recent entry.
 *
 * @par Removal Listener
 * The function given to on_removal() is called for each entry that expires or is evicted,
 * with its key, its value (which it may move from) and the reason, after the entry has left
 * the cache: it may call any member function, for the same key too, except destroy the
 * cache or replace the listener. erase() and clear() do not call it. Expiries call it from
 * the wheel's expiry loop on the io_context's thread; evictions from inside set().
 *
 * @par Thread Safety
 * @e Distinct @e objects: Safe from the thread that runs their io_context.@n
 * @e Shared @e objects: Unsafe. Use a cache only from the thread that runs its io_context
 * (debug builds report a second thread, as wheel_service does).
 *
 * The cache cannot be copied or moved (the wheel links to its nodes), and must be destroyed
 * before its io_context.
 *
 * @par Example
 * @code
 * timewheel::ttl_cache_options options;
 * options.limit = 10'000;
 * options.name = "users";
 * timewheel::ttl_cache<std::string, user> users(io, std::chrono::minutes(5), options);
 *
 * users.set("alice", alice);
 * if (std::optional<user> u = users.get("alice")) { greet(*u); }
 *
 * // One database query per key, however many callers ask at once.
 * users.async_take("bob",
 *     [&db](const std::string& name, auto handler) { db.async_load(name, std::move(handler)); },
 *     [](boost::system::error_code ec, user u) { if (!ec) { greet(u); } });
 *
 * users.report_stats(std::chrono::minutes(1), [](const timewheel::ttl_cache_stats& s) {
 *     std::clog << timewheel::to_string(s) << '\n';
 * });
 * @endcode
 */
template <typename Key, typename Value, typename Hash = std::hash<Key>,
          typename KeyEqual = std::equal_to<Key>,
          typename Allocator = std::allocator<std::pair<const Key, Value>>>
class ttl_cache {
    static constexpr bool transparent = detail::transparent_lookup<Key, Hash, KeyEqual>;

public:
    using key_type = Key;
    using mapped_type = Value;
    using hasher = Hash;
    using key_equal = KeyEqual;
    using allocator_type = Allocator;

    /// The executor on which async_take() completes by default, and which owns the wheel.
    using executor_type = boost::asio::any_io_executor;

    using clock_type = wheel_service::clock_type;
    using duration = clock_type::duration;
    using time_point = clock_type::time_point;

    /// The removal listener: <tt>void(const Key&, Value&, ttl_cache_removal)</tt>.
    using listener_type = std::function<void(const Key&, Value&, ttl_cache_removal)>;

    /// A statistics sink for report_stats().
    using stats_sink = std::function<void(const ttl_cache_stats&)>;

    /// Constructs an empty cache on the wheel of @c ex's io_context.
    /**
     * @param ex An executor of a boost::asio::io_context (or of a strand on one).
     * @param ttl The default time to live, at least 0 (0: an entry expires on the next run
     * of the wheel).
     * @param options Limit, jitter, name; see ttl_cache_options.
     * @param hash The hash function of keys.
     * @param equal The equality of keys.
     * @param allocator Allocates the nodes and the bucket array.
     *
     * @throws std::invalid_argument naming @c ttl if it is negative, @c limit if it is 0,
     * @c jitter if it is outside [0, 1).
     */
    ttl_cache(const executor_type& ex, duration ttl, ttl_cache_options options = {},
              const Hash& hash = Hash(), const KeyEqual& equal = KeyEqual(),
              const Allocator& allocator = Allocator());

    /// Constructs an empty cache on the wheel of @c context (a boost::asio::io_context).
    /** See the constructor from an executor. */
    template <typename ExecutionContext>
    ttl_cache(ExecutionContext& context, duration ttl, ttl_cache_options options = {},
              const Hash& hash = Hash(), const KeyEqual& equal = KeyEqual(),
              const Allocator& allocator = Allocator(),
              std::enable_if_t<std::is_convertible_v<ExecutionContext&,
                                                     boost::asio::execution_context&>>* = nullptr)
        : ttl_cache(context.get_executor(), ttl, std::move(options), hash, equal, allocator) {}

    /// Removes every entry without calling the listener, and completes the pending
    /// async_take() operations with boost::asio::error::operation_aborted. A fetch still
    /// running may complete later: its result is dropped.
    ~ttl_cache();

    ttl_cache(const ttl_cache&) = delete;
    ttl_cache& operator=(const ttl_cache&) = delete;

    /// The executor given at construction.
    const executor_type& get_executor() const noexcept { return ex_; }

    /// @name Entries
    /// @{

    /// Stores @c value under @c key for the default time to live.
    /**
     * A new key is inserted as the most recent entry; if that puts the cache over its limit,
     * the least recent entry is evicted (and the listener called) before set() returns. A
     * cached key gets the new value, a new time to live, and becomes the most recent.
     *
     * @returns true if the key was inserted, false if it was already cached.
     *
     * Complexity: O(1) amortised; a refresh allocates nothing, an insertion at most one
     * node (none when a spare node is available) and, when the index doubles, one bucket
     * array. If the key's or the value's constructor or assignment, or an allocation,
     * throws, the cache is unchanged; an exception from the listener of an eviction leaves
     * the new entry stored and the evicted one gone.
     */
    template <typename K = Key, typename V = Value>
    bool set(K&& key, V&& value) {
        return set_impl(std::forward<K>(key), std::forward<V>(value), ttl_);
    }

    /// Stores @c value under @c key for @c ttl (jitter applies). See set(key, value).
    /**
     * @throws std::invalid_argument naming @c ttl if it is negative; the cache is unchanged.
     */
    template <typename K = Key, typename V = Value>
    bool set(K&& key, V&& value, duration ttl) {
        check_ttl(ttl, "set");
        return set_impl(std::forward<K>(key), std::forward<V>(value), ttl);
    }

    /// A copy of the value of @c key, if cached. Counts a hit or a miss; a hit makes the
    /// entry the most recent. O(1), no allocation other than the copy's.
    std::optional<Value> get(const Key& key) { return get_impl(key); }

    /// Heterogeneous get(); only with a transparent hash and key_equal.
    template <detail::transparent_lookup<Hash, KeyEqual> K>
    std::optional<Value> get(const K& key) {
        return get_impl(key);
    }

    /// A pointer to the value of @c key, or null. Like get() but without a copy: the pointer
    /// is valid until the entry is removed (so not across a turn of the io_context, nor
    /// across a set() that may evict).
    Value* get_ptr(const Key& key) { return get_ptr_impl(key); }

    /// Heterogeneous get_ptr(); only with a transparent hash and key_equal.
    template <detail::transparent_lookup<Hash, KeyEqual> K>
    Value* get_ptr(const K& key) {
        return get_ptr_impl(key);
    }

    /// Whether @c key is cached. No statistics, no change of LRU order. O(1).
    bool contains(const Key& key) const { return find(key) != nullptr; }

    /// Heterogeneous contains(); only with a transparent hash and key_equal.
    template <detail::transparent_lookup<Hash, KeyEqual> K>
    bool contains(const K& key) const {
        return find(key) != nullptr;
    }

    /// The deadline of @c key, if cached: the time (rounded up to a wheel tick) after which
    /// it may be removed, before its slack. No statistics, no change of LRU order.
    std::optional<time_point> expiry(const Key& key) const;

    /// Removes @c key without calling the listener. O(1), no allocation.
    /** @returns true if it was cached. */
    bool erase(const Key& key) { return erase_impl(key); }

    /// Heterogeneous erase(); only with a transparent hash and key_equal.
    template <detail::transparent_lookup<Hash, KeyEqual> K>
    bool erase(const K& key) {
        return erase_impl(key);
    }

    /// Removes every entry without calling the listener. O(size). Fetches in flight go on.
    void clear() noexcept;

    /// Number of entries.
    std::size_t size() const noexcept { return index_.set().size(); }

    /// Whether the cache holds no entry.
    bool empty() const noexcept { return size() == 0; }

    /// @}

    /// @name Settings
    /// @{

    /// The default time to live.
    duration ttl() const noexcept { return ttl_; }

    /// The limit (ttl_cache_options::unlimited if none).
    std::size_t limit() const noexcept { return limit_; }

    /// The jitter deviation.
    double jitter() const noexcept { return jitter_; }

    /// The name given in the options.
    const std::string& name() const noexcept { return name_; }

    /// The slack an entry with time to live @c ttl accepts: min(ttl/64, 1 s).
    static constexpr duration slack_for(duration ttl) noexcept {
        const duration slack = ttl / 64;
        return slack < std::chrono::seconds(1) ? slack : std::chrono::seconds(1);
    }

    /// Sets the function called when an entry expires or is evicted (empty: none). See
    /// "Removal Listener" above; a listener must not replace itself.
    void on_removal(listener_type listener) { listener_ = std::move(listener); }

    /// @}

    /// @name Statistics
    /// @{

    /// The counters since construction.
    ttl_cache_stats stats() const noexcept;

    /// Calls @c sink every @c interval with the counters of that interval (and the current
    /// size), as go-zero logs one line a minute; to_string() formats them. Replaces a
    /// previous report; an empty @c sink stops reporting.
    /**
     * The report is a callback_timer on the cache's wheel: while it runs, the io_context
     * has work and run() does not return.
     *
     * @throws std::invalid_argument naming @c interval if @c sink is set and @c interval is
     * not positive; reporting is then unchanged.
     */
    void report_stats(duration interval, stats_sink sink);

    /// Stops the periodic report, if any.
    void stop_stats_report() noexcept;

    /// @}

    /// Gets the value of @c key asynchronously: from the cache, or else from @c fetch, run
    /// once for all the callers that ask for the same key while it runs (singleflight).
    /**
     * On a hit, the operation completes with the cached value (a hit, and the entry becomes
     * the most recent). If a fetch of @c key is in flight, it waits for that fetch (counted
     * as a hit). Otherwise (a miss) it calls, before returning,
     * @code fetch(const Key& key, FetchHandler handler); @endcode
     * where @c handler is a move-only function object with the signature
     * @code void(boost::system::error_code ec, Value value); @endcode
     * and the associated executor of the cache. @c fetch must arrange for @c handler to be
     * invoked once, on the cache's executor (the thread that runs its io_context), possibly
     * from inside @c fetch itself. Then:
     * @li on success, @c value is stored with set(key, value) and every waiter completes
     *     with a copy of it;
     * @li on an error, every waiter completes with @c ec and nothing is stored;
     * @li if @c handler is destroyed without being invoked, every waiter completes with
     *     boost::asio::error::operation_aborted.
     * If @c fetch throws, the exception propagates from async_take(), which does not
     * complete, and a handler already destroyed has completed the other waiters.
     *
     * The handler is never invoked from inside this function; it is invoked as if by
     * boost::asio::post on its associated executor (default: the cache's), with the memory
     * of the operation, from its associated allocator, released before the call. A hit
     * allocates one operation; a waiter one operation; a miss also one flight (with @c new).
     *
     * @param key The key. Copied into the flight on a miss. The reference that @c fetch
     * receives is valid only during the call: copy the key to use it later.
     * @param fetch See above. Called only on a miss, and not stored.
     * @param token The completion token: a function object with the completion signature,
     * boost::asio::use_future, boost::asio::use_awaitable, boost::asio::deferred, ...
     *
     * @par Completion Signature
     * @code void(boost::system::error_code, Value) @endcode
     * Success with the value; the fetch's error (and a default-constructed Value); or
     * boost::asio::error::operation_aborted if the wait was cancelled, the fetch handler
     * was dropped, or the cache was destroyed.
     *
     * @par Per-Operation Cancellation
     * While it waits for a fetch, this asynchronous operation supports cancellation for
     * the following boost::asio::cancellation_type values:
     * @li @c cancellation_type::terminal
     * @li @c cancellation_type::partial
     * Each completes only this wait, with boost::asio::error::operation_aborted. The fetch
     * goes on for the other waiters, and its value is still stored.
     */
    template <typename Fetch,
              typename TakeToken = boost::asio::default_completion_token_t<executor_type>>
    auto async_take(const Key& key, Fetch&& fetch,
                    TakeToken&& token = boost::asio::default_completion_token_t<executor_type>()) {
        return boost::asio::async_initiate<TakeToken, void(boost::system::error_code, Value)>(
            initiate_async_take(this), token, key, std::forward<Fetch>(fetch));
    }

private:
    using node = detail::ttl_cache_node<Key, Value, ttl_cache>;
    using slot = detail::ttl_cache_slot<Key, Value>;
    using flight = detail::take_flight<Key, Value, ttl_cache>;
    using fetch_handler = detail::take_fetch_handler<Key, Value, ttl_cache>;
    friend node;
    friend fetch_handler;

    using index_type =
        detail::ttl_cache_index<slot, Key, &slot::index_hook_, Hash, KeyEqual, Allocator>;
    using flight_index_type =
        detail::ttl_cache_index<flight, Key, &flight::index_hook_, Hash, KeyEqual, Allocator>;
    using lru_list =
        detail::bi::list<slot, detail::bi::member_hook<slot, detail::lru_hook, &slot::lru_hook_>,
                         detail::bi::constant_time_size<false>>;
    using spare_list =
        detail::bi::list<slot, detail::bi::member_hook<slot, detail::lru_hook, &slot::lru_hook_>,
                         detail::bi::constant_time_size<true>, detail::bi::size_type<std::size_t>>;
    using node_allocator = typename std::allocator_traits<Allocator>::template rebind_alloc<node>;
    using node_traits = std::allocator_traits<node_allocator>;

    class initiate_async_take {
    public:
        using executor_type = ttl_cache::executor_type;

        explicit initiate_async_take(ttl_cache* self) noexcept
            : self_(self) {}

        const executor_type& get_executor() const noexcept { return self_->ex_; }

        template <typename Handler, typename Fetch>
        void operator()(Handler&& handler, const Key& key, Fetch&& fetch) const;

    private:
        ttl_cache* self_;
    };

    struct report_callback {
        ttl_cache* self;
        void operator()() const { self->on_report(); }
    };

    static void check_ttl(duration ttl, const char* function);

    template <typename K>
    node* find(const K& key) const;
    template <typename K, typename V>
    bool set_impl(K&& key, V&& value, duration ttl);
    template <typename K>
    std::optional<Value> get_impl(const K& key);
    template <typename K>
    Value* get_ptr_impl(const K& key);
    template <typename K>
    bool erase_impl(const K& key);

    static duration scaled(duration ttl, double factor) noexcept;
    duration jittered(duration ttl) noexcept;
    void arm(node& n, duration ttl, bool fresh);
    void touch(node& n) noexcept;
    void unlink(node& n) noexcept;
    template <typename K, typename V>
    node& make_node(K&& key, V&& value);
    void release_shell(node& n) noexcept;
    void recycle(node& n) noexcept;
    void remove(node& n, ttl_cache_removal reason);
    void evict_overflow();
    void on_expired(node& n);
    void on_report();

    template <typename Handler>
    void post_result(Handler& handler, const boost::system::error_code& ec,
                     std::optional<Value>&& value);
    template <typename Handler>
    void add_waiter(flight& f, Handler& handler);
    template <typename Handler, typename Fetch>
    void start_take(Handler& handler, const Key& key, Fetch& fetch);
    void finish_flight(flight& f, const boost::system::error_code& ec, Value* value);
    static void complete_waiter(detail::take_op_base<Value>& op,
                                const boost::system::error_code& ec, const Value* value,
                                wheel_service& service) noexcept;
    static void cancel_waiter(void* service, detail::async_op_base& op);

    executor_type ex_;
    wheel_service* service_;
    duration ttl_;
    std::size_t limit_;
    double jitter_;
    std::string name_;
    std::size_t spare_limit_;
    std::uint64_t random_;

    node_allocator allocator_;
    index_type index_;
    lru_list lru_;     // most recent first; empty when there is no limit
    spare_list spare_; // nodes without key and value, for reuse
    flight_index_type flights_;
    listener_type listener_;

    std::uint64_t hits_ = 0;
    std::uint64_t misses_ = 0;
    std::uint64_t evictions_ = 0;
    std::uint64_t expirations_ = 0;
    ttl_cache_stats reported_{}; // the counters at the last report
    stats_sink sink_;
    duration report_interval_{};
    callback_timer<report_callback> report_timer_;
    mutable detail::thread_check thread_check_;
};

} // namespace timewheel

#include <timewheel/impl/ttl_cache.hpp>

#endif // TIMEWHEEL_TTL_CACHE_HPP
