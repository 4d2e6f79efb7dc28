//
// test/idle_reaper.cpp
//
// Unit tests of idle_reaper and close_lowest_layer, without connections: the deadline, its
// refresh by touch(), the action and its lifetime rules, the cost claims (no allocation, no
// handler), bad input, and which layer of a stream gets closed. The real-socket tests are in
// idle_reaper_sockets.cpp. The header comes first to prove that it is self-contained.
//

#define BOOST_TEST_MODULE idle_reaper
#include <timewheel/idle_reaper.hpp>

#include <boost/test/unit_test.hpp>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#if defined(TIMEWHEEL_TEST_OPENSSL)
#include <boost/asio/ssl.hpp>
#endif

#include <chrono>
#include <cstddef>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <random>
#include <stdexcept>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

#include <test/support/allocation_counter.hpp>
#include <test/support/fixtures.hpp>

namespace {

namespace net = boost::asio;
namespace tw = timewheel;
using namespace std::chrono_literals;
using clock_type = std::chrono::steady_clock;
using tcp = net::ip::tcp;

// Upper bounds are generous: they only catch "never fires" or "fires at the wrong period",
// never measure speed.
constexpr auto margin = 2s;

// An action that counts its calls and remembers when the last one happened.
struct recorder {
    int calls = 0;
    clock_type::time_point last{};
    std::thread::id thread{};
};

struct record {
    recorder* r;
    void operator()() const {
        ++r->calls;
        r->last = clock_type::now();
        r->thread = std::this_thread::get_id();
    }
};

using timewheel::test::mentions;

// --- Fake streams for close_lowest_layer ----------------------------------------------------

struct closes_with_error_code {
    int closed = 0;
    void close(boost::system::error_code& ec) {
        ++closed;
        ec = net::error::bad_descriptor; // an error that the reaper must ignore
    }
};

struct closes_without_error_code {
    int closed = 0;
    void close() { ++closed; }
};

template <typename Next>
struct layer_over {
    Next next;
    Next& next_layer() { return next; }
};

// A layer that can close itself and has a next layer: itself is closed, not the next one.
struct closable_layer {
    int closed = 0;
    closes_with_error_code next;
    void close(boost::system::error_code&) { ++closed; }
    closes_with_error_code& next_layer() { return next; }
};

struct not_a_stream {
    void shutdown() {}
};

static_assert(tw::is_closable_stream<closes_with_error_code>());
static_assert(tw::is_closable_stream<closes_without_error_code>());
static_assert(tw::is_closable_stream<layer_over<layer_over<closes_without_error_code>>>());
static_assert(!tw::is_closable_stream<not_a_stream>());
static_assert(!tw::is_closable_stream<layer_over<not_a_stream>>());
static_assert(!tw::is_closable_stream<net::io_context>());
static_assert(!tw::is_closable_stream<int>());
static_assert(tw::is_closable_stream<tcp::socket>());
static_assert(tw::is_closable_stream<boost::beast::tcp_stream>());
static_assert(!std::is_copy_constructible_v<tw::idle_reaper<>>);
static_assert(!std::is_move_constructible_v<tw::idle_reaper<>>);
// Deduction: a stream gives the default action; a context or an executor and a callable give
// that callable.
static_assert(std::is_same_v<decltype(tw::idle_reaper(std::declval<tcp::socket&>(), 1s)),
                             tw::idle_reaper<tw::close_stream>>);
static_assert(
    std::is_same_v<decltype(tw::idle_reaper(std::declval<net::io_context&>(), 1s, record{})),
                   tw::idle_reaper<record>>);
static_assert(std::is_same_v<decltype(tw::idle_reaper(
                                 std::declval<net::io_context::executor_type>(), 1s, record{})),
                             tw::idle_reaper<record>>);

} // namespace

