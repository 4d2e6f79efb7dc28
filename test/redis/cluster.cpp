// Tests of redis::cluster against a real three-master Cluster (support/cluster_fixture.hpp):
// routing by slot (each key lands on the master that owns it, checked with redis-cli on that
// master), a pipeline split over the masters with its replies in the caller's order, the
// client-side cross-slot error, keyless and explicitly routed commands, scripts by SHA1,
// every completion token, per-operation cancellation, a seed that does not answer, and the
// node a shard channel lives on, with SSUBSCRIBE there and SPUBLISH through the cluster.

#define BOOST_TEST_MODULE cluster
#include <timewheel/redis/cluster.hpp>

#include <timewheel/redis/subscriber.hpp>

#include <test/redis/support/cluster_fixture.hpp>
#include <test/redis/support/cluster_run.hpp>

#include <boost/test/unit_test.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/deferred.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/use_future.hpp>

#include <future>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

namespace net = boost::asio;
namespace redis = timewheel::redis;
using timewheel::test::cluster_available;
using timewheel::test::cluster_fixture;
using timewheel::test::exec;
using timewheel::test::run_until;

namespace {

// One cluster for this file: none of these tests moves slots.
cluster_fixture& servers() {
    static auto const instance = std::make_unique<cluster_fixture>();
    return *instance;
}

redis::cluster_config config_for(cluster_fixture& f) {
    redis::cluster_config cfg;
    cfg.node.port = f.ports[1]; // any node is a seed
    return cfg;
}

std::string trim(std::string s) {
    while (!s.empty() && (s.back() == '\n' || s.back() == '\r'))
        s.pop_back();
    return s;
}

} // namespace

BOOST_AUTO_TEST_SUITE(cluster_client, *boost::unit_test::precondition(cluster_available{}))

BOOST_AUTO_TEST_CASE(keys_land_on_their_masters) {
    auto& f = servers();
    net::io_context io;
    redis::cluster c(io, config_for(f));

    // 60 keys over the whole slot space, in one pipeline: split over the three masters.
    redis::request req;
    std::vector<std::string> keys;
    for (int i = 0; i < 60; ++i) {
        keys.push_back("route:" + std::to_string(i));
        req.push("SET", keys.back(), "value-" + std::to_string(i));
    }
    for (auto const& k : keys)
        req.push("GET", k);
    redis::response resp;
    BOOST_TEST(!exec(io, c, req, resp));
    BOOST_TEST(c.master_count() == 3u);
    BOOST_TEST(c.stats().split == 1u);
    BOOST_TEST(c.stats().moved == 0u);
    BOOST_TEST_REQUIRE(resp.size() == 120u);
    for (std::size_t i = 0; i < keys.size(); ++i) {
        BOOST_TEST(resp[i].as_string() == "OK");
        BOOST_TEST(resp[60 + i].as_string() == "value-" + std::to_string(i)); // caller's order
    }

    // Each key is stored by the master that serves its slot: a plain GET there finds it.
    std::set<std::uint16_t> used;
    for (std::size_t i = 0; i < keys.size(); i += 7) {
        auto const owner = f.owner_port(redis::key_slot(keys[i]));
        used.insert(owner);
        BOOST_TEST(trim(f.cli(owner, {"GET", keys[i]})) == "value-" + std::to_string(i));
    }
    BOOST_TEST(used.size() == 3u);
}

BOOST_AUTO_TEST_CASE(a_seed_given_by_name_is_resolved_by_its_connection) {
    // timewheeld passes the seeds of redis+cluster:// as written: a name is resolved on every
    // connect (redis::config::host), so a seed that moves is followed; the masters come from
    // the slot map, by address.
    auto& f = servers();
    net::io_context io;
    auto cfg = config_for(f);
    cfg.node.host = "localhost";
    cfg.seeds = {{"localhost", f.ports[2]}};
    redis::cluster c(io, cfg);
    redis::request req;
    for (int i = 0; i < 30; ++i)
        req.push("SET", "named:" + std::to_string(i), "v");
    redis::response resp;
    BOOST_TEST(!exec(io, c, req, resp));
    BOOST_TEST(c.master_count() == 3u);
    BOOST_TEST_REQUIRE(resp.size() == 30u);
    BOOST_TEST(resp[29].as_string() == "OK");
}

