// redis::cluster during a live reshard: `redis-cli --cluster reshard` moves slots from one
// master to another while the client runs traffic on keys in those slots (and elsewhere).
// Every INCR is acknowledged exactly once (a command answered ASK or MOVED was not executed,
// so its retry is not a double count), every multi-key read answers (TRYAGAIN during the
// migration is retried), the client follows MOVED, and at the end each key holds exactly the
// number of increments acknowledged, read with redis-cli on the key's new master. And a master
// killed whose slots another takes (as a promoted replica does): the client, whose map still
// names the dead address, finds the new owner. And WAIT, which has no key, counted on the
// master of the write before it, also after that write was redirected.

#define BOOST_TEST_MODULE cluster_reshard
#include <timewheel/redis/cluster.hpp>

#include <test/redis/support/cluster_fixture.hpp>
#include <test/redis/support/cluster_run.hpp>

#include <boost/test/unit_test.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <atomic>
#include <exception>
#include <map>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace net = boost::asio;
namespace redis = timewheel::redis;
using timewheel::test::cluster_available;
using timewheel::test::cluster_fixture;
using timewheel::test::run_until;

BOOST_AUTO_TEST_SUITE(reshard, *boost::unit_test::precondition(cluster_available{}))

BOOST_AUTO_TEST_CASE(moved_after_reshard_during_traffic) {
    cluster_fixture f;
    constexpr int moving_slots = 300;

    // The source gives up the first slots it serves (redis-cli takes them from the front).
    auto const ranges = f.slot_ranges();
    auto const source = ranges.front().first;
    auto const first = ranges.front().second.first;
    std::uint16_t target = 0;
    for (auto const& [port, range] : ranges)
        if (port != source)
            target = port;
    std::string const source_id = f.node_id(source), target_id = f.node_id(target);

    // 40 keys in the slots that move (in pairs sharing a tag, for MGET), 20 elsewhere.
    std::vector<std::string> keys;
    std::vector<std::string> tags;
    for (int n = 0; tags.size() < 20; ++n) {
        auto const tag = "t" + std::to_string(n);
        auto const slot = redis::key_slot(tag);
        if (slot >= first && slot < first + moving_slots)
            tags.push_back(tag);
    }
    for (auto const& t : tags) {
        keys.push_back("{" + t + "}a");
        keys.push_back("{" + t + "}b");
    }
    for (int n = 0; n < 20; ++n)
        keys.push_back("still:" + std::to_string(n));

    net::io_context io;
    redis::cluster_config cfg;
    cfg.node.port = f.ports[2];
    cfg.max_retries = 200; // TRYAGAIN for as long as a slot is half migrated
    cfg.retry_min_delay = std::chrono::milliseconds(5);
    cfg.retry_max_delay = std::chrono::milliseconds(100);
    redis::cluster c(io, cfg);

    std::atomic<bool> reshard_done{false};
    std::exception_ptr reshard_error;
    std::map<std::string, long long> acknowledged;
    int rounds_after = 0;
    bool traffic_done = false;
    std::string failure;

    net::co_spawn(
        io,
        [&]() -> net::awaitable<void> {
            redis::request req;
            for (auto const& k : keys)
                req.push("INCR", k);
            for (auto const& t : tags)
                req.push("MGET", "{" + t + "}a", "{" + t + "}b");
            redis::response resp;
            // Until the reshard is over, then 20 more rounds.
            while (rounds_after < 20) {
                if (reshard_done)
                    ++rounds_after;
                auto [ec, n] = co_await c.async_exec(req, resp, net::as_tuple(net::use_awaitable));
                if (ec) {
                    failure = "async_exec: " + ec.message();
                    break;
                }
                for (std::size_t i = 0; i < keys.size(); ++i) {
                    if (resp[i].is_error()) {
                        failure = std::string(resp[i].error_message());
                        break;
                    }
                    if (resp[i].as_integer() != ++acknowledged[keys[i]]) {
                        failure = "INCR " + keys[i] + " counted twice or lost";
                        break;
                    }
                }
                for (std::size_t i = keys.size(); i < resp.size() && failure.empty(); ++i)
                    if (resp[i].is_error())
                        failure = std::string(resp[i].error_message());
                if (!failure.empty())
                    break;
            }
            traffic_done = true;
        },
        [](std::exception_ptr e) {
            if (e)
                std::rethrow_exception(e);
        });

    std::thread resharder([&] {
        try {
            f.cli_args({"--cluster", "reshard", "127.0.0.1:" + std::to_string(source),
                        "--cluster-from", source_id, "--cluster-to", target_id, "--cluster-slots",
                        std::to_string(moving_slots), "--cluster-yes"});
        } catch (...) {
            reshard_error = std::current_exception();
        }
        reshard_done = true;
    });
    bool const finished = run_until(
        io, [&] { return traffic_done; }, std::chrono::seconds(120));
    resharder.join();
    BOOST_TEST_REQUIRE(finished);
    if (reshard_error)
        std::rethrow_exception(reshard_error);
    BOOST_TEST(failure.empty(), failure);

    // The slots did move, and the client was told so.
    BOOST_TEST(f.owner_port(redis::key_slot(tags.front())) == target);
    BOOST_TEST(c.stats().moved >= 1u);
    // ... and refreshed its whole map after the MOVED (at most refresh_interval later).
    BOOST_TEST_REQUIRE(run_until(io, [&] { return c.stats().refreshes >= 2u; }));
    BOOST_TEST_MESSAGE("moved " << c.stats().moved << ", ask " << c.stats().ask << ", retries "
                                << c.stats().retries << ", refreshes " << c.stats().refreshes);

    // Each key holds exactly what was acknowledged, on the master that owns it now.
    for (auto const& k : keys) {
        auto const owner = f.owner_port(redis::key_slot(k));
        auto value = f.cli(owner, {"GET", k});
        BOOST_TEST(std::stoll(value) == acknowledged[k], k);
    }
}

