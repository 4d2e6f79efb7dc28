//
// timewheel/detail/ttl_cache_take.hpp
//
// The machinery of ttl_cache::async_take: a take operation per caller (allocated with its
// handler's associated allocator, completed through the io_context's scheduler and
// dispatched to the handler's associated executor, its memory released before the upcall),
// a flight per key being fetched (the waiters of that key), and the completion handler that
// the user's fetch function receives.
//

#ifndef TIMEWHEEL_DETAIL_TTL_CACHE_TAKE_HPP
#define TIMEWHEEL_DETAIL_TTL_CACHE_TAKE_HPP

#include <timewheel/detail/ttl_cache_node.hpp>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/cancellation_type.hpp>
#include <boost/asio/detail/bind_handler.hpp>
#include <boost/asio/detail/fenced_block.hpp>
#include <boost/asio/detail/handler_alloc_helpers.hpp>
#include <boost/asio/detail/handler_work.hpp>
#include <boost/asio/detail/scheduler.hpp>
#include <boost/asio/detail/scheduler_operation.hpp>
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
class take_cancellation;

template <typename Value>
class take_op_base : public net::detail::scheduler_operation {
public:
    // Auto-unlink: a cancelled waiter leaves its flight without knowing which one it is.
    bi::list_member_hook<bi::link_mode<bi::auto_unlink>> waiter_hook_;
    boost::system::error_code ec_;
    std::optional<Value> value_;
    take_cancellation<Value>* cancellation_ = nullptr; // in the handler's slot, if any

protected:
    explicit take_op_base(func_type complete) noexcept
        : scheduler_operation(complete) {}
};

template <typename Value>
using waiter_list = bi::list<
    take_op_base<Value>,
    bi::member_hook<take_op_base<Value>, bi::list_member_hook<bi::link_mode<bi::auto_unlink>>,
                    &take_op_base<Value>::waiter_hook_>,
    bi::constant_time_size<false>>;

template <typename Value, typename Handler, typename IoExecutor>
class take_op : public take_op_base<Value> {
public:
    BOOST_ASIO_DEFINE_HANDLER_PTR(take_op);

    take_op(Handler& handler, const IoExecutor& io_ex)
        : take_op_base<Value>(&take_op::do_complete)
        , handler_(std::move(handler))
        , work_(handler_, io_ex) {}

    static void do_complete(void* owner, net::detail::scheduler_operation* base,
                            const boost::system::error_code& /*ec*/, std::size_t /*bytes*/) {
        take_op* op = static_cast<take_op*>(base);
        ptr p = {std::addressof(op->handler_), op, op};
        net::detail::handler_work<Handler, IoExecutor> work(std::move(op->work_));

        // Move the handler and the value out so that the memory is released before the call.
        net::detail::move_binder2<Handler, boost::system::error_code, Value> handler(
            0, std::move(op->handler_), op->ec_, op->value_ ? std::move(*op->value_) : Value());
        p.h = std::addressof(handler.handler_);
        p.reset();

        if (owner) { // null when the context is shutting down: destroy, don't invoke
            net::detail::fenced_block block(net::detail::fenced_block::half);
            work.complete(handler, handler.handler_);
        }
    }

private:
    Handler handler_;
    net::detail::handler_work<Handler, IoExecutor> work_;
};

// Installed in a waiter's cancellation slot; inert (op_ null) once the waiter completed.
template <typename Value>
class take_cancellation {
public:
    take_cancellation(net::detail::scheduler* scheduler, take_op_base<Value>* op) noexcept
        : scheduler_(scheduler)
        , op_(op) {}

    void operator()(net::cancellation_type_t type) {
        if (op_ != nullptr &&
            (type & (net::cancellation_type::terminal | net::cancellation_type::partial)) !=
                net::cancellation_type::none) {
            take_op_base<Value>* op = std::exchange(op_, nullptr); // go inert, never clear
            op->waiter_hook_.unlink();
            op->cancellation_ = nullptr;
            op->ec_ = net::error::operation_aborted;
            scheduler_->post_deferred_completion(op);
        }
    }

    void detach() noexcept { op_ = nullptr; }

private:
    net::detail::scheduler* scheduler_;
    take_op_base<Value>* op_;
};

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
