// Tests of basic_wheel_timer / wheel_timer: Asio's own timer tests (basic, cancel, custom
// allocation, move, per-operation cancellation) adapted, every completion token, strands,
// reschedule_after(), slack(), "never early" against steady_clock, and shutdown.

#define BOOST_TEST_MODULE wheel_timer
#include <timewheel/wheel_timer.hpp>

#include <boost/test/unit_test.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/bind_allocator.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/bind_executor.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/deferred.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/experimental/promise.hpp> // before use_promise.hpp (Boost 1.81)
#include <boost/asio/experimental/use_promise.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/use_future.hpp>

#include <array>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <deque>
#include <exception>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

#include <test/support/fixtures.hpp>
#include <test/support/watchdog.hpp>

namespace net = boost::asio;
using namespace std::chrono_literals;
using boost::system::error_code;
using timewheel::basic_wheel_timer;
using timewheel::wheel_service;
using timewheel::wheel_timer;
using clock_type = std::chrono::steady_clock;

namespace {

// Runs the io_context until it has no work, failing the test if that takes 30 s.
using timewheel::test::run;
using timewheel::test::watchdog;

void poll(net::io_context& io) {
    io.restart();
    io.poll();
}

struct wait_result {
    int calls = 0;
    error_code ec;
    clock_type::time_point at{};
};

auto record(wait_result& r) {
    return [&r](error_code ec) {
        ++r.calls;
        r.ec = ec;
        r.at = clock_type::now();
    };
}

const error_code aborted = net::error::operation_aborted;

wheel_service& service_of(net::io_context& io) {
    return net::use_service<wheel_service>(io);
}

} // namespace

// --- Types -------------------------------------------------------------------------------

static_assert(std::is_same_v<wheel_timer::executor_type, net::any_io_executor>);
static_assert(std::is_same_v<wheel_timer::clock_type, std::chrono::steady_clock>);
static_assert(std::is_same_v<wheel_timer::rebind_executor<net::io_context::executor_type>::other,
                             basic_wheel_timer<net::io_context::executor_type>>);
static_assert(std::is_nothrow_move_constructible_v<wheel_timer>);
static_assert(!std::is_copy_constructible_v<wheel_timer>);
static_assert(!std::is_copy_assignable_v<wheel_timer>);
static_assert(
    std::is_constructible_v<wheel_timer, basic_wheel_timer<net::io_context::executor_type>&&>);
static_assert(
    !std::is_constructible_v<basic_wheel_timer<net::io_context::executor_type>, wheel_timer&&>);

// --- Basic -------------------------------------------------------------------------------

BOOST_AUTO_TEST_CASE(expires_after_sets_the_expiry_and_the_wait_never_completes_early) {
    net::io_context io;
    wheel_timer t(io);
    const auto before = clock_type::now();
    BOOST_TEST(t.expires_after(20ms) == 0u);
    const auto after = clock_type::now();
    BOOST_TEST((t.expiry() >= before + 20ms && t.expiry() <= after + 20ms));

    wait_result r;
    t.async_wait(record(r));
    BOOST_TEST(r.calls == 0);
    run(io);
    BOOST_TEST(r.calls == 1);
    BOOST_TEST(!r.ec);
    BOOST_TEST((r.at >= t.expiry()));
    BOOST_TEST(service_of(io).size() == 0u);
}

BOOST_AUTO_TEST_CASE(expires_at_sets_the_expiry_and_the_wait_never_completes_early) {
    net::io_context io;
    wheel_timer t(io.get_executor());
    const auto at = clock_type::now() + 15ms;
    BOOST_TEST(t.expires_at(at) == 0u);
    BOOST_TEST((t.expiry() == at));

    wait_result r;
    t.async_wait(record(r));
    run(io);
    BOOST_TEST(r.calls == 1);
    BOOST_TEST(!r.ec);
    BOOST_TEST((r.at >= at));
}

BOOST_AUTO_TEST_CASE(every_constructor_sets_the_expiry) {
    net::io_context io;
    const auto at = clock_type::now() + 10ms;
    wheel_timer from_context_at(io, at);
    wheel_timer from_executor_at(io.get_executor(), at);
    BOOST_TEST((from_context_at.expiry() == at));
    BOOST_TEST((from_executor_at.expiry() == at));

    const auto before = clock_type::now();
    wheel_timer from_context_after(io, 10ms);
    wheel_timer from_executor_after(io.get_executor(), 10ms);
    const auto after = clock_type::now();
    for (wheel_timer* t : {&from_context_after, &from_executor_after}) {
        BOOST_TEST((t->expiry() >= before + 10ms && t->expiry() <= after + 10ms));
    }

    std::array<wait_result, 4> r;
    from_context_at.async_wait(record(r[0]));
    from_executor_at.async_wait(record(r[1]));
    from_context_after.async_wait(record(r[2]));
    from_executor_after.async_wait(record(r[3]));
    run(io);
    BOOST_TEST((r[0].at >= at && r[1].at >= at));
    BOOST_TEST((r[2].at >= from_context_after.expiry() && r[3].at >= from_executor_after.expiry()));
    for (const wait_result& one : r) {
        BOOST_TEST(one.calls == 1);
        BOOST_TEST(!one.ec);
    }
    BOOST_TEST((from_context_at.get_executor() == net::any_io_executor(io.get_executor())));
}

BOOST_AUTO_TEST_CASE(a_timer_without_an_expiry_is_due_at_once) {
    net::io_context io;
    wheel_timer t(io);
    BOOST_TEST((t.expiry() == wheel_timer::time_point()));
    wait_result r;
    t.async_wait(record(r));
    run(io);
    BOOST_TEST(r.calls == 1);
    BOOST_TEST(!r.ec);
}

BOOST_AUTO_TEST_CASE(zero_and_negative_delays_complete_on_a_later_turn_never_inside_async_wait) {
    net::io_context io;
    wheel_timer t(io);
    const std::array<wheel_timer::duration, 4> delays = {0ms, -1ms, -1h, -24h * 365};
    for (const wheel_timer::duration delay : delays) {
        bool returned = false;
        wait_result r;
        bool returned_before_handler = false;
        net::post(io, [&] {
            t.expires_after(delay);
            t.async_wait([&](error_code ec) {
                returned_before_handler = returned;
                record(r)(ec);
            });
            returned = true;
        });
        run(io);
        BOOST_TEST(r.calls == 1);
        BOOST_TEST(!r.ec);
        BOOST_TEST(returned_before_handler);
    }
}

// A documented difference (docs/guide.md, "Differences from steady_timer"): a wait already
// due when armed is queued at once, in the io_context's queue of ready handlers, so that a
// handler posted after the arm runs after it; steady_timer's wait goes through the reactor,
// which runs the posted handler first. Both orders are asserted, from outside run() and
// from inside a handler, so that a change on either side shows here.
BOOST_AUTO_TEST_CASE(
    a_wait_due_when_armed_completes_before_a_handler_posted_after_it_unlike_steady_timer) {
    const auto order_of = [](auto make_timer, bool inside_run) {
        net::io_context io;
        auto t = make_timer(io);
        std::string order;
        const auto arm_then_post = [&] {
            t.expires_after(0ms);
            t.async_wait([&](error_code) { order += "wait "; });
            net::post(io, [&] { order += "posted "; });
        };
        if (inside_run) {
            net::post(io, arm_then_post);
        } else {
            arm_then_post();
        }
        run(io);
        return order;
    };
    const auto wheel = [](net::io_context& io) { return wheel_timer(io); };
    const auto steady = [](net::io_context& io) { return net::steady_timer(io); };
    for (const bool inside_run : {false, true}) {
        BOOST_TEST_CONTEXT("inside run(): " << inside_run) {
            BOOST_TEST(order_of(wheel, inside_run) == "wait posted ");
            BOOST_TEST(order_of(steady, inside_run) == "posted wait ");
        }
    }
}