BOOST_AUTO_TEST_CASE(array_replies_keep_their_order) {
    auto& f = servers();
    net::io_context io;
    redis::cluster c(io, config_for(f));
    redis::request req;
    for (char const* tag : {"a", "b", "c", "d", "e", "f"}) {
        std::string const t = std::string("{") + tag + "}";
        req.push("DEL", t + "z");
        req.push("ZADD", t + "z", 1, "one", 2, "two");
        req.push("ZRANGE", t + "z", 0, -1, "WITHSCORES");
        req.push("MGET", t + "x", t + "y"); // nil elements in an array
    }
    redis::response resp;
    BOOST_TEST(!exec(io, c, req, resp));
    BOOST_TEST_REQUIRE(resp.size() == 24u);
    for (std::size_t i = 0; i < 24; i += 4) {
        BOOST_TEST(resp[i + 1].as_integer() == 2);
        auto const range = resp[i + 2];
        BOOST_TEST_REQUIRE(range.size() == 4u);
        BOOST_TEST(range[0].as_string() == "one");
        BOOST_TEST(range[3].as_string() == "2");
        BOOST_TEST(resp[i + 3].size() == 2u);
        BOOST_TEST(resp[i + 3][1].is_nil());
    }
}

BOOST_AUTO_TEST_CASE(cross_slot_is_refused_before_sending) {
    auto& f = servers();
    net::io_context io;
    redis::cluster c(io, config_for(f));
    redis::request req;
    req.push("SET", "cross:sent?", "yes");
    req.push("MGET", "foo", "bar"); // slots 12182 and 5061
    redis::response resp;
    auto const ec = exec(io, c, req, resp);
    BOOST_TEST(ec == make_error_code(redis::cluster_error::cross_slot));
    BOOST_TEST(ec.message().find("hash tag") != std::string::npos);
    BOOST_TEST(resp.empty());
    auto const owner = f.owner_port(redis::key_slot("cross:sent?"));
    BOOST_TEST(trim(f.cli(owner, {"EXISTS", "cross:sent?"})) == "0"); // nothing was sent

    // With a common hash tag the same command is fine.
    redis::request tagged;
    tagged.push("MSET", "{u1}a", "1", "{u1}b", "2");
    tagged.push("MGET", "{u1}a", "{u1}b");
    BOOST_TEST(!exec(io, c, tagged, resp));
    BOOST_TEST(resp[1][1].as_string() == "2");

    // Scripts: the keys after numkeys count, the arguments after them do not.
    redis::request script;
    script.push("EVAL", "return redis.call('GET', KEYS[1])", 2, "foo", "bar");
    BOOST_TEST(exec(io, c, script, resp) == make_error_code(redis::cluster_error::cross_slot));
}

BOOST_AUTO_TEST_CASE(keyless_and_routed_commands) {
    auto& f = servers();
    net::io_context io;
    redis::cluster c(io, config_for(f));
    redis::request req;
    req.push("PING");
    req.push("SET", "routed", "x");
    req.push("TIME");
    redis::response resp;
    BOOST_TEST(!exec(io, c, req, resp));
    BOOST_TEST(resp[0].as_string() == "PONG");
    BOOST_TEST(resp[2].size() == 2u);

    // OBJECT is not in the table: sent to any master, redirected there by MOVED if needed...
    redis::request object;
    object.push("OBJECT", "ENCODING", "routed");
    for (int i = 0; i < 3; ++i) { // round-robin: at least one try hits a wrong master
        BOOST_TEST(!exec(io, c, object, resp));
        BOOST_TEST(resp[0].as_string() == "embstr");
    }
    auto const moved = c.stats().moved;
    BOOST_TEST(moved >= 1u);
    // ... and with the key given, straight to the right one.
    for (int i = 0; i < 3; ++i) {
        bool done = false;
        c.async_exec_routed("routed", object, resp, [&](boost::system::error_code ec, std::size_t) {
            BOOST_TEST(!ec);
            done = true;
        });
        BOOST_TEST_REQUIRE(run_until(io, [&] { return done; }));
        BOOST_TEST(resp[0].as_string() == "embstr");
    }
    BOOST_TEST(c.stats().moved == moved);
}

