//
// test/server/dispatch_callbacks.cpp
//
// timewheeld fires callbacks: black-box over HTTP on 127.0.0.1, a real redis-server (or a
// SQLite file), the timewheeld binary as a child process with its worker, and a recording
// sink on a free port. A task arrives at the sink no earlier than its due time, with its id
// as Idempotency-Key; a 500 is retried, a 400 kills the task, a 202 waits for the result
// reported through POST /v1/tasks/{id}/result (or for the result deadline).
//
#define BOOST_TEST_MODULE server_dispatch_callbacks
#include <boost/test/unit_test.hpp>

#include <test/server/support/api_service.hpp>
#include <test/server/support/service_node.hpp>
#include <test/server/support/sink.hpp>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <functional>
#include <string>
#include <thread>
#include <vector>

namespace ts = timewheel::test;
namespace cs = timewheel::test;
namespace json = boost::json;
using namespace std::chrono_literals;

namespace {

using ts::epoch_ms;
using ts::eventually;
using ts::now_ms;

cs::reply status(unsigned s) {
    cs::reply r;
    r.status = s;
    return r;
}

// A service with its worker, allowed to call the sink on loopback.
ts::api_service::options with_worker(std::vector<std::string> extra = {}) {
    ts::api_service::options o;
    o.worker = true;
    o.queue = "dispatch";
    o.args = {"--callback-allow-loopback"};
    o.args.insert(o.args.end(), extra.begin(), extra.end());
    return o;
}

std::string task_body(const std::string& id, const cs::sink& sink,
                      const std::string& retry = R"({"attempts": 5, "base_ms": 50,
                                                     "cap_ms": 100})",
                      int delay_ms = 0) {
    return ts::task_json(id, sink.url("/hook"), delay_ms, retry);
}

json::object task_of(ts::api_service& svc, const std::string& id) {
    const auto r = svc.get("/v1/tasks/" + id);
    BOOST_TEST_REQUIRE(r.status == 200u, r);
    return r.json().as_object();
}

std::string state_of(ts::api_service& svc, const std::string& id) {
    return std::string(task_of(svc, id).at("state").as_string());
}

// The delayed task arrives once, at or after its due time, with its id as Idempotency-Key,
// and finishes.
void delivered_after_due(ts::api_service& svc, cs::sink& sink) {
    std::atomic<std::int64_t> arrived_ms{0};
    sink.respond([&](const cs::recorded_request&) {
        arrived_ms = now_ms();
        return status(200);
    });
    const auto created = svc.post("/v1/tasks", task_body("late-1", sink, "{}", 300));
    BOOST_TEST_REQUIRE(created.status == 201u, created);
    const auto due = epoch_ms(created.json().at("due_at").as_string());

    BOOST_TEST_REQUIRE(eventually([&] { return state_of(svc, "late-1") == "finished"; }),
                       svc.log());
    const auto requests = sink.requests();
    BOOST_TEST_REQUIRE(requests.size() == 1u);
    const auto& r = requests[0];
    BOOST_TEST(r.method == "POST");
    BOOST_TEST(r.target == "/hook");
    BOOST_TEST(r.body == "hello");
    BOOST_TEST(r.header("Idempotency-Key").value_or("") == "late-1");
    BOOST_TEST(r.header("Timewheel-Attempt").value_or("") == "1");
    // The store's clock and this one are the same machine's system clock.
    BOOST_TEST(arrived_ms.load() >= due);
    const auto task = task_of(svc, "late-1");
    BOOST_TEST(task.at("attempts").to_number<int>() == 1);
    BOOST_TEST(task.at("log").as_array().size() == 1u);
}

} // namespace

BOOST_AUTO_TEST_CASE(a_delayed_task_arrives_after_its_due_time_and_finishes) {
    cs::sink sink;
    ts::api_service svc(with_worker());
    delivered_after_due(svc, sink);
    const auto metrics = svc.get("/metrics");
    BOOST_TEST(metrics.body.find("timewheeld_callbacks_fired_total 1\n") != std::string::npos,
               metrics.body);
    BOOST_TEST(metrics.body.find("timewheeld_callbacks_succeeded_total 1\n") != std::string::npos,
               metrics.body);
}

BOOST_AUTO_TEST_CASE(with_the_sqlite_store_too) {
    char tmpl[] = "/tmp/timewheeld-dispatch-XXXXXX";
    BOOST_TEST_REQUIRE(::mkdtemp(tmpl) != nullptr);
    const std::filesystem::path dir = tmpl;
    {
        cs::sink sink;
        ts::api_service svc(with_worker({"--store", "sqlite:" + (dir / "db").string()}));
        delivered_after_due(svc, sink);
        BOOST_TEST(std::filesystem::exists(dir / "db"));
    }
    std::filesystem::remove_all(dir);
}

