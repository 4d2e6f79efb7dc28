//
// test/redis/subscriber.cpp
//
// redis::subscriber against a real redis-server: SUBSCRIBE, PSUBSCRIBE and SSUBSCRIBE
// messages through async_receive, unsubscribing, cancellation of a receive, and the
// subscriptions sent again after the server is killed and restarted.
//

#include <timewheel/redis/subscriber.hpp>

#define BOOST_TEST_MODULE redis_subscriber
#include <test/redis/support/redis_fixture.hpp>

#include <timewheel/redis/connection.hpp>

#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/test/unit_test.hpp>

#include <optional>

namespace net = boost::asio;
namespace redis = timewheel::redis;
using timewheel::test::redis_available;
using timewheel::test::redis_server;
using timewheel::test::run_for;
using timewheel::test::run_until;
using namespace std::chrono_literals;

namespace {

// Publishes `payload` on `channel` and returns the number of receivers.
std::int64_t publish(net::io_context& io, redis::connection& conn, std::string_view command,
                     std::string_view channel, std::string_view payload) {
    redis::request req;
    req.push(command, channel, payload);
    redis::response resp;
    bool done = false;
    conn.async_exec(req, resp, [&](boost::system::error_code ec, std::size_t) {
        BOOST_TEST(!ec);
        done = true;
    });
    BOOST_REQUIRE(run_until(io, [&] { return done; }));
    return resp[0].as_integer();
}

std::optional<redis::message> receive(net::io_context& io, redis::subscriber& sub) {
    std::optional<redis::message> got;
    bool done = false;
    sub.async_receive([&](boost::system::error_code ec, redis::message m) {
        if (!ec) {
            got = std::move(m);
        }
        done = true;
    });
    BOOST_REQUIRE(run_until(io, [&] { return done; }));
    return got;
}

} // namespace

BOOST_AUTO_TEST_SUITE(subscriber, *boost::unit_test::precondition(redis_available()))

BOOST_AUTO_TEST_CASE(messages_of_every_kind) {
    redis_server server;
    net::io_context io;
    redis::subscriber sub(io.get_executor(), server.config());
    redis::connection pub(io, server.config());
    sub.subscribe({"news"});
    sub.psubscribe({"alerts.*"});
    sub.ssubscribe({"shard"});
    BOOST_REQUIRE(run_until(io, [&] { return sub.confirmations() == 3; }));

    BOOST_TEST(publish(io, pub, "PUBLISH", "news", std::string("a\0b", 3)) == 1);
    auto m = receive(io, sub);
    BOOST_REQUIRE(m);
    BOOST_TEST(m->kind == redis::message::kind_type::message);
    BOOST_TEST(m->channel == "news");
    BOOST_TEST(m->payload == std::string("a\0b", 3));

    BOOST_TEST(publish(io, pub, "PUBLISH", "alerts.fire", "hot") == 1);
    m = receive(io, sub);
    BOOST_REQUIRE(m);
    BOOST_TEST(m->kind == redis::message::kind_type::pmessage);
    BOOST_TEST(m->pattern == "alerts.*");
    BOOST_TEST(m->channel == "alerts.fire");
    BOOST_TEST(m->payload == "hot");

    BOOST_TEST(publish(io, pub, "SPUBLISH", "shard", "s1") == 1);
    m = receive(io, sub);
    BOOST_REQUIRE(m);
    BOOST_TEST(m->kind == redis::message::kind_type::smessage);
    BOOST_TEST(m->channel == "shard");
    BOOST_TEST(m->payload == "s1");

    // Unsubscribed: no receiver any more.
    sub.unsubscribe({"news"});
    BOOST_REQUIRE(run_until(io, [&] { return publish(io, pub, "PUBLISH", "news", "x") == 0; }));
}

BOOST_AUTO_TEST_CASE(receive_is_cancellable) {
    redis_server server;
    net::io_context io;
    redis::subscriber sub(io.get_executor(), server.config());
    sub.subscribe({"quiet"});
    net::cancellation_signal signal;
    boost::system::error_code ec;
    bool done = false;
    sub.async_receive(net::bind_cancellation_slot(signal.slot(), [&](auto e, redis::message) {
        ec = e;
        done = true;
    }));
    run_for(io, 50ms);
    BOOST_TEST(!done);
    signal.emit(net::cancellation_type::terminal);
    BOOST_REQUIRE(run_until(io, [&] { return done; }));
    BOOST_TEST(ec == net::experimental::error::channel_cancelled);
}

BOOST_AUTO_TEST_CASE(resubscribes_after_a_reconnect) {
    redis_server server;
    net::io_context io;
    auto cfg = server.config();
    cfg.reconnect_min_delay = 20ms;
    cfg.reconnect_max_delay = 200ms;
    redis::subscriber sub(io.get_executor(), cfg);
    redis::connection pub(io, cfg);
    sub.subscribe({"jobs"});
    sub.psubscribe({"job.*"});
    BOOST_REQUIRE(run_until(io, [&] { return sub.confirmations() == 2; }));
    BOOST_TEST(publish(io, pub, "PUBLISH", "jobs", "before") == 1);
    auto m = receive(io, sub);
    BOOST_REQUIRE(m);
    BOOST_TEST(m->payload == "before");

    server.kill9();
    run_for(io, 100ms);
    server.start();
    // Subscribed again on the new connection (two more confirmations).
    BOOST_REQUIRE(run_until(io, [&] { return sub.confirmations() == 4; }));
    BOOST_TEST(sub.stats().connects == 2u);
    BOOST_TEST(publish(io, pub, "PUBLISH", "jobs", "after") == 1);
    m = receive(io, sub);
    BOOST_REQUIRE(m);
    BOOST_TEST(m->channel == "jobs");
    BOOST_TEST(m->payload == "after");
    BOOST_TEST(publish(io, pub, "PUBLISH", "job.7", "pattern after") == 1);
    m = receive(io, sub);
    BOOST_REQUIRE(m);
    BOOST_TEST(m->pattern == "job.*");
    BOOST_TEST(m->payload == "pattern after");
}

BOOST_AUTO_TEST_CASE(close_ends_the_receive) {
    redis_server server;
    net::io_context io;
    redis::subscriber sub(io.get_executor(), server.config());
    sub.subscribe({"c"});
    boost::system::error_code ec;
    bool done = false;
    sub.async_receive([&](auto e, redis::message) {
        ec = e;
        done = true;
    });
    run_for(io, 50ms);
    sub.close();
    BOOST_REQUIRE(run_until(io, [&] { return done; }));
    BOOST_TEST(ec == net::experimental::error::channel_closed);
}

BOOST_AUTO_TEST_SUITE_END()