BOOST_AUTO_TEST_CASE(scripts_by_sha_on_every_master) {
    auto& f = servers();
    net::io_context io;
    redis::cluster c(io, config_for(f));
    redis::script const incr_by("return redis.call('INCRBY', KEYS[1], ARGV[1])");
    redis::request req;
    for (int i = 0; i < 12; ++i)
        req.push_script(incr_by, 1, "script:" + std::to_string(i), i);
    redis::response resp;
    // Twice: the first run loads the script on each master (NOSCRIPT, then EVAL).
    BOOST_TEST(!exec(io, c, req, resp));
    BOOST_TEST(!exec(io, c, req, resp));
    BOOST_TEST_REQUIRE(resp.size() == 12u);
    for (int i = 0; i < 12; ++i)
        BOOST_TEST(resp[static_cast<std::size_t>(i)].as_integer() == 2 * i);

    // numkeys larger than the arguments: sent as given (in a split request too), and the
    // server's error names the problem.
    redis::request bad;
    bad.push("GET", "script:0");
    bad.push_script(incr_by, 3, "script:1");
    bad.push("GET", "script:2");
    BOOST_TEST(!exec(io, c, bad, resp));
    BOOST_TEST_REQUIRE(resp.size() == 3u);
    BOOST_TEST(resp[0].as_string() == "0");
    BOOST_TEST_REQUIRE(resp[1].is_error());
    BOOST_TEST(resp[1].error_message().find("keys") != std::string_view::npos);
    BOOST_TEST(resp[2].as_string() == "4");
}

BOOST_AUTO_TEST_CASE(completion_tokens) {
    auto& f = servers();
    net::io_context io;
    redis::cluster c(io, config_for(f));
    redis::request req;
    req.push("SET", "token", "t");
    req.push("GET", "token");

    // deferred
    redis::response r1;
    bool done = false;
    c.async_exec(req, r1, net::deferred)([&](boost::system::error_code ec, std::size_t n) {
        BOOST_TEST(!ec);
        BOOST_TEST(n == 2u);
        done = true;
    });
    BOOST_TEST_REQUIRE(run_until(io, [&] { return done; }));
    BOOST_TEST(r1[1].as_string() == "t");

    // use_awaitable
    redis::response r2;
    done = false;
    net::co_spawn(
        io,
        [&]() -> net::awaitable<void> {
            auto n = co_await c.async_exec(req, r2, net::use_awaitable);
            BOOST_TEST(n == 2u);
            auto [ec] = co_await c.async_refresh(net::as_tuple(net::use_awaitable));
            BOOST_TEST(!ec);
            done = true;
        },
        [](std::exception_ptr e) {
            if (e)
                std::rethrow_exception(e);
        });
    BOOST_TEST_REQUIRE(run_until(io, [&] { return done; }));
    BOOST_TEST(r2[1].as_string() == "t");
    BOOST_TEST(c.stats().refreshes >= 2u);

    // use_future, with the io_context run by another thread
    redis::response r3;
    auto work = net::make_work_guard(io);
    io.restart();
    std::thread runner([&] { io.run(); });
    std::size_t n = 0;
    try {
        n = c.async_exec(req, r3, net::use_future).get();
    } catch (...) {
    }
    work.reset();
    // The cluster belongs to the thread that runs the io_context: close it there, after
    // which nothing keeps the io_context busy (a close() from this thread raced with it).
    net::post(io, [&c] { c.close(); });
    runner.join();
    BOOST_TEST(n == 2u);
    BOOST_TEST(r3[1].as_string() == "t");
}