BOOST_AUTO_TEST_CASE(a_dead_masters_slots_are_followed_to_their_new_owner) {
    cluster_fixture f;
    auto const dead = f.ports[1];
    auto const heir = f.ports[2];
    std::string key;
    for (int n = 0; key.empty(); ++n)
        if (f.owner_port(redis::key_slot("k" + std::to_string(n))) == dead)
            key = "k" + std::to_string(n);

    net::io_context io;
    redis::cluster_config cfg;
    cfg.node.port = f.ports[0];
    cfg.node.connect_timeout = std::chrono::milliseconds(300);
    cfg.node.request_timeout = std::chrono::milliseconds(500);
    redis::cluster c(io, cfg);
    auto set = [&](std::string const& value) {
        redis::request req;
        req.push("SET", key, value);
        redis::response resp;
        auto const ec = timewheel::test::exec(io, c, req, resp);
        return !ec && resp.size() == 1 && !resp[0].is_error();
    };
    BOOST_TEST_REQUIRE(set("before")); // the map learnt: the key's slot is the dead one's

    // A promotion by hand (this cluster has no replicas): the others forget the dead master
    // and the heir takes its slots.
    std::vector<std::pair<int, int>> slots;
    for (auto const& [port, range] : f.slot_ranges())
        if (port == dead)
            slots.push_back(range);
    auto const dead_id = f.node_id(dead);
    f.kill9(dead);
    for (auto const p : {f.ports[0], heir})
        f.cli(p, {"CLUSTER", "FORGET", dead_id});
    for (auto const& [lo, hi] : slots)
        f.cli(heir, {"CLUSTER", "ADDSLOTSRANGE", std::to_string(lo), std::to_string(hi)});

    // The first SET goes to the dead address and fails; a later one reaches the heir (no MOVED
    // can come from a dead node: the connection error itself must refresh the map).
    int failed = 0;
    bool written = false;
    for (int i = 0; i < 60 && !written; ++i) {
        written = set("after");
        if (!written) {
            ++failed;
            timewheel::test::run_for(io, std::chrono::milliseconds(100));
        }
    }
    BOOST_TEST(written);
    BOOST_TEST(failed >= 1);
    auto got = f.cli(heir, {"GET", key});
    while (!got.empty() && (got.back() == '\n' || got.back() == '\r'))
        got.pop_back();
    BOOST_TEST(got == "after");
    BOOST_TEST(c.stats().refreshes >= 2u);
}

