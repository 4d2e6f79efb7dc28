//
// timewheel/detail/ttl_cache_take.hpp
//
// The machinery of ttl_cache::async_take: the state of a take operation (an async_op, see
// detail/async_op.hpp, completed through the wheel_service), a flight per key being fetched
// (the waiters of that key), and the completion handler that the user's fetch function
// receives.
//

#ifndef TIMEWHEEL_DETAIL_TTL_CACHE_TAKE_HPP
#define TIMEWHEEL_DETAIL_TTL_CACHE_TAKE_HPP

#include <timewheel/detail/async_op.hpp>
#include <timewheel/detail/ttl_cache_node.hpp>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/error.hpp>
#include <boost/system/error_code.hpp>

#include <cassert>
#include <memory>
#include <optional>
#include <utility>

namespace timewheel {
namespace detail {

namespace net = boost::asio;

template <typename Value>
class take_op_base : public async_op_base {
public:
    using value_type = Value; // completion signature void(error_code, Value)

    // Auto-unlink: a cancelled waiter leaves its flight without knowing which one it is.
    bi::list_member_hook<bi::link_mode<bi::auto_unlink>> waiter_hook_;
    std::optional<Value> value_;

protected:
    explicit take_op_base(func_type complete) noexcept
        : async_op_base(complete) {}
};

template <typename Value>
using waiter_list = bi::list<
    take_op_base<Value>,
    bi::member_hook<take_op_base<Value>, bi::list_member_hook<bi::link_mode<bi::auto_unlink>>,
                    &take_op_base<Value>::waiter_hook_>,
    bi::constant_time_size<false>>;

// Where a flight reports a completion that happens inside the call to fetch, before the
// initiating caller has become a waiter.
template <typename Value>
struct take_start {
    bool done = false;
    boost::system::error_code ec;
    std::optional<Value> value;
};

// One fetch in progress, and the callers waiting for it. Owned by the fetch handler; the
// cache indexes it by key while it is in flight, and detaches it (owner_ null) if the cache
// is destroyed first.
template <typename Key, typename Value, typename Owner>
struct take_flight {
    template <typename K>
    take_flight(K&& key, Owner* owner)
        : key_(std::forward<K>(key))
        , owner_(owner) {}

    ~take_flight() { assert(waiters_.empty()); }

    index_hook index_hook_;
    Key key_;
    waiter_list<Value> waiters_;
    Owner* owner_;
    take_start<Value>* start_ = nullptr;
};

// The completion handler given to the user's fetch: void(error_code, Value), move-only.
// Destroying it without calling it completes the waiters with operation_aborted.
template <typename Key, typename Value, typename Owner>
class take_fetch_handler {
public:
    using flight_type = take_flight<Key, Value, Owner>;
    using executor_type = net::any_io_executor;

    take_fetch_handler(flight_type* flight, executor_type ex) noexcept
        : flight_(flight)
        , ex_(std::move(ex)) {}

    take_fetch_handler(take_fetch_handler&& other) noexcept
        : flight_(std::exchange(other.flight_, nullptr))
        , ex_(other.ex_) {}

    take_fetch_handler& operator=(take_fetch_handler&&) = delete;

    ~take_fetch_handler() {
        if (flight_ != nullptr) {
            std::unique_ptr<flight_type> flight(flight_);
            if (flight->owner_ != nullptr) {
                flight->owner_->finish_flight(*flight, net::error::operation_aborted, nullptr);
            }
        }
    }

    /// Stores @c value under the key (unless @c ec is set) and completes every waiter.
    void operator()(boost::system::error_code ec, Value value) {
        assert(flight_ != nullptr && "ttl_cache: a fetch handler was invoked twice");
        if (flight_ == nullptr) {
            return;
        }
        std::unique_ptr<flight_type> flight(std::exchange(flight_, nullptr));
        if (flight->owner_ != nullptr) {
            flight->owner_->finish_flight(*flight, ec, ec ? nullptr : &value);
        }
    }

    /// The cache's executor: invoke the handler there.
    executor_type get_executor() const noexcept { return ex_; }

private:
    flight_type* flight_;
    executor_type ex_;
};

} // namespace detail
} // namespace timewheel

#endif // TIMEWHEEL_DETAIL_TTL_CACHE_TAKE_HPP
