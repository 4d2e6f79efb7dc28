//
// test/server/hostile_deferrals.cpp
//
// Receivers that push back, against a real timewheeld (SQLite in a temporary directory, or
// two nodes on one Redis) and real receivers on 127.0.0.1 (support/sink.hpp):
//
//   - a 429 with Retry-After backs the whole origin off; the other tasks for it that come
//     due meanwhile are deferred, not charged: a task allowed one attempt is still
//     delivered, and every receiver sees its attempts numbered 1, 2, 3... with no gap;
//   - callbacks that answer 202 and never report do not take the callback slots: other due
//     tasks are still called (up to --max-awaiting-results; beyond, the waits keep a slot);
//   - an attempt waiting for its result whose lease is lost (the node froze, another node
//     took the task over) ends: a result reported for it afterwards is not taken (404).
//
#define BOOST_TEST_MODULE server_hostile_deferrals
#include <boost/test/unit_test.hpp>

#include <test/server/support/service_node.hpp>

#include <map>
#include <string>
#include <vector>

namespace ts = timewheel::test;
namespace cs = timewheel::test;
using namespace std::chrono_literals;

namespace {

// The Timewheel-Attempt of every request the sink received for task `id`, in order.
std::vector<std::string> attempts_seen(const cs::sink& sink, const std::string& id) {
    std::vector<std::string> out;
    for (const auto& r : sink.requests()) {
        if (r.header("Idempotency-Key") == id) {
            out.push_back(r.header("Timewheel-Attempt").value_or("?"));
        }
    }
    return out;
}

std::size_t requests_to(const cs::sink& sink, const std::string& target) {
    std::size_t n = 0;
    for (const auto& r : sink.requests()) {
        n += r.target == target;
    }
    return n;
}

cs::reply status(unsigned s, std::vector<std::pair<std::string, std::string>> headers = {}) {
    cs::reply r;
    r.status = s;
    r.headers = std::move(headers);
    return r;
}

std::string task_state(ts::service_node& node, const std::string& id) {
    return node.state(id);
}

} // namespace

// Item (a) and (b): task A's receiver answers 429 (Retry-After: 3) once. Tasks that come due
// for the same origin during the back-off send nothing and are deferred: B, allowed one
// attempt, ends finished, not dead; C's first request is attempt 1; F, answering 500, 500,
// then 200, sees attempts 1, 2, 3.
BOOST_AUTO_TEST_CASE(a_429_back_off_defers_the_origins_other_tasks_without_charging_them) {
    ts::temp_dir dir("hostile-deferrals");
    cs::sink sink;
    std::map<std::string, int> seen; // by target, under the sink's lock
    sink.respond([&](const cs::recorded_request& r) {
        const int n = ++seen[r.target];
        if (r.target == "/a") {
            return n == 1 ? status(429, {{"Retry-After", "3"}}) : status(200);
        }
        if (r.target == "/flaky") {
            return n <= 2 ? status(500) : status(200);
        }
        return status(200);
    });
    ts::service_node node({.store = ts::sqlite_store_url(dir)});

    auto submit = [&](const std::string& id, const std::string& path, const std::string& retry) {
        const auto r = node.post("/v1/tasks", ts::task_json(id, sink.url(path), 0, retry));
        BOOST_TEST_REQUIRE(r.status == 201u, r);
    };
    submit("A", "/a", R"({"attempts": 5, "base_ms": 50, "cap_ms": 100})");
    // A's 429 has been read (its retry recorded): the origin backs off for 3 s.
    BOOST_TEST_REQUIRE(ts::eventually([&] {
        const auto a = node.task("A");
        return a.at("state").as_string() == "delayed" && a.at("attempts").as_int64() == 1;
    }));
    BOOST_TEST_REQUIRE(requests_to(sink, "/a") == 1u);
    // These come due now, during the back-off.
    submit("B", "/b", R"({"attempts": 1})");
    submit("C", "/c", R"({"attempts": 5, "base_ms": 50, "cap_ms": 100})");
    submit("F", "/flaky", R"({"attempts": 5, "base_ms": 50, "cap_ms": 100})");

    BOOST_TEST_REQUIRE(ts::eventually([&] {
        for (const char* id : {"A", "B", "C", "F"}) {
            const auto s = task_state(node, id);
            if (s != "finished" && s != "dead") {
                return false;
            }
        }
        return true;
    }));
    // Deferrals did happen (B, C and F came due inside the back-off)...
    BOOST_TEST(node.metric("timewheeld_callbacks_deferred_total") > 0);
    // ... and none was charged.
    BOOST_TEST(task_state(node, "B") == "finished");
    BOOST_TEST(task_state(node, "C") == "finished");
    BOOST_TEST(task_state(node, "F") == "finished");
    BOOST_TEST(task_state(node, "A") == "finished");
    BOOST_TEST(attempts_seen(sink, "B") == std::vector<std::string>({"1"}),
               "B's attempts as the receiver saw them");
    BOOST_TEST(attempts_seen(sink, "C") == std::vector<std::string>({"1"}),
               "C's attempts as the receiver saw them");
    BOOST_TEST(attempts_seen(sink, "F") == std::vector<std::string>({"1", "2", "3"}),
               "F's attempts as the receiver saw them");
    BOOST_TEST(attempts_seen(sink, "A") == std::vector<std::string>({"1", "2"}),
               "A's attempts as the receiver saw them");
    BOOST_TEST(node.task("B").at("attempts").as_int64() == 1);
    BOOST_TEST(node.task("F").at("attempts").as_int64() == 3);
}