BOOST_AUTO_TEST_CASE(reaps_once_after_the_timeout_on_the_io_thread) {
    net::io_context io;
    recorder r;
    tw::idle_reaper reaper(io, 50ms, record{&r});
    BOOST_TEST(!reaper.armed());
    BOOST_TEST(reaper.timeout() == clock_type::duration(50ms));
    BOOST_TEST(reaper.slack() == tw::idle_reaper<record>::default_slack(50ms));

    const auto started = clock_type::now();
    reaper.start();
    BOOST_TEST(reaper.armed());
    BOOST_TEST(tw::idle_reaper<record>::default_slack(50ms) == clock_type::duration(50ms) / 8);
    BOOST_TEST(reaper.service().size() == 1u);
    BOOST_TEST(r.calls == 0); // never from inside start()

    std::thread::id runner_id;
    std::thread runner([&] {
        runner_id = std::this_thread::get_id();
        io.run(); // returns once the wheel is empty
    });
    runner.join();

    BOOST_TEST(r.calls == 1);
    BOOST_TEST((r.thread == runner_id));
    BOOST_TEST(reaper.reaped());
    BOOST_TEST(!reaper.armed());
    BOOST_TEST(reaper.service().size() == 0u);
    BOOST_TEST((r.last - started >= 50ms));
    BOOST_TEST((r.last - started <= 50ms + reaper.slack() + margin));
}

BOOST_AUTO_TEST_CASE(each_touch_pushes_the_deadline_back) {
    net::io_context io;
    recorder r;
    tw::idle_reaper reaper(io, 100ms, record{&r});
    net::steady_timer traffic(io); // an independent clock of "reads"
    int reads = 0;
    bool touches_ok = true;
    clock_type::time_point last_touch{};
    std::function<void()> next_read = [&] {
        traffic.expires_after(20ms);
        traffic.async_wait([&](boost::system::error_code ec) {
            BOOST_REQUIRE(!ec);
            BOOST_TEST(r.calls == 0); // still within the timeout: never reaped
            last_touch = clock_type::now();
            touches_ok = touches_ok && reaper.touch();
            BOOST_TEST((reaper.expiry() >= last_touch + 100ms));
            if (++reads < 15) { // 300 ms of traffic: three timeouts' worth
                next_read();
            }
        });
    };
    reaper.start();
    next_read();
    io.run();

    BOOST_TEST(touches_ok);
    BOOST_TEST(reads == 15);
    BOOST_TEST(r.calls == 1);
    // 15 touches over about four periods: the wheel woke up about once a period (a re-arm
    // for the rest of it, maybe a cascade), not once per touch.
    BOOST_TEST(reaper.service().wakeups() <= 10u);
    BOOST_TEST((r.last - last_touch >= 100ms));
    BOOST_TEST((r.last - last_touch <= 100ms + reaper.slack() + margin));
}

BOOST_AUTO_TEST_CASE(touch_does_nothing_unless_armed) {
    net::io_context io;
    recorder r;
    tw::idle_reaper reaper(io, 10ms, record{&r});
    BOOST_TEST(!reaper.touch()); // not started
    BOOST_TEST(!reaper.armed());
    BOOST_TEST(reaper.service().size() == 0u);

    reaper.start();
    BOOST_TEST(reaper.cancel());
    BOOST_TEST(!reaper.touch()); // cancelled
    BOOST_TEST(!reaper.armed());

    reaper.start();
    io.run();
    BOOST_TEST(r.calls == 1);
    BOOST_TEST(!reaper.touch()); // reaped
    BOOST_TEST(!reaper.armed());
    BOOST_TEST(reaper.service().size() == 0u);
}

BOOST_AUTO_TEST_CASE(cancel_prevents_the_action_and_is_idempotent) {
    net::io_context io;
    recorder r;
    tw::idle_reaper reaper(io, 10ms, record{&r});
    BOOST_TEST(!reaper.cancel()); // never armed
    reaper.start();
    BOOST_TEST(reaper.cancel());
    BOOST_TEST(!reaper.cancel());
    BOOST_TEST(reaper.service().size() == 0u);
    io.run(); // returns: nothing left to wait for
    BOOST_TEST(io.stopped());
    BOOST_TEST(r.calls == 0);
    BOOST_TEST(!reaper.reaped());
}

