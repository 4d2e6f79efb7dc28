//
// test/server/embedded_store.cpp
//
// timewheeld on its embedded default, the SQLite store: black-box over HTTP on 127.0.0.1,
// the timewheeld binary as a child process with its worker, a recording sink. Without
// --store it keeps its tasks in timewheeld.db in its working directory; with --threads 2
// both threads share the one file (one writer, group commit), each answering requests and
// running callbacks on its own io_context; a finished or cancelled task still shows its
// callback; /metrics shows how long the oldest due task has waited.
//
#define BOOST_TEST_MODULE server_embedded_store
#include <boost/test/unit_test.hpp>

#include <test/server/support/api_service.hpp>
#include <test/server/support/service_node.hpp>
#include <test/server/support/sink.hpp>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace ts = timewheel::test;
namespace cs = timewheel::test;
namespace json = boost::json;
using namespace std::chrono_literals;

namespace {

// A service with its worker, allowed to call the sink on loopback.
ts::api_service::options with_worker(std::vector<std::string> extra = {}) {
    ts::api_service::options o;
    o.worker = true;
    o.queue = "embedded";
    o.args = {"--callback-allow-loopback"};
    o.args.insert(o.args.end(), extra.begin(), extra.end());
    return o;
}

std::string task_body(const std::string& id, const cs::sink& sink, int delay_ms = 0) {
    return R"({"id": )" + ts::json_quote(id) + R"(, "delay_ms": )" + std::to_string(delay_ms) +
           R"(, "callback": {"url": )" + ts::json_quote(sink.url("/hook")) +
           R"(, "method": "POST", "body": )" + ts::json_quote("body of " + id) + "}}";
}

json::object task_of(ts::api_service& svc, const std::string& id) {
    const auto r = svc.get("/v1/tasks/" + id);
    BOOST_TEST_REQUIRE(r.status == 200u, r);
    return r.json().as_object();
}

std::string state_of(ts::api_service& svc, const std::string& id) {
    return std::string(task_of(svc, id).at("state").as_string());
}

} // namespace

BOOST_AUTO_TEST_CASE(two_threads_share_one_sqlite_file_and_run_every_callback) {
    const ts::temp_dir dir("timewheeld-embedded");
    cs::sink sink;
    // Each thread runs one callback at a time and the sink takes a while to answer: the
    // due tasks cannot all go through one thread's worker at once.
    sink.respond([](const cs::recorded_request&) {
        cs::reply r;
        r.status = 200;
        r.delay = 20ms;
        return r;
    });
    ts::api_service svc(with_worker(
        {"--store", ts::sqlite_store_url(dir), "--threads", "2", "--worker-concurrency", "1"}));
    // One connection per request, dealt to the threads in turn: both threads submit.
    constexpr int n = 40;
    std::set<std::string> ids;
    for (int i = 0; i < n; ++i) {
        const auto id = "both-" + std::to_string(i);
        const auto created = svc.post("/v1/tasks", task_body(id, sink, 50));
        BOOST_TEST_REQUIRE(created.status == 201u, created);
        ids.insert(id);
    }
    BOOST_TEST_REQUIRE(ts::eventually([&] {
                           for (const auto& id : ids) {
                               if (state_of(svc, id) != "finished") {
                                   return false;
                               }
                           }
                           return true;
                       }),
                       svc.log());
    std::map<std::string, int> by_worker;
    for (const auto& id : ids) {
        const auto task = task_of(svc, id);
        const auto& log = task.at("log").as_array();
        BOOST_TEST_REQUIRE(log.size() == 1u, json::serialize(task));
        ++by_worker[std::string(log[0].at("worker").as_string())];
        // Shown from either thread: the one file holds it.
        BOOST_TEST(task.at("callback").at("body").as_string() == "body of " + id);
    }
    std::set<std::string> delivered;
    for (const auto& r : sink.requests()) {
        delivered.insert(r.header("Idempotency-Key").value_or(""));
    }
    BOOST_TEST(delivered == ids);
    for (const auto& [worker, count] : by_worker) {
        BOOST_TEST_MESSAGE(worker << " ran " << count);
    }
    // Both threads' workers ran callbacks (each names its thread: timewheeld-<pid>-<index>).
    BOOST_TEST(by_worker.size() == 2u);
    BOOST_TEST(std::filesystem::exists(dir.path() / "tasks.db"));
}

BOOST_AUTO_TEST_CASE(without_store_the_tasks_go_to_timewheeld_db_in_the_working_directory) {
    cs::sink sink;
    sink.respond([](const cs::recorded_request&) {
        cs::reply r;
        r.status = 200;
        return r;
    });
    auto opt = with_worker();
    opt.default_store = true;
    ts::api_service svc(opt);
    BOOST_TEST(svc.log().find("store=sqlite:timewheeld.db") != std::string::npos, svc.log());
    BOOST_TEST(std::filesystem::exists(svc.dir() / "timewheeld.db"));
    const auto created = svc.post("/v1/tasks", task_body("default-1", sink));
    BOOST_TEST_REQUIRE(created.status == 201u, created);
    BOOST_TEST_REQUIRE(ts::eventually([&] { return state_of(svc, "default-1") == "finished"; }),
                       svc.log());
    BOOST_TEST(sink.requests().size() == 1u);
}

BOOST_AUTO_TEST_CASE(finished_and_cancelled_tasks_still_show_their_callback) {
    const ts::temp_dir dir("timewheeld-embedded");
    cs::sink sink;
    sink.respond([](const cs::recorded_request&) {
        cs::reply r;
        r.status = 200;
        return r;
    });
    ts::api_service svc(with_worker({"--store", ts::sqlite_store_url(dir)}));
    BOOST_TEST_REQUIRE(svc.post("/v1/tasks", task_body("done-1", sink)).status == 201u);
    BOOST_TEST_REQUIRE(svc.post("/v1/tasks", task_body("later-1", sink, 3600000)).status == 201u);
    BOOST_TEST(svc.request(ts::api_http::verb::delete_, "/v1/tasks/later-1").status == 200u);
    BOOST_TEST_REQUIRE(ts::eventually([&] { return state_of(svc, "done-1") == "finished"; }),
                       svc.log());
    for (const auto* id : {"done-1", "later-1"}) {
        const auto task = task_of(svc, id);
        BOOST_TEST(!task.contains("payload"), json::serialize(task));
        BOOST_TEST_REQUIRE(task.at("callback").is_object(), json::serialize(task));
        BOOST_TEST(task.at("callback").at("url").as_string() == sink.url("/hook"));
        BOOST_TEST(task.at("callback").at("body").as_string() == std::string("body of ") + id);
    }
    BOOST_TEST(state_of(svc, "later-1") == "cancelled");
}

BOOST_AUTO_TEST_CASE(metrics_show_how_long_the_oldest_due_task_has_waited) {
    const ts::temp_dir dir("timewheeld-embedded");
    ts::api_service::options o;
    // No worker: a due task waits. Every scrape reads the store.
    o.args = {"--store", ts::sqlite_store_url(dir), "--metrics-store-interval-ms", "0"};
    ts::api_service svc(o);
    ts::check_oldest_due_age(svc);
}
