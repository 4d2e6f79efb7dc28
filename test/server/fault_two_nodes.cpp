//
// test/server/fault_two_nodes.cpp
//
// Two timewheeld processes on one Redis share the work: tasks submitted to both are
// delivered by both (each node's own metrics count the callbacks it made), every one at
// least once. Then one is killed with -9 while tasks are pending and being delivered: the
// other finishes everything that was accepted, taking back the dead node's claims once
// their lease has run out (--lease-ms, short here).
//
#define BOOST_TEST_MODULE server_fault_two_nodes
#include <boost/test/unit_test.hpp>

#include <test/server/support/service_node.hpp>

#include <chrono>
#include <set>
#include <string>
#include <vector>

namespace ts = timewheel::test;
namespace cs = timewheel::test;
using namespace std::chrono_literals;

namespace {

// Submits `count` tasks `<prefix>-<n>` through both nodes (two threads, one per node) and
// waits until all were answered; returns the accepted ids.
std::set<std::string> submit_all(ts::service_node& a, ts::service_node& b, const cs::sink& sink,
                                 const std::string& prefix, std::size_t count,
                                 std::function<int(std::size_t)> delay_ms) {
    ts::producer::options po;
    po.ports = {a.port(), b.port()};
    po.url = sink.url("/hook");
    po.prefix = prefix;
    po.delay_ms = std::move(delay_ms);
    po.limit = count;
    ts::producer p(po);
    BOOST_TEST_REQUIRE(ts::eventually([&] { return p.running() == 0; }, 60s));
    const auto refused = p.refused();
    BOOST_TEST(refused.empty(), refused.size() << " submits refused, the first: "
                                               << (refused.empty() ? "" : refused[0]));
    const auto accepted = p.accepted();
    BOOST_TEST_REQUIRE(accepted.size() == count);
    return accepted;
}

} // namespace

BOOST_AUTO_TEST_CASE(two_nodes_share_the_work_and_one_finishes_what_a_killed_one_left,
                     *boost::unit_test::precondition(ts::redis_available())) {
    ts::redis_server redis;
    cs::sink sink;
    // Answers that take a while, and few callbacks at once per node: one node alone cannot
    // keep up with the tasks as they come due, so the other's claims find work too.
    sink.respond([](const cs::recorded_request&) {
        cs::reply r;
        r.delay = 20ms;
        return r;
    });
    const std::string store = "redis://127.0.0.1:" + std::to_string(redis.port()) + "/pair";
    const std::vector<std::string> args = {"--lease-ms", "1000", "--worker-concurrency", "4"};
    ts::service_node a({.store = store, .args = args});
    ts::service_node b({.store = store, .args = args});

    // 1. The work is shared.
    const auto shared = submit_all(a, b, sink, "shared", 300,
                                   [](std::size_t n) { return static_cast<int>(n % 500); });
    BOOST_TEST_REQUIRE(
        ts::eventually([&] { return ts::count_deliveries(shared, sink).missing == 0; }, 60s),
        "never delivered, e.g. " << ts::count_deliveries(shared, sink).first_missing << "\nA:\n"
                                 << a.log() << "\nB:\n"
                                 << b.log());
    // A callback counts as fired once its run ends (a deferral is none): the last runs may
    // still be ending when the sink has seen every request.
    double fired_a = 0;
    double fired_b = 0;
    ts::eventually([&] {
        fired_a = a.metric("timewheeld_callbacks_fired_total");
        fired_b = b.metric("timewheeld_callbacks_fired_total");
        return fired_a + fired_b >= static_cast<double>(shared.size());
    });
    BOOST_TEST_MESSAGE("shared work: node A made " << fired_a << " callbacks, node B " << fired_b
                                                   << ", for " << shared.size() << " tasks");
    BOOST_TEST(fired_a >= 1);
    BOOST_TEST(fired_b >= 1);
    BOOST_TEST(fired_a + fired_b >= static_cast<double>(shared.size()));

    // 2. A dies with tasks pending (due 1 to 3 s after their submit) and some delivered.
    const auto later = submit_all(a, b, sink, "later", 300, [](std::size_t n) {
        return static_cast<int>(1000 + (n * 37) % 2000);
    });
    BOOST_TEST_REQUIRE(ts::eventually([&] {
                           return ts::count_deliveries(later, sink).missing <= later.size() - 20;
                       }),
                       a.log());
    const double before_kill_b = b.metric("timewheeld_callbacks_fired_total");
    a.kill9();
    const auto at_kill = ts::count_deliveries(later, sink);
    BOOST_TEST_MESSAGE("node A killed with " << at_kill.missing << " of " << later.size()
                                             << " tasks not yet delivered");
    BOOST_TEST_REQUIRE(at_kill.missing > 0u); // else the kill tested nothing

    const bool all =
        ts::eventually([&] { return ts::count_deliveries(later, sink).missing == 0; }, 120s);
    const auto after = ts::count_deliveries(later, sink);
    BOOST_TEST(all, after.missing << " accepted tasks never delivered, e.g. " << after.first_missing
                                  << "\nB:\n"
                                  << b.log());
    // B made the callbacks that A left.
    BOOST_TEST(ts::eventually([&] {
                   return b.metric("timewheeld_callbacks_fired_total") - before_kill_b >=
                          static_cast<double>(at_kill.missing);
               }),
               "B made fewer callbacks than A left");
    BOOST_TEST_MESSAGE("after the kill: all " << later.size() << " delivered, " << after.twice
                                              << " of them twice or more");
}