BOOST_AUTO_TEST_CASE(start_rearms_and_clears_reaped) {
    net::io_context io;
    recorder r;
    tw::idle_reaper reaper(io, 20ms, record{&r});
    reaper.start();
    io.run();
    BOOST_TEST(reaper.reaped());
    io.restart();
    reaper.start();
    BOOST_TEST(!reaper.reaped());
    BOOST_TEST(reaper.armed());
    reaper.start(); // re-arming an armed reaper keeps one entry
    BOOST_TEST(reaper.service().size() == 1u);
    io.run();
    BOOST_TEST(r.calls == 2);
    BOOST_TEST(reaper.reaped());
}

BOOST_AUTO_TEST_CASE(destroying_an_armed_reaper_disarms_it) {
    net::io_context io;
    recorder r;
    {
        tw::idle_reaper reaper(io, 10ms, record{&r});
        reaper.start();
        BOOST_TEST(tw::idle_reaper<record>(io, 1s, record{&r}).service().size() == 1u);
    }
    BOOST_TEST(net::use_service<tw::wheel_service>(io).size() == 0u);
    io.run(); // returns: nothing left to wait for
    BOOST_TEST(r.calls == 0);
}

BOOST_AUTO_TEST_CASE(touch_allocates_nothing_and_runs_no_handler) {
    net::io_context io;
    recorder r;
    std::deque<tw::idle_reaper<record>> reapers;
    for (int i = 0; i < 1000; ++i) {
        reapers.emplace_back(io, 1h, record{&r});
        reapers.back().start();
    }
    io.poll(); // settles whatever the first arm set up

    std::mt19937 random(7);
    std::uniform_int_distribution<std::size_t> pick(0, reapers.size() - 1);
    bool all_armed = true;
    timewheel::test::allocation_counter counter;
    for (int i = 0; i < 100'000; ++i) {
        all_armed = reapers[pick(random)].touch() && all_armed;
    }
    const std::size_t allocated = counter.count();
    BOOST_TEST(all_armed);
    BOOST_TEST(allocated == 0u);
    BOOST_TEST(io.poll() == 0u); // and nothing was queued for the io_context to run
    BOOST_TEST(r.calls == 0);
}

BOOST_AUTO_TEST_CASE(set_timeout_counts_the_new_period_from_now) {
    net::io_context io;
    recorder r;
    tw::idle_reaper reaper(io, 1h, record{&r});
    reaper.set_timeout(2h); // unarmed: stays unarmed
    BOOST_TEST(!reaper.armed());
    BOOST_TEST(reaper.slack() == tw::idle_reaper<record>::default_slack(2h));
    reaper.start();
    const auto far = reaper.expiry();
    const auto changed = clock_type::now();
    reaper.set_timeout(30ms); // e.g. from "between requests" to "inside a request"
    BOOST_TEST(reaper.armed());
    BOOST_TEST(reaper.service().size() == 1u);
    BOOST_TEST(reaper.timeout() == clock_type::duration(30ms));
    BOOST_TEST(reaper.slack() == tw::idle_reaper<record>::default_slack(30ms));
    BOOST_TEST((reaper.expiry() >= changed + 30ms));
    BOOST_TEST((reaper.expiry() < far));
    io.run();
    BOOST_TEST(r.calls == 1);
    BOOST_TEST((r.last - changed >= 30ms));
    BOOST_TEST((r.last - changed <= 30ms + reaper.slack() + margin));
}

BOOST_AUTO_TEST_CASE(touch_with_a_given_time) {
    net::io_context io;
    recorder r;
    tw::idle_reaper reaper(io, 40ms, record{&r}, 0ms);
    reaper.start();
    const auto now = clock_type::now();
    BOOST_TEST(reaper.touch(now + 20ms)); // the caller's clock reading, for a batch
    BOOST_TEST((reaper.expiry() >= now + 60ms));
    BOOST_TEST((reaper.expiry() <= now + 60ms + 1ms)); // exact: rounded up to one tick
    io.run();
    BOOST_TEST((r.last >= now + 60ms));
}