BOOST_AUTO_TEST_CASE(extreme_expiries_saturate_instead_of_overflowing) {
    net::io_context io;
    wheel_timer t(io);

    t.expires_after(wheel_timer::duration::max());
    BOOST_TEST((t.expiry() == wheel_timer::time_point::max()));
    wait_result never;
    t.async_wait(record(never));
    poll(io);
    BOOST_TEST(never.calls == 0);
    BOOST_TEST(t.cancel() == 1u);
    run(io);
    BOOST_TEST((never.ec == aborted));

    for (const wheel_timer::time_point at :
         {wheel_timer::time_point::min(), wheel_timer::time_point()}) {
        t.expires_at(at);
        wait_result r;
        t.async_wait(record(r));
        run(io);
        BOOST_TEST(r.calls == 1);
        BOOST_TEST(!r.ec);
    }

    t.expires_after(wheel_timer::duration::min());
    BOOST_TEST((t.expiry() < wheel_timer::time_point()));
    wait_result r;
    t.async_wait(record(r));
    run(io);
    BOOST_TEST(r.calls == 1);
    BOOST_TEST(!r.ec);

    t.expires_at(wheel_timer::time_point::max());
    t.async_wait(record(never));
    BOOST_TEST(t.reschedule_after(wheel_timer::duration::max()) == 1u);
    BOOST_TEST(t.reschedule_after(wheel_timer::duration::min()) == 1u);
    run(io);
    BOOST_TEST(!never.ec);
}

BOOST_AUTO_TEST_CASE(several_waits_on_one_timer_complete_once_each_in_order) {
    net::io_context io;
    wheel_timer t(io, 10ms);
    std::vector<int> order;
    std::array<wait_result, 3> r;
    for (int i = 0; i < 3; ++i) {
        t.async_wait([&, i](error_code ec) {
            order.push_back(i);
            record(r[i])(ec);
        });
    }
    BOOST_TEST(service_of(io).size() == 1u); // one wheel entry for all of the waits
    run(io);
    BOOST_TEST(order == (std::vector<int>{0, 1, 2}));
    for (const wait_result& one : r) {
        BOOST_TEST(one.calls == 1);
        BOOST_TEST(!one.ec);
        BOOST_TEST((one.at >= t.expiry()));
    }
}

BOOST_AUTO_TEST_CASE(a_timer_can_wait_again_after_it_expired) {
    net::io_context io;
    wheel_timer t(io, 2ms);
    int completions = 0;
    std::function<void(error_code)> again = [&](error_code ec) {
        BOOST_TEST(!ec);
        BOOST_TEST((clock_type::now() >= t.expiry()));
        if (++completions < 5) {
            t.expires_after(2ms);
            t.async_wait(again);
        }
    };
    t.async_wait(again);
    run(io);
    BOOST_TEST(completions == 5);
}

// --- Cancel ------------------------------------------------------------------------------

BOOST_AUTO_TEST_CASE(cancel_returns_the_count_and_aborts_every_wait) {
    net::io_context io;
    wheel_timer t(io, 1h);
    BOOST_TEST(t.cancel() == 0u); // nothing pending

    std::array<wait_result, 3> r;
    for (wait_result& one : r) {
        t.async_wait(record(one));
    }
    BOOST_TEST(t.cancel() == 3u);
    BOOST_TEST(t.cancel() == 0u); // twice is safe
    for (const wait_result& one : r) {
        BOOST_TEST(one.calls == 0); // never from inside cancel()
    }
    run(io); // returns at once: the 1 h wait is gone
    for (const wait_result& one : r) {
        BOOST_TEST(one.calls == 1);
        BOOST_TEST((one.ec == aborted));
    }
    BOOST_TEST(service_of(io).size() == 0u);
}

BOOST_AUTO_TEST_CASE(cancel_one_aborts_only_the_oldest_wait) {
    net::io_context io;
    wheel_timer t(io, 10ms);
    BOOST_TEST(t.cancel_one() == 0u);
    std::array<wait_result, 3> r;
    for (wait_result& one : r) {
        t.async_wait(record(one));
    }
    BOOST_TEST(t.cancel_one() == 1u);
    run(io);
    BOOST_TEST(r[0].calls == 1);
    BOOST_TEST((r[0].ec == aborted));
    for (int i = 1; i < 3; ++i) {
        BOOST_TEST(r[i].calls == 1);
        BOOST_TEST(!r[i].ec);
        BOOST_TEST((r[i].at >= t.expiry()));
    }
}

BOOST_AUTO_TEST_CASE(cancel_one_of_the_last_wait_disarms_the_timer) {
    net::io_context io;
    wheel_timer t(io, 1h);
    wait_result r;
    t.async_wait(record(r));
    BOOST_TEST(t.cancel_one() == 1u);
    BOOST_TEST(service_of(io).size() == 0u);
    run(io);
    BOOST_TEST((r.ec == aborted));
}

BOOST_AUTO_TEST_CASE(expires_at_and_expires_after_abort_the_pending_waits) {
    net::io_context io;
    wheel_timer t(io, 1h);
    std::array<wait_result, 2> first;
    for (wait_result& one : first) {
        t.async_wait(record(one));
    }
    const auto at = clock_type::now() + 5ms;
    BOOST_TEST(t.expires_at(at) == 2u);
    BOOST_TEST(first[0].calls == 0);
    wait_result second;
    t.async_wait(record(second));
    BOOST_TEST(t.expires_after(1h) == 1u);
    BOOST_TEST(t.expires_after(5ms) == 0u);
    wait_result third;
    t.async_wait(record(third));
    run(io);
    for (const wait_result& one : first) {
        BOOST_TEST(one.calls == 1);
        BOOST_TEST((one.ec == aborted));
    }
    BOOST_TEST((second.ec == aborted));
    BOOST_TEST(third.calls == 1);
    BOOST_TEST(!third.ec);
    BOOST_TEST((third.at >= t.expiry()));
}

BOOST_AUTO_TEST_CASE(destroying_a_timer_aborts_its_pending_waits) {
    net::io_context io;
    std::array<wait_result, 2> r;
    {
        wheel_timer t(io, 1h);
        t.async_wait(record(r[0]));
        t.async_wait(record(r[1]));
    }
    BOOST_TEST(r[0].calls == 0);
    BOOST_TEST(service_of(io).size() == 0u);
    run(io);
    for (const wait_result& one : r) {
        BOOST_TEST(one.calls == 1);
        BOOST_TEST((one.ec == aborted));
    }
}

BOOST_AUTO_TEST_CASE(a_handler_may_destroy_another_timer_and_restart_its_own) {
    net::io_context io;
    auto other = std::make_unique<wheel_timer>(io, 1h);
    wait_result other_result;
    other->async_wait(record(other_result));
    wheel_timer t(io, 1ms);
    int calls = 0;
    t.async_wait([&](error_code ec) {
        BOOST_TEST(!ec);
        ++calls;
        other.reset();
        t.expires_after(1ms);
        t.async_wait([&](error_code ec2) {
            BOOST_TEST(!ec2);
            ++calls;
        });
    });
    run(io);
    BOOST_TEST(calls == 2);
    BOOST_TEST((other_result.ec == aborted));
}

// --- Move --------------------------------------------------------------------------------

BOOST_AUTO_TEST_CASE(move_construction_carries_the_pending_wait) {
    net::io_context io;
    wheel_timer t1(io, 10ms);
    const auto expiry = t1.expiry();
    wait_result r;
    t1.async_wait(record(r));
    wheel_timer t2(std::move(t1));
    BOOST_TEST((t2.expiry() == expiry));
    BOOST_TEST(t1.cancel() == 0u); // the moved-from timer has no wait left
    BOOST_TEST(service_of(io).size() == 1u);
    run(io);
    BOOST_TEST(r.calls == 1);
    BOOST_TEST(!r.ec);
    BOOST_TEST((r.at >= expiry));

    // The moved-from timer is usable again.
    t1.expires_after(1ms);
    wait_result again;
    t1.async_wait(record(again));
    run(io);
    BOOST_TEST(again.calls == 1);
    BOOST_TEST(!again.ec);
}

