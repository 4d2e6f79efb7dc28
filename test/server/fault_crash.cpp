//
// test/server/fault_crash.cpp
//
// kill -9 of timewheeld under load, then a restart on the same store: every task whose
// submit was answered 201 or 200 reaches the sink at least once. Black-box: the timewheeld
// binary as a child process, with the SQLite store (a file) and with the Redis store (a
// redis-server of the test's own), a producer submitting without pause, tasks coming due
// and being delivered when the process dies. The restarted node takes back the dead one's
// claims once their lease has run out (--lease-ms, short here). The duplicates (a callback
// made whose success was not yet recorded) are reported, not judged: delivery is at least
// once. And a node killed during a task's last attempt: the task dies when its lease runs
// out, and its failure notice, stored before that attempt's call, is still made.
//
#define BOOST_TEST_MODULE server_fault_crash
#include <boost/test/unit_test.hpp>

#include <test/server/support/service_node.hpp>

#include <chrono>
#include <set>
#include <string>

namespace ts = timewheel::test;
namespace cs = timewheel::test;
using namespace std::chrono_literals;

namespace {

void crash_and_recover(const std::string& store) {
    cs::sink sink; // answers 200
    ts::service_node node({.store = store, .args = {"--lease-ms", "1000"}});

    ts::producer::options po;
    po.ports = {node.port()};
    po.url = sink.url("/hook");
    po.prefix = "crash";
    // Due 0.2 to 1.2 s after their submit: when the process dies, some tasks have been
    // delivered, some are being delivered, some are claimed and waiting, some not yet.
    po.delay_ms = [](std::size_t n) { return static_cast<int>(200 + (n * 37) % 1000); };
    std::set<std::string> accepted;
    std::vector<std::string> refused;
    {
        ts::producer p(po);
        BOOST_TEST_REQUIRE(ts::eventually([&] {
                               return p.accepted_count() >= 300 && sink.requests().size() >= 30;
                           }),
                           "accepted " << p.accepted_count() << ", delivered "
                                       << sink.requests().size() << "\n"
                                       << node.log());
        node.kill9();
        p.stop();
        accepted = p.accepted();
        refused = p.refused();
    }
    BOOST_TEST(refused.empty(), refused.size() << " submits refused, the first: "
                                               << (refused.empty() ? "" : refused[0]));
    const auto at_kill = ts::count_deliveries(accepted, sink);
    BOOST_TEST_MESSAGE(store << ": killed with " << accepted.size() << " tasks accepted, "
                             << at_kill.missing << " of them not yet delivered");
    // Otherwise the crash would have tested nothing.
    BOOST_TEST_REQUIRE(at_kill.missing > 0u);

    node.start();
    const bool all =
        ts::eventually([&] { return ts::count_deliveries(accepted, sink).missing == 0; }, 120s);
    const auto after = ts::count_deliveries(accepted, sink);
    BOOST_TEST(all, after.missing << " of " << accepted.size()
                                  << " accepted tasks never delivered, e.g. " << after.first_missing
                                  << "\n"
                                  << node.log());
    BOOST_TEST_MESSAGE(store << ": " << accepted.size() << " accepted, all delivered, "
                             << after.twice << " of them twice or more");

    // The restarted node serves as before: a task submitted now arrives too.
    const auto created = node.post("/v1/tasks", ts::task_json("after-restart", sink.url()));
    BOOST_TEST_REQUIRE(created.status == 201u, created);
    BOOST_TEST(ts::eventually([&] { return ts::deliveries(sink).contains("after-restart"); }),
               node.log());
}

} // namespace

BOOST_AUTO_TEST_CASE(kill_9_under_load_with_the_sqlite_store_loses_no_accepted_task) {
    const ts::temp_dir dir("timewheeld-crash");
    crash_and_recover(ts::sqlite_store_url(dir));
}

BOOST_AUTO_TEST_CASE(kill_9_under_load_with_the_redis_store_loses_no_accepted_task,
                     *boost::unit_test::precondition(ts::redis_available())) {
    ts::redis_server redis;
    crash_and_recover("redis://127.0.0.1:" + std::to_string(redis.port()) + "/crash");
}

// The notice of a last attempt is stored before its call: killed during the call, the node
// reports nothing; the restarted node's claim finds the lease run out with no attempt left
// (dead), and the notice posts that end.
BOOST_AUTO_TEST_CASE(kill_9_during_a_last_attempt_still_sends_its_failure_notice) {
    const ts::temp_dir dir("timewheeld-crash-notice");
    cs::sink sink;
    sink.respond([](const cs::recorded_request& r) {
        cs::reply rep;
        if (r.target == "/hook") {
            rep.act = cs::reply::action::hang;
        }
        return rep;
    });
    ts::service_node node({.store = ts::sqlite_store_url(dir), .args = {"--lease-ms", "1000"}});
    const auto created = node.post(
        "/v1/tasks",
        R"({"id": "last-1", "delay_ms": 0, "retry": {"attempts": 1}, "callback": {"url": )" +
            ts::json_quote(sink.url("/hook")) + R"(, "on_failure": {"url": )" +
            ts::json_quote(sink.url("/failed")) + "}}}");
    BOOST_TEST_REQUIRE(created.status == 201u, created);
    BOOST_TEST_REQUIRE(ts::eventually([&] { return !sink.requests().empty(); }), node.log());
    node.kill9();
    BOOST_TEST(sink.requests().size() == 1u); // the call, and no notice yet
    node.start();
    const auto failed = [&] {
        std::vector<cs::recorded_request> out;
        for (const auto& r : sink.requests()) {
            if (r.target == "/failed") {
                out.push_back(r);
            }
        }
        return out;
    };
    BOOST_TEST_REQUIRE(ts::eventually([&] { return !failed().empty(); }), node.log());
    const auto notices = failed();
    BOOST_TEST_REQUIRE(notices.size() == 1u);
    const auto body = boost::json::parse(notices[0].body);
    BOOST_TEST(body.at("task_id") == "last-1", notices[0].body);
    BOOST_TEST(body.at("state") == "dead", notices[0].body);
    const auto& log = body.at("log").as_array();
    BOOST_TEST_REQUIRE(log.size() == 1u, notices[0].body);
    BOOST_TEST(log[0].at("outcome") == "lease_expired", notices[0].body);
    // The hook was called once: the task did not run again.
    BOOST_TEST(sink.requests().size() == 2u);
}
