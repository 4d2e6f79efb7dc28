//
// timewheel/impl/keyed_timers.hpp
//
// Inline definitions of keyed_timers.
//

#ifndef TIMEWHEEL_IMPL_KEYED_TIMERS_HPP
#define TIMEWHEEL_IMPL_KEYED_TIMERS_HPP

#include <timewheel/detail/deadline.hpp>

#include <cassert>
#include <new>
#include <stdexcept>
#include <string>
#include <utility>

namespace timewheel {

template <typename Key, typename Value, typename Hash, typename KeyEqual>
template <typename ExecutionContext>
requires std::is_convertible_v<ExecutionContext&, boost::asio::execution_context&>
keyed_timers<Key, Value, Hash, KeyEqual>::keyed_timers(ExecutionContext& context,
                                                       execute_function execute, duration slack,
                                                       const Hash& hash, const KeyEqual& equal)
    : service_(&boost::asio::use_service<wheel_service>(
          static_cast<boost::asio::execution_context&>(context)))
    , execute_(std::move(execute))
    , slack_(slack)
    , hash_(hash)
    , equal_(equal)
    , table_(&keyed_timers::on_event, this) {
    if (!execute_) {
        throw std::invalid_argument("timewheel::keyed_timers: execute must not be empty");
    }
    if (slack < duration::zero()) {
        throw std::invalid_argument("timewheel::keyed_timers: slack must not be negative, got " +
                                    std::to_string(slack.count()) + " clock ticks");
    }
}

template <typename Key, typename Value, typename Hash, typename KeyEqual>
keyed_timers<Key, Value, Hash, KeyEqual>::~keyed_timers() {
    drop_all();
}

template <typename Key, typename Value, typename Hash, typename KeyEqual>
void keyed_timers<Key, Value, Hash, KeyEqual>::check_running(const char* function) const {
    if (stopped_) {
        throw std::logic_error(std::string("timewheel::keyed_timers::") + function +
                               ": the keyed_timers is stopped");
    }
}

template <typename Key, typename Value, typename Hash, typename KeyEqual>
template <typename K>
auto keyed_timers<Key, Value, Hash, KeyEqual>::find(const K& key) const -> slot_type* {
    if constexpr (direct_lookup<K>) {
        return table_.find(key, hash_of(key), equal_);
    } else {
        const Key converted(key);
        return table_.find(converted, hash_of(converted), equal_);
    }
}

template <typename Key, typename Value, typename Hash, typename KeyEqual>
template <typename K, typename V>
void keyed_timers<Key, Value, Hash, KeyEqual>::set_timer(K&& key, V&& value, duration delay) {
    check_running("set_timer");
    // The clock is read after the lookup (in set_impl) in set_timer_at's place: see below.
    if constexpr (!direct_lookup<K>) {
        set_timer(Key(std::forward<K>(key)), std::forward<V>(value), delay);
    } else {
        slot_type* slot = table_.find(key, hash_of(key), equal_);
        if (slot != nullptr) {
            // The lookup's cache misses complete before the clock read's fence, not after.
            slot->value_ = std::forward<V>(value);
            [[maybe_unused]] const bool armed =
                service_->reschedule(*slot, detail::after<clock_type>(delay));
            assert(armed && "a pending keyed_timers entry is always armed");
            return;
        }
        set_impl(std::forward<K>(key), std::forward<V>(value), detail::after<clock_type>(delay));
    }
}

template <typename Key, typename Value, typename Hash, typename KeyEqual>
template <typename K, typename V>
void keyed_timers<Key, Value, Hash, KeyEqual>::set_timer_at(K&& key, V&& value, time_point expiry) {
    check_running("set_timer_at");
    set_impl(std::forward<K>(key), std::forward<V>(value), expiry);
}

template <typename Key, typename Value, typename Hash, typename KeyEqual>
template <typename K, typename V>
void keyed_timers<Key, Value, Hash, KeyEqual>::set_impl(K&& key, V&& value, time_point expiry) {
    if constexpr (!direct_lookup<K>) {
        set_impl(Key(std::forward<K>(key)), std::forward<V>(value), expiry);
    } else {
        const std::uint64_t hash = hash_of(key);
        if (slot_type* slot = table_.find(key, hash, equal_)) {
            slot->value_ = std::forward<V>(value);
            [[maybe_unused]] const bool armed = service_->reschedule(*slot, expiry);
            assert(armed && "a pending keyed_timers entry is always armed");
            return;
        }
        table_.reserve(table_.occupied() + 1); // may move every slot: before taking one
        slot_type* slot = table_.occupy(hash);
        try {
            ::new (static_cast<void*>(std::addressof(slot->key_))) Key(std::forward<K>(key));
        } catch (...) {
            table_.vacate(slot);
            throw;
        }
        try {
            ::new (static_cast<void*>(std::addressof(slot->value_))) Value(std::forward<V>(value));
        } catch (...) {
            slot->key_.~Key();
            table_.vacate(slot);
            throw;
        }
        try {
            service_->arm(*slot, expiry, slack_);
        } catch (...) { // the service may have filed the entry before failing
            service_->cancel(*slot);
            erase(slot);
            throw;
        }
    }
}

template <typename Key, typename Value, typename Hash, typename KeyEqual>
template <typename K>
bool keyed_timers<Key, Value, Hash, KeyEqual>::move_timer(const K& key, duration delay) {
    check_running("move_timer");
    slot_type* slot = find(key);
    if (slot == nullptr) {
        return false;
    }
    // The clock is read after the lookup, so that its fence waits for this lookup's cache
    // misses rather than holding back the next operation's.
    return service_->reschedule(*slot, detail::after<clock_type>(delay));
}

template <typename Key, typename Value, typename Hash, typename KeyEqual>
template <typename K>
bool keyed_timers<Key, Value, Hash, KeyEqual>::move_timer_at(const K& key, time_point expiry) {
    check_running("move_timer_at");
    slot_type* slot = find(key);
    return slot != nullptr && service_->reschedule(*slot, expiry);
}

template <typename Key, typename Value, typename Hash, typename KeyEqual>
template <typename K>
bool keyed_timers<Key, Value, Hash, KeyEqual>::remove_timer(const K& key) {
    check_running("remove_timer");
    slot_type* slot = find(key);
    if (slot == nullptr) {
        return false;
    }
    service_->cancel(*slot);
    erase(slot);
    return true;
}

template <typename Key, typename Value, typename Hash, typename KeyEqual>
template <typename Function>
std::size_t keyed_timers<Key, Value, Hash, KeyEqual>::drain(Function&& fn) {
    check_running("drain");
    if (draining_) {
        throw std::logic_error("timewheel::keyed_timers::drain: called from inside drain");
    }
    struct draining_guard {
        bool& flag;
        explicit draining_guard(bool& f)
            : flag(f) {
            flag = true;
        }
        ~draining_guard() { flag = false; }
    } guard{draining_};
    // Every pending entry is disarmed and marked first: lookups no longer see them, and keys
    // that fn sets are new entries, not visited. Then the marked slots are emptied one by one,
    // key and value moved out first since fn may make slots move (the array may grow, and a
    // removal shifts the rest of its cluster back, possibly behind the scan): when the scan
    // reaches the end with marked slots left, it starts over.
    const std::size_t marked =
        table_.mark_for_drain([this](slot_type& slot) { service_->cancel(slot); });
    std::size_t drained = 0;
    std::size_t from = 0;
    while (drained < marked && !stopped_) {
        slot_type* slot = table_.next_marked(from);
        if (slot == nullptr) {
            if (from == 0) {
                break; // none left (fn cannot remove marked slots; this is defensive)
            }
            from = 0;
            continue;
        }
        from = table_.index_of(*slot); // after the erase, a shifted slot may sit here
        Key key(std::move(slot->key_));
        Value value(std::move(slot->value_));
        erase(slot);
        ++drained;
        try {
            fn(std::as_const(key), value);
        } catch (...) {
            table_.clear_marked([](slot_type& s) {
                s.key_.~Key();
                s.value_.~Value();
            });
            throw;
        }
    }
    return drained;
}

template <typename Key, typename Value, typename Hash, typename KeyEqual>
void keyed_timers<Key, Value, Hash, KeyEqual>::stop() noexcept {
    if (stopped_) {
        return;
    }
    stopped_ = true;
    drop_all();
}

template <typename Key, typename Value, typename Hash, typename KeyEqual>
template <typename K>
bool keyed_timers<Key, Value, Hash, KeyEqual>::contains(const K& key) const {
    return find(key) != nullptr;
}

template <typename Key, typename Value, typename Hash, typename KeyEqual>
template <typename K>
auto keyed_timers<Key, Value, Hash, KeyEqual>::expiry(const K& key) const
    -> std::optional<time_point> {
    if (const slot_type* slot = find(key)) {
        return service_->to_time(slot->deadline());
    }
    return std::nullopt;
}

template <typename Key, typename Value, typename Hash, typename KeyEqual>
void keyed_timers<Key, Value, Hash, KeyEqual>::reserve(std::size_t count) {
    table_.reserve(count);
}

// Destroys the key and value of a full slot and empties it.
template <typename Key, typename Value, typename Hash, typename KeyEqual>
void keyed_timers<Key, Value, Hash, KeyEqual>::erase(slot_type* slot) noexcept {
    slot->key_.~Key();
    slot->value_.~Value();
    table_.vacate(slot);
}

template <typename Key, typename Value, typename Hash, typename KeyEqual>
void keyed_timers<Key, Value, Hash, KeyEqual>::drop_all() noexcept {
    table_.clear([this](slot_type& slot) {
        if (!shut_down_) {
            service_->cancel(slot); // false, harmlessly, for slots marked by a drain
        }
        slot.key_.~Key();
        slot.value_.~Value();
    });
}

template <typename Key, typename Value, typename Hash, typename KeyEqual>
void keyed_timers<Key, Value, Hash, KeyEqual>::on_event(wheel_service&,
                                                        detail::service_entry& entry,
                                                        detail::entry_event event) {
    auto& slot = static_cast<slot_type&>(entry);
    auto* self = static_cast<keyed_timers*>(slot.owner_);
    if (event == detail::entry_event::shutdown) {
        self->shut_down_ = true; // the service is going: never call it again
        self->erase(&slot);
        return;
    }
    // Out of the table before the call: execute may set keys, which may move slots.
    Key key(std::move(slot.key_));
    Value value(std::move(slot.value_));
    self->erase(&slot);
    self->execute_(std::as_const(key), value);
}

} // namespace timewheel

#endif // TIMEWHEEL_IMPL_KEYED_TIMERS_HPP
