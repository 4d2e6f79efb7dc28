//
// test/server/dispatch_callbacks.cpp
//
// timewheeld fires callbacks: black-box over HTTP on 127.0.0.1, a real redis-server (or a
// SQLite file), the timewheeld binary as a child process with its worker, and a recording
// sink on a free port. A task arrives at the sink no earlier than its due time, with its id
// as Idempotency-Key; a 500 is retried, a 400 kills the task, a 202 waits for the result
// reported through POST /v1/tasks/{id}/result (or for the result deadline). A task's end
// makes one completion notice to its on_success or on_failure target, signed, retried, and
// waiting for the end when it runs before the end is recorded.
//
#define BOOST_TEST_MODULE server_dispatch_callbacks
#include <boost/test/unit_test.hpp>

#include <test/server/support/api_service.hpp>
#include <test/server/support/service_node.hpp>
#include <test/server/support/signature_check.hpp>
#include <test/server/support/sink.hpp>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <functional>
#include <string>
#include <string_view>
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

// --- Completion notices (docs/server.md, "Completion notices") ---------------------------

namespace {

// A task whose callback goes to /hook, with a notice to /done on success (with a header of
// its own) and to /failed on failure, each only when asked for.
std::string noticed_task(const std::string& id, const cs::sink& sink, bool on_success,
                         bool on_failure,
                         const std::string& retry = R"({"attempts": 5, "base_ms": 50,
                                                        "cap_ms": 100})") {
    std::string cb = R"({"url": )" + ts::json_quote(sink.url("/hook")) + R"(, "body": "hello")";
    if (on_success) {
        cb += R"(, "on_success": {"url": )" + ts::json_quote(sink.url("/done")) +
              R"(, "headers": {"X-Notice": "yes"}})";
    }
    if (on_failure) {
        cb += R"(, "on_failure": {"url": )" + ts::json_quote(sink.url("/failed")) + "}";
    }
    return R"({"id": )" + ts::json_quote(id) + R"(, "delay_ms": 0, "callback": )" + cb +
           R"(}, "retry": )" + retry + "}";
}

std::vector<cs::recorded_request> requests_to(const cs::sink& sink, std::string_view target) {
    std::vector<cs::recorded_request> out;
    for (auto& r : sink.requests()) {
        if (r.target == target) {
            out.push_back(std::move(r));
        }
    }
    return out;
}

// The notice task of `id` (its id: "<id>~notice") has finished: its notice was made, or
// found nothing to make.
void notice_finished(ts::api_service& svc, const std::string& id) {
    BOOST_TEST_REQUIRE(eventually([&] {
                           const auto r = svc.get("/v1/tasks/" + id + "~notice");
                           return r.status == 200u && r.json().at("state") == "finished";
                       }),
                       svc.log());
}

// A task that finishes makes one notice to on_success: the task's end as GET shows it,
// signed like a callback, with the notice's id as Idempotency-Key.
void notice_on_success(ts::api_service& svc, cs::sink& sink) {
    sink.respond([](const cs::recorded_request&) { return status(200); });
    const auto created = svc.post("/v1/tasks", noticed_task("ok-1", sink, true, true));
    BOOST_TEST_REQUIRE(created.status == 201u, created);
    notice_finished(svc, "ok-1");

    BOOST_TEST(requests_to(sink, "/hook").size() == 1u);
    BOOST_TEST(requests_to(sink, "/failed").empty());
    const auto done = requests_to(sink, "/done");
    BOOST_TEST_REQUIRE(done.size() == 1u);
    const auto& r = done[0];
    BOOST_TEST(r.method == "POST");
    BOOST_TEST(r.header("Idempotency-Key").value_or("") == "ok-1~notice");
    BOOST_TEST(r.header("Timewheel-Attempt").value_or("") == "1");
    BOOST_TEST(r.header("Content-Type").value_or("") == "application/json");
    BOOST_TEST(r.header("X-Notice").value_or("") == "yes");
    BOOST_TEST(ts::signature_matches(r, "notice-secret", sink.url("/done")), r.body);
    BOOST_TEST(!ts::signature_matches(r, "another-secret", sink.url("/done")));

    const auto body = json::parse(r.body).as_object();
    const auto task = task_of(svc, "ok-1");
    BOOST_TEST(body.size() == 6u, r.body);
    BOOST_TEST(body.at("task_id") == "ok-1");
    BOOST_TEST(body.at("state") == "finished");
    BOOST_TEST(body.at("attempts") == 1);
    BOOST_TEST(body.at("last_error").is_null());
    BOOST_TEST(body.at("ended_at") == task.at("updated_at"), r.body);
    BOOST_TEST(body.at("log") == task.at("log"), r.body);
    BOOST_TEST_REQUIRE(body.at("log").as_array().size() == 1u);
    BOOST_TEST(body.at("log").as_array()[0].at("outcome") == "success");

    // The notice is a task of its own, told apart by its id and its "notice" (null once the
    // store forgot a finished task's payload, as Redis does).
    const auto notice = task_of(svc, "ok-1~notice");
    BOOST_TEST(!notice.contains("callback"), json::serialize(notice));
    BOOST_TEST(notice.contains("notice"), json::serialize(notice));
}

} // namespace