BOOST_AUTO_TEST_CASE(debounce_under_a_stream_of_submits_fires_once_by_its_max_delay) {
    cs::sink sink;
    std::atomic<std::int64_t> arrived_ms{0};
    std::atomic<int> arrivals{0};
    sink.respond([&](const cs::recorded_request&) {
        arrived_ms = now_ms();
        ++arrivals;
        return status(200);
    });
    ts::api_service svc(with_worker());
    constexpr std::int64_t max_delay = 1500;
    // Each submit puts the task 400 ms off: without the cap it would never come due while
    // the stream goes on, so its callback arriving during the stream is the cap at work.
    const auto body = [&](int n) {
        return R"({"id": "deb", "delay_ms": 400, "on_conflict": "debounce", "max_delay_ms": )" +
               std::to_string(max_delay) + R"(, "callback": {"url": )" +
               ts::json_quote(sink.url("/hook")) + R"(, "body": "n)" + std::to_string(n) + "\"}}";
    };
    const auto first = svc.post("/v1/tasks", body(0));
    BOOST_TEST_REQUIRE(first.status == 201u, first);
    const auto created = epoch_ms(svc.get("/v1/tasks/deb").json().at("created_at").as_string());
    std::string last_body = "n0"; // the callback of the last submit that replaced the task
    std::int64_t last_due = epoch_ms(first.json().at("due_at").as_string());
    int submits = 1, refused = 0;
    const auto deadline = std::chrono::steady_clock::now() + 30s;
    while (arrivals.load() == 0 && std::chrono::steady_clock::now() < deadline) {
        const auto r = svc.post("/v1/tasks", body(submits));
        if (r.status == 200u) {
            BOOST_TEST(r.json().at("replaced").as_bool(), r);
            last_due = epoch_ms(r.json().at("due_at").as_string());
            BOOST_TEST(last_due <= created + max_delay, r);
            last_body = "n" + std::to_string(submits);
        } else {
            // Running (or finished): past replacing.
            BOOST_TEST(r.status == 409u, r);
            BOOST_TEST(r.error_code() == "conflict");
            ++refused;
        }
        ++submits;
        std::this_thread::sleep_for(50ms);
    }
    BOOST_TEST_REQUIRE(arrivals.load() == 1, "no callback during " << submits << " submits");
    BOOST_TEST_REQUIRE(eventually([&] { return state_of(svc, "deb") == "finished"; }), svc.log());
    const auto requests = sink.requests();
    BOOST_TEST_REQUIRE(requests.size() == 1u);
    // The callback of the last submit that replaced it, never before its due time.
    BOOST_TEST(requests[0].body == last_body);
    BOOST_TEST(arrived_ms.load() >= last_due);
    BOOST_TEST_MESSAGE("debounce: " << submits << " submits (" << refused
                                    << " refused), the callback "
                                    << arrived_ms.load() - (created + max_delay)
                                    << " ms after created + max_delay_ms");
}

BOOST_AUTO_TEST_CASE(a_500_is_retried_then_the_task_finishes) {
    cs::sink sink;
    std::atomic<int> calls{0};
    sink.respond([&](const cs::recorded_request&) { return status(++calls == 1 ? 500 : 200); });
    ts::api_service svc(with_worker());
    const auto created = svc.post("/v1/tasks", task_body("flaky-1", sink));
    BOOST_TEST_REQUIRE(created.status == 201u, created);

    BOOST_TEST_REQUIRE(eventually([&] { return state_of(svc, "flaky-1") == "finished"; }),
                       svc.log());
    const auto requests = sink.requests();
    BOOST_TEST_REQUIRE(requests.size() == 2u);
    BOOST_TEST(requests[0].header("Timewheel-Attempt").value_or("") == "1");
    BOOST_TEST(requests[1].header("Timewheel-Attempt").value_or("") == "2");
    BOOST_TEST(requests[1].header("Idempotency-Key").value_or("") == "flaky-1");
    const auto task = task_of(svc, "flaky-1");
    const auto& log = task.at("log").as_array();
    BOOST_TEST_REQUIRE(log.size() == 2u, json::serialize(task));
    BOOST_TEST(log[0].at("outcome").as_string() == "retry");
    BOOST_TEST(std::string(log[0].at("error").as_string()).find("500") != std::string::npos,
               json::serialize(task));
    BOOST_TEST(log[1].at("outcome").as_string() == "success");
}

