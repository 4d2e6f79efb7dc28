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
#include <thread>
#include <utility>

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
    , completed_(scheduler_)
    , continuation_(this)
    , aborted_op_(this)
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

void wheel_service::arm_settling(detail::service_entry& entry, time_point expiry, tick_type tick,
                                 duration slack) {
    // Read the clock only when the expiry may have passed, or when the wheel is idle.
    bool due_now = false;
    if (tick <= wheel_->now() + 1 || driver_state_ == driver_state::idle) {
        if (const std::optional<tick_type> passed = settle_tick(expiry)) {
            tick = *passed;
            due_now = true;
        }
    }
    arm_at(entry, tick, slack);
    if (driver_state_ == driver_state::idle ||
        (driver_state_ == driver_state::waiting && tick < driver_tick_)) {
        update_driver(due_now);
    }
}

std::optional<tick_type> wheel_service::settle_tick(time_point expiry) {
    const time_point now = clock_type::now();
    if (driver_state_ == driver_state::idle && !shut_down_ && wheel_->empty()) {
        // An idle wheel's time stands still: bring it up to date (nothing can fire), so that
        // the entry is filed at the level its real distance calls for.
        wheel_->advance(floor_tick(now), [](wheel_entry&) {});
    }
    if (expiry > now) {
        return std::nullopt;
    }
    // Passed: due now. The tick that began at or before the expiry is due at the current
    // tick, and keeps the entry in expiry order with the others that are due.
    return floor_tick(expiry);
}

tick_type wheel_service::slack_ticks(duration slack) const noexcept {
    const std::int64_t ns = std::chrono::duration_cast<std::chrono::nanoseconds>(slack).count();
    return ns <= 0 ? 0 : static_cast<tick_type>(ns / tick_ns_);
}

// --- The driver -------------------------------------------------------------------------
//
// One wait of a user (a wheel_timer) should cost one handler run, as with steady_timer:
// io_context::run() counts every scheduler operation it completes. So the driver's own
// completions run the first wait they expired inline, in the same scheduler operation (the
// handler still goes through its associated executor, as the scheduler would have called
// it), and post the others. Re-arming or stopping the driver from inside run() takes the
// superseded reactor wait back from the timer queue instead of having it complete with
// operation_aborted, which would count as a handler of its own.

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
    if (service->pending_driver_ == op) {
        service->pending_driver_ = nullptr;
    }
    if (owner != nullptr && ec != net::error::operation_aborted) {
        service->on_driver(owner);
    }
}

wheel_service::continuation_op::continuation_op(wheel_service* service) noexcept
    : scheduler_operation(&continuation_op::do_complete)
    , service_(service) {}

wheel_service::aborted_op::aborted_op(wheel_service* service) noexcept
    : scheduler_operation(&aborted_op::do_complete)
    , service_(service) {}

void wheel_service::aborted_op::do_complete(void* owner, net::detail::scheduler_operation* base,
                                            const boost::system::error_code&, std::size_t) {
    wheel_service* service = static_cast<aborted_op*>(base)->service_;
    service->aborted_posted_ = false;
    detail::op_queue<detail::wait_op_base> ops;
    ops.push(service->aborted_);
    detail::wait_op_base* first = ops.front();
    if (first == nullptr) {
        return;
    }
    ops.pop();
    if (owner == nullptr) { // the context is shutting down: destroy, don't invoke
        first->destroy();
        while (detail::wait_op_base* w = ops.front()) {
            ops.pop();
            w->destroy();
        }
        return;
    }
    // The others first, so that a handler that throws leaves them queued. They keep their
    // cancellation order, and run after the handlers queued before this operation ran (as
    // with steady_timer, an aborted wait has no set place among unrelated handlers).
    service->completed_.post(ops);
    service->completed_.run_inline(owner, first);
}

void wheel_service::continuation_op::do_complete(void* owner,
                                                 net::detail::scheduler_operation* base,
                                                 const boost::system::error_code&, std::size_t) {
    if (owner != nullptr) {
        static_cast<continuation_op*>(base)->service_->wake(owner);
    }
}

