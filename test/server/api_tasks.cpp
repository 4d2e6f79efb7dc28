//
// test/server/api_tasks.cpp
//
// The task endpoints of timewheeld, black-box over HTTP on 127.0.0.1 against a real
// redis-server: submit (created, then exists for the same id), status with its execution
// log, cancel before due and too late, reschedule, the dead letters (listed a page at a
// time, retried, deleted), the result endpoint without a pending attempt, and the probes.
// A dq::worker in the test, on the same Redis queue, plays the callback side where a task
// must run (to be running, or to die).
//
#define BOOST_TEST_MODULE server_api_tasks
#include <boost/test/unit_test.hpp>

#include <test/server/support/api_service.hpp>

// GCC 12 at -O1 sees Asio's coroutine frames, allocated with aligned_alloc and released with
// the frame's own operator delete (which calls free), as a mismatch: a false positive.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
#endif

#include <timewheel/dq/redis_store.hpp>
#include <timewheel/dq/worker.hpp>

#include <boost/asio/io_context.hpp>
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace ts = timewheel::test;
namespace dq = timewheel::dq;
namespace json = boost::json;
using verb = boost::beast::http::verb;
using namespace std::chrono_literals;

namespace {

using ts::epoch_ms;

std::string task_body(const std::string& id, const std::string& due = R"("delay_ms": 600000)",
                      const std::string& extra = "") {
    return R"({"id": )" + ts::json_quote(id) + ", " + due +
           R"(, "callback": {"url": "http://127.0.0.1:9/hook", "method": "PUT",
              "headers": {"X-Kind": "test"}, "body": "hello", "timeout_ms": 1500})" +
           extra + "}";
}

std::string state_of(ts::api_service& svc, const std::string& id) {
    const auto r = svc.get("/v1/tasks/" + id);
    BOOST_TEST_REQUIRE(r.status == 200u, r);
    return std::string(r.json().at("state").as_string());
}

// A worker of the test on the service's queue, whose handler the test chooses.
struct test_worker {
    boost::asio::io_context io;
    dq::redis_store store;
    std::optional<dq::worker> worker;

    explicit test_worker(ts::api_service& svc)
        : store(io.get_executor(), svc.redis().config(), make_options(svc)) {}

    static dq::redis_store_options make_options(ts::api_service& svc) {
        dq::redis_store_options o;
        o.name = svc.queue();
        return o;
    }

    template <typename Handler>
    void start(Handler h) {
        dq::worker_options o;
        o.claim.worker = "test-worker";
        worker.emplace(store, o, std::move(h));
        worker->start();
    }
};

} // namespace

BOOST_AUTO_TEST_SUITE(api_tasks, *boost::unit_test::precondition(ts::redis_available()))