BOOST_AUTO_TEST_CASE(a_finished_task_posts_one_signed_notice_to_on_success) {
    cs::sink sink;
    ts::api_service svc(with_worker({"--signing-secret", "notice-secret"}));
    notice_on_success(svc, sink);
}

BOOST_AUTO_TEST_CASE(a_finished_task_posts_one_notice_with_the_sqlite_store_too) {
    const ts::temp_dir dir("timewheeld-notice");
    cs::sink sink;
    ts::api_service svc(
        with_worker({"--store", ts::sqlite_store_url(dir), "--signing-secret", "notice-secret"}));
    notice_on_success(svc, sink);
}

BOOST_AUTO_TEST_CASE(a_task_that_dies_posts_one_notice_to_on_failure) {
    cs::sink sink;
    // "bad-2" is refused (400) at its first of five attempts; "spent-2" fails (500) at both
    // of its two: its notice is stored before its last call.
    sink.respond([](const cs::recorded_request& r) {
        if (r.target != "/hook") {
            return status(200);
        }
        return status(r.header("Idempotency-Key") == "bad-2" ? 400 : 500);
    });
    ts::api_service svc(with_worker());
    BOOST_TEST_REQUIRE(svc.post("/v1/tasks", noticed_task("bad-2", sink, true, true)).status ==
                       201u);
    BOOST_TEST_REQUIRE(
        svc.post("/v1/tasks", noticed_task("spent-2", sink, true, true,
                                           R"({"attempts": 2, "base_ms": 10, "cap_ms": 20})"))
            .status == 201u);
    notice_finished(svc, "bad-2");
    notice_finished(svc, "spent-2");

    BOOST_TEST(requests_to(sink, "/done").empty());
    const auto failed = requests_to(sink, "/failed");
    BOOST_TEST_REQUIRE(failed.size() == 2u);
    for (const auto& r : failed) {
        const auto body = json::parse(r.body).as_object();
        const std::string id(body.at("task_id").as_string());
        BOOST_TEST_CONTEXT(r.body) {
            BOOST_TEST(r.header("Idempotency-Key").value_or("") == id + "~notice");
            BOOST_TEST(body.at("state") == "dead");
            const auto& log = body.at("log").as_array();
            if (id == "bad-2") {
                BOOST_TEST(body.at("attempts") == 1);
                BOOST_TEST_REQUIRE(log.size() == 1u);
                BOOST_TEST(log[0].at("outcome") == "failure");
                BOOST_TEST(std::string(body.at("last_error").as_string()).find("400") !=
                           std::string::npos);
            } else {
                BOOST_TEST(id == "spent-2");
                BOOST_TEST(body.at("attempts") == 2);
                BOOST_TEST_REQUIRE(log.size() == 2u);
                BOOST_TEST(log[1].at("outcome") == "retry");
                BOOST_TEST(std::string(body.at("last_error").as_string()).find("500") !=
                           std::string::npos);
            }
        }
    }
}

BOOST_AUTO_TEST_CASE(an_end_without_its_target_sends_no_notice) {
    cs::sink sink;
    sink.respond([](const cs::recorded_request& r) {
        return status(r.header("Idempotency-Key") == "dies-3" ? 400 : 200);
    });
    ts::api_service svc(with_worker());
    // Dies, with on_success only; finishes, with on_failure only.
    BOOST_TEST_REQUIRE(svc.post("/v1/tasks", noticed_task("dies-3", sink, true, false)).status ==
                       201u);
    BOOST_TEST_REQUIRE(svc.post("/v1/tasks", noticed_task("lives-3", sink, false, true)).status ==
                       201u);
    notice_finished(svc, "dies-3");
    notice_finished(svc, "lives-3");
    BOOST_TEST(state_of(svc, "dies-3") == "dead");
    BOOST_TEST(state_of(svc, "lives-3") == "finished");
    BOOST_TEST(requests_to(sink, "/hook").size() == 2u);
    BOOST_TEST(requests_to(sink, "/done").empty());
    BOOST_TEST(requests_to(sink, "/failed").empty());
}

