//
// test/server/api_service.cpp
//
// timewheeld as a process: the bearer token (refused, accepted, probes open), the limits
// on the body (413), the request target (414) and the header fields (431), the settings
// from flags and environment (--help lists every one, a bad one exits 2), several threads,
// and the graceful shutdown: SIGTERM with a request in flight answers it, then exits 0.
//
#define BOOST_TEST_MODULE server_api_service
#include <boost/test/unit_test.hpp>

#include <test/server/support/api_service.hpp>

#include <timewheeld/service/settings.hpp>

#include <timewheel/dq/queue.hpp>
#include <timewheel/dq/redis_store.hpp>

#include <boost/asio/write.hpp>

#include <string>
#include <vector>

namespace ts = timewheel::test;
namespace dq = timewheel::dq;
using verb = boost::beast::http::verb;

namespace {

const std::string task = R"({"id": "t-1", "delay_ms": 600000,
                             "callback": {"url": "http://127.0.0.1:9/hook"}})";

// Runs timewheeld with `args` to its end; returns its exit status and output.
std::pair<int, std::string> run_to_end(std::vector<std::string> args) {
    char tmpl[] = "/tmp/timewheeld-run-XXXXXX";
    BOOST_TEST_REQUIRE(::mkdtemp(tmpl) != nullptr);
    const std::filesystem::path out = std::filesystem::path(tmpl) / "out";
    args.insert(args.begin(), TIMEWHEELD_BINARY);
    ts::child_process p({.argv = args, .output = out});
    BOOST_TEST_REQUIRE(p.wait());
    auto text = p.output();
    std::filesystem::remove_all(tmpl);
    return {p.exit_status(), text};
}

} // namespace

BOOST_AUTO_TEST_SUITE(api_service, *boost::unit_test::precondition(ts::redis_available()))

BOOST_AUTO_TEST_CASE(bearer_token_is_required_on_the_api_and_metrics_only) {
    ts::api_service svc({.env = {"TIMEWHEELD_TOKEN=s3cret"}});
    const auto none = svc.post("/v1/tasks", task);
    BOOST_TEST(none.status == 401u, none);
    BOOST_TEST(none.headers["WWW-Authenticate"] == "Bearer");
    BOOST_TEST(svc.get("/v1/tasks/t-1").status == 401u);
    const auto wrong =
        svc.request(verb::post, "/v1/tasks", task, {{"Authorization", "Bearer s3cres"}});
    BOOST_TEST(wrong.status == 401u, wrong);
    const auto longer =
        svc.request(verb::post, "/v1/tasks", task, {{"Authorization", "Bearer s3cret0"}});
    BOOST_TEST(longer.status == 401u, longer);
    const auto basic =
        svc.request(verb::post, "/v1/tasks", task, {{"Authorization", "Basic s3cret"}});
    BOOST_TEST(basic.status == 401u, basic);
    BOOST_TEST(svc.get("/metrics").status == 401u);
    // Nothing was stored by the refused ones.
    const auto ok_get =
        svc.request(verb::get, "/v1/tasks/t-1", "", {{"Authorization", "Bearer s3cret"}});
    BOOST_TEST(ok_get.status == 404u, ok_get);

    const auto ok =
        svc.request(verb::post, "/v1/tasks", task, {{"Authorization", "Bearer s3cret"}});
    BOOST_TEST(ok.status == 201u, ok);
    BOOST_TEST(svc.get("/healthz").status == 200u);
    BOOST_TEST(svc.get("/readyz").status == 200u);
    // The flag wins over the variable.
    ts::api_service flag({.args = {"--token", "other"}, .env = {"TIMEWHEELD_TOKEN=s3cret"}});
    BOOST_TEST(
        flag.request(verb::get, "/metrics", "", {{"Authorization", "Bearer other"}}).status ==
        200u);
    BOOST_TEST(
        flag.request(verb::get, "/metrics", "", {{"Authorization", "Bearer s3cret"}}).status ==
        401u);
}

BOOST_AUTO_TEST_CASE(limits_on_body_target_and_headers) {
    ts::api_service svc({.args = {"--max-body-bytes", "1024", "--max-url-bytes", "128",
                                  "--max-header-count", "8"}});
    const std::string big = R"({"id": "big", "delay_ms": 1, "callback": {"url": "http://h/",
                               "body": ")" +
                            std::string(2000, 'x') + R"("}})";
    const auto r413 = svc.post("/v1/tasks", big);
    BOOST_TEST(r413.status == 413u, r413);
    BOOST_TEST(r413.error_code() == "body_too_large");
    BOOST_TEST(svc.get("/v1/tasks/big").status == 404u);

    const auto r414 = svc.get("/v1/tasks/" + std::string(200, 'u'));
    BOOST_TEST(r414.status == 414u, r414);
    // Far beyond the limit too (past Beast's own header limit).
    const auto r414b = svc.get("/v1/tasks/" + std::string(20000, 'u'));
    BOOST_TEST(r414b.status == 414u, r414b);

    std::vector<std::pair<std::string, std::string>> many;
    for (int i = 0; i < 12; ++i) {
        many.emplace_back("X-H" + std::to_string(i), "v");
    }
    const auto r431 = svc.request(verb::get, "/healthz", "", many);
    BOOST_TEST(r431.status == 431u, r431);
    const auto r431b = svc.request(verb::get, "/healthz", "", {{"X-Big", std::string(20000, 'h')}});
    BOOST_TEST(r431b.status == 431u, r431b);

    // Within the limits, all is well.
    BOOST_TEST(svc.post("/v1/tasks", task).status == 201u);
    const auto m = svc.get("/metrics").body;
    BOOST_TEST(m.find("timewheeld_http_requests_total{route=\"rejected\",status=\"413\"} 1") !=
               std::string::npos);
}

