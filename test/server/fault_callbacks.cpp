//
// test/server/fault_callbacks.cpp
//
// Callbacks end to end through the service: the timewheeld binary with its worker on a
// SQLite store, a task submitted over HTTP, and a recording sink on 127.0.0.1 that answers
// as each case says. What the callback client's own tests (callback_client.cpp) check on
// the client alone is checked here on the whole path: the answer's verdict becomes the
// task's outcome in the store, and the retry is scheduled by the store.
//
//   - 429 with Retry-After: 2: the retry arrives no earlier than 2 s after the first attempt;
//   - no answer: the attempt times out after --callback-timeout-ms and is retried;
//   - 400 (even with a Retry-After): no retry, the task is dead;
//   - a signing secret: the sink checks Timewheel-Signature over the body it received,
//     with its own HMAC (support/signature_check.hpp);
//   - --max-per-host: the sink never holds more requests at once than the cap, while more
//     tasks than the cap are due at the same time.
//
#define BOOST_TEST_MODULE server_fault_callbacks
#include <boost/test/unit_test.hpp>

#include <test/server/support/service_node.hpp>
#include <test/server/support/signature_check.hpp>

#include <timewheeld/callback/signature.hpp>

#include <chrono>
#include <cstdlib>
#include <functional>
#include <mutex>
#include <string>
#include <vector>

namespace ts = timewheel::test;
namespace cs = timewheel::test;
namespace json = boost::json;
using namespace std::chrono_literals;
using steady = std::chrono::steady_clock;

namespace {

// A sink that notes the steady-clock time of each request it receives and answers each
// by its rank (from 0).
class timed_sink {
    // Before the sink: its thread, which uses them, is joined first.
    mutable std::mutex mutex_;
    std::vector<steady::time_point> arrivals_;

public:
    explicit timed_sink(std::function<cs::reply(std::size_t)> answer) {
        sink.respond([this, answer = std::move(answer)](const cs::recorded_request&) {
            std::lock_guard lock(mutex_);
            arrivals_.push_back(steady::now());
            return answer(arrivals_.size() - 1);
        });
    }
    std::vector<steady::time_point> arrivals() const {
        std::lock_guard lock(mutex_);
        return arrivals_;
    }
    cs::sink sink;
};

cs::reply answer(unsigned status, std::vector<std::pair<std::string, std::string>> headers = {}) {
    cs::reply r;
    r.status = status;
    r.headers = std::move(headers);
    return r;
}

std::int64_t ms_between(steady::time_point a, steady::time_point b) {
    return std::chrono::duration_cast<std::chrono::milliseconds>(b - a).count();
}

const json::array& log_of(const json::object& task) {
    return task.at("log").as_array();
}

std::string error_of(const json::value& entry) {
    const auto* e = entry.as_object().if_contains("error");
    return e && e->is_string() ? std::string(e->as_string()) : std::string();
}

} // namespace

BOOST_AUTO_TEST_CASE(a_429_with_retry_after_is_retried_no_earlier_than_it_says) {
    timed_sink t([](std::size_t n) {
        return n == 0 ? answer(429, {{"Retry-After", "2"}}) : answer(200);
    });
    const ts::temp_dir dir("timewheeld-cb");
    ts::service_node node({.store = ts::sqlite_store_url(dir)});
    const auto created = node.post("/v1/tasks", ts::task_json("slow-down-1", t.sink.url()));
    BOOST_TEST_REQUIRE(created.status == 201u, created);

    BOOST_TEST_REQUIRE(ts::eventually([&] { return node.state("slow-down-1") == "finished"; }),
                       node.log());
    const auto arrivals = t.arrivals();
    BOOST_TEST_REQUIRE(arrivals.size() == 2u);
    const auto gap = ms_between(arrivals[0], arrivals[1]);
    BOOST_TEST_MESSAGE("429 with Retry-After: 2, the retry came " << gap << " ms later");
    BOOST_TEST(gap >= 2000);
    BOOST_TEST(gap < 30000); // a watchdog: the retry does come
    const auto task = node.task("slow-down-1");
    const auto& log = log_of(task);
    BOOST_TEST_REQUIRE(log.size() >= 2u, json::serialize(task));
    BOOST_TEST(log.front().at("outcome").as_string() == "retry");
    BOOST_TEST(error_of(log.front()).find("429") != std::string::npos, json::serialize(task));
    BOOST_TEST(log.back().at("outcome").as_string() == "success");
}

