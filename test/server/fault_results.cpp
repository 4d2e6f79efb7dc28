//
// test/server/fault_results.cpp
//
// A result reported to a node that does not hold the waiting attempt: two timewheeld
// processes on one Redis, a callback that answers 202, and POST /v1/tasks/{id}/result sent
// to the other node. The report travels over Redis pub/sub to the holder (docs/server.md,
// "Report an asynchronous result"), the answer says what the holder did with it (200, or
// 409 for another attempt, 404 when no node waits), and the task ends with the reported
// outcome, not with the result deadline's retry.
//
#define BOOST_TEST_MODULE server_fault_results
#include <boost/test/unit_test.hpp>

#include <test/server/support/service_node.hpp>

#include <string>
#include <vector>

namespace ts = timewheel::test;
namespace cs = timewheel::test;
namespace json = boost::json;
using namespace std::chrono_literals;

namespace {

struct two_nodes {
    explicit two_nodes(std::vector<std::string> b_args = {}) {
        sink.respond([](const cs::recorded_request&) {
            cs::reply r;
            r.status = 202;
            return r;
        });
        b_args.insert(b_args.end(), args.begin(), args.end());
        a.emplace(ts::service_node::options{.store = store(), .args = args});
        b.emplace(ts::service_node::options{.store = store(), .args = b_args});
    }
    std::string store() const {
        return "redis://127.0.0.1:" + std::to_string(redis.port()) + "/results";
    }
    // The attempt waits far longer than the test: only the report can end it.
    const std::vector<std::string> args = {"--result-deadline-ms", "600000"};
    ts::redis_server redis;
    cs::sink sink;
    std::optional<ts::service_node> a;
    std::optional<ts::service_node> b;
};

std::string report(int attempt, const std::string& outcome, const std::string& error = {}) {
    std::string body =
        R"({"attempt": )" + std::to_string(attempt) + R"(, "outcome": ")" + outcome + "\"";
    if (!error.empty()) {
        body += R"(, "error": )" + ts::json_quote(error);
    }
    return body + "}";
}

} // namespace

BOOST_AUTO_TEST_CASE(a_result_posted_to_the_node_without_the_attempt_reaches_the_holder,
                     *boost::unit_test::precondition(ts::redis_available())) {
    two_nodes n;
    const auto created = n.a->post("/v1/tasks", ts::task_json("async-1", n.sink.url()));
    BOOST_TEST_REQUIRE(created.status == 201u, created);
    BOOST_TEST_REQUIRE(ts::eventually([&] { return n.sink.requests().size() == 1u; }));

    // Either node may have claimed it: the one whose callback is in flight holds it.
    const auto in_flight = [](ts::service_node& s) {
        return s.metric("timewheeld_callbacks_in_flight");
    };
    BOOST_TEST_REQUIRE(ts::eventually([&] { return in_flight(*n.a) + in_flight(*n.b) == 1; }));
    const bool a_holds = in_flight(*n.a) == 1;
    auto& holder = a_holds ? *n.a : *n.b;
    auto& other = a_holds ? *n.b : *n.a;
    BOOST_TEST_MESSAGE("node " << (a_holds ? "A" : "B") << " holds the attempt");
    BOOST_TEST(holder.state("async-1") == "running");

    // Another attempt than the one waiting: refused by the holder, through the other node.
    const auto wrong = other.post("/v1/tasks/async-1/result", report(2, "failure"));
    BOOST_TEST(wrong.status == 409u, wrong);
    BOOST_TEST(wrong.error_code() == "wrong_attempt");

    const auto ok = other.post("/v1/tasks/async-1/result", report(1, "failure", "printer jammed"));
    BOOST_TEST_REQUIRE(ok.status == 200u, ok);
    BOOST_TEST(ok.json().at("accepted").as_bool());

    BOOST_TEST_REQUIRE(ts::eventually([&] { return other.state("async-1") == "dead"; }),
                       holder.log());
    const auto task = other.task("async-1");
    const auto& log = task.at("log").as_array();
    BOOST_TEST_REQUIRE(log.size() == 1u, json::serialize(task));
    BOOST_TEST(log[0].at("outcome").as_string() == "failure");
    BOOST_TEST(std::string(log[0].at("error").as_string()).find("printer jammed") !=
                   std::string::npos,
               json::serialize(task));
    BOOST_TEST(n.sink.requests().size() == 1u);

    // Nothing waits on any node now: both answer 404 once every node has said so.
    for (auto* s : {&holder, &other}) {
        const auto late = s->post("/v1/tasks/async-1/result", report(1, "success"));
        BOOST_TEST(late.status == 404u, late);
        BOOST_TEST(late.error_code() == "no_pending_attempt");
    }
}

BOOST_AUTO_TEST_CASE(a_node_without_a_worker_forwards_the_result_too,
                     *boost::unit_test::precondition(ts::redis_available())) {
    // B serves the API only: A holds every attempt, and every report sent to B is forwarded.
    two_nodes n({"--no-worker"});
    const auto created = n.b->post("/v1/tasks", ts::task_json("async-2", n.sink.url()));
    BOOST_TEST_REQUIRE(created.status == 201u, created);
    BOOST_TEST_REQUIRE(ts::eventually([&] { return n.sink.requests().size() == 1u; }), n.a->log());
    BOOST_TEST_REQUIRE(ts::eventually([&] { return n.b->state("async-2") == "running"; }));

    const auto ok = n.b->post("/v1/tasks/async-2/result", report(1, "success"));
    BOOST_TEST_REQUIRE(ok.status == 200u, ok);
    BOOST_TEST_REQUIRE(ts::eventually([&] { return n.b->state("async-2") == "finished"; }),
                       n.a->log());
    const auto task = n.b->task("async-2");
    const auto& log = task.at("log").as_array();
    BOOST_TEST_REQUIRE(log.size() == 1u, json::serialize(task));
    BOOST_TEST(log[0].at("outcome").as_string() == "success");
}
