//
// test/redis/faults.cpp
//
// redis::connection when the server dies: kill -9 in the middle of a pipeline fails every
// written request exactly once with connection_lost, the connection comes back after a
// restart on the same port, requests not yet written go out on the new connection, and
// scripts are loaded again (the restarted server has an empty script cache).
//

#include <timewheel/redis/connection.hpp>

#define BOOST_TEST_MODULE redis_faults
#include <test/redis/support/redis_fixture.hpp>

#include <boost/asio/io_context.hpp>
#include <boost/test/unit_test.hpp>

#include <vector>

namespace net = boost::asio;
namespace redis = timewheel::redis;
using timewheel::test::redis_available;
using timewheel::test::redis_server;
using timewheel::test::run_for;
using timewheel::test::run_until;
using namespace std::chrono_literals;

BOOST_AUTO_TEST_SUITE(faults, *boost::unit_test::precondition(redis_available()))

BOOST_AUTO_TEST_CASE(kill9_mid_pipeline_then_restart) {
    redis_server server;
    net::io_context io;
    auto cfg = server.config();
    cfg.reconnect_min_delay = 20ms;
    cfg.reconnect_max_delay = 200ms;
    redis::connection conn(io, cfg);
    const redis::script bump(R"(return redis.call('INCRBY', KEYS[1], ARGV[1]))");

    // Load the script on the first server.
    redis::request call;
    call.push_script(bump, 1, "s", 1);
    redis::response first;
    bool first_done = false;
    conn.async_exec(call, first, [&](boost::system::error_code ec, std::size_t) {
        BOOST_TEST(!ec);
        first_done = true;
    });
    BOOST_REQUIRE(run_until(io, [&] { return first_done; }));
    BOOST_TEST(first[0].as_integer() == 1);

    // A pipeline stuck behind DEBUG SLEEP: written, unanswered, when the server is killed.
    constexpr int count = 2000;
    redis::request sleep;
    sleep.push("DEBUG", "SLEEP", "5");
    redis::request incr;
    incr.push("INCR", "n");
    std::vector<redis::response> responses(count + 1);
    std::vector<int> completions(count + 1, 0);
    std::vector<boost::system::error_code> errors(count + 1);
    auto handler = [&](int i) {
        return [&, i](boost::system::error_code ec, std::size_t) {
            ++completions[i];
            errors[i] = ec;
        };
    };
    conn.async_exec(sleep, responses[0], handler(0));
    for (int i = 1; i <= count; ++i) {
        conn.async_exec(incr, responses[i], handler(i));
    }
    run_for(io, 200ms);
    server.kill9();
    auto all_done = [&] {
        for (int c : completions) {
            if (c == 0) {
                return false;
            }
        }
        return true;
    };
    BOOST_REQUIRE(run_until(io, all_done));
    int lost = 0;
    for (int i = 0; i <= count; ++i) {
        lost += errors[i] == redis::error::connection_lost;
    }
    BOOST_TEST(lost == count + 1);

    // Requests issued while the server is down wait for the next connection.
    redis::response while_down;
    bool down_done = false;
    boost::system::error_code down_ec;
    conn.async_exec(call, while_down, [&](boost::system::error_code ec, std::size_t) {
        down_ec = ec;
        down_done = true;
    });
    run_for(io, 300ms); // a few failed reconnection attempts, with backoff
    BOOST_TEST(!down_done);
    BOOST_TEST(conn.stats().connect_failures >= 1u);
    server.start(); // same port, empty script cache
    BOOST_REQUIRE(run_until(io, [&] { return down_done; }));
    BOOST_TEST(!down_ec);
    BOOST_TEST(while_down[0].as_integer() == 1); // the script ran (after NOSCRIPT: EVAL)
    BOOST_TEST(conn.stats().noscript_retries >= 2u);
    BOOST_TEST(conn.stats().connects == 2u);
    BOOST_TEST(conn.stats().disconnects == 1u);

    // Nothing was answered twice: run on and check the counts again.
    run_for(io, 100ms);
    bool once = true;
    for (int c : completions) {
        once = once && c == 1;
    }
    BOOST_TEST(once);
}

BOOST_AUTO_TEST_CASE(no_reconnect_fails_everything_with_closed) {
    redis_server server;
    net::io_context io;
    auto cfg = server.config();
    cfg.reconnect = false;
    redis::connection conn(io, cfg);
    redis::request sleep;
    sleep.push("DEBUG", "SLEEP", "5");
    redis::response r1, r2;
    boost::system::error_code e1, e2;
    int done = 0;
    conn.async_exec(sleep, r1, [&](auto ec, std::size_t) { e1 = ec, ++done; });
    run_for(io, 200ms);
    server.kill9();
    BOOST_REQUIRE(run_until(io, [&] { return done == 1; }));
    BOOST_TEST(e1 == redis::error::closed);
    conn.async_exec(sleep, r2, [&](auto ec, std::size_t) { e2 = ec, ++done; });
    BOOST_REQUIRE(run_until(io, [&] { return done == 2; }));
    BOOST_TEST(e2 == redis::error::closed);
    BOOST_TEST(!conn.is_connected());
}

BOOST_AUTO_TEST_CASE(destroyed_connection_completes_its_requests) {
    redis_server server;
    net::io_context io;
    redis::request sleep;
    sleep.push("DEBUG", "SLEEP", "0.3");
    redis::response resp;
    boost::system::error_code ec;
    bool done = false;
    {
        redis::connection conn(io, server.config());
        conn.async_exec(sleep, resp, [&](auto e, std::size_t) { ec = e, done = true; });
        run_for(io, 50ms);
    }
    BOOST_REQUIRE(run_until(io, [&] { return done; }));
    BOOST_TEST(ec == redis::error::closed);
}

BOOST_AUTO_TEST_SUITE_END()