BOOST_AUTO_TEST_CASE(huge_timeouts_saturate) {
    net::io_context io;
    recorder r;
    tw::idle_reaper reaper(io, clock_type::duration::max(), record{&r}, 0ns);
    reaper.start();
    BOOST_TEST(reaper.touch());
    BOOST_TEST(reaper.armed());
    BOOST_TEST((reaper.expiry() == clock_type::time_point::max()));
    BOOST_TEST(io.poll() == 0u);
    BOOST_TEST(reaper.cancel());
    BOOST_TEST(r.calls == 0);
}

BOOST_AUTO_TEST_CASE(the_action_may_restart_its_reaper) {
    net::io_context io;
    std::vector<clock_type::time_point> fired;
    std::optional<tw::idle_reaper<std::function<void()>>> reaper;
    reaper.emplace(io, 20ms, [&] {
        fired.push_back(clock_type::now());
        BOOST_TEST(reaper->reaped());
        BOOST_TEST(!reaper->armed());
        if (fired.size() < 3) {
            reaper->start(); // "one more period", e.g. after a warning
        }
    });
    const auto started = clock_type::now();
    reaper->start();
    io.run();
    BOOST_REQUIRE(fired.size() == 3u);
    BOOST_TEST((fired[0] - started >= 20ms));
    BOOST_TEST((fired[1] - fired[0] >= 20ms));
    BOOST_TEST((fired[2] - fired[1] >= 20ms));
    BOOST_TEST(reaper->service().size() == 0u);
}

namespace {

// A connection-like object whose reaper's action destroys the object itself.
struct self_destroying {
    struct destroy {
        std::unique_ptr<self_destroying>* owner;
        int* calls;
        void operator()() const {
            ++*calls;
            owner->reset(); // destroys the reaper that is calling us: its last act
        }
    };
    std::optional<tw::idle_reaper<destroy>> reaper;
};

} // namespace

BOOST_AUTO_TEST_CASE(the_action_may_destroy_its_reaper) {
    net::io_context io;
    int calls = 0;
    auto owner = std::make_unique<self_destroying>();
    owner->reaper.emplace(io, 10ms, self_destroying::destroy{&owner, &calls});
    owner->reaper->start();
    // A second reaper due in the same tick still fires after the first one is destroyed.
    recorder r;
    tw::idle_reaper other(io, 10ms, record{&r});
    other.start();
    io.run();
    BOOST_TEST(calls == 1);
    BOOST_TEST(!owner);
    BOOST_TEST(r.calls == 1);
    BOOST_TEST(other.service().size() == 0u);
}

BOOST_AUTO_TEST_CASE(reapers_with_random_timeouts_never_fire_early) {
    net::io_context io;
    struct item {
        clock_type::time_point started{};
        clock_type::duration timeout{};
        clock_type::time_point fired{};
        int calls = 0;
    };
    std::vector<item> items(2000);
    struct mark {
        item* it;
        void operator()() const {
            ++it->calls;
            it->fired = clock_type::now();
        }
    };
    std::deque<tw::idle_reaper<mark>> reapers;
    std::mt19937 random(2024);
    std::uniform_int_distribution<int> ms(1, 150);
    for (item& it : items) {
        it.timeout = std::chrono::milliseconds(ms(random));
        reapers.emplace_back(io, it.timeout, mark{&it});
        it.started = clock_type::now();
        reapers.back().start();
    }
    io.run();
    int early = 0;
    int late = 0;
    int missing = 0;
    for (std::size_t i = 0; i < items.size(); ++i) {
        const item& it = items[i];
        missing += it.calls != 1;
        early += it.fired - it.started < it.timeout;
        late += it.fired - it.started > it.timeout + reapers[i].slack() + margin;
    }
    BOOST_TEST(missing == 0);
    BOOST_TEST(early == 0);
    BOOST_TEST(late == 0);
}

