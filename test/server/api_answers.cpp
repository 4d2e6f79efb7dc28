//
// test/server/api_answers.cpp
//
// What the API answers with, over a real redis-server: a submit's 201 (built from what was
// submitted, without reading the task back) and 200 (read back) carry the same fields as
// GET; a task the Redis store no longer keeps the callback of shows "callback": null, not
// an empty payload; /metrics shows how long the oldest due task has waited for a worker.
//
#define BOOST_TEST_MODULE server_api_answers
#include <boost/test/unit_test.hpp>

#include <test/server/support/api_service.hpp>

#include <boost/json/serialize.hpp>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <set>
#include <string>

namespace ts = timewheel::test;
namespace json = boost::json;
using namespace std::chrono_literals;

namespace {

std::set<std::string> keys(const json::object& o) {
    std::set<std::string> k;
    for (const auto& kv : o) {
        k.insert(std::string(kv.key()));
    }
    return k;
}

// "2026-11-26T00:37:24.363Z" as milliseconds since the epoch.
std::int64_t epoch_ms(const json::value& v) {
    return ts::epoch_ms(v.as_string());
}

constexpr const char* submit_body = R"({"id": "answer-1", "delay_ms": 600000,
    "callback": {"url": "http://127.0.0.1:9/hook", "headers": {"X-A": "1"}, "body": "b"},
    "retry": {"attempts": 3, "base_ms": 10, "cap_ms": 20}})";

} // namespace

BOOST_AUTO_TEST_CASE(a_created_answer_and_an_exists_answer_carry_the_fields_of_get) {
    ts::api_service svc;
    const auto created = svc.post("/v1/tasks", submit_body);
    BOOST_TEST_REQUIRE(created.status == 201u, created);
    BOOST_TEST(created.headers["Location"] == "/v1/tasks/answer-1");
    const auto got = svc.get("/v1/tasks/answer-1");
    BOOST_TEST_REQUIRE(got.status == 200u, got);
    const auto c = created.json().as_object();
    const auto g = got.json().as_object();
    BOOST_TEST((keys(c) == keys(g)), json::serialize(c) << " vs " << json::serialize(g));
    // Everything but the times is what the store holds...
    for (const auto* k : {"id", "state", "attempts", "retry", "last_error", "callback", "log"}) {
        BOOST_TEST(c.at(k) == g.at(k),
                   k << ": " << json::serialize(c.at(k)) << " vs " << json::serialize(g.at(k)));
    }
    BOOST_TEST(c.at("state").as_string() == "delayed");
    BOOST_TEST(c.at("callback").at("headers").at("X-A").as_string() == "1");
    // ... and the times are never later than the store's (taken just before the submit),
    // with the delay between creation and due time exact.
    BOOST_TEST(epoch_ms(c.at("created_at")) <= epoch_ms(g.at("created_at")));
    BOOST_TEST(epoch_ms(c.at("due_at")) <= epoch_ms(g.at("due_at")));
    BOOST_TEST(epoch_ms(c.at("due_at")) - epoch_ms(c.at("created_at")) == 600000);
    BOOST_TEST(epoch_ms(g.at("due_at")) - epoch_ms(g.at("created_at")) == 600000);
    BOOST_TEST(c.at("updated_at") == c.at("created_at"));

    // Submitted again: 200, read back from the store, the very answer GET gives, and that
    // this submit did not replace it.
    const auto exists = svc.post("/v1/tasks", submit_body);
    BOOST_TEST_REQUIRE(exists.status == 200u, exists);
    BOOST_TEST(exists.headers["Location"] == "/v1/tasks/answer-1");
    auto e = exists.json().as_object();
    BOOST_TEST(e.at("replaced") == json::value(false));
    e.erase("replaced");
    BOOST_TEST(e == got.json().as_object(), exists.body << " vs " << got.body);
}

BOOST_AUTO_TEST_CASE(an_absolute_due_time_is_answered_exactly) {
    ts::api_service svc;
    const auto created =
        svc.post("/v1/tasks", R"({"id": "abs-1", "due_at": "2099-01-02T03:04:05.678Z",
                         "callback": {"url": "http://127.0.0.1:9/hook"}})");
    BOOST_TEST_REQUIRE(created.status == 201u, created);
    BOOST_TEST(created.json().at("due_at").as_string() == "2099-01-02T03:04:05.678Z");
    BOOST_TEST(svc.get("/v1/tasks/abs-1").json().at("due_at") == created.json().at("due_at"));
}

BOOST_AUTO_TEST_CASE(a_cancelled_task_whose_callback_redis_dropped_shows_null_not_a_payload) {
    ts::api_service svc;
    BOOST_TEST_REQUIRE(svc.post("/v1/tasks", submit_body).status == 201u);
    BOOST_TEST(svc.request(ts::api_http::verb::delete_, "/v1/tasks/answer-1").status == 200u);
    const auto got = svc.get("/v1/tasks/answer-1");
    BOOST_TEST_REQUIRE(got.status == 200u, got);
    const auto task = got.json().as_object();
    BOOST_TEST(task.at("state").as_string() == "cancelled");
    BOOST_TEST(!task.contains("payload"), got.body);
    BOOST_TEST(task.at("callback").is_null(), got.body);
}

BOOST_AUTO_TEST_CASE(metrics_show_how_long_the_oldest_due_task_has_waited_with_redis) {
    // No worker: a due task waits. Every scrape reads the store (it reads at most every 5 s
    // by default).
    ts::api_service svc({.args = {"--metrics-store-interval-ms", "0"}});
    ts::check_oldest_due_age(svc);
    // The scrape's store read is timed like the API's other operations.
    const auto m = svc.get("/metrics");
    BOOST_TEST(m.body.find("timewheeld_store_round_trip_seconds_count{op=\"count_tasks\"}") !=
                   std::string::npos,
               m.body);
}