BOOST_AUTO_TEST_CASE(keep_alive_connections_and_several_threads) {
    ts::api_service svc({.args = {"--threads", "3"}});
    ts::api_connection c(svc.port());
    for (int i = 0; i < 10; ++i) {
        const std::string id = "k-" + std::to_string(i);
        const auto r = c.exchange(
            {verb::post, "/v1/tasks",
             R"({"id": ")" + id + R"(", "delay_ms": 60000, "callback": {"url": "http://h/"}})"});
        BOOST_TEST(r.status == 201u, r);
    }
    for (int i = 0; i < 10; ++i) {
        BOOST_TEST(svc.get("/v1/tasks/k-" + std::to_string(i)).status == 200u);
    }
}

BOOST_AUTO_TEST_CASE(help_lists_every_flag_and_bad_settings_exit_2) {
    const auto [status, text] = run_to_end({"--help"});
    BOOST_TEST(status == 0);
    for (const char* flag :
         {"--bind", "--port", "--port-file", "--store", "--token", "--threads", "--max-body-bytes",
          "--max-header-count", "--max-url-bytes", "--shutdown-timeout-ms", "--log-level",
          "TIMEWHEELD_TOKEN", "TIMEWHEELD_STORE"}) {
        BOOST_TEST(text.find(flag) != std::string::npos, "missing " << flag);
    }
    BOOST_TEST(run_to_end({"--no-such-flag"}).first == 2);
    BOOST_TEST(run_to_end({"--port", "70000"}).first == 2);
    BOOST_TEST(run_to_end({"--store", "mysql://x"}).first == 2);
    BOOST_TEST(timewheeld::service::help_text() == text);
}

BOOST_AUTO_TEST_CASE(listens_on_loopback_by_default) {
    ts::api_service svc({.args = {"--log-level", "info"}});
    BOOST_TEST(svc.log().find("address=127.0.0.1 port=" + std::to_string(svc.port())) !=
                   std::string::npos,
               svc.log());
}

BOOST_AUTO_TEST_CASE(sigterm_answers_the_request_in_flight_then_exits_0) {
    ts::api_service svc;
    ts::api_connection idle(svc.port()); // an idle keep-alive connection: closed at stop
    BOOST_TEST_REQUIRE(idle.exchange({verb::get, "/healthz"}).status == 200u);

    ts::api_connection c(svc.port());
    const std::string body = R"({"id": "in-flight", "delay_ms": 600000,
                                 "callback": {"url": "http://127.0.0.1:9/hook"}})";
    // The header first, with Expect: 100-continue: the 100 proves the service has read it,
    // so the request is in flight when SIGTERM arrives.
    const std::string head = "POST /v1/tasks HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                             "Content-Type: application/json\r\nExpect: 100-continue\r\n"
                             "Content-Length: " +
                             std::to_string(body.size()) + "\r\n\r\n";
    boost::asio::write(c.socket(), boost::asio::buffer(head));
    const auto cont = c.receive();
    BOOST_TEST_REQUIRE(cont.status == 100u);

    svc.process().terminate();
    boost::asio::write(c.socket(), boost::asio::buffer(body));
    const auto r = c.receive();
    BOOST_TEST(r.status == 201u, r);
    BOOST_TEST_REQUIRE(svc.process().wait());
    BOOST_TEST(svc.process().exit_status() == 0, svc.log());
    BOOST_TEST(svc.log().find("event=stopped") != std::string::npos, svc.log());

    // The answer was true: the task is in the store.
    boost::asio::io_context io;
    dq::redis_store_options o;
    o.name = svc.queue();
    dq::redis_store store(io.get_executor(), svc.redis().config(), o);
    dq::queue q(store);
    std::optional<dq::task_status> st;
    q.async_status("in-flight", [&](boost::system::error_code ec, dq::task_status s) {
        BOOST_TEST(!ec, ec.message());
        st = std::move(s);
        store.close();
    });
    BOOST_TEST_REQUIRE(ts::run_until(io, [&] { return st.has_value(); }));
    BOOST_TEST(st->state == dq::task_state::delayed);
}

BOOST_AUTO_TEST_SUITE_END()