BOOST_AUTO_TEST_CASE(submit_creates_then_answers_exists_for_the_same_id) {
    ts::api_service svc;
    const auto first = svc.post("/v1/tasks", task_body("order-1", R"("delay_ms": 600000)",
                                                       R"(, "retry": {"attempts": 3,
                                                          "base_ms": 10, "cap_ms": 100})"));
    BOOST_TEST_REQUIRE(first.status == 201u, first);
    BOOST_TEST(first.headers["Location"] == "/v1/tasks/order-1");
    const auto t = first.json().as_object();
    BOOST_TEST(t.at("id").as_string() == "order-1");
    BOOST_TEST(t.at("state").as_string() == "delayed");
    BOOST_TEST(t.at("attempts").as_int64() == 0);
    BOOST_TEST(t.at("callback").at("url").as_string() == "http://127.0.0.1:9/hook");
    BOOST_TEST(t.at("callback").at("method").as_string() == "PUT");
    BOOST_TEST(t.at("callback").at("headers").at("X-Kind").as_string() == "test");
    BOOST_TEST(t.at("callback").at("body").as_string() == "hello");
    BOOST_TEST(t.at("callback").at("timeout_ms").as_int64() == 1500);
    BOOST_TEST(t.at("retry").at("attempts").as_int64() == 3);
    BOOST_TEST(t.at("retry").at("base_ms").as_int64() == 10);
    BOOST_TEST(t.at("retry").at("cap_ms").as_int64() == 100);
    BOOST_TEST(t.at("log").as_array().empty());

    // The same id again, with another callback: 200, and the task as first submitted.
    const auto second = svc.post(
        "/v1/tasks",
        R"({"id": "order-1", "delay_ms": 5, "callback": {"url": "https://other.example/x"}})");
    BOOST_TEST_REQUIRE(second.status == 200u, second);
    BOOST_TEST(second.json().at("callback").at("url").as_string() == "http://127.0.0.1:9/hook");
    // The store's own due time (the 201 showed one no later: server_api_answers).
    BOOST_TEST(second.json().at("due_at") == svc.get("/v1/tasks/order-1").json().at("due_at"));
}

BOOST_AUTO_TEST_CASE(submit_without_an_id_generates_one) {
    ts::api_service svc;
    const auto r =
        svc.post("/v1/tasks", R"({"delay_ms": 60000, "callback": {"url": "http://127.0.0.1:9/"}})");
    BOOST_TEST_REQUIRE(r.status == 201u, r);
    const std::string id(r.json().at("id").as_string());
    BOOST_TEST(!id.empty());
    BOOST_TEST(state_of(svc, id) == "delayed");
    // The callback's defaults are stored explicitly: POST, nothing else.
    const auto cb = r.json().at("callback").as_object();
    BOOST_TEST(cb.at("method").as_string() == "POST");
    BOOST_TEST(!cb.contains("headers"));
    BOOST_TEST(!cb.contains("body"));
}

BOOST_AUTO_TEST_CASE(due_at_is_kept_to_the_millisecond_and_offsets_are_honoured) {
    ts::api_service svc;
    const auto r =
        svc.post("/v1/tasks", task_body("at-1", R"("due_at": "2099-03-04T05:06:07.089+02:00")"));
    BOOST_TEST_REQUIRE(r.status == 201u, r);
    BOOST_TEST(r.json().at("due_at").as_string() == "2099-03-04T03:06:07.089Z");
}

BOOST_AUTO_TEST_CASE(status_of_an_unknown_task_is_404) {
    ts::api_service svc;
    const auto r = svc.get("/v1/tasks/nobody");
    BOOST_TEST(r.status == 404u, r);
    BOOST_TEST(r.error_code() == "not_found");
}

BOOST_AUTO_TEST_CASE(ids_are_percent_decoded_in_paths) {
    ts::api_service svc;
    BOOST_TEST_REQUIRE(svc.post("/v1/tasks", task_body("a/b c")).status == 201u);
    const auto r = svc.get("/v1/tasks/a%2Fb%20c");
    BOOST_TEST_REQUIRE(r.status == 200u, r);
    BOOST_TEST(r.json().at("id").as_string() == "a/b c");
}

BOOST_AUTO_TEST_CASE(cancel_before_due_then_again_and_unknown) {
    ts::api_service svc;
    BOOST_TEST_REQUIRE(svc.post("/v1/tasks", task_body("c-1")).status == 201u);
    const auto r = svc.request(verb::delete_, "/v1/tasks/c-1");
    BOOST_TEST_REQUIRE(r.status == 200u, r);
    BOOST_TEST(r.json().at("state").as_string() == "cancelled");
    BOOST_TEST(state_of(svc, "c-1") == "cancelled");

    const auto again = svc.request(verb::delete_, "/v1/tasks/c-1");
    BOOST_TEST(again.status == 409u, again);
    BOOST_TEST(again.error_code() == "too_late");

    const auto unknown = svc.request(verb::delete_, "/v1/tasks/c-2");
    BOOST_TEST(unknown.status == 404u, unknown);

    // A cancelled id is remembered: submitting it again answers exists.
    BOOST_TEST(svc.post("/v1/tasks", task_body("c-1")).status == 200u);
}

BOOST_AUTO_TEST_CASE(cancel_of_a_running_task_is_too_late) {
    ts::api_service svc;
    BOOST_TEST_REQUIRE(svc.post("/v1/tasks", task_body("run-1", R"("delay_ms": 0)")).status ==
                       201u);
    test_worker w(svc);
    std::optional<dq::job> held;
    w.start([&](dq::job j) { held.emplace(std::move(j)); });
    BOOST_TEST_REQUIRE(ts::run_until(w.io, [&] { return held.has_value(); }));
    BOOST_TEST(state_of(svc, "run-1") == "running");

    const auto r = svc.request(verb::delete_, "/v1/tasks/run-1");
    BOOST_TEST(r.status == 409u, r);
    BOOST_TEST(r.error_code() == "too_late");

    held->succeed();
    BOOST_TEST_REQUIRE(ts::run_until(w.io, [&] { return w.worker->stats().acked == 1; }));
    const auto st = svc.get("/v1/tasks/run-1").json();
    BOOST_TEST(st.at("state").as_string() == "finished");
    BOOST_TEST(st.at("attempts").as_int64() == 1);
    const auto& log = st.at("log").as_array();
    BOOST_TEST_REQUIRE(log.size() == 1u);
    BOOST_TEST(log[0].at("outcome").as_string() == "success");
    BOOST_TEST(log[0].at("worker").as_string() == "test-worker");
}

BOOST_AUTO_TEST_CASE(on_conflict_replace_and_debounce_change_a_delayed_task) {
    ts::api_service svc;
    BOOST_TEST_REQUIRE(svc.post("/v1/tasks", task_body("oc-1")).status == 201u);
    // keep (the default, or named): 200, the task as it was, not replaced.
    auto kept =
        svc.post("/v1/tasks", task_body("oc-1", R"("delay_ms": 5)", R"(, "on_conflict": "keep")"));
    BOOST_TEST_REQUIRE(kept.status == 200u, kept);
    BOOST_TEST(kept.json().at("replaced").as_bool() == false);
    // replace: the new callback and due time.
    auto far = ts::rfc3339(std::chrono::system_clock::now() + 48h);
    far.insert(far.size() - 1, ".000"); // epoch_ms() reads milliseconds
    auto replaced = svc.post(
        "/v1/tasks",
        R"({"id": "oc-1", "due_at": ")" + far +
            R"(", "callback": {"url": "http://127.0.0.1:9/new"}, "on_conflict": "replace"})");
    BOOST_TEST_REQUIRE(replaced.status == 200u, replaced);
    BOOST_TEST(replaced.json().at("replaced").as_bool() == true);
    BOOST_TEST(replaced.json().at("callback").at("url").as_string() == "http://127.0.0.1:9/new");
    BOOST_TEST(epoch_ms(replaced.json().at("due_at").as_string()) == epoch_ms(far));
    // debounce: the first submit is capped at created + max_delay_ms, and so are later ones.
    auto first = svc.post("/v1/tasks", task_body("oc-2", R"("delay_ms": 3600000)",
                                                 R"(, "on_conflict": "debounce",
                                                    "max_delay_ms": 60000)"));
    BOOST_TEST_REQUIRE(first.status == 201u, first);
    const auto created = epoch_ms(svc.get("/v1/tasks/oc-2").json().at("created_at").as_string());
    BOOST_TEST(epoch_ms(first.json().at("due_at").as_string()) <= created + 60000);
    auto again = svc.post("/v1/tasks", task_body("oc-2", R"("delay_ms": 3600000)",
                                                 R"(, "on_conflict": "debounce",
                                                    "max_delay_ms": 60000)"));
    BOOST_TEST_REQUIRE(again.status == 200u, again);
    BOOST_TEST(again.json().at("replaced").as_bool() == true);
    BOOST_TEST(epoch_ms(again.json().at("due_at").as_string()) == created + 60000);
    // Bad combinations name their field, and change nothing.
    for (const auto& [extra, field] : std::vector<std::pair<std::string, std::string>>{
             {R"(, "on_conflict": "debounce")", "max_delay_ms"},
             {R"(, "max_delay_ms": 5)", "max_delay_ms"},
             {R"(, "on_conflict": "replace", "max_delay_ms": 5)", "max_delay_ms"},
             {R"(, "on_conflict": "debounce", "max_delay_ms": -1)", "max_delay_ms"},
             {R"(, "on_conflict": "overwrite")", "on_conflict"},
             {R"(, "on_conflict": 1)", "on_conflict"}}) {
        const auto r = svc.post("/v1/tasks", task_body("oc-2", R"("delay_ms": 1)", extra));
        BOOST_TEST(r.status == 400u, extra << ": " << r);
        BOOST_TEST(r.error_field() == field, extra);
    }
    BOOST_TEST(epoch_ms(svc.get("/v1/tasks/oc-2").json().at("due_at").as_string()) ==
               created + 60000);
}

BOOST_AUTO_TEST_CASE(replace_of_a_running_task_is_refused_with_409_naming_its_state) {
    ts::api_service svc;
    BOOST_TEST_REQUIRE(svc.post("/v1/tasks", task_body("run-r", R"("delay_ms": 0)")).status ==
                       201u);
    test_worker w(svc);
    std::optional<dq::job> held;
    w.start([&](dq::job j) { held.emplace(std::move(j)); });
    BOOST_TEST_REQUIRE(ts::run_until(w.io, [&] { return held.has_value(); }));
    for (const std::string mode : {R"(, "on_conflict": "replace")",
                                   R"(, "on_conflict": "debounce", "max_delay_ms": 1000)"}) {
        const auto r = svc.post("/v1/tasks", task_body("run-r", R"("delay_ms": 60000)", mode));
        BOOST_TEST(r.status == 409u, r);
        BOOST_TEST(r.error_code() == "conflict");
        BOOST_TEST(r.json().at("error").at("state").as_string() == "running");
    }
    // In a batch: that item alone.
    const auto b = svc.post("/v1/tasks:batch", "{\"tasks\": [" +
                                                   task_body("run-r", R"("delay_ms": 60000)",
                                                             R"(, "on_conflict": "replace")") +
                                                   ", " + task_body("run-other") + "]}");
    BOOST_TEST_REQUIRE(b.status == 200u, b);
    const auto bj = b.json();
    const auto& results = bj.at("results").as_array();
    BOOST_TEST_REQUIRE(results.size() == 2u);
    BOOST_TEST(results[0].at("status").as_int64() == 409);
    BOOST_TEST(results[0].at("error").at("state").as_string() == "running");
    BOOST_TEST(results[0].at("error").at("index").as_int64() == 0);
    BOOST_TEST(results[1].at("status").as_int64() == 201);
    // The running task kept its callback.
    BOOST_TEST(svc.get("/v1/tasks/run-r").json().at("callback").at("method").as_string() == "PUT");
    held->succeed();
    BOOST_TEST_REQUIRE(ts::run_until(w.io, [&] { return w.worker->stats().acked == 1; }));
}

BOOST_AUTO_TEST_CASE(a_batch_stores_its_good_items_and_names_the_bad_one_by_index_and_field) {
    ts::api_service svc;
    BOOST_TEST_REQUIRE(svc.post("/v1/tasks", task_body("b-old")).status == 201u);
    const std::string items[] = {
        task_body("b-1"),
        task_body("b-old"), // exists: kept
        R"({"id": "b-bad", "delay_ms": 5, "callback": {"url": "ftp://127.0.0.1/x"}})",
        task_body("b-old", R"("delay_ms": 7000)", R"(, "on_conflict": "replace")"),
        R"({"delay_ms": 5, "callback": {"url": "http://127.0.0.1:9/"}})", // id generated
        R"([1, 2])",
        task_body("b-1"), // the first item, again: found
        R"({"id": "b-typo", "delay_ms": 5, "callbak": {}})"};
    std::string body = R"({"tasks": [)";
    for (std::size_t i = 0; i < std::size(items); ++i) {
        body += (i ? ", " : "") + items[i];
    }
    body += "]}";
    const auto r = svc.post("/v1/tasks:batch", body);
    BOOST_TEST_REQUIRE(r.status == 200u, r);
    const auto rj = r.json();
    const auto& res = rj.at("results").as_array();
    BOOST_TEST_REQUIRE(res.size() == std::size(items));
    const int statuses[] = {201, 200, 400, 200, 201, 400, 200, 400};
    for (std::size_t i = 0; i < res.size(); ++i) {
        BOOST_TEST(res[i].at("status").as_int64() == statuses[i], "item " << i << ": " << res[i]);
    }
    BOOST_TEST(res[0].at("task").at("id").as_string() == "b-1");
    BOOST_TEST(res[1].at("task").at("replaced").as_bool() == false);
    BOOST_TEST(res[2].at("error").at("field").as_string() == "callback.url");
    BOOST_TEST(res[2].at("error").at("index").as_int64() == 2);
    BOOST_TEST(res[2].at("error").at("code").as_string() == "invalid_field");
    BOOST_TEST(res[3].at("task").at("replaced").as_bool() == true);
    const std::string generated(res[4].at("task").at("id").as_string());
    BOOST_TEST(res[5].at("error").at("field").as_string() == "task");
    BOOST_TEST(res[5].at("error").at("index").as_int64() == 5);
    BOOST_TEST(res[6].at("task").at("replaced").as_bool() == false);
    BOOST_TEST(res[7].at("error").at("field").as_string() == "callbak");
    BOOST_TEST(res[7].at("error").at("index").as_int64() == 7);
    // The good ones are stored; the bad ones are not.
    BOOST_TEST(state_of(svc, "b-1") == "delayed");
    BOOST_TEST(state_of(svc, generated) == "delayed");
    BOOST_TEST(svc.get("/v1/tasks/b-bad").status == 404u);
    BOOST_TEST(svc.get("/v1/tasks/b-typo").status == 404u);
    const auto old = svc.get("/v1/tasks/b-old").json();
    BOOST_TEST(epoch_ms(old.at("due_at").as_string()) -
                   epoch_ms(old.at("updated_at").as_string()) ==
               7000);
}

BOOST_AUTO_TEST_CASE(a_batch_refused_as_a_whole_stores_nothing) {
    ts::api_service svc;
    // 1001 tasks: 413, naming "tasks"; none stored.
    std::string body = R"({"tasks": [)";
    for (int i = 0; i < 1001; ++i) {
        body += (i ? ", " : "") + task_body("many-" + std::to_string(i));
    }
    body += "]}";
    const auto big = svc.post("/v1/tasks:batch", body);
    BOOST_TEST(big.status == 413u, big);
    BOOST_TEST(big.error_code() == "batch_too_large");
    BOOST_TEST(big.error_field() == "tasks");
    BOOST_TEST(svc.get("/v1/tasks/many-0").status == 404u);
    for (const auto& [b, field] : std::vector<std::pair<std::string, std::string>>{
             {"not json", "body"},
             {"[]", "body"},
             {"{}", "tasks"},
             {R"({"tasks": {}})", "tasks"},
             {R"({"tasks": []})", "tasks"},
             {R"({"tasks": [], "more": 1})", "more"}}) {
        const auto r = svc.post("/v1/tasks:batch", b);
        BOOST_TEST(r.status == 400u, b << ": " << r);
        BOOST_TEST(r.error_field() == field, b);
    }
    BOOST_TEST(svc.get("/v1/tasks:batch").status == 405u);
    // 1000 tasks pass (one round trip to the store), each answered.
    body = R"({"tasks": [)";
    for (int i = 0; i < 1000; ++i) {
        body += (i ? ", " : "") + task_body("k-" + std::to_string(i));
    }
    body += "]}";
    const auto ok = svc.post("/v1/tasks:batch", body);
    BOOST_TEST_REQUIRE(ok.status == 200u, ok.status);
    const auto okj = ok.json();
    const auto& res = okj.at("results").as_array();
    BOOST_TEST_REQUIRE(res.size() == 1000u);
    BOOST_TEST(std::all_of(res.begin(), res.end(),
                           [](const auto& x) { return x.at("status").as_int64() == 201; }));
    BOOST_TEST(state_of(svc, "k-999") == "delayed");
}

BOOST_AUTO_TEST_CASE(reschedule_moves_the_due_time) {
    ts::api_service svc;
    const auto created = svc.post("/v1/tasks", task_body("r-1"));
    BOOST_TEST_REQUIRE(created.status == 201u, created);

    const auto at =
        svc.request(verb::patch, "/v1/tasks/r-1", R"({"due_at": "2098-01-02T03:04:05.006Z"})");
    BOOST_TEST_REQUIRE(at.status == 200u, at);
    BOOST_TEST(at.json().at("due_at").as_string() == "2098-01-02T03:04:05.006Z");
    BOOST_TEST(at.json().at("state").as_string() == "delayed");

    const auto delay = svc.request(verb::patch, "/v1/tasks/r-1", R"({"delay_ms": 3600000})");
    BOOST_TEST_REQUIRE(delay.status == 200u, delay);
    BOOST_TEST(delay.json().at("due_at").as_string() < "2098");

    const auto unknown = svc.request(verb::patch, "/v1/tasks/r-2", R"({"delay_ms": 5})");
    BOOST_TEST(unknown.status == 404u, unknown);

    BOOST_TEST_REQUIRE(svc.request(verb::delete_, "/v1/tasks/r-1").status == 200u);
    const auto cancelled = svc.request(verb::patch, "/v1/tasks/r-1", R"({"delay_ms": 5})");
    BOOST_TEST(cancelled.status == 409u, cancelled);
}

BOOST_AUTO_TEST_CASE(dead_letters_are_listed_by_page_retried_and_deleted) {
    ts::api_service svc;
    for (const char* id : {"d-1", "d-2", "d-3"}) {
        BOOST_TEST_REQUIRE(svc.post("/v1/tasks", task_body(id, R"("delay_ms": 0)",
                                                           R"(, "retry": {"attempts": 1})"))
                               .status == 201u);
    }
    {
        test_worker w(svc);
        w.start([](const dq::job&) { return dq::outcome::failure("the sink said 400"); });
        BOOST_TEST_REQUIRE(ts::run_until(w.io, [&] { return w.worker->stats().acked == 3; }));
    }
    const auto st = svc.get("/v1/tasks/d-2").json();
    BOOST_TEST(st.at("state").as_string() == "dead");
    BOOST_TEST(st.at("last_error").as_string() == "the sink said 400");
    BOOST_TEST_REQUIRE(st.at("log").as_array().size() == 1u);
    BOOST_TEST(st.at("log").at(0).at("outcome").as_string() == "failure");

    const auto page1 = svc.get("/v1/dead?limit=2");
    BOOST_TEST_REQUIRE(page1.status == 200u, page1);
    const auto p1 = page1.json().as_object();
    BOOST_TEST_REQUIRE(p1.at("entries").as_array().size() == 2u);
    BOOST_TEST_REQUIRE(p1.at("next_cursor").is_string());
    const auto page2 =
        svc.get("/v1/dead?limit=2&cursor=" + std::string(p1.at("next_cursor").as_string()));
    BOOST_TEST_REQUIRE(page2.status == 200u, page2);
    const auto p2 = page2.json().as_object();
    BOOST_TEST_REQUIRE(p2.at("entries").as_array().size() == 1u);
    BOOST_TEST(p2.at("next_cursor").is_null());
    std::vector<std::string> ids;
    for (const auto* p : {&p1, &p2}) {
        for (const auto& e : p->at("entries").as_array()) {
            ids.emplace_back(e.at("id").as_string());
            BOOST_TEST(e.at("last_error").as_string() == "the sink said 400");
            BOOST_TEST(e.at("attempts").as_int64() == 1);
        }
    }
    std::sort(ids.begin(), ids.end());
    BOOST_TEST(ids == (std::vector<std::string>{"d-1", "d-2", "d-3"}),
               boost::test_tools::per_element());

    const auto retried = svc.post("/v1/dead/d-1/retry", R"({"delay_ms": 600000})");
    BOOST_TEST_REQUIRE(retried.status == 200u, retried);
    BOOST_TEST(retried.json().at("state").as_string() == "delayed");
    BOOST_TEST(retried.json().at("attempts").as_int64() == 0);
    BOOST_TEST(svc.post("/v1/dead/d-1/retry", "").status == 404u);

    const auto deleted = svc.request(verb::delete_, "/v1/dead/d-2");
    BOOST_TEST_REQUIRE(deleted.status == 200u, deleted);
    BOOST_TEST(svc.get("/v1/tasks/d-2").status == 404u);
    BOOST_TEST(svc.request(verb::delete_, "/v1/dead/d-2").status == 404u);

    const auto rest = svc.get("/v1/dead").json();
    BOOST_TEST_REQUIRE(rest.at("entries").as_array().size() == 1u);
    BOOST_TEST(rest.at("entries").at(0).at("id").as_string() == "d-3");
}

BOOST_AUTO_TEST_CASE(result_reports_are_validated_and_need_a_pending_attempt) {
    ts::api_service svc;
    BOOST_TEST_REQUIRE(svc.post("/v1/tasks", task_body("res-1")).status == 201u);
    const auto missing = svc.post("/v1/tasks/res-1/result", R"({"outcome": "success"})");
    BOOST_TEST(missing.status == 400u, missing);
    BOOST_TEST(missing.error_field() == "attempt");
    const auto bad = svc.post("/v1/tasks/res-1/result", R"({"attempt": 1, "outcome": "maybe"})");
    BOOST_TEST(bad.status == 400u, bad);
    BOOST_TEST(bad.error_field() == "outcome");
    const auto after = svc.post("/v1/tasks/res-1/result",
                                R"({"attempt": 1, "outcome": "success", "retry_after_ms": 5})");
    BOOST_TEST(after.status == 400u, after);
    BOOST_TEST(after.error_field() == "retry_after_ms");
    const auto none = svc.post("/v1/tasks/res-1/result",
                               R"({"attempt": 1, "outcome": "retry", "retry_after_ms": 5})");
    BOOST_TEST(none.status == 404u, none);
    BOOST_TEST(none.error_code() == "no_pending_attempt");
}

BOOST_AUTO_TEST_CASE(probes_and_metrics) {
    ts::api_service svc;
    BOOST_TEST(svc.get("/healthz").status == 200u);
    const auto ready = svc.get("/readyz");
    BOOST_TEST_REQUIRE(ready.status == 200u, ready);
    BOOST_TEST(ready.json().at("status").as_string() == "ready");

    BOOST_TEST_REQUIRE(svc.post("/v1/tasks", task_body("m-1")).status == 201u);
    BOOST_TEST_REQUIRE(svc.post("/v1/tasks", task_body("m-1")).status == 200u);
    BOOST_TEST_REQUIRE(svc.request(verb::delete_, "/v1/tasks/m-1").status == 200u);
    BOOST_TEST_REQUIRE(svc.get("/v1/tasks/none").status == 404u);

    const auto m = svc.get("/metrics");
    BOOST_TEST_REQUIRE(m.status == 200u, m);
    BOOST_TEST(m.headers["Content-Type"].starts_with("text/plain; version=0.0.4"));
    const std::string& text = m.body;
    for (const char* line :
         {"timewheeld_tasks_submitted_total 1\n", "timewheeld_tasks_cancelled_total 1\n",
          "timewheeld_http_requests_total{route=\"POST /v1/tasks\",status=\"201\"} 1\n",
          "timewheeld_http_requests_total{route=\"POST /v1/tasks\",status=\"200\"} 1\n",
          "timewheeld_http_requests_total{route=\"GET /v1/tasks/{id}\",status=\"404\"} 1\n",
          "timewheeld_store_round_trip_seconds_count{op=\"submit\"} 2\n",
          "# TYPE timewheeld_callbacks_fired_total counter\n",
          "# TYPE timewheeld_callbacks_succeeded_total counter\n",
          "# TYPE timewheeld_callbacks_retried_total counter\n",
          "# TYPE timewheeld_tasks_dead_total counter\n",
          "# TYPE timewheeld_callbacks_in_flight gauge\n",
          "# TYPE timewheeld_lateness_seconds histogram\n",
          "# TYPE timewheeld_callback_latency_seconds histogram\n",
          "timewheeld_store_round_trip_seconds_bucket{op=\"submit\",le=\"+Inf\"} 2\n"}) {
        BOOST_TEST(text.find(line) != std::string::npos, "missing: " << line);
    }

    // The store gone: not ready, but alive.
    svc.redis().stop();
    const auto gone = svc.get("/readyz");
    BOOST_TEST(gone.status == 503u, gone);
    BOOST_TEST(gone.error_code() == "store_unavailable");
    BOOST_TEST(svc.get("/healthz").status == 200u);
    const auto submit = svc.post("/v1/tasks", task_body("m-2"));
    BOOST_TEST(submit.status == 503u, submit);
}

// The worker's store failures have no request to answer them: /metrics counts them by
// operation (at 0 from the start, so that an alert on their increase sees the first one).
BOOST_AUTO_TEST_CASE(a_worker_whose_store_goes_away_counts_its_failed_operations) {
    ts::api_service::options o;
    o.worker = true;
    ts::api_service svc(o);
    // The sum of timewheeld_store_errors_total over the worker's operations, as scraped.
    const auto worker_errors = [&] {
        const auto m = svc.get("/metrics");
        BOOST_TEST_REQUIRE(m.status == 200u, m);
        std::uint64_t sum = 0;
        for (const char* op :
             {"claim", "start", "acknowledge", "renew", "release", "wait_wakeup"}) {
            const std::string series =
                "timewheeld_store_errors_total{op=\"" + std::string(op) + "\"} ";
            const auto at = m.body.find(series);
            BOOST_TEST_REQUIRE(at != std::string::npos, "missing: " << series);
            sum += std::stoull(m.body.substr(at + series.size()));
        }
        return sum;
    };
    BOOST_TEST(worker_errors() == 0u);
    svc.redis().stop();
    BOOST_TEST(ts::eventually([&] { return worker_errors() > 0; }),
               "no worker store error counted");
}

BOOST_AUTO_TEST_SUITE_END()
