//
// test/support.cpp
//
// Tests of test/support/ itself: the allocation tests are only as good as the counter, the
// hang tests as the watchdog, and a replayed run as the seed it reads.
//

#define BOOST_TEST_MODULE support
#include <test/support/allocation_counter.hpp>

#include <boost/test/unit_test.hpp>

#include <test/support/seed.hpp>
#include <test/support/watchdog.hpp>

#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <new>
#include <stdexcept>
#include <string>
#include <thread>

namespace ts = timewheel::test;
using namespace std::chrono_literals;

BOOST_AUTO_TEST_CASE(the_counter_counts_every_form_of_operator_new) {
    // Explicit calls, which the compiler may not elide as it may new-expressions.
    bool aligned = false;
    const std::size_t counted = ts::count_allocations([&aligned] {
        void* p = ::operator new(24);
        void* q = ::operator new[](48);
        void* r = ::operator new (256, std::align_val_t{64});
        void* s = ::operator new(8, std::nothrow);
        void* t = ::operator new[](16, std::align_val_t{128}, std::nothrow);
        aligned = reinterpret_cast<std::uintptr_t>(r) % 64 == 0 &&
                  reinterpret_cast<std::uintptr_t>(t) % 128 == 0;
        ::operator delete(p);
        ::operator delete[](q);
        ::operator delete (r, std::align_val_t{64});
        ::operator delete(s);
        ::operator delete[](t, std::align_val_t{128});
    });
    BOOST_TEST(counted == 5u);
    BOOST_TEST(aligned);
}

BOOST_AUTO_TEST_CASE(counters_nest_reset_and_see_other_threads) {
    ts::allocation_counter outer;
    std::size_t inner_count = 0;
    {
        ts::allocation_counter inner;
        void* p = ::operator new(sizeof(int)); // explicit: no new-expression to elide
        inner_count = inner.count();
        ::operator delete(p);
    }
    std::thread([] { ::operator delete(::operator new(sizeof(long))); }).join(); // and its state
    const std::size_t outer_count = outer.count();
    outer.reset();
    const std::size_t after_reset = outer.count();
    BOOST_TEST(inner_count == 1u);
    BOOST_TEST(outer_count >= 3u); // inner's int, the thread's state, the thread's long
    BOOST_TEST(after_reset == 0u);
}

BOOST_AUTO_TEST_CASE(run_returns_when_the_io_context_has_no_work) {
    boost::asio::io_context io;
    int ran = 0;
    boost::asio::post(io, [&] { ++ran; });
    ts::run(io);
    BOOST_TEST(ran == 1);
}

BOOST_AUTO_TEST_CASE(the_watchdog_stops_a_hung_io_context) {
    boost::asio::io_context io;
    bool stopped_in_time = false;
    {
        ts::watchdog dog(io, 1s);
        // Endless work: a handler that posts itself. Without the watchdog, run() never returns.
        std::function<void()> again = [&] { boost::asio::post(io, again); };
        boost::asio::post(io, again);
        io.run();
        stopped_in_time = dog.fired();
    }
    BOOST_TEST(stopped_in_time);
}

BOOST_AUTO_TEST_CASE(the_seed_comes_from_the_environment_or_the_fallback) {
    ::unsetenv("TIMEWHEEL_SEED");
    BOOST_TEST(ts::seed_from_environment("support", 42) == 42u);
    ::setenv("TIMEWHEEL_SEED", "20261122", 1);
    BOOST_TEST(ts::seed_from_environment("support", 42) == 20261122u);
    for (const char* bad : {"12x", "-3", "0x10", "99999999999999999999999"}) {
        ::setenv("TIMEWHEEL_SEED", bad, 1);
        try {
            ts::seed_from_environment("support", 42);
            BOOST_ERROR("TIMEWHEEL_SEED=" << bad << " was accepted");
        } catch (const std::invalid_argument& e) {
            BOOST_TEST(std::string(e.what()).find(bad) != std::string::npos);
        }
    }
    ::unsetenv("TIMEWHEEL_SEED");
}