BOOST_AUTO_TEST_CASE(a_failing_notice_receiver_is_retried_and_gets_the_notice_once_more) {
    cs::sink sink;
    std::atomic<int> notices{0};
    sink.respond([&](const cs::recorded_request& r) {
        if (r.target == "/done" && ++notices == 1) {
            cs::reply busy = status(503);
            busy.headers = {{"Retry-After", "0"}};
            return busy;
        }
        return status(200);
    });
    ts::api_service svc(with_worker());
    BOOST_TEST_REQUIRE(svc.post("/v1/tasks", noticed_task("flaky-4", sink, true, true)).status ==
                       201u);
    notice_finished(svc, "flaky-4");
    BOOST_TEST(requests_to(sink, "/hook").size() == 1u);
    const auto done = requests_to(sink, "/done");
    BOOST_TEST_REQUIRE(done.size() == 2u);
    BOOST_TEST(done[0].header("Timewheel-Attempt").value_or("") == "1");
    BOOST_TEST(done[1].header("Timewheel-Attempt").value_or("") == "2");
    BOOST_TEST(done[1].header("Idempotency-Key").value_or("") == "flaky-4~notice");
    BOOST_TEST(done[0].body == done[1].body);
    const auto notice = task_of(svc, "flaky-4~notice");
    BOOST_TEST(notice.at("log").as_array().size() == 2u, json::serialize(notice));
}

// A last attempt stores its notice before its call: the notice runs while the task still
// waits for its result, waits without being charged an attempt, and is made once the task
// has ended.
BOOST_AUTO_TEST_CASE(a_notice_waits_for_a_task_that_has_not_ended) {
    cs::sink sink;
    sink.respond(
        [](const cs::recorded_request& r) { return status(r.target == "/hook" ? 202 : 200); });
    ts::api_service svc(with_worker());
    BOOST_TEST_REQUIRE(
        svc.post("/v1/tasks", noticed_task("slow-5", sink, true, true, R"({"attempts": 1})"))
            .status == 201u);
    BOOST_TEST_REQUIRE(eventually([&] {
                           const auto r = svc.get("/v1/tasks/slow-5~notice");
                           return r.status == 200u && r.json().at("last_error").is_string() &&
                                  r.json().at("last_error").as_string().find("has not ended") !=
                                      std::string::npos;
                       }),
                       svc.log());
    BOOST_TEST(state_of(svc, "slow-5") == "running");
    const auto waiting = task_of(svc, "slow-5~notice");
    BOOST_TEST(waiting.at("log").as_array().empty(), json::serialize(waiting));
    BOOST_TEST(!waiting.contains("callback"), json::serialize(waiting));
    BOOST_TEST(waiting.at("notice") ==
                   json::parse(R"({"task_id": "slow-5", "on_success": {"url": )" +
                               ts::json_quote(sink.url("/done")) +
                               R"(, "headers": {"X-Notice": "yes"}}, "on_failure": {"url": )" +
                               ts::json_quote(sink.url("/failed")) + "}}"),
               json::serialize(waiting));
    BOOST_TEST(requests_to(sink, "/done").empty());

    const auto ok = svc.post("/v1/tasks/slow-5/result", R"({"attempt": 1, "outcome": "success"})");
    BOOST_TEST_REQUIRE(ok.status == 200u, ok);
    notice_finished(svc, "slow-5");
    const auto done = requests_to(sink, "/done");
    BOOST_TEST_REQUIRE(done.size() == 1u);
    BOOST_TEST(json::parse(done[0].body).at("state") == "finished");
    BOOST_TEST(requests_to(sink, "/failed").empty());
}

// A dead letter retried ends a second time: its notice exists, and no other is made.
BOOST_AUTO_TEST_CASE(a_task_that_ends_twice_has_one_notice) {
    cs::sink sink;
    std::atomic<bool> refuse{true};
    sink.respond([&](const cs::recorded_request& r) {
        return status(r.target == "/hook" && refuse.load() ? 400 : 200);
    });
    ts::api_service svc(with_worker());
    BOOST_TEST_REQUIRE(svc.post("/v1/tasks", noticed_task("twice-6", sink, true, true)).status ==
                       201u);
    notice_finished(svc, "twice-6");
    BOOST_TEST_REQUIRE(requests_to(sink, "/failed").size() == 1u);
    refuse = false;
    const auto retried = svc.post("/v1/dead/twice-6/retry", "");
    BOOST_TEST_REQUIRE(retried.status == 200u, retried);
    BOOST_TEST_REQUIRE(eventually([&] { return state_of(svc, "twice-6") == "finished"; }),
                       svc.log());
    // The second end found the notice there (stored before its report): kept as it was.
    const auto notice = task_of(svc, "twice-6~notice");
    BOOST_TEST(notice.at("state") == "finished", json::serialize(notice));
    BOOST_TEST(notice.at("log").as_array().size() == 1u, json::serialize(notice));
    BOOST_TEST(requests_to(sink, "/done").empty());
    BOOST_TEST(requests_to(sink, "/failed").size() == 1u);
}