BOOST_AUTO_TEST_CASE(cancelling_the_moved_to_timer_cancels_the_moved_wait) {
    net::io_context io;
    wheel_timer t1(io, 1h);
    std::array<wait_result, 2> r;
    t1.async_wait(record(r[0]));
    t1.async_wait(record(r[1]));
    wheel_timer t2(std::move(t1));
    BOOST_TEST(t2.cancel_one() == 1u);
    BOOST_TEST(t2.cancel() == 1u);
    run(io);
    BOOST_TEST((r[0].ec == aborted));
    BOOST_TEST((r[1].ec == aborted));
    BOOST_TEST(service_of(io).size() == 0u);
}

BOOST_AUTO_TEST_CASE(move_assignment_aborts_the_targets_own_waits) {
    net::io_context io;
    wheel_timer target(io, 1h);
    wait_result target_result;
    target.async_wait(record(target_result));
    wheel_timer source(io, 5ms);
    const auto expiry = source.expiry();
    wait_result source_result;
    source.async_wait(record(source_result));

    target = std::move(source);
    BOOST_TEST((target.expiry() == expiry));
    BOOST_TEST(source.cancel() == 0u);
    BOOST_TEST(service_of(io).size() == 1u);
    run(io);
    BOOST_TEST(target_result.calls == 1);
    BOOST_TEST((target_result.ec == aborted));
    BOOST_TEST(source_result.calls == 1);
    BOOST_TEST(!source_result.ec);
    BOOST_TEST((source_result.at >= expiry));
}

BOOST_AUTO_TEST_CASE(move_assignment_from_a_timer_of_another_io_context) {
    net::io_context io1;
    net::io_context io2;
    wheel_timer target(io1, 1h);
    wait_result target_result;
    target.async_wait(record(target_result));
    wheel_timer source(io2, 5ms);
    wait_result source_result;
    source.async_wait(record(source_result));

    target = std::move(source);
    BOOST_TEST((target.get_executor() == net::any_io_executor(io2.get_executor())));
    run(io1);
    BOOST_TEST((target_result.ec == aborted));
    BOOST_TEST(source_result.calls == 0);
    run(io2);
    BOOST_TEST(source_result.calls == 1);
    BOOST_TEST(!source_result.ec);

    wait_result again;
    target.expires_after(1h);
    target.async_wait(record(again));
    BOOST_TEST(service_of(io2).size() == 1u);
    BOOST_TEST(target.cancel() == 1u);
    run(io2);
    BOOST_TEST((again.ec == aborted));
}

BOOST_AUTO_TEST_CASE(converting_move_between_executor_types) {
    net::io_context io;
    basic_wheel_timer<net::io_context::executor_type> t1(io.get_executor(), 5ms);
    wait_result r1;
    t1.async_wait(record(r1));
    wheel_timer t2(std::move(t1));
    BOOST_TEST((t2.get_executor() == net::any_io_executor(io.get_executor())));
    BOOST_TEST(t1.cancel() == 0u);

    wheel_timer t3(io, 1h);
    wait_result r3;
    t3.async_wait(record(r3));
    basic_wheel_timer<net::io_context::executor_type> t4(io, 5ms);
    wait_result r4;
    t4.async_wait(record(r4));
    t3 = std::move(t4);

    run(io);
    BOOST_TEST(r1.calls == 1);
    BOOST_TEST(!r1.ec);
    BOOST_TEST((r3.ec == aborted));
    BOOST_TEST(r4.calls == 1);
    BOOST_TEST(!r4.ec);
}

// --- Custom allocation -------------------------------------------------------------------

namespace {

struct allocation_stats {
    int live = 0;
    int total = 0;
    int live_at_call = -1;
};

template <typename T>
struct counting_allocator {
    using value_type = T;
    allocation_stats* stats;

    explicit counting_allocator(allocation_stats* s) noexcept
        : stats(s) {}
    template <typename U>
    counting_allocator(const counting_allocator<U>& other) noexcept
        : stats(other.stats) {}

    T* allocate(std::size_t n) {
        ++stats->live;
        ++stats->total;
        return static_cast<T*>(::operator new(sizeof(T) * n));
    }
    void deallocate(T* p, std::size_t) noexcept {
        --stats->live;
        ::operator delete(p);
    }
    template <typename U>
    bool operator==(const counting_allocator<U>& other) const noexcept {
        return stats == other.stats;
    }
};

// A handler with an associated allocator, as in Asio's custom allocation test.
struct counting_handler {
    allocation_stats* stats;
    wait_result* result;

    using allocator_type = counting_allocator<int>;
    allocator_type get_allocator() const noexcept { return allocator_type(stats); }

    void operator()(error_code ec) {
        stats->live_at_call = stats->live;
        record (*result)(ec);
    }
};

// The same with padding: too large to be kept inside the timer.
struct large_counting_handler : counting_handler {
    std::array<char, 64> padding{};
};

static_assert(timewheel::detail::fits_inline<counting_handler>);
// A coroutine's wait (use_awaitable) is kept inline too.
static_assert(timewheel::detail::fits_inline<
              net::detail::awaitable_handler<net::any_io_executor, error_code>>);
static_assert(!timewheel::detail::fits_inline<large_counting_handler>);

} // namespace

BOOST_AUTO_TEST_CASE(an_oversized_handler_uses_its_allocator_and_frees_before_the_call) {
    net::io_context io;
    allocation_stats stats;
    wait_result r;
    wheel_timer t(io, 2ms);
    t.async_wait(large_counting_handler{{&stats, &r}, {}});
    BOOST_TEST(stats.total == 1);
    BOOST_TEST(stats.live == 1);
    run(io);
    BOOST_TEST(r.calls == 1);
    BOOST_TEST(!r.ec);
    BOOST_TEST(stats.live_at_call == 0); // freed before the upcall
    BOOST_TEST(stats.live == 0);
    BOOST_TEST(stats.total == 1);
}

BOOST_AUTO_TEST_CASE(a_second_concurrent_wait_uses_the_handlers_allocator) {
    net::io_context io;
    allocation_stats stats;
    std::array<wait_result, 2> r;
    wheel_timer t(io, 2ms);
    t.async_wait(counting_handler{&stats, &r[0]}); // inline: no allocation
    BOOST_TEST(stats.total == 0);
    t.async_wait(counting_handler{&stats, &r[1]}); // the allocated fallback
    BOOST_TEST(stats.total == 1);
    BOOST_TEST(stats.live == 1);
    run(io);
    BOOST_TEST(r[0].calls == 1);
    BOOST_TEST(r[1].calls == 1);
    BOOST_TEST((r[0].at <= r[1].at));    // in order
    BOOST_TEST(stats.live_at_call == 0); // the second's memory freed before its upcall
    BOOST_TEST(stats.total == 1);
}

BOOST_AUTO_TEST_CASE(cancelled_and_destroyed_waits_free_through_the_handlers_allocator) {
    net::io_context io;
    allocation_stats stats;
    std::vector<wait_result> r(150);
    wheel_timer cancelled(io, 1h);
    for (int i = 0; i < 50; ++i) {
        cancelled.async_wait(counting_handler{&stats, &r[i]});
    }
    {
        wheel_timer destroyed(io, wheel_timer::time_point::max());
        for (int i = 50; i < 100; ++i) {
            destroyed.async_wait(counting_handler{&stats, &r[i]});
        }
    }
    wheel_timer expired(io, 1ms);
    for (int i = 100; i < 150; ++i) {
        expired.async_wait(counting_handler{&stats, &r[i]});
    }
    BOOST_TEST(stats.live == 147); // the first wait of each timer is inline
    BOOST_TEST(cancelled.cancel() == 50u);
    run(io);
    BOOST_TEST(stats.live == 0);
    BOOST_TEST(stats.total == 147);
    for (int i = 0; i < 150; ++i) {
        BOOST_TEST(r[i].calls == 1);
        BOOST_TEST((i < 100 ? r[i].ec == aborted : !r[i].ec));
    }
}

// --- The inline wait -----------------------------------------------------------------------
// A timer's first wait is kept inside the timer when its handler fits and completes
// natively; the counting allocator shows which path a wait took (inline: no allocation).