BOOST_AUTO_TEST_CASE(a_400_kills_the_task_at_once) {
    cs::sink sink;
    sink.respond([](const cs::recorded_request&) { return status(400); });
    ts::api_service svc(with_worker());
    const auto created = svc.post("/v1/tasks", task_body("bad-1", sink));
    BOOST_TEST_REQUIRE(created.status == 201u, created);

    BOOST_TEST_REQUIRE(eventually([&] { return state_of(svc, "bad-1") == "dead"; }), svc.log());
    BOOST_TEST(sink.requests().size() == 1u);
    const auto dead = svc.get("/v1/dead");
    BOOST_TEST_REQUIRE(dead.status == 200u, dead);
    const auto listed = dead.json();
    const auto& entries = listed.at("entries").as_array();
    BOOST_TEST_REQUIRE(entries.size() == 1u, dead);
    BOOST_TEST(entries[0].at("id").as_string() == "bad-1");
    const auto metrics = svc.get("/metrics");
    BOOST_TEST(metrics.body.find("timewheeld_tasks_dead_total 1\n") != std::string::npos,
               metrics.body);
}

BOOST_AUTO_TEST_CASE(a_202_waits_for_the_reported_result) {
    cs::sink sink;
    sink.respond([](const cs::recorded_request&) { return status(202); });
    ts::api_service svc(with_worker());
    const auto created = svc.post("/v1/tasks", task_body("async-1", sink));
    BOOST_TEST_REQUIRE(created.status == 201u, created);

    BOOST_TEST_REQUIRE(eventually([&] { return sink.requests().size() == 1u; }), svc.log());
    BOOST_TEST(state_of(svc, "async-1") == "running");
    // The attempt waits: a report for another attempt is refused, this one taken.
    const auto wrong =
        svc.post("/v1/tasks/async-1/result", R"({"attempt": 2, "outcome": "success"})");
    BOOST_TEST(wrong.status == 409u, wrong);
    const auto ok = svc.post("/v1/tasks/async-1/result", R"({"attempt": 1, "outcome": "success"})");
    BOOST_TEST_REQUIRE(ok.status == 200u, ok);
    BOOST_TEST_REQUIRE(eventually([&] { return state_of(svc, "async-1") == "finished"; }),
                       svc.log());
    BOOST_TEST(sink.requests().size() == 1u);
    // Nothing waits any more.
    const auto late =
        svc.post("/v1/tasks/async-1/result", R"({"attempt": 1, "outcome": "success"})");
    BOOST_TEST(late.status == 404u, late);
}

BOOST_AUTO_TEST_CASE(a_202_without_a_result_is_retried_after_the_result_deadline) {
    cs::sink sink;
    std::atomic<int> calls{0};
    sink.respond([&](const cs::recorded_request&) { return status(++calls == 1 ? 202 : 200); });
    ts::api_service svc(with_worker({"--result-deadline-ms", "300"}));
    const auto created = svc.post("/v1/tasks", task_body("async-2", sink));
    BOOST_TEST_REQUIRE(created.status == 201u, created);

    BOOST_TEST_REQUIRE(eventually([&] { return state_of(svc, "async-2") == "finished"; }),
                       svc.log());
    BOOST_TEST(sink.requests().size() == 2u);
    const auto task = task_of(svc, "async-2");
    const auto& log = task.at("log").as_array();
    BOOST_TEST_REQUIRE(log.size() == 2u, json::serialize(task));
    BOOST_TEST(log[0].at("outcome").as_string() == "retry");
    BOOST_TEST(std::string(log[0].at("error").as_string()).find("no result") != std::string::npos,
               json::serialize(task));
}

BOOST_AUTO_TEST_CASE(sigterm_stops_the_worker_and_the_process_exits_zero) {
    cs::sink sink;
    sink.respond([](const cs::recorded_request&) { return status(200); });
    ts::api_service svc(with_worker());
    const auto created = svc.post("/v1/tasks", task_body("bye-1", sink));
    BOOST_TEST_REQUIRE(created.status == 201u, created);
    BOOST_TEST_REQUIRE(eventually([&] { return state_of(svc, "bye-1") == "finished"; }), svc.log());
    svc.process().terminate();
    BOOST_TEST_REQUIRE(svc.process().wait(), svc.log());
    BOOST_TEST(svc.process().exit_status() == 0, svc.log());
}

BOOST_AUTO_TEST_CASE(sigterm_gives_back_an_attempt_waiting_for_its_result) {
    cs::sink sink;
    sink.respond([](const cs::recorded_request&) { return status(202); });
    // The result deadline is far beyond the shutdown timeout: only giving the attempt back
    // lets the worker stop in time.
    ts::api_service svc(with_worker({"--result-deadline-ms", "600000"}));
    const auto created = svc.post("/v1/tasks", task_body("waiting-1", sink));
    BOOST_TEST_REQUIRE(created.status == 201u, created);
    BOOST_TEST_REQUIRE(eventually([&] { return state_of(svc, "waiting-1") == "running"; }),
                       svc.log());
    svc.process().terminate();
    BOOST_TEST_REQUIRE(svc.process().wait(), svc.log());
    BOOST_TEST(svc.process().exit_status() == 0, svc.log());
    BOOST_TEST(svc.log().find("shutdown_timeout") == std::string::npos, svc.log());
    BOOST_TEST(svc.log().find("worker_stop") == std::string::npos, svc.log());
}
