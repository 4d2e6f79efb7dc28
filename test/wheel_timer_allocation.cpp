// Steady state allocates nothing: a counting global operator new, and cycles of wheel_timer
// waits, reschedules, cancels and callback_timer expiries run from inside handlers (where
// Asio's recycling allocator serves the allocated operations; small handlers wait inside
// the timer and allocate nothing at all). Also reports the sizes of a wheel_timer, a
// steady_timer and of a pending wait's operation for each.

#define BOOST_TEST_MODULE wheel_timer_allocation
#include <timewheel/wheel_timer.hpp>

#include <boost/test/unit_test.hpp>

#include <timewheel/callback_timer.hpp>

#include <boost/asio/bind_allocator.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <new>
#include <vector>

#include <test/support/allocation_counter.hpp>

namespace net = boost::asio;
using namespace std::chrono_literals;
using boost::system::error_code;
using timewheel::callback_timer;
using timewheel::wheel_service;
using timewheel::wheel_timer;

namespace {

constexpr int warmup = 100;
constexpr int cycles = 3000;

// State shared by the self-re-arming handlers below. The handlers are small structs (no
// std::function), so that copying one never allocates.
struct cycle_state {
    int measured = cycles;
    int done = 0;
    long counted = -1;
    int errors = 0;
    timewheel::test::allocation_counter counter;

    // Call once per cycle; returns false when the measured cycles are over.
    bool next() {
        ++done;
        if (done == warmup) {
            counter.reset();
        }
        if (done == warmup + measured) {
            counted = static_cast<long>(counter.count());
            return false;
        }
        return true;
    }
};

// Makes the driver's one-off allocations (its recycled operation, the reactor's timer heap)
// before counting starts, whatever path the warm-up cycles happen to take.
void warm_up_driver(net::io_context& io) {
    callback_timer far(io, [] {});
    far.expires_after(1h); // a reactor wait
    far.cancel();
    io.poll(); // its cancelled operation returns to the driver's free list
    io.restart();
}

void check(const cycle_state& s) {
    BOOST_TEST(s.done == warmup + s.measured);
    BOOST_TEST(s.errors == 0);
    BOOST_TEST(s.counted == 0, "allocations in " << s.measured << " steady cycles: " << s.counted);
}

} // namespace

// --- wheel_timer -------------------------------------------------------------------------

namespace {

struct rearm_handler {
    wheel_timer* timer;
    cycle_state* state;
    wheel_timer::duration delay;

    void operator()(error_code ec) {
        state->errors += ec ? 1 : 0;
        if (state->next()) {
            timer->expires_after(delay);
            timer->async_wait(*this);
        }
    }
};

// 24 bytes: too large to wait inside the timer, so these cycles take the allocated path,
// served by Asio's recycling allocator.
static_assert(!timewheel::detail::fits_inline<rearm_handler>);

} // namespace

BOOST_AUTO_TEST_CASE(wheel_timer_arm_and_fire_cycles_allocate_nothing) {
    net::io_context io;
    wheel_timer t(io, 0ms);
    cycle_state state;
    t.async_wait(rearm_handler{&t, &state, 0ms});
    io.run();
    check(state);
}

BOOST_AUTO_TEST_CASE(wheel_timer_cycles_through_real_wakeups_allocate_nothing) {
    // A 50 µs delay rounds up to the next tick: every cycle is a wakeup by the reactor.
    net::io_context io;
    warm_up_driver(io);
    wheel_timer t(io, 50us);
    cycle_state state;
    state.measured = 300;
    t.async_wait(rearm_handler{&t, &state, 50us});
    io.run();
    check(state);
    BOOST_TEST(net::use_service<wheel_service>(io).wakeups() >= 300u);
}

namespace {

// Each step moves a pending 1 h wait: later (one store) and earlier (relink and a new
// driver deadline) in turn, then posts the next step.
struct reschedule_step {
    net::io_context* io;
    wheel_timer* timer;
    cycle_state* state;

    void operator()() {
        const std::size_t pending = timer->reschedule_after(
            state->done % 2 == 0 ? 2h + std::chrono::seconds(state->done) : 1h);
        state->errors += pending == 1 ? 0 : 1;
        if (state->next()) {
            net::post(*io, *this);
        } else {
            timer->cancel(); // done: run() returns after the aborted handler
        }
    }
};

} // namespace