// Touches with sub-millisecond offsets (touch(time_point), later than the start) move the
// entry lazily to deadlines inside a tick: each reaper must still be reaped once, never
// early, and without its entry firing over and over within a tick (a burst of wakeups).
BOOST_AUTO_TEST_CASE(deadlines_inside_a_tick_are_reaped_once_and_never_early) {
    net::io_context io;
    constexpr std::size_t count = 500;
    struct item {
        clock_type::time_point touched{};
        clock_type::time_point fired{};
        int calls = 0;
    };
    std::vector<item> items(count);
    struct mark {
        item* it;
        void operator()() const {
            ++it->calls;
            it->fired = clock_type::now();
        }
    };
    std::deque<tw::idle_reaper<mark>> reapers;
    for (item& it : items) {
        reapers.emplace_back(io, 20ms, mark{&it}, 0ms); // exact: fires at its own tick
        reapers.back().start();
    }
    std::mt19937 random(7);
    std::uniform_int_distribution<int> micros(0, 999);
    net::steady_timer traffic(io, 10ms);
    traffic.async_wait([&](boost::system::error_code ec) {
        BOOST_REQUIRE(!ec);
        const clock_type::time_point now = clock_type::now();
        for (std::size_t i = 0; i < count; ++i) {
            items[i].touched = now + std::chrono::microseconds(micros(random));
            BOOST_TEST(reapers[i].touch(items[i].touched));
        }
    });
    io.run();
    int early = 0;
    int not_once = 0;
    for (const item& it : items) {
        not_once += it.calls != 1;
        early += it.fired - it.touched < 20ms;
    }
    BOOST_TEST(not_once == 0);
    BOOST_TEST(early == 0);
    // Two periods of 20 ms with 1 ms ticks: a few dozen runs of the wheel at most; an entry
    // re-armed into the tick being fired would make thousands.
    BOOST_TEST(reapers.front().service().wakeups() <= 200u);
}

BOOST_AUTO_TEST_CASE(works_from_an_executor_and_a_strand) {
    net::io_context io;
    recorder a;
    recorder b;
    tw::idle_reaper from_executor(io.get_executor(), 10ms, record{&a});
    auto strand = net::make_strand(io);
    tw::idle_reaper from_strand(strand, 10ms, record{&b}, 1ms);
    BOOST_TEST(&from_executor.service() == &from_strand.service());
    BOOST_TEST(from_strand.slack() == clock_type::duration(1ms));
    from_executor.start();
    from_strand.start();
    io.run();
    BOOST_TEST(a.calls == 1);
    BOOST_TEST(b.calls == 1);
}

BOOST_AUTO_TEST_CASE(shutdown_disarms_without_running_the_action) {
    struct context : net::io_context {
        using net::io_context::shutdown; // protected in execution_context
    };
    auto io = std::make_unique<context>();
    recorder r;
    {
        tw::idle_reaper reaper(*io, 1ms, record{&r});
        reaper.start();
        std::this_thread::sleep_for(5ms); // due, but never run
        io->shutdown();
        BOOST_TEST(!reaper.armed());
        BOOST_TEST(!reaper.reaped());
    } // destroyed after shutdown, before the context: fine
    io.reset();
    BOOST_TEST(r.calls == 0);
}

BOOST_AUTO_TEST_CASE(bad_timeouts_throw_and_leave_the_reaper_unchanged) {
    net::io_context io;
    recorder r;
    for (const auto bad : {clock_type::duration::zero(), clock_type::duration(-5ms)}) {
        try {
            tw::idle_reaper reaper(io, bad, record{&r});
            BOOST_ERROR("a non-positive timeout was accepted");
        } catch (const std::invalid_argument& e) {
            BOOST_TEST(mentions(e, "timeout"));
        }
    }
    try {
        tw::idle_reaper reaper(io, 1s, record{&r}, -1ns);
        BOOST_ERROR("a negative slack was accepted");
    } catch (const std::invalid_argument& e) {
        BOOST_TEST(mentions(e, "slack"));
    }
    tcp::socket socket(io);
    BOOST_CHECK_THROW(tw::idle_reaper(socket, 0s), std::invalid_argument);
    BOOST_CHECK_THROW(tw::idle_reaper(socket, 1s, -1s), std::invalid_argument);

    tw::idle_reaper reaper(io, 1h, record{&r}, 1s);
    reaper.start();
    const auto expiry = reaper.expiry();
    try {
        reaper.set_timeout(0s);
        BOOST_ERROR("set_timeout accepted zero");
    } catch (const std::invalid_argument& e) {
        BOOST_TEST(mentions(e, "timeout"));
    }
    try {
        reaper.set_timeout(1s, -1ms);
        BOOST_ERROR("set_timeout accepted a negative slack");
    } catch (const std::invalid_argument& e) {
        BOOST_TEST(mentions(e, "slack"));
    }
    BOOST_TEST(reaper.timeout() == clock_type::duration(1h));
    BOOST_TEST(reaper.slack() == clock_type::duration(1s));
    BOOST_TEST(reaper.armed());
    BOOST_TEST((reaper.expiry() == expiry));
    BOOST_TEST(reaper.service().size() == 1u);
    reaper.set_timeout(2h, 2s);
    BOOST_TEST(reaper.timeout() == clock_type::duration(2h));
    BOOST_TEST(reaper.slack() == clock_type::duration(2s));
}

