//
// timewheel/impl/ttl_cache.hpp
//
// Definitions of ttl_cache.
//

#ifndef TIMEWHEEL_IMPL_TTL_CACHE_HPP
#define TIMEWHEEL_IMPL_TTL_CACHE_HPP

#include <boost/asio/associated_cancellation_slot.hpp>
#include <boost/asio/error.hpp>

#include <cmath>
#include <cstdio>
#include <new>
#include <stdexcept>

namespace timewheel {

inline std::string to_string(const ttl_cache_stats& stats) {
    char line[224];
    std::snprintf(line, sizeof line,
                  ") - hits: %llu, misses: %llu, hit_ratio: %.1f%%, evictions: %llu, "
                  "expirations: %llu, elements: %zu",
                  static_cast<unsigned long long>(stats.hits),
                  static_cast<unsigned long long>(stats.misses), 100.0 * stats.hit_ratio(),
                  static_cast<unsigned long long>(stats.evictions),
                  static_cast<unsigned long long>(stats.expirations), stats.size);
    std::string text = "cache(";
    text.append(stats.name);
    text.append(line);
    return text;
}

namespace detail {

inline std::uint64_t splitmix64(std::uint64_t& state) noexcept {
    std::uint64_t z = (state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

// Times to live are clamped here (about 146 years) so that now + ttl cannot overflow.
inline constexpr std::int64_t max_ttl_ns = std::int64_t{1} << 62;

} // namespace detail

#define TIMEWHEEL_TTL_CACHE_TEMPLATE                                                               \
    template <typename Key, typename Value, typename Hash, typename KeyEqual, typename Allocator>
#define TIMEWHEEL_TTL_CACHE ttl_cache<Key, Value, Hash, KeyEqual, Allocator>

TIMEWHEEL_TTL_CACHE_TEMPLATE
TIMEWHEEL_TTL_CACHE::ttl_cache(const executor_type& ex, duration ttl, ttl_cache_options options,
                               const Hash& hash, const KeyEqual& equal, const Allocator& allocator)
    : ex_(ex)
    , service_(&boost::asio::use_service<wheel_service>(
          boost::asio::query(ex, boost::asio::execution::context)))
    , ttl_(ttl)
    , limit_(options.limit)
    , jitter_(options.jitter)
    , name_(std::move(options.name))
    , spare_limit_(options.spare_nodes)
    , random_(options.seed)
    , allocator_(allocator)
    , index_(hash, equal, allocator)
    , flights_(hash, equal, allocator)
    , report_timer_(ex, report_callback{this}) {
    check_ttl(ttl, "ttl_cache");
    if (limit_ == 0) {
        throw std::invalid_argument("timewheel::ttl_cache: limit must be at least 1, got 0");
    }
    if (!(jitter_ >= 0.0 && jitter_ < 1.0)) {
        throw std::invalid_argument("timewheel::ttl_cache: jitter must be in [0, 1), got " +
                                    std::to_string(jitter_));
    }
    if (random_ == 0) {
        random_ = static_cast<std::uint64_t>(reinterpret_cast<std::uintptr_t>(this)) ^
                  static_cast<std::uint64_t>(clock_type::now().time_since_epoch().count());
    }
    reported_.name = name_;
}

TIMEWHEEL_TTL_CACHE_TEMPLATE
TIMEWHEEL_TTL_CACHE::~ttl_cache() {
    stop_stats_report();
    flights_.set().clear_and_dispose([this](flight* f) {
        f->owner_ = nullptr; // the fetch handler still owns it, and now only frees it
        while (!f->waiters_.empty()) {
            detail::take_op_base<Value>& op = f->waiters_.front();
            f->waiters_.pop_front();
            complete_waiter(op, boost::asio::error::operation_aborted, nullptr, *service_);
        }
    });
    clear();
    while (!spare_.empty()) {
        node& n = static_cast<node&>(spare_.front());
        spare_.pop_front();
        n.~node();
        node_traits::deallocate(allocator_, &n, 1);
    }
}

TIMEWHEEL_TTL_CACHE_TEMPLATE
void TIMEWHEEL_TTL_CACHE::check_ttl(duration ttl, const char* function) {
    if (ttl < duration::zero()) {
        throw std::invalid_argument(
            std::string("timewheel::ttl_cache::") + function + ": ttl must not be negative, got " +
            std::to_string(std::chrono::duration_cast<std::chrono::nanoseconds>(ttl).count()) +
            "ns");
    }
}

// --- Entries -----------------------------------------------------------------------------

TIMEWHEEL_TTL_CACHE_TEMPLATE
template <typename K>
auto TIMEWHEEL_TTL_CACHE::find(const K& key) const -> node* {
    detail::thread_check::scope check(thread_check_);
    const auto& set = index_.set();
    typename index_type::set_type::const_iterator it;
    if constexpr (std::is_same_v<K, Key>) {
        it = set.find(key);
    } else {
        it = set.find(key, set.hash_function(), set.key_eq());
    }
    return it == set.end() ? nullptr : &static_cast<node&>(const_cast<slot&>(*it));
}

TIMEWHEEL_TTL_CACHE_TEMPLATE
template <typename K, typename V>
bool TIMEWHEEL_TTL_CACHE::set_impl(K&& key, V&& value, duration ttl) {
    if constexpr (!transparent && !std::is_same_v<std::remove_cvref_t<K>, Key>) {
        return set_impl(Key(std::forward<K>(key)), std::forward<V>(value), ttl);
    } else {
        detail::thread_check::scope check(thread_check_);
        auto& set = index_.set();
        typename index_type::set_type::insert_commit_data data;
        auto [it, fresh] = set.insert_unique_check(key, set.hash_function(), set.key_eq(), data);
        if (!fresh) {
            node& n = static_cast<node&>(*it);
            n.value_ = std::forward<V>(value); // if this throws, nothing else has changed
            touch(n);
            arm(n, ttl, false);
            return false;
        }
        if (index_.full()) {
            index_.grow();
            set.insert_unique_check(key, set.hash_function(), set.key_eq(), data);
        }
        node& n = make_node(std::forward<K>(key), std::forward<V>(value));
        set.insert_unique_commit(n, data);
        if (limit_ != ttl_cache_options::unlimited) {
            lru_.push_front(n);
        }
        arm(n, ttl, true);
        evict_overflow();
        return true;
    }
}

TIMEWHEEL_TTL_CACHE_TEMPLATE
template <typename K>
Value* TIMEWHEEL_TTL_CACHE::get_ptr_impl(const K& key) {
    node* n = find(key);
    if (n == nullptr) {
        ++misses_;
        return nullptr;
    }
    ++hits_;
    touch(*n);
    return std::addressof(n->value_);
}

TIMEWHEEL_TTL_CACHE_TEMPLATE
template <typename K>
std::optional<Value> TIMEWHEEL_TTL_CACHE::get_impl(const K& key) {
    if (Value* value = get_ptr_impl(key)) {
        return *value;
    }
    return std::nullopt;
}

TIMEWHEEL_TTL_CACHE_TEMPLATE
auto TIMEWHEEL_TTL_CACHE::expiry(const Key& key) const -> std::optional<time_point> {
    if (const node* n = find(key)) {
        return service_->filed_expiry(*n);
    }
    return std::nullopt;
}

TIMEWHEEL_TTL_CACHE_TEMPLATE
template <typename K>
bool TIMEWHEEL_TTL_CACHE::erase_impl(const K& key) {
    node* n = find(key);
    if (n == nullptr) {
        return false;
    }
    unlink(*n);
    service_->cancel(*n);
    recycle(*n);
    return true;
}

TIMEWHEEL_TTL_CACHE_TEMPLATE
void TIMEWHEEL_TTL_CACHE::clear() noexcept {
    detail::thread_check::scope check(thread_check_);
    lru_.clear(); // before the nodes move to the spare list through the same hook
    index_.set().clear_and_dispose([this](slot* s) {
        node& n = static_cast<node&>(*s);
        service_->cancel(n);
        recycle(n);
    });
}

// --- Internals ---------------------------------------------------------------------------

TIMEWHEEL_TTL_CACHE_TEMPLATE
auto TIMEWHEEL_TTL_CACHE::scaled(duration ttl, double factor) noexcept -> duration {
    // Exact below 2^53 ns (104 days); rounded up so that a deadline is never early.
    const double ns = std::ceil(
        static_cast<double>(std::chrono::duration_cast<std::chrono::nanoseconds>(ttl).count()) *
        factor);
    const std::int64_t clamped = ns >= static_cast<double>(detail::max_ttl_ns)
                                     ? detail::max_ttl_ns
                                     : static_cast<std::int64_t>(ns);
    return std::chrono::duration_cast<duration>(std::chrono::nanoseconds(clamped));
}

TIMEWHEEL_TTL_CACHE_TEMPLATE
auto TIMEWHEEL_TTL_CACHE::jittered(duration ttl) noexcept -> duration {
    if (jitter_ == 0.0) {
        return scaled(ttl, 1.0);
    }
    const double u = static_cast<double>(detail::splitmix64(random_) >> 11) * 0x1.0p-53;
    return scaled(ttl, 1.0 + jitter_ * (2.0 * u - 1.0));
}

TIMEWHEEL_TTL_CACHE_TEMPLATE
void TIMEWHEEL_TTL_CACHE::arm(node& n, duration ttl, bool fresh) {
    const time_point now = clock_type::now();
    if (fresh || !n.armed()) {
        const duration life = jittered(ttl);
        service_->arm(n, now + life, slack_for(life));
        return;
    }
    // A refresh. The entry may stay filed with its slack only if that slack is no coarser
    // than the new time to live allows.
    const auto ns = [](duration d) {
        return std::chrono::duration_cast<std::chrono::nanoseconds>(d).count();
    };
    const std::int64_t filed_slack_ns = ns(service_->filed_slack(n));
    if (jitter_ != 0.0) {
        // If its deadline already lies in the new band [now + ttl·(1 − jitter),
        // now + ttl·(1 + jitter)], it keeps it: no wheel work, and never a deadline moved
        // earlier (which would relink the entry in the wheel).
        const duration low = scaled(ttl, 1.0 - jitter_);
        if (filed_slack_ns <= ns(slack_for(low)) &&
            service_->filed_within(n, now + low, now + scaled(ttl, 1.0 + jitter_))) {
            return;
        }
    }
    const duration life = jittered(ttl);
    const duration slack = slack_for(life);
    if (filed_slack_ns <= ns(slack)) {
        service_->reschedule(n, now + life); // later: one store; earlier: a relink
        return;
    }
    service_->arm(n, now + life, slack);
}

TIMEWHEEL_TTL_CACHE_TEMPLATE
void TIMEWHEEL_TTL_CACHE::touch(node& n) noexcept {
    if (limit_ != ttl_cache_options::unlimited) {
        lru_.splice(lru_.begin(), lru_, lru_.iterator_to(n));
    }
}

TIMEWHEEL_TTL_CACHE_TEMPLATE
void TIMEWHEEL_TTL_CACHE::unlink(node& n) noexcept {
    index_.set().erase(index_.set().iterator_to(n));
    if (limit_ != ttl_cache_options::unlimited) {
        lru_.erase(lru_.iterator_to(n));
    }
}

TIMEWHEEL_TTL_CACHE_TEMPLATE
template <typename K, typename V>
auto TIMEWHEEL_TTL_CACHE::make_node(K&& key, V&& value) -> node& {
    node* n;
    if (!spare_.empty()) {
        n = &static_cast<node&>(spare_.front());
        spare_.pop_front();
    } else {
        n = node_traits::allocate(allocator_, 1);
        ::new (static_cast<void*>(n)) node(this);
    }
    try {
        std::construct_at(std::addressof(n->key_), std::forward<K>(key));
    } catch (...) {
        release_shell(*n);
        throw;
    }
    try {
        std::construct_at(std::addressof(n->value_), std::forward<V>(value));
    } catch (...) {
        std::destroy_at(std::addressof(n->key_));
        release_shell(*n);
        throw;
    }
    return *n;
}

TIMEWHEEL_TTL_CACHE_TEMPLATE
void TIMEWHEEL_TTL_CACHE::release_shell(node& n) noexcept {
    if (spare_.size() < spare_limit_) {
        spare_.push_front(n);
        return;
    }
    n.~node();
    node_traits::deallocate(allocator_, &n, 1);
}

TIMEWHEEL_TTL_CACHE_TEMPLATE
void TIMEWHEEL_TTL_CACHE::recycle(node& n) noexcept {
    std::destroy_at(std::addressof(n.value_));
    std::destroy_at(std::addressof(n.key_));
    release_shell(n);
}

// Tells the listener about a node that has left the index, the LRU list and the wheel,
// then recycles it, even if the listener throws.
TIMEWHEEL_TTL_CACHE_TEMPLATE
void TIMEWHEEL_TTL_CACHE::remove(node& n, ttl_cache_removal reason) {
    struct recycler {
        ttl_cache* self;
        node* n;
        ~recycler() { self->recycle(*n); }
    } guard{this, &n};
    if (listener_) {
        listener_(n.key_, n.value_, reason);
    }
}

TIMEWHEEL_TTL_CACHE_TEMPLATE
void TIMEWHEEL_TTL_CACHE::evict_overflow() {
    // A loop, not an if: the listener may insert keys of its own.
    while (size() > limit_) {
        node& n = static_cast<node&>(lru_.back());
        unlink(n);
        service_->cancel(n);
        ++evictions_;
        remove(n, ttl_cache_removal::evicted);
    }
}

TIMEWHEEL_TTL_CACHE_TEMPLATE
void TIMEWHEEL_TTL_CACHE::on_expired(node& n) {
    detail::thread_check::scope check(thread_check_);
    unlink(n);
    ++expirations_;
    remove(n, ttl_cache_removal::expired);
}

// --- Statistics --------------------------------------------------------------------------

TIMEWHEEL_TTL_CACHE_TEMPLATE
ttl_cache_stats TIMEWHEEL_TTL_CACHE::stats() const noexcept {
    ttl_cache_stats s;
    s.name = name_;
    s.hits = hits_;
    s.misses = misses_;
    s.evictions = evictions_;
    s.expirations = expirations_;
    s.size = size();
    return s;
}

TIMEWHEEL_TTL_CACHE_TEMPLATE
void TIMEWHEEL_TTL_CACHE::report_stats(duration interval, stats_sink sink) {
    if (!sink) {
        stop_stats_report();
        return;
    }
    if (interval <= duration::zero()) {
        throw std::invalid_argument(
            "timewheel::ttl_cache::report_stats: interval must be positive, got " +
            std::to_string(std::chrono::duration_cast<std::chrono::nanoseconds>(interval).count()) +
            "ns");
    }
    sink_ = std::move(sink);
    report_interval_ = interval;
    reported_ = stats();
    report_timer_.expires_after(interval);
}

TIMEWHEEL_TTL_CACHE_TEMPLATE
void TIMEWHEEL_TTL_CACHE::stop_stats_report() noexcept {
    report_timer_.cancel();
    sink_ = nullptr;
}

TIMEWHEEL_TTL_CACHE_TEMPLATE
void TIMEWHEEL_TTL_CACHE::on_report() {
    report_timer_.expires_after(report_interval_); // first: the sink may stop the report
    const ttl_cache_stats now = stats();
    ttl_cache_stats interval = now;
    interval.hits -= reported_.hits;
    interval.misses -= reported_.misses;
    interval.evictions -= reported_.evictions;
    interval.expirations -= reported_.expirations;
    reported_ = now;
    const stats_sink sink = sink_; // a copy: the sink may replace or stop the report
    if (sink) {
        sink(interval);
    }
}

// --- async_take --------------------------------------------------------------------------

TIMEWHEEL_TTL_CACHE_TEMPLATE
template <typename Handler, typename Fetch>
void TIMEWHEEL_TTL_CACHE::initiate_async_take::operator()(Handler&& handler, const Key& key,
                                                          Fetch&& fetch) const {
    if constexpr (std::is_const_v<std::remove_reference_t<Handler>>) {
        std::decay_t<Handler> copy(handler); // the op moves from it
        self_->start_take(copy, key, fetch);
    } else {
        self_->start_take(handler, key, fetch);
    }
}

TIMEWHEEL_TTL_CACHE_TEMPLATE
template <typename Handler, typename Fetch>
void TIMEWHEEL_TTL_CACHE::start_take(Handler& handler, const Key& key, Fetch& fetch) {
    detail::thread_check::scope check(thread_check_);
    if (node* n = find(key)) {
        ++hits_;
        touch(*n);
        post_result(handler, {}, std::optional<Value>(n->value_));
        return;
    }
    auto& set = flights_.set();
    typename flight_index_type::set_type::insert_commit_data data;
    auto [it, fresh] = set.insert_unique_check(key, set.hash_function(), set.key_eq(), data);
    if (!fresh) {
        ++hits_;
        add_waiter(*it, handler);
        return;
    }
    if (flights_.full()) {
        flights_.grow();
        set.insert_unique_check(key, set.hash_function(), set.key_eq(), data);
    }
    flight* f = new flight(key, this);
    set.insert_unique_commit(*f, data);
    ++misses_;

    // The fetch may complete (or drop its handler) before it returns: the flight then
    // reports to `start` and is gone.
    detail::take_start<Value> start;
    f->start_ = &start;
    {
        fetch_handler fetch_done(f, ex_);
        try {
            fetch(key, std::move(fetch_done));
        } catch (...) {
            if (!start.done) {
                f->start_ = nullptr;
            }
            throw;
        }
    }
    if (start.done) {
        post_result(handler, start.ec, std::move(start.value));
        return;
    }
    f->start_ = nullptr;
    add_waiter(*f, handler);
}

TIMEWHEEL_TTL_CACHE_TEMPLATE
template <typename Handler>
void TIMEWHEEL_TTL_CACHE::post_result(Handler& handler, const boost::system::error_code& ec,
                                      std::optional<Value>&& value) {
    detail::take_op_base<Value>* op =
        detail::make_async_op<detail::take_op_base<Value>>(handler, ex_);
    op->ec_ = ec;
    op->value_ = std::move(value);
    service_->post_immediate(*op);
}

TIMEWHEEL_TTL_CACHE_TEMPLATE
template <typename Handler>
void TIMEWHEEL_TTL_CACHE::add_waiter(flight& f, Handler& handler) {
    auto cancel_slot = boost::asio::get_associated_cancellation_slot(handler);
    detail::take_op_base<Value>* op =
        detail::make_async_op<detail::take_op_base<Value>>(handler, ex_);
    op->install_cancellation(cancel_slot, &ttl_cache::cancel_waiter, service_,
                             boost::asio::cancellation_type::terminal |
                                 boost::asio::cancellation_type::partial);
    service_->work_started();
    f.waiters_.push_back(*op);
}

TIMEWHEEL_TTL_CACHE_TEMPLATE
void TIMEWHEEL_TTL_CACHE::cancel_waiter(void* service, detail::async_op_base& base) {
    auto& op = static_cast<detail::take_op_base<Value>&>(base);
    op.waiter_hook_.unlink();
    op.ec_ = boost::asio::error::operation_aborted;
    static_cast<wheel_service*>(service)->post_deferred(op);
}

TIMEWHEEL_TTL_CACHE_TEMPLATE
void TIMEWHEEL_TTL_CACHE::complete_waiter(detail::take_op_base<Value>& op,
                                          const boost::system::error_code& ec, const Value* value,
                                          wheel_service& service) noexcept {
    op.detach_cancellation();
    op.ec_ = ec;
    if constexpr (std::is_copy_constructible_v<Value>) { // else only null (a move-only
        if (value != nullptr) {                          // Value cannot be taken)
            try {
                op.value_.emplace(*value);
            } catch (...) {
                op.ec_ = boost::asio::error::no_memory;
            }
        }
    }
    service.post_deferred(op);
}

TIMEWHEEL_TTL_CACHE_TEMPLATE
void TIMEWHEEL_TTL_CACHE::finish_flight(flight& f, const boost::system::error_code& ec,
                                        Value* value) {
    detail::thread_check::scope check(thread_check_);
    flights_.set().erase(flights_.set().iterator_to(f));
    f.owner_ = nullptr;
    if (f.start_ != nullptr) {
        detail::take_start<Value>& start = *std::exchange(f.start_, nullptr);
        start.done = true;
        start.ec = ec;
        if (value != nullptr) {
            try {
                start.value.emplace(*value);
            } catch (...) {
                start.ec = boost::asio::error::no_memory;
            }
        }
    }
    while (!f.waiters_.empty()) {
        detail::take_op_base<Value>& op = f.waiters_.front();
        f.waiters_.pop_front();
        complete_waiter(op, ec, value, *service_);
    }
    if (value != nullptr) {
        set_impl(std::move(f.key_), std::move(*value), ttl_);
    }
}

#undef TIMEWHEEL_TTL_CACHE
#undef TIMEWHEEL_TTL_CACHE_TEMPLATE

} // namespace timewheel

#endif // TIMEWHEEL_IMPL_TTL_CACHE_HPP