BOOST_AUTO_TEST_CASE(cancellation) {
    auto& f = servers();
    net::io_context io;
    redis::cluster c(io, config_for(f));
    redis::request req;
    req.push("GET", "cancel:me");
    redis::response resp;
    net::cancellation_signal signal;
    bool done = false;
    boost::system::error_code result;
    c.async_exec(
        req, resp,
        net::bind_cancellation_slot(signal.slot(), [&](boost::system::error_code ec, std::size_t) {
            result = ec;
            done = true;
        }));
    signal.emit(net::cancellation_type::terminal); // before the map is even learnt
    BOOST_TEST_REQUIRE(run_until(io, [&] { return done; }));
    BOOST_TEST(result == net::error::operation_aborted);

    // The client is still usable.
    BOOST_TEST(!exec(io, c, req, resp));
    BOOST_TEST(resp[0].is_nil());
}

BOOST_AUTO_TEST_CASE(no_node_answers) {
    net::io_context io;
    redis::cluster_config cfg;
    cfg.node.port = 1; // nobody listens on 127.0.0.1:1
    cfg.node.connect_timeout = std::chrono::milliseconds(100);
    redis::cluster c(io, cfg);
    redis::request req;
    req.push("GET", "x");
    redis::response resp;
    BOOST_TEST(exec(io, c, req, resp) == make_error_code(redis::cluster_error::no_slot_map));
}

BOOST_AUTO_TEST_CASE(sharded_pubsub_on_the_channel_master) {
    auto& f = servers();
    net::io_context io;
    redis::cluster c(io, config_for(f));
    bool done = false;
    redis::config node;
    c.async_node_config("{news}:eu", [&](boost::system::error_code ec, redis::config cfg) {
        BOOST_TEST(!ec);
        node = std::move(cfg);
        done = true;
    });
    BOOST_TEST_REQUIRE(run_until(io, [&] { return done; }));
    BOOST_TEST(node.host == "127.0.0.1");
    BOOST_TEST(node.port == f.owner_port(redis::key_slot("news")));

    // SSUBSCRIBE there, SPUBLISH through the cluster (routed by the channel's slot).
    redis::subscriber sub(io.get_executor(), node);
    sub.ssubscribe({"{news}:eu"});
    bool got = false;
    redis::message m;
    sub.async_receive([&](boost::system::error_code ec, redis::message msg) {
        BOOST_TEST(!ec);
        m = std::move(msg);
        got = true;
    });
    redis::request pub;
    pub.push("SPUBLISH", "{news}:eu", "hello");
    redis::response resp;
    // Publish until the subscription is in place (SPUBLISH returns the receivers).
    BOOST_TEST_REQUIRE(run_until(io, [&] {
        if (got)
            return true;
        return !exec(io, c, pub, resp) && resp[0].as_integer() == 1;
    }));
    BOOST_TEST_REQUIRE(run_until(io, [&] { return got; }));
    BOOST_TEST((m.kind == redis::message::kind_type::smessage));
    BOOST_TEST(m.channel == "{news}:eu");
    BOOST_TEST(m.payload == "hello");
    BOOST_TEST(c.stats().moved == 0u);
    sub.close();
}

BOOST_AUTO_TEST_CASE(closed_client) {
    auto& f = servers();
    net::io_context io;
    redis::cluster c(io, config_for(f));
    c.close();
    redis::request req;
    req.push("PING");
    redis::response resp;
    BOOST_TEST(exec(io, c, req, resp) == make_error_code(redis::error::closed));
}

BOOST_AUTO_TEST_SUITE_END()