BOOST_AUTO_TEST_CASE(reschedule_after_cycles_allocate_nothing) {
    net::io_context io;
    wheel_timer t(io, 1h);
    int completions = 0;
    error_code result;
    t.async_wait([&](error_code ec) {
        ++completions;
        result = ec;
    });
    cycle_state state;
    net::post(io, reschedule_step{&io, &t, &state});
    io.run(); // no time limit: a loaded machine or a sanitizer may be slow
    check(state);
    BOOST_TEST(completions == 1);
    BOOST_TEST((result == net::error::operation_aborted)); // never expired, cancelled at the end
}

namespace {

struct cancel_rewait_handler {
    wheel_timer* timer;
    cycle_state* state;

    void operator()(error_code ec) {
        state->errors += ec == net::error::operation_aborted ? 0 : 1;
        if (state->next()) {
            timer->async_wait(*this);
            timer->cancel();
        }
    }
};

static_assert(timewheel::detail::fits_inline<cancel_rewait_handler>); // the inline path

} // namespace

BOOST_AUTO_TEST_CASE(cancel_and_rewait_cycles_allocate_nothing) {
    net::io_context io;
    wheel_timer t(io, 1h);
    cycle_state state;
    t.async_wait(cancel_rewait_handler{&t, &state});
    t.cancel();
    io.run();
    check(state);
}

namespace {

struct slot_rewait_handler {
    wheel_timer* timer;
    net::cancellation_signal* signal;
    cycle_state* state;

    void operator()(error_code ec) {
        state->errors += ec == net::error::operation_aborted ? 0 : 1;
        if (state->next()) {
            timer->async_wait(net::bind_cancellation_slot(signal->slot(), *this));
            signal->emit(net::cancellation_type::terminal);
        }
    }
};

} // namespace

BOOST_AUTO_TEST_CASE(per_operation_cancellation_cycles_allocate_nothing) {
    net::io_context io;
    wheel_timer t(io, 1h);
    net::cancellation_signal signal;
    cycle_state state;
    t.async_wait(
        net::bind_cancellation_slot(signal.slot(), slot_rewait_handler{&t, &signal, &state}));
    signal.emit(net::cancellation_type::terminal);
    io.run();
    check(state);
}

// --- callback_timer and the driver -------------------------------------------------------

namespace {

struct periodic_callback {
    callback_timer<periodic_callback>** self;
    cycle_state* state;
    std::chrono::steady_clock::duration period;

    void operator()() {
        if (state->next()) {
            (*self)->expires_after(period);
        }
    }
};

void run_periodic(std::chrono::steady_clock::duration period, int measured,
                  int expected_min_wakeups) {
    net::io_context io;
    cycle_state state;
    state.measured = measured;
    callback_timer<periodic_callback>* self = nullptr;
    callback_timer<periodic_callback> t(io, periodic_callback{&self, &state, period});
    self = &t;
    warm_up_driver(io);
    t.expires_after(period);
    io.run();
    check(state);
    BOOST_TEST(net::use_service<wheel_service>(io).wakeups() >=
               static_cast<std::uint64_t>(expected_min_wakeups));
}

} // namespace

BOOST_AUTO_TEST_CASE(callback_timer_cycles_allocate_nothing) {
    run_periodic(0ms, cycles, 1);
}

BOOST_AUTO_TEST_CASE(steady_driver_wakeups_allocate_nothing) {
    // Nearly every cycle is a wakeup of the driver by the reactor (a cycle delayed past its
    // 20 µs fires in the run that re-armed it).
    run_periodic(20us, 300, 150);
}

// --- Sizes -------------------------------------------------------------------------------

namespace {

struct size_probe {
    std::size_t* bytes;
};

template <typename T>
struct recording_allocator {
    using value_type = T;
    size_probe probe;

    explicit recording_allocator(size_probe p) noexcept
        : probe(p) {}
    template <typename U>
    recording_allocator(const recording_allocator<U>& other) noexcept
        : probe(other.probe) {}

    T* allocate(std::size_t n) {
        *probe.bytes = n * sizeof(T);
        return static_cast<T*>(::operator new(n * sizeof(T)));
    }
    void deallocate(T* p, std::size_t) noexcept { ::operator delete(p); }
    template <typename U>
    bool operator==(const recording_allocator<U>& other) const noexcept {
        return probe.bytes == other.probe.bytes;
    }
};

} // namespace