BOOST_AUTO_TEST_CASE(a_callback_that_never_answers_times_out_and_is_retried) {
    timed_sink t([](std::size_t n) {
        cs::reply r = answer(200);
        if (n == 0) {
            r.act = cs::reply::action::hang;
        }
        return r;
    });
    const ts::temp_dir dir("timewheeld-cb");
    ts::service_node node(
        {.store = ts::sqlite_store_url(dir), .args = {"--callback-timeout-ms", "500"}});
    const auto created = node.post("/v1/tasks", ts::task_json("silent-1", t.sink.url()));
    BOOST_TEST_REQUIRE(created.status == 201u, created);

    BOOST_TEST_REQUIRE(ts::eventually([&] { return node.state("silent-1") == "finished"; }),
                       node.log());
    const auto arrivals = t.arrivals();
    BOOST_TEST_REQUIRE(arrivals.size() == 2u);
    // The first attempt was given up no earlier than its timeout.
    BOOST_TEST(ms_between(arrivals[0], arrivals[1]) >= 500);
    const auto task = node.task("silent-1");
    const auto& log = log_of(task);
    BOOST_TEST_REQUIRE(log.size() == 2u, json::serialize(task));
    BOOST_TEST(log[0].at("outcome").as_string() == "retry");
    BOOST_TEST(error_of(log[0]).find("no answer within 500 ms") != std::string::npos,
               json::serialize(task));
    BOOST_TEST(log[1].at("outcome").as_string() == "success");
    BOOST_TEST(t.sink.requests()[1].header("Timewheel-Attempt").value_or("") == "2");
}

BOOST_AUTO_TEST_CASE(a_400_is_not_retried_even_with_a_retry_after_and_the_task_is_dead) {
    timed_sink t([](std::size_t) { return answer(400, {{"Retry-After", "1"}}); });
    const ts::temp_dir dir("timewheeld-cb");
    ts::service_node node({.store = ts::sqlite_store_url(dir)});
    const auto created = node.post("/v1/tasks", ts::task_json("refused-1", t.sink.url()));
    BOOST_TEST_REQUIRE(created.status == 201u, created);

    BOOST_TEST_REQUIRE(ts::eventually([&] { return node.state("refused-1") == "dead"; }),
                       node.log());
    BOOST_TEST(t.arrivals().size() == 1u);
    const auto task = node.task("refused-1");
    const auto& log = log_of(task);
    BOOST_TEST_REQUIRE(log.size() == 1u, json::serialize(task));
    BOOST_TEST(log[0].at("outcome").as_string() == "failure");
    const auto dead = node.get("/v1/dead");
    BOOST_TEST_REQUIRE(dead.status == 200u, dead);
    const auto listed = dead.json();
    BOOST_TEST_REQUIRE(listed.at("entries").as_array().size() == 1u, dead);
    BOOST_TEST(listed.at("entries").at(0).at("id").as_string() == "refused-1");
}