BOOST_AUTO_TEST_CASE(an_inline_wait_completes_without_allocating) {
    net::io_context io;
    allocation_stats stats;
    wait_result r;
    wheel_timer t(io, 2ms);
    const auto expiry = t.expiry();
    t.async_wait(counting_handler{&stats, &r});
    BOOST_TEST(service_of(io).size() == 1u);
    run(io);
    BOOST_TEST(r.calls == 1);
    BOOST_TEST(!r.ec);
    BOOST_TEST((r.at >= expiry));
    BOOST_TEST(stats.total == 0);
    BOOST_TEST(service_of(io).size() == 0u);
}

BOOST_AUTO_TEST_CASE(an_inline_wait_is_aborted_by_cancel_and_by_expires_after) {
    net::io_context io;
    allocation_stats stats;
    std::array<wait_result, 3> r;
    wheel_timer t(io, 1h);
    t.async_wait(counting_handler{&stats, &r[0]});
    BOOST_TEST(t.cancel() == 1u);
    BOOST_TEST(t.cancel() == 0u);
    t.async_wait(counting_handler{&stats, &r[1]}); // the storage is free again at once
    BOOST_TEST(t.expires_after(1h) == 1u);
    t.async_wait(counting_handler{&stats, &r[2]});
    BOOST_TEST(t.cancel_one() == 1u);
    BOOST_TEST(r[0].calls == 0); // never inside the call
    run(io);
    for (const wait_result& each : r) {
        BOOST_TEST(each.calls == 1);
        BOOST_TEST((each.ec == aborted));
    }
    BOOST_TEST(stats.total == 0);
    BOOST_TEST(service_of(io).size() == 0u);
}

namespace {

// Waits again on its timer from its own handler, until `left` is 0.
struct rearm_state {
    wheel_timer* timer;
    int left;
    int waits_after_rearm = 0; // the timer's pending waits right after each re-arm
};

// One pointer and the counting allocator (16 bytes).
struct counted_rearm {
    allocation_stats* stats;
    rearm_state* state;

    using allocator_type = counting_allocator<int>;
    allocator_type get_allocator() const noexcept { return allocator_type(stats); }

    void operator()(error_code ec) const {
        if (!ec && --state->left > 0) {
            state->timer->expires_after(0ms);
            state->timer->async_wait(*this);
            state->waits_after_rearm = static_cast<int>(state->timer->reschedule_after(0ms));
        }
    }
};

static_assert(timewheel::detail::fits_inline<counted_rearm>);

} // namespace

BOOST_AUTO_TEST_CASE(a_handler_waiting_again_on_its_timer_gets_the_inline_storage_back) {
    net::io_context io;
    allocation_stats stats;
    wheel_timer t(io, 0ms);
    rearm_state state{&t, 50};
    t.async_wait(counted_rearm{&stats, &state});
    run(io);
    BOOST_TEST(state.left == 0);
    BOOST_TEST(state.waits_after_rearm == 1);
    BOOST_TEST(stats.total == 0); // every wait was inline: the storage was free in time
}

namespace {

// A one-pointer handler with the counting allocator, to bind to something else.
struct counting_probe {
    allocation_stats stats;
    wait_result result;
};

struct probe_handler {
    counting_probe* probe;

    using allocator_type = counting_allocator<int>;
    allocator_type get_allocator() const noexcept { return allocator_type(&probe->stats); }

    void operator()(error_code ec) const {
        probe->stats.live_at_call = probe->stats.live;
        record(probe->result)(ec);
    }
};

} // namespace

BOOST_AUTO_TEST_CASE(a_handler_bound_to_another_executor_falls_back_and_runs_there) {
    net::io_context io;
    net::io_context other;
    counting_probe probe;
    wheel_timer t(io, 1ms);
    auto handler = net::bind_executor(other.get_executor(), probe_handler{&probe});
    static_assert(timewheel::detail::fits_inline<decltype(handler)>); // fits, but not native
    t.async_wait(std::move(handler));
    BOOST_TEST(probe.stats.total == 1);
    run(io);
    BOOST_TEST(probe.result.calls == 0); // dispatched to `other`, which has not run
    run(other);
    BOOST_TEST(probe.result.calls == 1);
    BOOST_TEST(!probe.result.ec);
    BOOST_TEST(probe.stats.live == 0);
}

BOOST_AUTO_TEST_CASE(a_handler_with_a_cancellation_slot_is_kept_inline) {
    net::io_context io;
    counting_probe probe;
    net::cancellation_signal sig;
    wheel_timer t(io, 1h);
    auto handler = net::bind_cancellation_slot(sig.slot(), probe_handler{&probe});
    static_assert(timewheel::detail::fits_inline<decltype(handler)>);
    t.async_wait(std::move(handler));
    sig.emit(net::cancellation_type::partial);
    BOOST_TEST(service_of(io).size() == 0u); // the last wait gone: disarmed at once
    run(io);
    BOOST_TEST(probe.result.calls == 1);
    BOOST_TEST((probe.result.ec == aborted));
    BOOST_TEST(probe.stats.total == 0);
}

BOOST_AUTO_TEST_CASE(a_timer_destroyed_after_its_inline_wait_completed_still_runs_the_handler) {
    net::io_context io;
    allocation_stats stats;
    std::array<wait_result, 2> r;
    {
        wheel_timer cancelled(io, 1h);
        cancelled.async_wait(counting_handler{&stats, &r[0]});
        cancelled.cancel(); // completed, its handler queued
        wheel_timer pending(io, 1h);
        pending.async_wait(counting_handler{&stats, &r[1]});
    } // both destroyed before the handlers run
    BOOST_TEST(r[0].calls == 0);
    run(io);
    BOOST_TEST(r[0].calls == 1);
    BOOST_TEST((r[0].ec == aborted));
    BOOST_TEST(r[1].calls == 1);
    BOOST_TEST((r[1].ec == aborted));
    BOOST_TEST(stats.total == 0);
}

BOOST_AUTO_TEST_CASE(an_inline_wait_moves_with_its_timer_and_with_its_cancellation_slot) {
    net::io_context io;
    allocation_stats stats;
    std::array<wait_result, 2> r;
    counting_probe slotted;
    net::cancellation_signal sig;
    auto t1 = std::make_unique<wheel_timer>(io, 5ms);
    const auto expiry = t1->expiry();
    t1->async_wait(counting_handler{&stats, &r[0]});
    wheel_timer t2(std::move(*t1));
    t1->expires_after(1h); // the moved-from timer takes a new inline wait
    t1->async_wait(net::bind_cancellation_slot(sig.slot(), probe_handler{&slotted}));
    wheel_timer t3(std::move(*t1));
    t1.reset(); // the storage the wait was made in is gone
    wheel_timer t4(io, 1h);
    t4.async_wait(counting_handler{&stats, &r[1]});
    t4 = std::move(t3);                         // t4's own wait aborted, t3's moves in
    sig.emit(net::cancellation_type::terminal); // reaches the wait where it now is
    run(io);
    BOOST_TEST(r[0].calls == 1);
    BOOST_TEST(!r[0].ec);
    BOOST_TEST((r[0].at >= expiry));
    BOOST_TEST(slotted.result.calls == 1);
    BOOST_TEST((slotted.result.ec == aborted));
    BOOST_TEST(r[1].calls == 1);
    BOOST_TEST((r[1].ec == aborted));
    BOOST_TEST(stats.total == 0);
    BOOST_TEST(slotted.stats.total == 0);
    BOOST_TEST(service_of(io).size() == 0u);
}

// --- Per-operation cancellation ----------------------------------------------------------

