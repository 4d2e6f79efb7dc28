//
// src/wheel_service.cpp
//
// The driver (one steady_timer per wheel), configuration, and the completion paths of
// wheel_timer waits.
//

#include <timewheel/wheel_service.hpp>

#include <boost/asio/error.hpp>
#include <boost/asio/post.hpp>

#include <cstdio>
#include <cstdlib>
#include <limits>
#include <stdexcept>
#include <string>

namespace timewheel {

namespace net = boost::asio;

boost::asio::execution_context::id wheel_service::id;

namespace {

void validate(const wheel_service_options& options) {
    using namespace std::chrono;
    if (options.tick < microseconds(1) || options.tick > hours(1)) {
        throw std::invalid_argument("timewheel::wheel_service: tick must be in [1us, 1h], got " +
                                    std::to_string(options.tick.count()) + "ns");
    }
    if (options.budget == 0) {
        throw std::invalid_argument("timewheel::wheel_service: budget must be at least 1");
    }
    if (options.levels == 0 || options.levels > wheel::max_levels) {
        throw std::invalid_argument("timewheel::wheel_service: levels must be in [1, " +
                                    std::to_string(wheel::max_levels) + "], got " +
                                    std::to_string(options.levels));
    }
}

void abort_on_misuse(const char* what) {
    std::fprintf(stderr, "%s\n", what);
    std::abort();
}

thread_misuse_handler misuse_handler = &abort_on_misuse;

} // namespace

thread_misuse_handler set_thread_misuse_handler(thread_misuse_handler handler) noexcept {
    thread_misuse_handler previous = misuse_handler;
    misuse_handler = handler != nullptr ? handler : &abort_on_misuse;
    return previous;
}

void detail::report_thread_misuse(const char* what) noexcept {
    misuse_handler(what);
}

wheel_service::wheel_service(net::execution_context& context)
    : service(context)
    , scheduler_(net::use_service<net::detail::scheduler>(context))
    , reactor_(net::use_service<net::detail::timer_scheduler>(context))
    , continuation_(this)
    , tick_ns_(options_.tick.count())
    , origin_(clock_type::now()) {
    wheel_.emplace(0, wheel_options{options_.levels});
    reactor_.init_task();
    reactor_.add_timer_queue(timer_queue_);
}

wheel_service::~wheel_service() {
    reactor_.remove_timer_queue(timer_queue_);
    while (driver_op* op = free_driver_ops_) {
        free_driver_ops_ = op->next_free_;
        delete op;
    }
}

void wheel_service::configure(const wheel_service_options& options) {
    detail::thread_check::scope check(thread_check_);
    validate(options);
    if (armed_ != 0) {
        throw std::logic_error("timewheel::wheel_service::configure: " + std::to_string(armed_) +
                               " timers are armed; configure before the first one");
    }
    if (driver_state_ == driver_state::running) {
        throw std::logic_error("timewheel::wheel_service::configure: called from an expiry "
                               "callback; the wheel cannot be rebuilt while it runs");
    }
    wheel_.emplace(0, wheel_options{options.levels});
    options_ = options;
    tick_ns_ = options.tick.count();
    origin_ = clock_type::now();
}

wheel_service::time_point wheel_service::to_time(tick_type tick) const noexcept {
    // origin_ + tick * tick_ns_ must not overflow: compare with the room left above origin_.
    const std::int64_t room =
        std::chrono::duration_cast<std::chrono::nanoseconds>(time_point::max() - origin_).count();
    if (tick > static_cast<tick_type>(room / tick_ns_)) {
        return time_point::max();
    }
    return origin_ + std::chrono::duration_cast<duration>(
                         std::chrono::nanoseconds(static_cast<std::int64_t>(tick) * tick_ns_));
}

tick_type wheel_service::floor_tick(time_point t) const noexcept {
    if (t <= origin_) {
        return 0;
    }
    const std::int64_t since =
        std::chrono::duration_cast<std::chrono::nanoseconds>(t - origin_).count();
    return static_cast<tick_type>(since / tick_ns_);
}

tick_type wheel_service::current_tick() const noexcept {
    return floor_tick(clock_type::now());
}

void wheel_service::throw_negative_slack() {
    throw std::invalid_argument("timewheel::wheel_service::arm: slack must not be negative");
}

bool wheel_service::settle_tick(time_point expiry, tick_type& tick) {
    const time_point now = clock_type::now();
    if (driver_state_ == driver_state::idle && !shut_down_ && wheel_->empty()) {
        // An idle wheel's time stands still: bring it up to date (nothing can fire), so that
        // the entry is filed at the level its real distance calls for.
        wheel_->advance(floor_tick(now), [](wheel_entry&) {});
    }
    if (expiry > now) {
        return false;
    }
    // Passed: due now. The tick that began at or before the expiry is due at the current
    // tick, and keeps the entry in expiry order with the others that are due.
    tick = floor_tick(expiry);
    return true;
}

tick_type wheel_service::slack_ticks(duration slack) const noexcept {
    const std::int64_t ns = std::chrono::duration_cast<std::chrono::nanoseconds>(slack).count();
    return ns <= 0 ? 0 : static_cast<tick_type>(ns / tick_ns_);
}

// --- The driver -------------------------------------------------------------------------

wheel_service::driver_op::driver_op(wheel_service* service) noexcept
    : wait_op(&driver_op::do_complete)
    , service_(service) {}

void wheel_service::driver_op::do_complete(void* owner, net::detail::scheduler_operation* base,
                                           const boost::system::error_code&, std::size_t) {
    auto* op = static_cast<driver_op*>(base);
    wheel_service* service = op->service_;
    const boost::system::error_code ec = op->ec_;
    op->next_free_ = service->free_driver_ops_;
    service->free_driver_ops_ = op;
    if (owner != nullptr) { // null when the context is shutting down
        service->on_driver(ec);
    }
}

wheel_service::continuation_op::continuation_op(wheel_service* service) noexcept
    : scheduler_operation(&continuation_op::do_complete)
    , service_(service) {}

void wheel_service::continuation_op::do_complete(void* owner,
                                                 net::detail::scheduler_operation* base,
                                                 const boost::system::error_code&, std::size_t) {
    if (owner != nullptr) {
        static_cast<continuation_op*>(base)->service_->run_due();
    }
}

void wheel_service::update_driver(bool due_now) {
    if (driver_state_ == driver_state::running || driver_state_ == driver_state::posted ||
        shut_down_) {
        return; // the run in progress re-arms when it ends
    }
    const std::optional<tick_type> next = wheel_->next_expiry();
    if (!next) {
        if (driver_state_ == driver_state::waiting) {
            stop_driver();
        }
        return;
    }
    if (due_now || *next <= wheel_->now()) {
        // Due now: no need for the reactor. A reactor wait that is still pending is
        // superseded by the continuation's re-arm.
        post_continuation();
        return;
    }
    if (driver_state_ == driver_state::waiting && *next >= driver_tick_) {
        return;
    }
    start_driver(*next);
}

void wheel_service::post_continuation() noexcept {
    driver_state_ = driver_state::posted;
    scheduler_.post_immediate_completion(&continuation_, false);
}

void wheel_service::start_driver(tick_type tick) {
    driver_op* op = free_driver_ops_;
    if (op != nullptr) {
        free_driver_ops_ = op->next_free_;
    } else {
        op = new driver_op(this); // before any change, so that bad_alloc changes nothing
    }
    // A queued timer keeps its first expiry, so an earlier one needs the old wait aborted.
    reactor_.cancel_timer(timer_queue_, timer_data_);
    driver_tick_ = tick;
    driver_state_ = driver_state::waiting;
    reactor_.schedule_timer(timer_queue_, to_time(tick), timer_data_, op);
}

void wheel_service::stop_driver() noexcept {
    reactor_.cancel_timer(timer_queue_, timer_data_);
    driver_state_ = driver_state::idle;
}

void wheel_service::on_driver(const boost::system::error_code& ec) {
    if (ec == net::error::operation_aborted) {
        return; // superseded by an earlier deadline, or the wheel emptied
    }
    if (driver_state_ == driver_state::running || driver_state_ == driver_state::posted) {
        return; // stale: the run in progress (or the queued continuation) re-arms at its end
    }
    // A success may be stale (a newer wait is pending): running the wheel early is harmless.
    run_due();
}

void wheel_service::run_due() {
    detail::thread_check::scope check(thread_check_);
    ++wakeups_;
    driver_state_ = driver_state::running;
    struct finish_guard {
        wheel_service* self;
        ~finish_guard() { self->finish_run(); } // re-arm even if a callback throws
    } guard{this};

    wheel_->advance(current_tick(), options_.budget, [this](wheel_entry& entry) {
        --armed_;
        auto& e = static_cast<detail::service_entry&>(entry);
        e.notify(*this, detail::entry_event::expired);
    });
}

void wheel_service::finish_run() {
    driver_state_ = driver_state::idle;
    if (shut_down_) {
        return;
    }
    const std::optional<tick_type> next = wheel_->next_expiry();
    if (next && *next <= wheel_->now()) {
        // The budget ran out (or a callback threw): yield to other handlers, then go on.
        post_continuation();
        return;
    }
    if (!next) {
        stop_driver();
        return;
    }
    start_driver(*next);
}

// --- wheel_timer waits ------------------------------------------------------------------

void wheel_service::add_wait(implementation_type& impl, detail::wait_op_base* op) {
    if (!impl.armed()) {
        arm(impl, impl.expiry, impl.slack); // the only step that may throw: first
    }
    op->timer_ = &impl;
    impl.ops.push(op);
    ++impl.waits;
    scheduler_.work_started();
}

std::size_t wheel_service::complete_waits(implementation_type& impl, std::size_t max,
                                          const boost::system::error_code& ec) noexcept {
    net::detail::op_queue<net::detail::scheduler_operation> done;
    std::size_t count = 0;
    while (count < max) {
        detail::wait_op_base* op = impl.ops.front();
        if (op == nullptr) {
            break;
        }
        impl.ops.pop();
        op->ec_ = ec;
        op->timer_ = nullptr;
        if (op->cancellation_ != nullptr) {
            op->cancellation_->detach();
            op->cancellation_ = nullptr;
        }
        done.push(op);
        ++count;
    }
    impl.waits -= count;
    if (impl.ops.empty()) {
        cancel(static_cast<detail::service_entry&>(impl));
    }
    scheduler_.post_deferred_completions(done);
    return count;
}

void wheel_service::cancel_wait(detail::wait_op_base& op) {
    detail::thread_check::scope check(thread_check_);
    implementation_type* impl = op.timer_;
    if (impl == nullptr) {
        return;
    }
    net::detail::op_queue<detail::wait_op_base> others;
    while (detail::wait_op_base* queued = impl->ops.front()) {
        impl->ops.pop();
        if (queued != &op) {
            others.push(queued);
        }
    }
    impl->ops.push(others);
    --impl->waits;
    op.ec_ = net::error::operation_aborted;
    op.timer_ = nullptr;
    op.cancellation_ = nullptr; // its handler has already gone inert
    if (impl->ops.empty()) {
        cancel(static_cast<detail::service_entry&>(*impl));
    }
    scheduler_.post_deferred_completion(&op);
}

void wheel_service::on_timer_event(implementation_type& impl, detail::entry_event event) noexcept {
    if (event == detail::entry_event::expired) {
        complete_waits(impl, std::numeric_limits<std::size_t>::max(), {});
        return;
    }
    // Shutdown: destroy the handlers without invoking them.
    net::detail::op_queue<net::detail::scheduler_operation> abandoned;
    while (detail::wait_op_base* op = impl.ops.front()) {
        impl.ops.pop();
        op->timer_ = nullptr;
        if (op->cancellation_ != nullptr) {
            op->cancellation_->detach();
            op->cancellation_ = nullptr;
        }
        abandoned.push(op);
    }
    impl.waits = 0;
    scheduler_.abandon_operations(abandoned);
}

void detail::on_timer_event(wheel_service& service, service_entry& entry, entry_event event) {
    service.on_timer_event(static_cast<timer_impl&>(entry), event);
}

void wheel_service::destroy(implementation_type& impl) noexcept {
    cancel(impl);
}

void wheel_service::move_construct(implementation_type& impl, implementation_type& other) noexcept {
    static_cast<detail::service_entry&>(impl) =
        std::move(static_cast<detail::service_entry&>(other));
    impl.expiry = other.expiry;
    impl.slack = other.slack;
    impl.ops.push(other.ops);
    impl.waits = other.waits;
    other.waits = 0;
    for (detail::wait_op_base* op = impl.ops.front(); op != nullptr;
         op = static_cast<detail::wait_op_base*>(net::detail::op_queue_access::next(op))) {
        op->timer_ = &impl;
    }
}

void wheel_service::move_assign(implementation_type& impl, wheel_service& /*other_service*/,
                                implementation_type& other) noexcept {
    if (&impl == &other) {
        return;
    }
    cancel(impl); // this timer's waits end here; it then takes over other's place
    move_construct(impl, other);
}

std::size_t wheel_service::cancel(implementation_type& impl) noexcept {
    if (impl.ops.empty()) {
        return 0;
    }
    return complete_waits(impl, std::numeric_limits<std::size_t>::max(),
                          net::error::operation_aborted);
}

std::size_t wheel_service::cancel_one(implementation_type& impl) noexcept {
    if (impl.ops.empty()) {
        return 0;
    }
    return complete_waits(impl, 1, net::error::operation_aborted);
}

std::size_t wheel_service::expires_at(implementation_type& impl, time_point expiry) noexcept {
    const std::size_t cancelled = cancel(impl);
    impl.expiry = expiry;
    return cancelled;
}

std::size_t wheel_service::reschedule_at(implementation_type& impl, time_point expiry) {
    impl.expiry = expiry;
    if (impl.ops.empty()) {
        return 0;
    }
    reschedule(impl, expiry);
    return impl.waits;
}

void wheel_service::set_slack(implementation_type& impl, duration slack) {
    if (slack < duration::zero()) {
        throw std::invalid_argument("timewheel::wheel_timer::slack: must not be negative");
    }
    impl.slack = slack;
}

void wheel_service::shutdown() {
    detail::thread_check::scope check(thread_check_);
    shut_down_ = true;
    wheel_->drain([this](wheel_entry& entry) {
        --armed_;
        static_cast<detail::service_entry&>(entry).notify(*this, detail::entry_event::shutdown);
    });
    driver_state_ = driver_state::idle;
}

} // namespace timewheel
