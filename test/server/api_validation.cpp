//
// test/server/api_validation.cpp
//
// Bad input to timewheeld, black-box over HTTP: each malformed, missing, contradictory,
// unknown or out-of-range field gets a 400 whose JSON error names the field, and nothing
// is stored (a GET of the id afterwards answers 404). Also the answers for unknown routes
// and methods.
//
#define BOOST_TEST_MODULE server_api_validation
#include <boost/test/unit_test.hpp>

#include <test/server/support/api_service.hpp>

#include <string>
#include <vector>

namespace ts = timewheel::test;
using verb = boost::beast::http::verb;

namespace {

struct bad_case {
    std::string id;    // the id the body carries (checked absent afterwards; "" for none)
    std::string body;  // the request body
    std::string field; // the field the error must name
};

const std::string cb = R"("callback": {"url": "http://127.0.0.1:9/hook"})";

std::string with(const std::string& id, const std::string& rest) {
    return R"({"id": ")" + id + R"(", )" + rest + "}";
}

} // namespace

BOOST_AUTO_TEST_SUITE(api_validation, *boost::unit_test::precondition(ts::redis_available()))

BOOST_AUTO_TEST_CASE(every_bad_field_is_named_and_nothing_is_stored) {
    ts::api_service svc;
    const std::string long_url = "http://127.0.0.1/" + std::string(3000, 'a');
    const std::vector<bad_case> cases = {
        {"", R"({"id": "v0", "delay_ms": 1, )", "body"},
        {"", R"([1, 2, 3])", "body"},
        {"v1", with("v1", R"("delay_ms": 1, "colour": "red", )" + cb), "colour"},
        {"v2", with("v2", R"("delay_ms": 1)"), "callback"},
        {"v3", with("v3", cb), "due_at"},
        {"v4", with("v4", R"("delay_ms": 1, "due_at": "2030-01-01T00:00:00Z", )" + cb), "due_at"},
        {"v5", with("v5", R"("due_at": "tomorrow", )" + cb), "due_at"},
        {"v6", with("v6", R"("due_at": "1969-12-31T23:59:59Z", )" + cb), "due_at"},
        {"v7", with("v7", R"("due_at": "2030-02-30T00:00:00Z", )" + cb), "due_at"},
        {"v8", with("v8", R"("due_at": 1700000000, )" + cb), "due_at"},
        {"v9", with("v9", R"("delay_ms": -1, )" + cb), "delay_ms"},
        {"v10", with("v10", R"("delay_ms": "5", )" + cb), "delay_ms"},
        {"v11", with("v11", R"("delay_ms": 1.5, )" + cb), "delay_ms"},
        {"v12", with("v12", R"("delay_ms": 99999999999999999999, )" + cb), "delay_ms"},
        {"v13", with("v13", R"("delay_ms": 1, "callback": "http://x")"), "callback"},
        {"v14", with("v14", R"("delay_ms": 1, "callback": {"method": "POST"})"), "callback.url"},
        {"v15", with("v15", R"("delay_ms": 1, "callback": {"url": "ftp://127.0.0.1/x"})"),
         "callback.url"},
        {"v16", with("v16", R"("delay_ms": 1, "callback": {"url": ")" + long_url + R"("})"),
         "callback.url"},
        {"v17", with("v17", R"("delay_ms": 1, "callback": {"url": "http:///x"})"), "callback.url"},
        {"v18", with("v18", R"("delay_ms": 1, "callback": {"url": "http://a b/"})"),
         "callback.url"},
        {"v19", with("v19", R"("delay_ms": 1, "callback": {"url": "http://h:99999/"})"),
         "callback.url"},
        {"v20", with("v20", R"("delay_ms": 1, "callback": {"url": "/relative"})"), "callback.url"},
        {"v21",
         with("v21", R"("delay_ms": 1, "callback": {"url": "http://h/", "method": "TRACE"})"),
         "callback.method"},
        {"v22", with("v22", R"("delay_ms": 1, "callback": {"url": "http://h/", "headers": [1]})"),
         "callback.headers"},
        {"v23",
         with("v23", R"("delay_ms": 1, "callback": {"url": "http://h/", "headers": {"X-A": 1}})"),
         "callback.headers.X-A"},
        {"v24",
         with("v24",
              R"("delay_ms": 1, "callback": {"url": "http://h/", "headers": {"Host": "e"}})"),
         "callback.headers.Host"},
        {"v25",
         with(
             "v25",
             R"("delay_ms": 1, "callback": {"url": "http://h/", "headers": {"X-A": "a\r\nB: c"}})"),
         "callback.headers.X-A"},
        {"v26",
         with("v26", R"("delay_ms": 1, "callback": {"url": "http://h/", "headers": {"A B": "c"}})"),
         "callback.headers.A B"},
        {"v27", with("v27", R"("delay_ms": 1, "callback": {"url": "http://h/", "timeout_ms": 0})"),
         "callback.timeout_ms"},
        {"v28", with("v28", R"("delay_ms": 1, "callback": {"url": "http://h/", "body": {}})"),
         "callback.body"},
        {"v29", with("v29", R"("delay_ms": 1, "callback": {"url": "http://h/", "extra": 1})"),
         "callback.extra"},
        // What the worker would refuse, the API refuses (one parser): headers the client
        // sets itself, user info in the URL, more than 8 KiB of headers.
        {"w1",
         with("w1",
              R"("delay_ms": 1, "callback": {"url": "http://h/", "headers": {"User-Agent": "x"}})"),
         "callback.headers.User-Agent"},
        {"w2",
         with(
             "w2",
             R"("delay_ms": 1, "callback": {"url": "http://h/", "headers": {"Expect": "100-continue"}})"),
         "callback.headers.Expect"},
        {"w3",
         with(
             "w3",
             R"("delay_ms": 1, "callback": {"url": "http://h/", "headers": {"Timewheel-Attempt": "1"}})"),
         "callback.headers.Timewheel-Attempt"},
        {"w4",
         with(
             "w4",
             R"("delay_ms": 1, "callback": {"url": "http://h/", "headers": {"Proxy-Authorization": "x"}})"),
         "callback.headers.Proxy-Authorization"},
        {"w5", with("w5", R"("delay_ms": 1, "callback": {"url": "http://user:pw@127.0.0.1/"})"),
         "callback.url"},
        {"w6",
         with("w6", R"("delay_ms": 1, "callback": {"url": "http://h/", "headers": {"A": ")" +
                        std::string(5000, 'a') + R"(", "B": ")" + std::string(5000, 'b') +
                        R"("}})"),
         "callback.headers"},
        {"w7",
         with(
             "w7",
             R"("delay_ms": 1, "callback": {"url": "http://h/", "secret_headers": {"Host": "x"}})"),
         "callback.secret_headers.Host"},
        {"w8",
         with("w8",
              R"("delay_ms": 1, "callback": {"url": "http://h/", "secret_headers": {"A": 1}})"),
         "callback.secret_headers.A"},
        {"v30", with("v30", R"("delay_ms": 1, "retry": {"attempts": 0}, )" + cb), "retry.attempts"},
        {"v31", with("v31", R"("delay_ms": 1, "retry": {"base_ms": 500, "cap_ms": 100}, )" + cb),
         "retry.cap_ms"},
        {"v32", with("v32", R"("delay_ms": 1, "retry": {"jitter": true}, )" + cb), "retry.jitter"},
        {"v33", with("v33", R"("delay_ms": 1, "retry": 3, )" + cb), "retry"},
        // Completion notices: the callback's rules, the fields named under the target.
        {"n1",
         with(
             "n1",
             R"("delay_ms": 1, "callback": {"url": "http://h/", "on_success": {"url": "ftp://h/"}})"),
         "callback.on_success.url"},
        {"n2",
         with(
             "n2",
             R"("delay_ms": 1, "callback": {"url": "http://h/", "on_failure": {"url": "http://h/", "headers": {"Host": "x"}}})"),
         "callback.on_failure.headers.Host"},
        {"n3",
         with("n3",
              R"("delay_ms": 1, "callback": {"url": "http://h/", "on_success": "http://h/"})"),
         "callback.on_success"},
        {"n4",
         with(
             "n4",
             R"("delay_ms": 1, "callback": {"url": "http://h/", "on_success": {"url": "http://h/", "method": "PUT"}})"),
         "callback.on_success.method"},
        {"n5", with("n5", R"("delay_ms": 1, "callback": {"url": "http://h/", "on_failure": {}})"),
         "callback.on_failure.url"},
        {"n6~notice", with("n6~notice", R"("delay_ms": 1, )" + cb), "id"},
        {"", R"({"id": "", "delay_ms": 1, )" + cb + "}", "id"},
        {"", R"({"id": 42, "delay_ms": 1, )" + cb + "}", "id"},
        {"", R"({"id": ")" + std::string(300, 'x') + R"(", "delay_ms": 1, )" + cb + "}", "id"},
        {"", R"({"id": "a\u0001b", "delay_ms": 1, )" + cb + "}", "id"},
    };
    for (const auto& c : cases) {
        BOOST_TEST_CONTEXT("body " << c.body) {
            const auto r = svc.post("/v1/tasks", c.body);
            BOOST_TEST(r.status == 400u, r);
            if (r.status == 400u) {
                BOOST_TEST(r.error_code() == "invalid_field");
                BOOST_TEST(r.error_field() == c.field);
            }
            if (!c.id.empty()) {
                BOOST_TEST(svc.get("/v1/tasks/" + c.id).status == 404u);
            }
        }
    }
    // Nothing at all was stored: the store has no task.
    const std::string keys = svc.redis().command("*2\r\n$4\r\nKEYS\r\n$5\r\n*:t:*\r\n");
    BOOST_TEST(keys.starts_with("*0\r\n"), keys);
    // And the same service still accepts a good one.
    BOOST_TEST(svc.post("/v1/tasks", with("good", R"("delay_ms": 1000, )" + cb)).status == 201u);
    // (which the same look-up sees)
    BOOST_TEST(!svc.redis().command("*2\r\n$4\r\nKEYS\r\n$5\r\n*:t:*\r\n").starts_with("*0\r\n"));
}

// A notice's id is the task's and "~notice": no submitted id ends so, and a task with
// notices leaves room for it within the 256 bytes of an id, alone or in a batch.
BOOST_AUTO_TEST_CASE(completion_notices_keep_their_id_suffix_and_its_room) {
    ts::api_service svc;
    const std::string notices =
        R"("callback": {"url": "http://127.0.0.1:9/hook", "on_success": {"url": "http://127.0.0.1:9/done"}})";
    const std::string fits(249, 'f');
    const std::string too_long(250, 'g');
    const auto refused = svc.post("/v1/tasks", with(too_long, R"("delay_ms": 60000, )" + notices));
    BOOST_TEST(refused.status == 400u, refused);
    BOOST_TEST(refused.error_field() == "id");
    BOOST_TEST(refused.body.find("~notice") != std::string::npos, refused);
    BOOST_TEST(svc.get("/v1/tasks/" + too_long).status == 404u);
    // The same id without notices, and one byte shorter with them, are taken.
    BOOST_TEST(svc.post("/v1/tasks", with(too_long, R"("delay_ms": 60000, )" + cb)).status == 201u);
    const auto kept = svc.post("/v1/tasks", with(fits, R"("delay_ms": 60000, )" + notices));
    BOOST_TEST_REQUIRE(kept.status == 201u, kept);
    BOOST_TEST(kept.json().at("callback").at("on_success").at("url") == "http://127.0.0.1:9/done");

    const auto reserved = svc.post("/v1/tasks", with("x~notice", R"("delay_ms": 60000, )" + cb));
    BOOST_TEST(reserved.status == 400u, reserved);
    BOOST_TEST(reserved.error_field() == "id");
    BOOST_TEST(reserved.body.find("completion notice") != std::string::npos, reserved);
    const auto batch = svc.post("/v1/tasks:batch",
                                R"({"tasks": [)" + with("b1", R"("delay_ms": 60000, )" + cb) +
                                    ", " + with("b1~notice", R"("delay_ms": 60000, )" + cb) + "]}");
    BOOST_TEST_REQUIRE(batch.status == 200u, batch);
    const auto answer = batch.json();
    const auto& results = answer.at("results").as_array();
    BOOST_TEST(results.at(0).at("status") == 201);
    BOOST_TEST(results.at(1).at("status") == 400);
    BOOST_TEST(results.at(1).at("error").at("field") == "id");
    BOOST_TEST(results.at(1).at("error").at("index") == 1);
    BOOST_TEST(svc.get("/v1/tasks/b1~notice").status == 404u);
}

// The error of a refused callback names what was wrong in words, not only its field.
BOOST_AUTO_TEST_CASE(a_refused_callback_says_why) {
    ts::api_service svc;
    const auto r =
        svc.post("/v1/tasks",
                 with("u1", R"("delay_ms": 1, "callback": {"url": "http://user:pw@127.0.0.1/"})"));
    BOOST_TEST_REQUIRE(r.status == 400u, r);
    BOOST_TEST(
        r.json().at("error").at("message").as_string().find("user info") != std::string::npos, r);
    const auto h = svc.post(
        "/v1/tasks",
        with("u2",
             R"("delay_ms": 1, "callback": {"url": "http://h/", "headers": {"User-Agent": "x"}})"));
    BOOST_TEST_REQUIRE(h.status == 400u, h);
    BOOST_TEST(h.json().at("error").at("message").as_string().find("set by timewheeld") !=
                   std::string::npos,
               h);
}

// secret_headers are stored (the worker sends them) but never shown: the 201 and every GET
// show their names with "***".
BOOST_AUTO_TEST_CASE(secret_headers_are_stored_but_never_shown) {
    ts::api_service svc;
    const auto created = svc.post(
        "/v1/tasks", with("s1", R"("delay_ms": 100000, "callback": {"url": "http://127.0.0.1:9/",
                      "headers": {"X-Shown": "visible"},
                      "secret_headers": {"Authorization": "Bearer hunter2"}})"));
    BOOST_TEST_REQUIRE(created.status == 201u, created);
    const auto got = svc.get("/v1/tasks/s1");
    BOOST_TEST_REQUIRE(got.status == 200u, got);
    for (const auto* r : {&created, &got}) {
        BOOST_TEST(r->body.find("hunter2") == std::string::npos, r->body);
        const auto cb = r->json().at("callback");
        BOOST_TEST(cb.at("secret_headers").at("Authorization").as_string() == "***", r->body);
        BOOST_TEST(cb.at("headers").at("X-Shown").as_string() == "visible", r->body);
    }
    // A resubmit of the same id (200) reads it back: still hidden.
    const auto again = svc.post(
        "/v1/tasks", with("s1", R"("delay_ms": 1, "callback": {"url": "http://127.0.0.1:9/"})"));
    BOOST_TEST(again.status == 200u, again);
    BOOST_TEST(again.body.find("hunter2") == std::string::npos, again.body);
}

BOOST_AUTO_TEST_CASE(reschedule_requeue_and_listing_name_their_fields) {
    ts::api_service svc;
    BOOST_TEST_REQUIRE(
        svc.post("/v1/tasks", with("p1", R"("due_at": "2090-01-01T00:00:00Z", )" + cb)).status ==
        201u);
    struct one {
        verb method;
        std::string target;
        std::string body;
        std::string field;
    };
    for (const auto& c : std::vector<one>{
             {verb::patch, "/v1/tasks/p1", "{}", "due_at"},
             {verb::patch, "/v1/tasks/p1", R"({"delay_ms": 1, "due_at": "2030-01-01T00:00:00Z"})",
              "due_at"},
             {verb::patch, "/v1/tasks/p1", R"({"delay_ms": 1, "when": 2})", "when"},
             {verb::patch, "/v1/tasks/p1", "not json", "body"},
             {verb::patch, "/v1/tasks/p1", R"({"due_at": "9999-13-01T00:00:00Z"})", "due_at"},
             {verb::post, "/v1/dead/p1/retry", R"({"delay_ms": -5})", "delay_ms"},
             {verb::get, "/v1/dead?limit=0", "", "limit"},
             {verb::get, "/v1/dead?limit=abc", "", "limit"},
             {verb::get, "/v1/tasks/" + std::string(300, 'y'), "", "id"},
             {verb::get, "/v1/tasks/a%zz", "", "id"},
         }) {
        BOOST_TEST_CONTEXT(c.target << " " << c.body) {
            const auto r = svc.request(c.method, c.target, c.body);
            BOOST_TEST(r.status == 400u, r);
            if (r.status == 400u) {
                BOOST_TEST(r.error_field() == c.field);
            }
        }
    }
    // The task kept its due time through every refused reschedule.
    BOOST_TEST(svc.get("/v1/tasks/p1").json().at("due_at").as_string() ==
               "2090-01-01T00:00:00.000Z");
}

BOOST_AUTO_TEST_CASE(unknown_routes_and_methods) {
    ts::api_service svc;
    const auto nowhere = svc.get("/v2/tasks");
    BOOST_TEST(nowhere.status == 404u, nowhere);
    BOOST_TEST(nowhere.error_code() == "no_route");
    const auto put = svc.request(verb::put, "/v1/tasks", "{}");
    BOOST_TEST(put.status == 405u, put);
    BOOST_TEST(put.headers["Allow"] == "GET, POST");
    const auto post = svc.request(verb::post, "/v1/tasks/x");
    BOOST_TEST(post.status == 405u, post);
    BOOST_TEST(post.headers["Allow"] == "GET, PATCH, DELETE");
}

BOOST_AUTO_TEST_SUITE_END()
