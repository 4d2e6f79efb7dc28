// redis::cluster during a slot migration done by hand (CLUSTER SETSLOT ... MIGRATING /
// IMPORTING, then MIGRATE of one key): a key that has moved is read through ASK (ASKING and
// the command on the importing master, once, without changing the map), a key still on the
// source is read there, a multi-key read over both gets TRYAGAIN, retried with backoff up to
// the limit, then left as the server's error; a request waiting in that backoff can be
// cancelled; once the migration is finished the client follows MOVED.

#define BOOST_TEST_MODULE cluster_ask
#include <timewheel/redis/cluster.hpp>

#include <test/redis/support/cluster_fixture.hpp>
#include <test/redis/support/cluster_run.hpp>

#include <boost/test/unit_test.hpp>

#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/io_context.hpp>

#include <string>

namespace net = boost::asio;
namespace redis = timewheel::redis;
using timewheel::test::cluster_available;
using timewheel::test::cluster_fixture;
using timewheel::test::exec;
using timewheel::test::run_until;

BOOST_AUTO_TEST_SUITE(ask, *boost::unit_test::precondition(cluster_available{}))

BOOST_AUTO_TEST_CASE(ask_during_migration_then_moved) {
    cluster_fixture f;
    auto const slot = redis::key_slot("ask");
    auto const source = f.owner_port(slot);
    std::uint16_t target = 0;
    for (auto p : f.ports)
        if (p != source)
            target = p;
    std::string const source_id = f.node_id(source), target_id = f.node_id(target);
    std::string const s = std::to_string(slot);

    net::io_context io;
    redis::cluster_config cfg;
    cfg.node.port = f.ports[0];
    cfg.max_retries = 3;
    cfg.retry_min_delay = std::chrono::milliseconds(1);
    redis::cluster c(io, cfg);

    redis::request setup;
    setup.push("SET", "{ask}1", "one");
    setup.push("SET", "{ask}2", "two");
    redis::response resp;
    BOOST_TEST_REQUIRE(!exec(io, c, setup, resp));

    // Start moving the slot, and move one of its two keys.
    f.cli(target, {"CLUSTER", "SETSLOT", s, "IMPORTING", source_id});
    f.cli(source, {"CLUSTER", "SETSLOT", s, "MIGRATING", target_id});
    f.cli(source, {"MIGRATE", "127.0.0.1", std::to_string(target), "{ask}1", "0", "5000"});

    redis::request get1;
    get1.push("GET", "{ask}1");
    BOOST_TEST_REQUIRE(!exec(io, c, get1, resp));
    BOOST_TEST(resp[0].as_string() == "one"); // served by the target, after ASK
    BOOST_TEST(c.stats().ask == 1u);

    redis::request get2;
    get2.push("GET", "{ask}2");
    BOOST_TEST_REQUIRE(!exec(io, c, get2, resp));
    BOOST_TEST(resp[0].as_string() == "two"); // still on the source: no redirection
    BOOST_TEST(c.stats().ask == 1u);

    // ASK changed nothing in the map: the next read is asked again.
    BOOST_TEST_REQUIRE(!exec(io, c, get1, resp));
    BOOST_TEST(resp[0].as_string() == "one");
    BOOST_TEST(c.stats().ask == 2u);

    // A new key of a migrating slot is created on the target, through ASK.
    redis::request set3;
    set3.push("SET", "{ask}3", "three");
    BOOST_TEST_REQUIRE(!exec(io, c, set3, resp));
    BOOST_TEST(c.stats().ask == 3u);
    BOOST_TEST(std::stoi(f.cli(target, {"CLUSTER", "COUNTKEYSINSLOT", s})) == 2); // 1 and 3

    // Keys on both sides: TRYAGAIN, retried max_retries times, then the server's error.
    redis::request both;
    both.push("MGET", "{ask}1", "{ask}2");
    both.push("GET", "{ask}2");
    BOOST_TEST_REQUIRE(!exec(io, c, both, resp));
    BOOST_TEST_REQUIRE(resp[0].is_error());
    BOOST_TEST(resp[0].error_message().starts_with("TRYAGAIN"));
    BOOST_TEST(resp[1].as_string() == "two"); // the other command of the request is fine
    BOOST_TEST(c.stats().retries == 3u);

    // A request waiting out the TRYAGAIN backoff can be cancelled.
    {
        redis::cluster_config slow = cfg;
        slow.retry_min_delay = std::chrono::seconds(30);
        redis::cluster waiting(io, slow);
        net::cancellation_signal signal;
        bool done = false;
        boost::system::error_code result;
        redis::response r;
        waiting.async_exec(both, r,
                           net::bind_cancellation_slot(
                               signal.slot(), [&](boost::system::error_code ec, std::size_t) {
                                   result = ec;
                                   done = true;
                               }));
        BOOST_TEST_REQUIRE(run_until(io, [&] { return waiting.stats().retries == 1u; }));
        signal.emit(net::cancellation_type::terminal);
        BOOST_TEST_REQUIRE(run_until(io, [&] { return done; }));
        BOOST_TEST(result == net::error::operation_aborted);
    }

    // Finish the migration: the slot now belongs to the target everywhere.
    f.cli(source, {"MIGRATE", "127.0.0.1", std::to_string(target), "{ask}2", "0", "5000"});
    f.cli(target, {"CLUSTER", "SETSLOT", s, "NODE", target_id});
    f.cli(source, {"CLUSTER", "SETSLOT", s, "NODE", target_id});
    for (auto p : f.ports)
        if (p != source && p != target)
            f.cli(p, {"CLUSTER", "SETSLOT", s, "NODE", target_id});
    f.wait_until_stable();

    auto const moved = c.stats().moved;
    redis::request all;
    all.push("MGET", "{ask}1", "{ask}2", "{ask}3");
    BOOST_TEST_REQUIRE(!exec(io, c, all, resp));
    BOOST_TEST(resp[0][0].as_string() == "one");
    BOOST_TEST(resp[0][1].as_string() == "two");
    BOOST_TEST(resp[0][2].as_string() == "three");
    BOOST_TEST(c.stats().moved == moved + 1);
    // The map learnt the move: no more redirections.
    BOOST_TEST_REQUIRE(!exec(io, c, all, resp));
    BOOST_TEST(c.stats().moved == moved + 1);
}

BOOST_AUTO_TEST_SUITE_END()