bool wheel_service::inside_run() const noexcept {
    using call_stack =
        net::detail::call_stack<net::detail::thread_context, net::detail::thread_info_base>;
    return call_stack::contains(static_cast<net::detail::thread_context*>(&scheduler_)) != nullptr;
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

void wheel_service::set_driver_state(driver_state state) noexcept {
    driver_state_ = state;
    switch (state) {
    case driver_state::idle:
        update_below_ = std::numeric_limits<tick_type>::max();
        break;
    case driver_state::waiting:
        update_below_ = driver_tick_;
        break;
    case driver_state::running:
    case driver_state::posted:
        update_below_ = 0;
        break;
    }
}

void wheel_service::post_continuation() noexcept {
    set_driver_state(driver_state::posted);
    scheduler_.post_immediate_completion(&continuation_, false);
}

void wheel_service::start_driver(tick_type tick) {
    driver_op* op = free_driver_ops_;
    if (op != nullptr) {
        free_driver_ops_ = op->next_free_;
    } else {
        op = new driver_op(this); // before any change, so that bad_alloc changes nothing
    }
    // A queued timer keeps its first expiry, so an earlier one needs the old wait removed.
    // The new wait is counted as work before the old one stops counting: run() cannot see
    // the io_context run out of work in between.
    net::detail::op_queue<net::detail::scheduler_operation> old;
    if (pending_driver_ != nullptr) {
        timer_queue_.cancel_timer(timer_data_, old);
    } else {
        reactor_.cancel_timer(timer_queue_, timer_data_);
    }
    pending_driver_ = op;
    driver_tick_ = tick;
    set_driver_state(driver_state::waiting);
    reactor_.schedule_timer(timer_queue_, to_time(tick), timer_data_, op);
    while (net::detail::scheduler_operation* o = old.front()) {
        old.pop();
        auto* d = static_cast<driver_op*>(o);
        d->next_free_ = free_driver_ops_;
        free_driver_ops_ = d;
        scheduler_.work_finished();
    }
}

void wheel_service::stop_driver(bool work_held) noexcept {
    set_driver_state(driver_state::idle);
    driver_op* pending = std::exchange(pending_driver_, nullptr);
    if (pending == nullptr) {
        reactor_.cancel_timer(timer_queue_, timer_data_);
        return;
    }
    if (work_held || inside_run()) {
        // The handler running now, or an operation the caller has just queued, keeps the
        // io_context's work above zero: taking the wait back cannot stop the io_context.
        net::detail::op_queue<net::detail::scheduler_operation> old;
        if (timer_queue_.cancel_timer(timer_data_, old) != 0) {
            old.pop();
            pending->next_free_ = free_driver_ops_;
            free_driver_ops_ = pending;
            scheduler_.work_finished();
        }
        return;
    }
    // Outside run(), the io_context could run out of work here and stop: let the wait
    // complete with operation_aborted instead.
    reactor_.cancel_timer(timer_queue_, timer_data_);
}

void wheel_service::on_driver(void* owner) {
    if (driver_state_ == driver_state::running || driver_state_ == driver_state::posted) {
        return; // stale: the run in progress (or the queued continuation) re-arms at its end
    }
    // A success may be stale (a newer wait is pending): running the wheel early is harmless.
    wake(owner);
}

void wheel_service::wake(void* owner) {
    run_due();
    if (detail::wait_op_base* first = completed_.take_kept()) {
        completed_.run_inline(owner, first);
    }
}

void wheel_service::run_due() {
    detail::thread_check::scope check(thread_check_);
    ++wakeups_;
    set_driver_state(driver_state::running);
    struct finish_guard {
        wheel_service* self;
        int exceptions = std::uncaught_exceptions();
        ~finish_guard() { self->finish_run(std::uncaught_exceptions() > exceptions); }
    } guard{this};

    wheel_->advance(current_tick(), options_.budget, [this](wheel_entry& entry) {
        --armed_;
        auto& e = static_cast<detail::service_entry&>(entry);
        e.notify(*this, detail::entry_event::expired);
    });
}

void wheel_service::finish_run(bool unwinding) {
    // The waits this run expired are queued before anything the re-arm below may queue (a
    // continuation), so that they complete before later ones; the first runs inline.
    completed_.flush(!unwinding); // if a callback threw, all complete on their own
    set_driver_state(driver_state::idle);
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
    arm_for_wait(impl);
    op->timer_ = &impl;
    op->expiry_ = impl.expiry;
    impl.push_queued(op);
}

detail::wait_op_base* wheel_service::take_inline(implementation_type& impl,
                                                 const boost::system::error_code& ec) noexcept {
    // The handler leaves the timer now, so that the timer may go away before it runs.
    detail::inline_wait_carrier* carrier = carriers_.take();
    impl.detach_cancellation();
    impl.handler_.relocate_to(carrier->handler_);
    carrier->ec_ = ec;
    if (!ec) {
        carrier->expiry_ = impl.expiry; // orders the waits a run expired; aborted ones are not
    }
    return carrier; // its timer_ stays null: a carrier is never in a timer's queue
}

std::size_t wheel_service::complete_waits(implementation_type& impl, std::size_t max,
                                          const boost::system::error_code& ec) noexcept {
    if (impl.pending() && impl.queued_tail() == nullptr && max != 0) {
        // The usual timer: one wait, inline. The fewer instructions and stores an arm or a
        // cancel takes, the more of their cache misses overlap at 1M cold timers.
        detail::wait_op_base* op = take_inline(impl, ec);
        if (!ec && driver_state_ == driver_state::running) {
            completed_.push(op);
            return 1;
        }
        post_aborted(op);
        disarm_if_idle(impl);
        return 1;
    }
    detail::op_queue<detail::wait_op_base> done;
    std::size_t count = 0;
    if (max != 0 && impl.pending()) { // the oldest
        done.push(take_inline(impl, ec));
        ++count;
    }
    while (count < max) {
        detail::wait_op_base* op = impl.queued_front();
        if (op == nullptr) {
            break;
        }
        impl.unlink_queued(op);
        op->ec_ = ec;
        op->timer_ = nullptr;
        op->expiry_ = impl.expiry;
        op->detach_cancellation();
        done.push(op);
        ++count;
    }
    if (!ec && driver_state_ == driver_state::running) {
        // Expired by the run in progress: its driver completion delivers them.
        while (detail::wait_op_base* op = done.front()) {
            done.pop();
            completed_.push(op);
        }
        return count;
    }
    post_aborted(done);
    disarm_if_idle(impl);
    return count;
}

void wheel_service::post_aborted(detail::op_queue<detail::wait_op_base>& done) noexcept {
    if (!aborted_posted_ && inside_run()) {
        completed_.post(done); // the thread's private queue: no lock, no atomic
        return;
    }
    // Outside run() a post takes the scheduler's mutex and counts work atomically: once per
    // batch. Inside run(), waits join a batch already queued, to keep cancellation order.
    aborted_.push(done);
    if (!aborted_posted_) {
        aborted_posted_ = true;
        scheduler_.post_immediate_completion(&aborted_op_, false);
    }
}

void wheel_service::post_aborted(detail::wait_op_base* op) noexcept {
    if (!aborted_posted_ && inside_run()) {
        completed_.post(op);
        return;
    }
    aborted_.push(op);
    if (!aborted_posted_) {
        aborted_posted_ = true;
        scheduler_.post_immediate_completion(&aborted_op_, false);
    }
}

void wheel_service::disarm_if_idle(implementation_type& impl) noexcept {
    if (impl.has_waits()) {
        return;
    }
    detail::thread_check::scope check(thread_check_);
    if (!wheel_->cancel(impl)) {
        return;
    }
    if (--armed_ == 0 && driver_state_ == driver_state::waiting) {
        // Nothing left to wait for: let run() return. The completions just queued hold
        // work, so the reactor wait can be taken back without stopping the io_context.
        stop_driver(true);
    }
}

void wheel_service::cancel_wait(void* service, detail::async_op_base& base) {
    auto& self = *static_cast<wheel_service*>(service);
    auto& op = static_cast<detail::wait_op_base&>(base);
    detail::thread_check::scope check(self.thread_check_);
    implementation_type* impl = op.timer_;
    if (impl == nullptr) {
        return;
    }
    impl->unlink_queued(&op);
    op.ec_ = net::error::operation_aborted;
    op.timer_ = nullptr;
    self.post_cancelled(*impl, &op);
}

void wheel_service::cancel_inline_wait(void* service, detail::inline_wait& wait) {
    auto& self = *static_cast<wheel_service*>(service);
    auto& impl = static_cast<implementation_type&>(wait);
    detail::thread_check::scope check(self.thread_check_);
    if (!impl.pending()) {
        return;
    }
    self.post_cancelled(impl, self.take_inline(impl, net::error::operation_aborted));
}

void wheel_service::post_cancelled(implementation_type& impl, detail::wait_op_base* op) noexcept {
    post_aborted(op);
    disarm_if_idle(impl);
}

void wheel_service::on_timer_event(implementation_type& impl, detail::entry_event event) noexcept {
    if (event == detail::entry_event::expired) {
        complete_waits(impl, std::numeric_limits<std::size_t>::max(), {});
        return;
    }
    // Shutdown: the scheduler destroys the handlers without invoking them, later, so that a
    // handler that owns its timer is not destroyed inside the timer's own call.
    net::detail::op_queue<net::detail::scheduler_operation> abandoned;
    if (impl.pending()) {
        abandoned.push(take_inline(impl, net::error::operation_aborted));
    }
    while (detail::wait_op_base* op = impl.queued_front()) {
        impl.unlink_queued(op);
        op->timer_ = nullptr;
        op->detach_cancellation();
        abandoned.push(op);
    }
    scheduler_.abandon_operations(abandoned);
}

void detail::on_timer_event(wheel_service& service, service_entry& entry, entry_event event) {
    service.on_timer_event(static_cast<timer_impl&>(entry), event);
}

void wheel_service::destroy(implementation_type& impl) noexcept {
    cancel(impl);
}

void wheel_service::wait(implementation_type& impl, boost::system::error_code& ec) {
    // As basic_waitable_timer::wait(): sleep this thread until the expiry, whatever the
    // io_context is doing. Neither the wheel nor the io_context is involved.
    ec = {};
    const time_point expiry = impl.expiry;
    for (time_point now = clock_type::now(); now < expiry; now = clock_type::now()) {
        std::this_thread::sleep_until(expiry);
    }
}

void wheel_service::move_construct(implementation_type& impl, implementation_type& other) noexcept {
    static_cast<detail::service_entry&>(impl) =
        std::move(static_cast<detail::service_entry&>(other));
    impl.expiry = std::exchange(other.expiry, time_point());
    if (other.pending()) { // the inline wait moves with the timer, its cancellation too
        other.handler_.relocate_to(impl.handler_);
        impl.take_cancellation(other);
    }
    impl.take_queued(other); // with the slack
}

void wheel_service::move_assign(implementation_type& impl, wheel_service& /*other_service*/,
                                implementation_type& other) noexcept {
    if (&impl == &other) {
        return;
    }
    cancel(impl); // this timer's waits end here; it then takes over other's place
    move_construct(impl, other);
}

std::size_t wheel_service::abort_waits(implementation_type& impl, std::size_t max) noexcept {
    return complete_waits(impl, max, net::error::operation_aborted);
}

std::size_t wheel_service::reschedule_at(implementation_type& impl, time_point expiry) {
    impl.expiry = expiry;
    if (!impl.has_waits()) {
        return 0;
    }
    reschedule(impl, expiry);
    return impl.waits();
}

void wheel_service::set_slack(implementation_type& impl, duration slack) {
    if (slack < duration::zero()) {
        throw std::invalid_argument("timewheel::wheel_timer::slack: must not be negative");
    }
    impl.set_slack(slack);
}

void wheel_service::shutdown() {
    detail::thread_check::scope check(thread_check_);
    shut_down_ = true;
    wheel_->drain([this](wheel_entry& entry) {
        --armed_;
        static_cast<detail::service_entry&>(entry).notify(*this, detail::entry_event::shutdown);
    });
    set_driver_state(driver_state::idle);
}

} // namespace timewheel