// Item (c): 16 callbacks answer 202 and never report, with 4 callback slots: the waits take
// no slot, and the tasks due after them are still called.
BOOST_AUTO_TEST_CASE(callbacks_waiting_for_their_result_do_not_take_the_slots) {
    ts::temp_dir dir("hostile-deferrals");
    cs::sink sink;
    sink.respond([&](const cs::recorded_request& r) {
        return r.target == "/async" ? status(202) : status(200);
    });
    ts::service_node node(
        {.store = ts::sqlite_store_url(dir),
         .args = {"--worker-concurrency", "4", "--result-deadline-ms", "600000"}});
    for (int i = 0; i < 16; ++i) {
        const auto r = node.post(
            "/v1/tasks", ts::task_json("async-" + std::to_string(i), sink.url("/async"), 0));
        BOOST_TEST_REQUIRE(r.status == 201u, r);
    }
    BOOST_TEST_REQUIRE(
        ts::eventually([&] { return node.metric("timewheeld_callbacks_awaiting_result") == 16; }));
    for (int i = 0; i < 8; ++i) {
        const auto r =
            node.post("/v1/tasks", ts::task_json("later-" + std::to_string(i), sink.url("/ok"), 0));
        BOOST_TEST_REQUIRE(r.status == 201u, r);
    }
    BOOST_TEST(ts::eventually([&] { return requests_to(sink, "/ok") == 8u; }),
               "the tasks due after the 202s were called");
    BOOST_TEST(ts::eventually([&] { return task_state(node, "later-7") == "finished"; }));
    BOOST_TEST(node.state("async-0") == "running");
}

// Beyond --max-awaiting-results, a waiting attempt keeps its slot: with 2 and 4 slots, six
// attempts wait (two without a slot, four in theirs) and no seventh callback is made.
BOOST_AUTO_TEST_CASE(beyond_the_bound_waiting_attempts_keep_their_slots) {
    ts::temp_dir dir("hostile-deferrals");
    cs::sink sink;
    sink.respond([&](const cs::recorded_request&) { return status(202); });
    ts::service_node node({.store = ts::sqlite_store_url(dir),
                           .args = {"--worker-concurrency", "4", "--max-awaiting-results", "2",
                                    "--result-deadline-ms", "600000"}});
    for (int i = 0; i < 10; ++i) {
        const auto r =
            node.post("/v1/tasks", ts::task_json("async-" + std::to_string(i), sink.url("/async")));
        BOOST_TEST_REQUIRE(r.status == 201u, r);
    }
    BOOST_TEST_REQUIRE(
        ts::eventually([&] { return node.metric("timewheeld_callbacks_awaiting_result") == 6; }));
    std::this_thread::sleep_for(1s); // (a seventh call would have been made by now)
    BOOST_TEST(node.metric("timewheeld_callbacks_awaiting_result") == 6);
    BOOST_TEST(sink.requests().size() == 6u);
}

// Item (d): node A's attempt waits for its result; A freezes (SIGSTOP) past its lease, node B
// takes the task over and runs it to the end. When A runs again, its renewal finds the lease
// lost and the waiting attempt ends: a result reported for it is not taken.
BOOST_AUTO_TEST_CASE(a_result_for_an_attempt_whose_lease_was_lost_is_not_taken,
                     *boost::unit_test::precondition(ts::redis_available())) {
    ts::redis_server redis;
    cs::sink sink;
    sink.respond([&](const cs::recorded_request& r) {
        // The first attempt promises a result; the one that takes over succeeds.
        return r.header("Timewheel-Attempt") == "1" ? status(202) : status(200);
    });
    const std::string store = "redis://127.0.0.1:" + std::to_string(redis.port()) + "/lost";
    const std::vector<std::string> args = {"--lease-ms", "1500", "--result-deadline-ms", "600000"};
    ts::service_node a({.store = store, .args = args});
    const auto created = a.post("/v1/tasks", ts::task_json("T", sink.url("/hook")));
    BOOST_TEST_REQUIRE(created.status == 201u, created);
    BOOST_TEST_REQUIRE(
        ts::eventually([&] { return a.metric("timewheeld_callbacks_awaiting_result") == 1; }));

    ts::service_node b({.store = store, .args = args});
    a.process().stop(); // SIGSTOP: its lease runs out
    BOOST_TEST_REQUIRE(ts::eventually([&] { return b.state("T") == "finished"; }));
    a.process().cont();
    BOOST_TEST(attempts_seen(sink, "T") == std::vector<std::string>({"1", "2"}));

    // A's renewal comes back stale: its waiting attempt ends.
    BOOST_TEST(
        ts::eventually([&] { return a.metric("timewheeld_callbacks_awaiting_result") == 0; }, 20s));
    const auto late = a.post("/v1/tasks/T/result", R"({"attempt": 1, "outcome": "success"})");
    BOOST_TEST(late.status == 404u, late);
    BOOST_TEST(late.error_code() == "no_pending_attempt");
    BOOST_TEST(b.state("T") == "finished");
}