BOOST_AUTO_TEST_CASE(the_sink_verifies_the_signature_over_the_body_it_received) {
    const std::string secret = "correct horse battery staple";
    cs::sink sink;
    const ts::temp_dir dir("timewheeld-cb");
    // The secret through its variable, as docs/server.md recommends (a flag shows in ps).
    ts::service_node node(
        {.store = ts::sqlite_store_url(dir), .env = {"TIMEWHEELD_SIGNING_SECRET=" + secret}});
    const std::string body = R"({"order": 42, "note": "ünïcødé & \"quotes\""})";
    const auto created = node.post(
        "/v1/tasks", ts::task_json("signed-1", sink.url(), 0,
                                   R"({"attempts": 5, "base_ms": 50, "cap_ms": 100})", body));
    BOOST_TEST_REQUIRE(created.status == 201u, created);

    BOOST_TEST_REQUIRE(ts::eventually([&] { return node.state("signed-1") == "finished"; }),
                       node.log());
    const auto requests = sink.requests();
    BOOST_TEST_REQUIRE(requests.size() == 1u);
    const auto& r = requests[0];
    BOOST_TEST(r.body == body);
    const auto header = r.header("Timewheel-Signature");
    BOOST_TEST_REQUIRE(header.has_value());
    BOOST_TEST(ts::signature_matches(r, secret, sink.url()), *header);
    // The check can fail: another secret, another body.
    BOOST_TEST(!ts::signature_matches(r, secret + "x", sink.url()));
    auto changed = r;
    changed.body += " ";
    BOOST_TEST(!ts::signature_matches(changed, secret, sink.url()));
    // t is the time of sending, on this machine's clock.
    const auto parts = ts::split_signature(*header);
    BOOST_TEST_REQUIRE(parts.has_value());
    const auto t = std::stoll(parts->t);
    BOOST_TEST(std::abs(t - ts::now_ms() / 1000) < 300);
    // The service's own receiver-side check agrees.
    BOOST_TEST(timewheeld::callback::verify_signature(*header, secret,
                                                      {r.method, sink.url(), "signed-1", 1, r.body},
                                                      std::chrono::system_clock::now()));
}

BOOST_AUTO_TEST_CASE(no_more_requests_at_once_to_a_host_than_the_cap) {
    constexpr std::size_t cap = 3;
    constexpr std::size_t tasks = 4 * cap;
    cs::sink sink;
    // Each request is held until `cap` are held at once (or 10 s): the sink's maximum then
    // reaches the cap if the service sends that many together, and exceeds it only if the
    // service sends more.
    sink.respond([](const cs::recorded_request&) {
        cs::reply r;
        r.wait_for_concurrent = cap;
        return r;
    });
    const ts::temp_dir dir("timewheeld-cb");
    ts::service_node node(
        {.store = ts::sqlite_store_url(dir),
         .args = {"--max-per-host", std::to_string(cap), "--callback-timeout-ms", "60000"}});
    // All due at the same instant, a second from now.
    const auto due = ts::rfc3339_ms(std::chrono::system_clock::now() + 1s);
    for (std::size_t i = 0; i < tasks; ++i) {
        const std::string id = "capped-" + std::to_string(i);
        const auto created =
            node.post("/v1/tasks", R"({"id": )" + ts::json_quote(id) + R"(, "due_at": )" +
                                       ts::json_quote(due) + R"(, "callback": {"url": )" +
                                       ts::json_quote(sink.url()) + "}}");
        BOOST_TEST_REQUIRE(created.status == 201u, created);
    }
    BOOST_TEST_REQUIRE(ts::eventually(
                           [&] {
                               for (std::size_t i = 0; i < tasks; ++i) {
                                   if (node.state("capped-" + std::to_string(i)) != "finished") {
                                       return false;
                                   }
                               }
                               return true;
                           },
                           120s),
                       node.log());
    BOOST_TEST(sink.requests().size() == tasks);
    BOOST_TEST_MESSAGE("cap " << cap << ", " << tasks
                              << " tasks due at once: the sink held at most "
                              << sink.max_concurrent() << " requests at once");
    BOOST_TEST(sink.max_concurrent() <= cap);
    // And the cap was reached: the service did call in parallel.
    BOOST_TEST(sink.max_concurrent() == cap);
}