BOOST_AUTO_TEST_CASE(sizes_of_a_timer_and_of_a_pending_wait) {
    net::io_context io;
    auto plain = [](error_code) {};
    using plain_handler = decltype(plain);
    using bound_handler = net::allocator_binder<plain_handler, recording_allocator<int>>;

    std::size_t wheel_first = 0;
    std::size_t wheel_second = 0;
    std::size_t steady_op = 0;
    {
        wheel_timer t(io, 1h);
        t.async_wait(net::bind_allocator(recording_allocator<int>({&wheel_first}), plain));
        t.async_wait(net::bind_allocator(recording_allocator<int>({&wheel_second}), plain));
        net::steady_timer s(io, 1h);
        s.async_wait(net::bind_allocator(recording_allocator<int>({&steady_op}), plain));
    }
    io.run();

    using wheel_bound_op = timewheel::detail::async_op<timewheel::detail::wait_op_base,
                                                       bound_handler, net::any_io_executor>;
    using steady_plain_op = net::detail::wait_handler<plain_handler, net::any_io_executor>;
    using steady_bound_op = net::detail::wait_handler<bound_handler, net::any_io_executor>;
    BOOST_TEST(wheel_first == 0u);                      // inside the timer
    BOOST_TEST(wheel_second == sizeof(wheel_bound_op)); // from the handler's allocator
    BOOST_TEST(steady_op == sizeof(steady_bound_op));
    // Issue 12: at most 160 bytes per timer with one pending wait, its handler included.
    BOOST_TEST(sizeof(wheel_timer) <= 160u);

    std::printf("sizeof(timewheel::wheel_timer)        = %zu (one pending wait included)\n",
                sizeof(wheel_timer));
    std::printf("sizeof(boost::asio::steady_timer)     = %zu\n", sizeof(net::steady_timer));
    std::printf("sizeof(timewheel::callback_timer<fn>) = %zu (fn: one pointer)\n",
                sizeof(callback_timer<periodic_callback*>));
    std::printf("pending wait, plain lambda: wheel_timer 0 bytes (inline), steady_timer op %zu "
                "bytes\n",
                sizeof(steady_plain_op));
    std::printf("a second concurrent wait, bind_allocator (measured): wheel_timer %zu bytes; "
                "steady_timer's first %zu bytes\n",
                wheel_second, steady_op);
}

// --- The inline wait ---------------------------------------------------------------------

namespace {

// 16 bytes: kept inside the timer.
struct inline_cycle_handler {
    wheel_timer* timer;
    cycle_state* state;

    void operator()(error_code ec) {
        state->errors += ec ? 1 : 0;
        if (state->next()) {
            timer->expires_after(0ms);
            timer->async_wait(*this);
        }
    }
};

static_assert(timewheel::detail::fits_inline<inline_cycle_handler>);

struct count_calls {
    int* calls;
    void operator()(error_code) const { ++*calls; }
};

} // namespace

BOOST_AUTO_TEST_CASE(inline_waits_allocate_nothing_not_even_aligned_alloc) {
    // all_allocations_so_far() counts aligned_alloc too, which Asio's recycling allocator
    // calls: an allocated operation, even recycled, would show here on its first use.
    net::io_context io;
    warm_up_driver(io);
    {
        // The one carrier the single-timer cycles need.
        wheel_timer warm(io, 0ms);
        int calls = 0;
        warm.async_wait(count_calls{&calls});
        io.run();
        io.restart();
        BOOST_TEST(calls == 1);
    }
    timewheel::test::allocation_counter counter;
    wheel_timer t(io, 0ms);
    cycle_state state;
    state.measured = 0; // counted here, from the first wait on
    int calls = 0;
    t.async_wait(count_calls{&calls});
    io.run();
    io.restart();
    t.expires_after(0ms);
    t.async_wait(inline_cycle_handler{&t, &state});
    io.run();
    BOOST_TEST(calls == 1);
    BOOST_TEST(state.errors == 0);
    BOOST_TEST(state.done == warmup);
    BOOST_TEST(counter.count() == 0u);
}

BOOST_AUTO_TEST_CASE(batches_of_inline_waits_allocate_nothing_once_the_carriers_exist) {
    // A batch of cancels queues one carrier per wait; the second batch reuses them.
    net::io_context io;
    warm_up_driver(io);
    std::vector<wheel_timer> timers;
    timers.reserve(1000);
    for (int i = 0; i < 1000; ++i) {
        timers.emplace_back(io);
    }
    int calls = 0;
    std::size_t counted = 0;
    for (int round = 0; round < 3; ++round) {
        timewheel::test::allocation_counter counter;
        for (wheel_timer& t : timers) {
            t.expires_after(1h);
            t.async_wait(count_calls{&calls});
        }
        for (wheel_timer& t : timers) {
            t.cancel();
        }
        io.run();
        io.restart();
        if (round > 0) {
            counted += counter.count();
        }
    }
    BOOST_TEST(calls == 3000);
    BOOST_TEST(counted == 0u);
}