BOOST_AUTO_TEST_CASE(per_operation_cancellation_completes_only_that_wait) {
    const std::array<net::cancellation_type, 3> types = {net::cancellation_type::terminal,
                                                         net::cancellation_type::partial,
                                                         net::cancellation_type::total};
    for (const net::cancellation_type type : types) {
        BOOST_TEST_CONTEXT("cancellation type " << static_cast<unsigned>(type)) {
            net::io_context io;
            wheel_timer t(io, 1h);
            net::cancellation_signal sig0;
            net::cancellation_signal sig1;
            std::array<wait_result, 3> r;
            t.async_wait(net::bind_cancellation_slot(sig0.slot(), record(r[0])));
            t.async_wait(net::bind_cancellation_slot(sig1.slot(), record(r[1])));
            t.async_wait(record(r[2]));

            sig1.emit(net::cancellation_type::none); // not a request: nothing happens
            sig1.emit(type);
            BOOST_TEST(r[1].calls == 0); // never from inside emit()
            poll(io);
            BOOST_TEST(r[1].calls == 1);
            BOOST_TEST((r[1].ec == aborted));
            BOOST_TEST(r[0].calls == 0);
            BOOST_TEST(r[2].calls == 0);
            BOOST_TEST(service_of(io).size() == 1u);

            sig0.emit(type);
            poll(io);
            BOOST_TEST((r[0].ec == aborted));
            BOOST_TEST(r[2].calls == 0);

            // Emitting after the waits completed is harmless.
            sig0.emit(type);
            sig1.emit(type);
            poll(io);
            BOOST_TEST(r[0].calls == 1);
            BOOST_TEST(r[1].calls == 1);

            BOOST_TEST(t.cancel() == 1u);
            run(io);
            BOOST_TEST((r[2].ec == aborted));
            BOOST_TEST(service_of(io).size() == 0u);
        }
    }
}

BOOST_AUTO_TEST_CASE(cancelling_the_last_wait_through_its_slot_lets_run_return) {
    net::io_context io;
    wheel_timer t(io, 1h);
    net::cancellation_signal sig;
    wait_result r;
    t.async_wait(net::bind_cancellation_slot(sig.slot(), record(r)));
    net::post(io, [&] { sig.emit(net::cancellation_type::terminal); });
    run(io);
    BOOST_TEST((r.ec == aborted));
}

BOOST_AUTO_TEST_CASE(emitting_after_completion_before_the_handler_ran_is_harmless) {
    net::io_context io;
    wheel_timer t(io, 1h);
    net::cancellation_signal sig;
    wait_result r;
    t.async_wait(net::bind_cancellation_slot(sig.slot(), record(r)));
    BOOST_TEST(t.cancel() == 1u);
    sig.emit(net::cancellation_type::terminal); // the op is queued, not yet invoked
    run(io);
    BOOST_TEST(r.calls == 1);
    BOOST_TEST((r.ec == aborted));

    // Same after an expiry: the wait completes with success, and a later emit does nothing.
    t.expires_after(1ms);
    wait_result expired;
    t.async_wait(net::bind_cancellation_slot(sig.slot(), record(expired)));
    run(io);
    sig.emit(net::cancellation_type::terminal);
    run(io);
    BOOST_TEST(expired.calls == 1);
    BOOST_TEST(!expired.ec);
}

BOOST_AUTO_TEST_CASE(emitting_after_the_timer_was_destroyed_is_harmless) {
    net::io_context io;
    net::cancellation_signal sig;
    wait_result r;
    {
        wheel_timer t(io, 1h);
        t.async_wait(net::bind_cancellation_slot(sig.slot(), record(r)));
    }
    sig.emit(net::cancellation_type::terminal);
    run(io);
    sig.emit(net::cancellation_type::terminal);
    BOOST_TEST(r.calls == 1);
    BOOST_TEST((r.ec == aborted));
}

BOOST_AUTO_TEST_CASE(a_signal_destroyed_while_its_wait_is_pending_is_harmless) {
    net::io_context io;
    wheel_timer cancelled(io, 1h);
    wheel_timer expiring(io, 2ms);
    wait_result r1;
    wait_result r2;
    {
        net::cancellation_signal sig1;
        net::cancellation_signal sig2;
        cancelled.async_wait(net::bind_cancellation_slot(sig1.slot(), record(r1)));
        expiring.async_wait(net::bind_cancellation_slot(sig2.slot(), record(r2)));
    } // the slots' handlers are destroyed here, while the waits are pending
    BOOST_TEST(cancelled.cancel() == 1u);
    run(io);
    BOOST_TEST((r1.ec == aborted));
    BOOST_TEST(r2.calls == 1);
    BOOST_TEST(!r2.ec);
}

BOOST_AUTO_TEST_CASE(a_slot_reused_by_a_second_wait_cancels_the_second_wait) {
    net::io_context io;
    wheel_timer t(io, 1h);
    net::cancellation_signal sig;
    wait_result first;
    wait_result second;
    t.async_wait(net::bind_cancellation_slot(sig.slot(), record(first)));
    // Replaces the first wait's handler in the slot; the first wait stays pending.
    t.async_wait(net::bind_cancellation_slot(sig.slot(), record(second)));
    BOOST_TEST(t.cancel_one() == 1u); // completes the first wait
    sig.emit(net::cancellation_type::terminal);
    poll(io);
    BOOST_TEST((first.ec == aborted));
    BOOST_TEST(second.calls == 1);
    BOOST_TEST((second.ec == aborted));
    BOOST_TEST(t.cancel() == 0u);
}

BOOST_AUTO_TEST_CASE(per_operation_cancellation_follows_a_moved_timer) {
    net::io_context io;
    wheel_timer t1(io, 1h);
    net::cancellation_signal sig;
    wait_result r;
    wait_result other;
    t1.async_wait(net::bind_cancellation_slot(sig.slot(), record(r)));
    t1.async_wait(record(other));
    auto t2 = std::make_unique<wheel_timer>(std::move(t1));
    wheel_timer t3(std::move(*t2));
    t2.reset();
    sig.emit(net::cancellation_type::terminal);
    poll(io);
    BOOST_TEST((r.ec == aborted));
    BOOST_TEST(other.calls == 0);
    BOOST_TEST(t3.cancel() == 1u);
    run(io);
    BOOST_TEST((other.ec == aborted));
}

// --- Completion tokens -------------------------------------------------------------------

BOOST_AUTO_TEST_CASE(use_future_with_the_io_context_run_by_another_thread) {
    net::io_context io;
    wheel_timer t(io, 5ms);
    std::future<void> done = t.async_wait(net::use_future);
    wheel_timer never(io, 1h);
    std::future<void> cancelled = never.async_wait(net::use_future);
    BOOST_TEST(never.cancel() == 1u);

    std::thread runner([&] { io.run(); });
    const bool ready = done.wait_for(30s) == std::future_status::ready;
    if (!ready) {
        io.stop();
    }
    runner.join();
    BOOST_TEST_REQUIRE(ready);
    BOOST_CHECK_NO_THROW(done.get());
    BOOST_TEST((clock_type::now() >= t.expiry()));
    try {
        cancelled.get();
        BOOST_TEST(false, "a cancelled use_future wait must throw");
    } catch (const boost::system::system_error& e) {
        BOOST_TEST((e.code() == aborted));
    }
}

BOOST_AUTO_TEST_CASE(use_awaitable_as_tuple_and_redirect_error) {
    net::io_context io;
    std::exception_ptr failure;
    int steps = 0;
    net::co_spawn(
        io,
        [&]() -> net::awaitable<void> {
            wheel_timer t(co_await net::this_coro::executor, 5ms);
            co_await t.async_wait(net::use_awaitable);
            BOOST_TEST((clock_type::now() >= t.expiry()));
            ++steps;

            t.expires_after(1ms);
            auto [ec] = co_await t.async_wait(net::as_tuple(net::use_awaitable));
            BOOST_TEST(!ec);
            ++steps;

            t.expires_after(1h);
            wheel_timer canceller(co_await net::this_coro::executor, 1ms);
            canceller.async_wait([&](error_code) { t.cancel(); });
            error_code redirected;
            co_await t.async_wait(net::redirect_error(net::use_awaitable, redirected));
            BOOST_TEST((redirected == aborted));
            ++steps;

            t.expires_after(1h);
            canceller.expires_after(1ms);
            canceller.async_wait([&](error_code) { t.cancel(); });
            try {
                co_await t.async_wait(net::use_awaitable);
            } catch (const boost::system::system_error& e) {
                BOOST_TEST((e.code() == aborted));
                ++steps;
            }
        },
        [&](std::exception_ptr e) { failure = e; });
    run(io);
    BOOST_TEST(!failure);
    BOOST_TEST(steps == 4);
}