// WAIT counts the replicas of the write's own master. Only one master has a replica here, so
// a WAIT answered by any other master's connection would count 0 where 1 is due (or 1 where
// 0 is). The first write of the request goes to a master without a replica: the node the
// request's keyless commands would go to.
BOOST_AUTO_TEST_CASE(wait_follows_its_write_to_its_master_and_through_moved) {
    cluster_fixture f;
    auto const ranges = f.slot_ranges();
    auto const owner = [&](std::string const& key) {
        auto const slot = redis::key_slot(key);
        for (auto const& [port, range] : ranges)
            if (slot >= range.first && slot <= range.second)
                return port;
        throw std::runtime_error("no master serves " + key);
    };
    auto const with_replica = f.ports[2];
    f.add_replica(with_replica);
    std::vector<std::string> keys; // one per master, the one with a replica last
    for (auto const port : {f.ports[0], f.ports[1], with_replica})
        for (int n = 0;; ++n)
            if (owner("w" + std::to_string(n)) == port) {
                keys.push_back("w" + std::to_string(n));
                break;
            }
    BOOST_TEST_REQUIRE(keys.size() == 3u);

    net::io_context io;
    redis::cluster_config cfg;
    cfg.node.port = f.ports[1];
    cfg.node.request_timeout = std::chrono::seconds(60);
    redis::cluster c(io, cfg);

    // Without a replica WAIT answers 0 after its 100 ms; with one it answers 1 as soon as
    // the replica has the write (the 30 s are a bound for a loaded machine, not a wait).
    redis::request req;
    for (auto const& k : keys) {
        req.push("SET", k, "v");
        req.push("WAIT", 1, owner(k) == with_replica ? 30000 : 100);
    }
    redis::response resp;
    BOOST_TEST_REQUIRE(!timewheel::test::exec(io, c, req, resp));
    BOOST_TEST(c.stats().split == 1u);
    BOOST_TEST_REQUIRE(resp.size() == 6u);
    for (std::size_t i = 0; i < keys.size(); ++i) {
        BOOST_TEST(resp[2 * i].as_string() == "OK");
        BOOST_TEST_REQUIRE(resp[2 * i + 1].is_integer(), keys[i]);
        BOOST_TEST(resp[2 * i + 1].as_integer() == (owner(keys[i]) == with_replica ? 1 : 0),
                   keys[i]);
    }

    // A slot moved away from the master with the replica, which the client's map does not
    // know: the SET is answered MOVED there, and its WAIT (which that master answers 1) must
    // be sent again after the SET on the new owner, which has no replica: 0.
    std::string moving;
    for (int n = 0; moving.empty(); ++n)
        if (owner("{moving}" + std::to_string(n)) == with_replica)
            moving = "{moving}" + std::to_string(n);
    auto const slot = std::to_string(redis::key_slot(moving));
    auto const target = f.ports[0];
    auto const target_id = f.node_id(target);
    BOOST_TEST_REQUIRE(f.cli(with_replica, {"CLUSTER", "COUNTKEYSINSLOT", slot}).find('0') == 0u);
    f.cli(target, {"CLUSTER", "SETSLOT", slot, "NODE", target_id});
    f.cli(with_replica, {"CLUSTER", "SETSLOT", slot, "NODE", target_id});
    f.cli(f.ports[1], {"CLUSTER", "SETSLOT", slot, "NODE", target_id});
    f.wait_until_stable();

    auto const moved = c.stats().moved;
    redis::request write;
    write.push("SET", moving, "moved");
    write.push("WAIT", 1, 100);
    BOOST_TEST_REQUIRE(!timewheel::test::exec(io, c, write, resp));
    BOOST_TEST(c.stats().moved == moved + 1);
    BOOST_TEST_REQUIRE(resp.size() == 2u);
    BOOST_TEST(resp[0].as_string() == "OK");
    BOOST_TEST_REQUIRE(resp[1].is_integer());
    BOOST_TEST(resp[1].as_integer() == 0); // the new owner's count, not the old one's
    auto got = f.cli(target, {"GET", moving});
    while (!got.empty() && (got.back() == '\n' || got.back() == '\r'))
        got.pop_back();
    BOOST_TEST(got == "moved");
}

BOOST_AUTO_TEST_SUITE_END()