BOOST_AUTO_TEST_CASE(close_lowest_layer_closes_the_first_closable_layer) {
    closes_with_error_code a;
    tw::close_lowest_layer(a); // the error it reports is ignored
    BOOST_TEST(a.closed == 1);

    closes_without_error_code b;
    tw::close_lowest_layer(b);
    BOOST_TEST(b.closed == 1);

    layer_over<layer_over<closes_without_error_code>> c;
    tw::close_lowest_layer(c);
    BOOST_TEST(c.next.next.closed == 1);

    closable_layer d;
    tw::close_lowest_layer(d);
    BOOST_TEST(d.closed == 1);
    BOOST_TEST(d.next.closed == 0);

    layer_over<closes_with_error_code> e;
    const tw::close_stream action(e);
    action();
    action(); // closing again is harmless
    BOOST_TEST(e.next.closed == 2);
}

BOOST_AUTO_TEST_CASE(a_custom_stream_with_close_stream_on_a_context) {
    net::io_context io;
    layer_over<closes_without_error_code> stream;
    tw::idle_reaper<> reaper(io, 10ms, tw::close_stream(stream));
    reaper.start();
    io.run();
    BOOST_TEST(stream.next.closed == 1);
    BOOST_TEST(reaper.reaped());
}

BOOST_AUTO_TEST_CASE(the_default_action_closes_a_socket_and_a_beast_stream) {
    net::io_context io;
    tcp::socket socket(io);
    socket.open(tcp::v4()); // a descriptor, no connection
    tw::idle_reaper reaper(socket, 10ms);
    static_assert(std::is_same_v<decltype(reaper), tw::idle_reaper<>>);

    boost::beast::tcp_stream stream(io);
    stream.socket().open(tcp::v4());
    tw::idle_reaper<> stream_reaper(stream, 10ms, 0ms);

    reaper.start();
    stream_reaper.start();
    BOOST_TEST(socket.is_open());
    io.run();
    BOOST_TEST(!socket.is_open());
    BOOST_TEST(!stream.socket().is_open());
    BOOST_TEST(reaper.reaped());
    BOOST_TEST(stream_reaper.reaped());
}

#if defined(TIMEWHEEL_TEST_OPENSSL)
BOOST_AUTO_TEST_CASE(the_default_action_closes_ssl_streams_through_their_next_layer) {
    net::io_context io;
    net::ssl::context ssl(net::ssl::context::tls_client);
    net::ssl::stream<tcp::socket> over_socket(io, ssl);
    over_socket.next_layer().open(tcp::v4());
    net::ssl::stream<boost::beast::tcp_stream> over_stream(io, ssl);
    over_stream.next_layer().socket().open(tcp::v4());

    tw::idle_reaper first(over_socket, 10ms);
    tw::idle_reaper second(over_stream, 10ms);
    first.start();
    second.start();
    io.run();
    BOOST_TEST(!over_socket.next_layer().is_open());
    BOOST_TEST(!over_stream.next_layer().socket().is_open());
}
#endif