BOOST_AUTO_TEST_CASE(awaitable_operators_the_shorter_wait_wins_and_the_other_is_cancelled) {
    using namespace net::experimental::awaitable_operators;
    net::io_context io;
    std::exception_ptr failure;
    std::size_t winner = 99;
    std::size_t slow_pending_after = 99;
    std::size_t armed_after = 99;
    clock_type::time_point fast_expiry{};
    clock_type::time_point won_at{};
    net::co_spawn(
        io,
        [&]() -> net::awaitable<void> {
            auto ex = co_await net::this_coro::executor;
            wheel_timer slow(ex, 1h);
            wheel_timer fast(ex, 10ms);
            fast_expiry = fast.expiry();
            auto result = co_await (slow.async_wait(net::use_awaitable) ||
                                    fast.async_wait(net::use_awaitable));
            won_at = clock_type::now();
            winner = result.index();
            slow_pending_after = slow.cancel();
            armed_after = net::use_service<wheel_service>(io).size();
        },
        [&](std::exception_ptr e) { failure = e; });
    run(io); // returns at once after the race: the 1 h wait was cancelled
    BOOST_TEST(!failure);
    BOOST_TEST(winner == 1u);
    BOOST_TEST((won_at >= fast_expiry));
    BOOST_TEST(slow_pending_after == 0u);
    BOOST_TEST(armed_after == 0u);
}

BOOST_AUTO_TEST_CASE(deferred_starts_the_wait_only_when_invoked) {
    net::io_context io;
    wheel_timer t(io, 2ms);
    auto op = t.async_wait(net::deferred);
    BOOST_TEST(service_of(io).size() == 0u); // not initiated yet
    wait_result r;
    std::move(op)(record(r));
    BOOST_TEST(service_of(io).size() == 1u);
    run(io);
    BOOST_TEST(r.calls == 1);
    BOOST_TEST(!r.ec);

    // A deferred chain: wait, then wait again.
    int chained = 0;
    t.expires_after(1ms);
    t.async_wait(net::deferred([&](error_code ec) {
        BOOST_TEST(!ec);
        ++chained;
        t.expires_after(1ms);
        return t.async_wait(net::deferred);
    }))([&](error_code ec) {
        BOOST_TEST(!ec);
        ++chained;
    });
    run(io);
    BOOST_TEST(chained == 2);
}

BOOST_AUTO_TEST_CASE(use_promise_completes_and_cancels) {
    net::io_context io;
    wheel_timer t(io, 2ms);
    auto p = t.async_wait(net::experimental::use_promise);
    wait_result r;
    p(record(r));
    wheel_timer never(io, 1h);
    auto cancelled = never.async_wait(net::experimental::use_promise);
    wait_result rc;
    cancelled(record(rc));
    cancelled.cancel(); // per-operation cancellation through the promise
    run(io);
    BOOST_TEST(r.calls == 1);
    BOOST_TEST(!r.ec);
    BOOST_TEST(rc.calls == 1);
    BOOST_TEST((rc.ec == aborted));
    BOOST_TEST(never.cancel() == 0u);
}

// --- Executors ---------------------------------------------------------------------------

BOOST_AUTO_TEST_CASE(handlers_run_on_a_strand_io_executor) {
    net::io_context io;
    auto strand = net::make_strand(io);
    basic_wheel_timer<decltype(strand)> typed(strand, 2ms);
    wheel_timer erased(strand, 2ms); // any_io_executor holding the strand
    int on_strand = 0;
    int calls = 0;
    auto check = [&](error_code ec) {
        BOOST_TEST(!ec);
        ++calls;
        on_strand += strand.running_in_this_thread() ? 1 : 0;
    };
    typed.async_wait(check);
    erased.async_wait(check);
    net::co_spawn(
        strand,
        [&]() -> net::awaitable<void> {
            co_await typed.async_wait(net::use_awaitable);
            check({});
        },
        net::detached);
    run(io);
    BOOST_TEST(calls == 3);
    BOOST_TEST(on_strand == 3);
}

BOOST_AUTO_TEST_CASE(handlers_run_on_their_associated_executor) {
    net::io_context io;
    auto strand = net::make_strand(io);
    wheel_timer t(net::any_io_executor(io.get_executor()), 2ms);
    bool on_strand = false;
    t.async_wait(net::bind_executor(strand, [&](error_code ec) {
        BOOST_TEST(!ec);
        on_strand = strand.running_in_this_thread();
    }));
    bool plain_not_on_strand = false;
    t.async_wait([&](error_code) { plain_not_on_strand = !strand.running_in_this_thread(); });
    run(io);
    BOOST_TEST(on_strand);
    BOOST_TEST(plain_not_on_strand);
}

// --- reschedule_after() and slack() ------------------------------------------------------

BOOST_AUTO_TEST_CASE(reschedule_after_pushes_a_wait_back_without_completing_it) {
    net::io_context io;
    wheel_timer t(io, 100ms);
    wait_result r;
    t.async_wait(record(r));
    // Push it back ten times; the driver wakes up at the old deadline and re-files.
    for (int i = 1; i <= 10; ++i) {
        BOOST_TEST(t.reschedule_after(100ms + i * 5ms) == 1u);
        poll(io);
        BOOST_TEST(r.calls == 0); // no handler runs on reschedule
    }
    const auto last = t.expiry();
    run(io);
    BOOST_TEST(r.calls == 1);
    BOOST_TEST(!r.ec);
    BOOST_TEST((r.at >= last));
}

BOOST_AUTO_TEST_CASE(reschedule_after_from_a_running_io_context) {
    net::io_context io;
    wheel_timer t(io, 1h);
    wait_result r;
    t.async_wait(record(r));
    wheel_timer pusher(io);
    int pushes = 0;
    std::size_t pending_seen = 0;
    std::function<void(error_code)> push = [&](error_code) {
        BOOST_TEST(r.calls == 0);
        if (++pushes < 10) {
            pending_seen += t.reschedule_after(1h); // later: lazily
            pusher.expires_after(2ms);
            pusher.async_wait(push);
        } else {
            pending_seen += t.reschedule_after(5ms); // earlier: relinked
        }
    };
    pusher.expires_after(2ms);
    pusher.async_wait(push);
    run(io);
    BOOST_TEST(pushes == 10);
    BOOST_TEST(pending_seen == 10u);
    BOOST_TEST(r.calls == 1);
    BOOST_TEST(!r.ec);
    BOOST_TEST((r.at >= t.expiry()));
}

BOOST_AUTO_TEST_CASE(reschedule_returns_the_pending_count_and_sets_an_idle_expiry) {
    net::io_context io;
    wheel_timer t(io, 1h);
    const auto at = clock_type::now() + 3ms;
    BOOST_TEST(t.reschedule_at(at) == 0u); // no pending wait: only sets the expiry
    BOOST_TEST((t.expiry() == at));
    BOOST_TEST(service_of(io).size() == 0u);

    std::array<wait_result, 2> r;
    t.async_wait(record(r[0]));
    t.async_wait(record(r[1]));
    BOOST_TEST(t.reschedule_after(1h) == 2u);
    BOOST_TEST(t.reschedule_after(2ms) == 2u); // earlier
    run(io);
    for (const wait_result& one : r) {
        BOOST_TEST(one.calls == 1);
        BOOST_TEST(!one.ec);
        BOOST_TEST((one.at >= t.expiry()));
    }
    BOOST_TEST(t.reschedule_after(1h) == 0u); // after completion
}

BOOST_AUTO_TEST_CASE(negative_slack_throws_and_leaves_the_slack_intact) {
    net::io_context io;
    wheel_timer t(io);
    BOOST_TEST((t.slack() == wheel_timer::duration::zero()));
    t.slack(5ms);
    BOOST_TEST((t.slack() == wheel_timer::duration(5ms)));
    try {
        t.slack(-1ms);
        BOOST_TEST(false, "negative slack must throw");
    } catch (const std::invalid_argument& e) {
        BOOST_TEST(std::string(e.what()).find("slack") != std::string::npos);
    }
    BOOST_TEST((t.slack() == wheel_timer::duration(5ms)));
}

BOOST_AUTO_TEST_CASE(slack_waits_never_complete_early) {
    net::io_context io;
    std::mt19937 random(20261122);
    std::uniform_int_distribution<int> delay_us(0, 80'000);
    std::uniform_int_distribution<int> slack_us(0, 70'000);
    std::deque<wheel_timer> timers;
    std::vector<wait_result> r(60);
    for (std::size_t i = 0; i < r.size(); ++i) {
        wheel_timer& t = timers.emplace_back(io);
        t.slack(std::chrono::microseconds(slack_us(random)));
        t.expires_after(std::chrono::microseconds(delay_us(random)));
        t.async_wait(record(r[i]));
    }
    run(io);
    for (std::size_t i = 0; i < r.size(); ++i) {
        BOOST_TEST(r[i].calls == 1);
        BOOST_TEST(!r[i].ec);
        BOOST_TEST((r[i].at >= timers[i].expiry()), "timer " << i << " completed early");
    }
}

// --- Never early, in order ---------------------------------------------------------------

BOOST_AUTO_TEST_CASE(many_timers_never_early_and_in_expiry_order) {
    net::io_context io;
    std::mt19937 random(7);
    std::uniform_int_distribution<int> delay_us(0, 50'000);
    constexpr std::size_t n = 300;
    std::deque<wheel_timer> timers;
    std::vector<wait_result> r(n);
    std::vector<std::size_t> order;
    order.reserve(n);
    const auto base = clock_type::now();
    for (std::size_t i = 0; i < n; ++i) {
        wheel_timer& t =
            timers.emplace_back(io, base + std::chrono::microseconds(delay_us(random)));
        t.async_wait([&, i](error_code ec) {
            record(r[i])(ec);
            order.push_back(i);
        });
    }
    run(io);
    BOOST_TEST_REQUIRE(order.size() == n);
    std::vector<std::size_t> position(n);
    for (std::size_t k = 0; k < n; ++k) {
        position[order[k]] = k;
    }
    std::size_t misordered = 0;
    for (std::size_t i = 0; i < n; ++i) {
        BOOST_TEST(!r[i].ec);
        BOOST_TEST((r[i].at >= timers[i].expiry()), "timer " << i << " completed early");
        for (std::size_t j = 0; j < n; ++j) {
            // Two ticks apart: different wheel slots, so the order is deterministic.
            if (timers[i].expiry() + 2ms <= timers[j].expiry() && position[i] > position[j]) {
                ++misordered;
            }
        }
    }
    BOOST_TEST(misordered == 0u);
}

// --- run() returns when nothing is pending -----------------------------------------------

BOOST_AUTO_TEST_CASE(run_returns_at_once_after_the_only_wait_is_cancelled) {
    net::io_context io;
    wheel_timer t(io, 1h);
    wait_result r;
    t.async_wait(record(r));
    BOOST_TEST(t.cancel() == 1u);
    run(io); // would hang for an hour (the watchdog stops it after 30 s) if the driver stayed
    BOOST_TEST((r.ec == aborted));

    t.async_wait(record(r)); // again, cancelled from inside the running io_context
    net::post(io, [&] { t.cancel(); });
    run(io);
    BOOST_TEST(r.calls == 2);

    {
        wheel_timer destroyed(io, 1h);
        destroyed.async_wait([](error_code) {});
    }
    run(io);
}

BOOST_AUTO_TEST_CASE(run_returns_after_the_last_expiry) {
    net::io_context io;
    wheel_timer t(io, 1ms);
    wheel_timer other(io, 1h);
    wait_result r;
    t.async_wait(record(r));
    other.async_wait([&](error_code) {});
    t.async_wait([&](error_code) { other.cancel(); });
    run(io);
    BOOST_TEST(r.calls == 1);
}

// --- Shutdown ----------------------------------------------------------------------------

namespace {

using timewheel::test::set_on_destruction;

} // namespace

BOOST_AUTO_TEST_CASE(destroying_the_io_context_destroys_pending_handlers_without_invoking) {
    bool destroyed = false;
    bool invoked = false;
    auto io = std::make_unique<net::io_context>();
    {
        // The handler owns its timer, as an Asio program's self-owned objects do.
        auto t = std::make_shared<wheel_timer>(*io, 1h);
        auto guard = std::make_shared<set_on_destruction>(&destroyed);
        t->async_wait([t, guard, &invoked](error_code) { invoked = true; });
    }
    io->poll();
    BOOST_TEST(!destroyed);
    io.reset();
    BOOST_TEST(destroyed);
    BOOST_TEST(!invoked);
}

namespace {

// A timer that only its pending handler owns (16 bytes: kept inline).
struct self_owned_timer {
    self_owned_timer(net::io_context& io, bool* destroyed, bool* invoked)
        : timer(io, 1h)
        , guard(std::make_shared<set_on_destruction>(destroyed))
        , invoked(invoked) {}

    static void start(std::shared_ptr<self_owned_timer> self) {
        wheel_timer& timer = self->timer;
        timer.async_wait([self = std::move(self)](error_code) { *self->invoked = true; });
    }

    wheel_timer timer;
    std::shared_ptr<set_on_destruction> guard;
    bool* invoked;
};

} // namespace

BOOST_AUTO_TEST_CASE(destroying_the_io_context_destroys_inline_handlers_that_own_their_timers) {
    std::array<bool, 2> destroyed{};
    std::array<bool, 2> invoked{};
    auto io = std::make_unique<net::io_context>();
    auto pending = std::make_shared<self_owned_timer>(*io, &destroyed[0], &invoked[0]);
    auto queued = std::make_shared<self_owned_timer>(*io, &destroyed[1], &invoked[1]);
    wheel_timer& queued_timer = queued->timer;
    self_owned_timer::start(std::move(pending));
    self_owned_timer::start(std::move(queued));
    queued_timer.cancel(); // its completion is queued
    io->stop();
    BOOST_TEST(!destroyed[0]);
    BOOST_TEST(!destroyed[1]);
    io.reset();
    BOOST_TEST(destroyed[0]);
    BOOST_TEST(destroyed[1]);
    BOOST_TEST(!invoked[0]);
    BOOST_TEST(!invoked[1]);
}

BOOST_AUTO_TEST_CASE(destroying_the_io_context_destroys_queued_completions_without_invoking) {
    bool destroyed = false;
    bool invoked = false;
    auto io = std::make_unique<net::io_context>();
    {
        wheel_timer t(*io, 1h);
        auto guard = std::make_shared<set_on_destruction>(&destroyed);
        t.async_wait([guard, &invoked](error_code) { invoked = true; });
    } // cancelled: the completion is queued
    BOOST_TEST(!destroyed);
    io.reset();
    BOOST_TEST(destroyed);
    BOOST_TEST(!invoked);
}

BOOST_AUTO_TEST_CASE(shutdown_with_waits_on_several_timers_that_own_each_other) {
    bool a_destroyed = false;
    bool b_destroyed = false;
    bool invoked = false;
    auto io = std::make_unique<net::io_context>();
    {
        auto a = std::make_shared<wheel_timer>(*io, 1h);
        auto b = std::make_shared<wheel_timer>(*io, 2h);
        auto ga = std::make_shared<set_on_destruction>(&a_destroyed);
        auto gb = std::make_shared<set_on_destruction>(&b_destroyed);
        // a's handler owns b and b's handler owns a: destroying either destroys the other.
        a->async_wait([b, ga, &invoked](error_code) { invoked = true; });
        b->async_wait([a, gb, &invoked](error_code) { invoked = true; });
        b->async_wait([b, &invoked](error_code) { invoked = true; });
    }
    io.reset();
    BOOST_TEST(a_destroyed);
    BOOST_TEST(b_destroyed);
    BOOST_TEST(!invoked);
}

// --- Parity with steady_timer (issue 11) ---------------------------------------------------

namespace {

// What io_context::run() returns for a scenario, run once with each timer type.
template <typename Timer, typename Scenario>
std::size_t handlers_run(Scenario scenario) {
    net::io_context io;
    std::size_t count = 0;
    {
        std::vector<std::unique_ptr<Timer>> timers;
        scenario(io, timers);
        io.restart();
        watchdog dog(io);
        count = io.run();
        BOOST_TEST(!dog.fired());
    }
    return count;
}

template <typename Scenario>
void same_count_as_steady_timer(Scenario scenario, std::size_t expected) {
    const std::size_t steady = handlers_run<net::steady_timer>(scenario);
    const std::size_t wheel = handlers_run<wheel_timer>(scenario);
    BOOST_TEST(steady == expected);
    BOOST_TEST(wheel == steady);
}

} // namespace

BOOST_AUTO_TEST_CASE(one_wait_costs_one_handler_run_as_with_steady_timer) {
    // One wait that expires.
    same_count_as_steady_timer(
        [](net::io_context& io, auto& timers) {
            using timer_type = typename std::decay_t<decltype(timers)>::value_type::element_type;
            auto& t = *timers.emplace_back(std::make_unique<timer_type>(io, 5ms));
            t.async_wait([](error_code) {});
        },
        1);
    // Three waits on three timers with different expiries, armed latest first (each one
    // moves the wheel's wakeup earlier).
    same_count_as_steady_timer(
        [](net::io_context& io, auto& timers) {
            using timer_type = typename std::decay_t<decltype(timers)>::value_type::element_type;
            for (auto delay : {12ms, 8ms, 4ms}) {
                auto& t = *timers.emplace_back(std::make_unique<timer_type>(io, delay));
                t.async_wait([](error_code) {});
            }
        },
        3);
    // Due at once.
    same_count_as_steady_timer(
        [](net::io_context& io, auto& timers) {
            using timer_type = typename std::decay_t<decltype(timers)>::value_type::element_type;
            auto& t = *timers.emplace_back(std::make_unique<timer_type>(io, -1s));
            t.async_wait([](error_code) {});
        },
        1);
    // Cancelled before run(): the aborted handler is the only one.
    same_count_as_steady_timer(
        [](net::io_context& io, auto& timers) {
            using timer_type = typename std::decay_t<decltype(timers)>::value_type::element_type;
            auto& t = *timers.emplace_back(std::make_unique<timer_type>(io, 1h));
            t.async_wait([](error_code) {});
            t.cancel();
        },
        1);
    // Cancelled by a posted handler: that handler and the aborted one.
    same_count_as_steady_timer(
        [](net::io_context& io, auto& timers) {
            using timer_type = typename std::decay_t<decltype(timers)>::value_type::element_type;
            auto* t = timers.emplace_back(std::make_unique<timer_type>(io, 1h)).get();
            t->async_wait([](error_code) {});
            net::post(io, [t] { t->cancel(); });
        },
        2);
    // Three timers cancelled before run() (one batch for the wheel): three aborted
    // handlers, and the driver's wait taken back without a handler of its own.
    same_count_as_steady_timer(
        [](net::io_context& io, auto& timers) {
            using timer_type = typename std::decay_t<decltype(timers)>::value_type::element_type;
            for (int i = 0; i < 3; ++i) {
                auto& t = *timers.emplace_back(std::make_unique<timer_type>(io, 1h));
                t.async_wait([](error_code) {});
            }
            for (auto& t : timers) {
                t->cancel();
            }
        },
        3);
    // Cancelled by a posted handler, several: that handler and each aborted one.
    same_count_as_steady_timer(
        [](net::io_context& io, auto& timers) {
            using timer_type = typename std::decay_t<decltype(timers)>::value_type::element_type;
            for (int i = 0; i < 3; ++i) {
                auto& t = *timers.emplace_back(std::make_unique<timer_type>(io, 1h));
                t.async_wait([](error_code) {});
            }
            net::post(io, [&timers] {
                for (auto& t : timers) {
                    t->cancel();
                }
            });
        },
        4);
}

BOOST_AUTO_TEST_CASE(waits_cancelled_outside_run_complete_in_cancellation_order) {
    // One batch: the first runs inside the operation that carries the batch, the others are
    // queued behind it; a wait cancelled after a handler ran starts a new batch.
    net::io_context io;
    std::vector<std::unique_ptr<wheel_timer>> timers;
    std::vector<int> order;
    for (int i = 0; i < 5; ++i) {
        auto& t = *timers.emplace_back(std::make_unique<wheel_timer>(io, 1h));
        t.async_wait([&order, i](error_code ec) {
            BOOST_TEST((ec == aborted));
            order.push_back(i);
        });
    }
    for (int i : {3, 0, 4}) {
        BOOST_TEST(timers[i]->cancel() == 1u);
    }
    BOOST_TEST(io.run_one() == 1u); // one handler per run_one(), as with steady_timer
    BOOST_TEST(order == (std::vector<int>{3}), boost::test_tools::per_element());
    BOOST_TEST(timers[1]->cancel() == 1u);
    BOOST_TEST(timers[2]->cancel() == 1u);
    watchdog dog(io);
    BOOST_TEST(io.run() == 4u); // returns: no wait is pending
    BOOST_TEST(!dog.fired());
    BOOST_TEST(order == (std::vector<int>{3, 0, 4, 1, 2}), boost::test_tools::per_element());
    BOOST_TEST(service_of(io).size() == 0u);
}

BOOST_AUTO_TEST_CASE(run_one_returns_after_the_users_handler) {
    net::io_context io;
    wheel_timer t(io, 5ms);
    wait_result r;
    t.async_wait(record(r));
    watchdog dog(io);
    BOOST_TEST(io.run_one() == 1u);
    BOOST_TEST(r.calls == 1);
    BOOST_TEST(!r.ec);
    BOOST_TEST(!dog.fired());
}

BOOST_AUTO_TEST_CASE(waits_expiring_together_complete_earliest_expiry_first) {
    const auto now = clock_type::now();
    const std::array<clock_type::duration, 5> ago = {1ms, 5ms, 3ms, 4s, 2ms};
    auto order_of = [&](auto timer_tag) {
        using timer_type = typename decltype(timer_tag)::type;
        net::io_context io;
        std::vector<int> order;
        std::vector<std::unique_ptr<timer_type>> timers;
        for (int i = 0; i < static_cast<int>(ago.size()); ++i) {
            auto& t = *timers.emplace_back(std::make_unique<timer_type>(io, now - ago[i]));
            t.async_wait([&order, i](error_code ec) {
                BOOST_TEST(!ec);
                order.push_back(i);
            });
        }
        run(io);
        return order;
    };
    const std::vector<int> expected = {3, 1, 2, 4, 0};
    const std::vector<int> steady = order_of(std::type_identity<net::steady_timer>());
    BOOST_TEST(steady == expected, boost::test_tools::per_element());
    const std::vector<int> wheel = order_of(std::type_identity<wheel_timer>());
    BOOST_TEST(wheel == expected, boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(a_moved_from_timer_reads_the_default_expiry) {
    net::io_context io;
    wheel_timer a(io, 1h);
    a.slack(10ms);
    const auto expiry = a.expiry();
    wheel_timer b(std::move(a));
    BOOST_TEST((b.expiry() == expiry));
    BOOST_TEST((a.expiry() == clock_type::time_point())); // NOLINT: reading a moved-from timer
    BOOST_TEST((a.slack() == clock_type::duration::zero()));
    net::steady_timer s(io, 1h);
    net::steady_timer s2(std::move(s));
    BOOST_TEST((s.expiry() == clock_type::time_point())); // what steady_timer does
}

BOOST_AUTO_TEST_CASE(blocking_wait_returns_at_the_expiry_never_before) {
    net::io_context io;
    wheel_timer t(io, 20ms);
    t.wait();
    BOOST_TEST((clock_type::now() >= t.expiry()));

    t.expires_after(-1s);
    error_code ec = net::error::operation_aborted;
    t.wait(ec);
    BOOST_TEST(!ec);

    // A pending asynchronous wait is not disturbed by a blocking one.
    t.expires_after(10ms);
    wait_result r;
    t.async_wait(record(r));
    t.wait();
    BOOST_TEST(r.calls == 0);
    run(io);
    BOOST_TEST(r.calls == 1);
    BOOST_TEST(!r.ec);
}
