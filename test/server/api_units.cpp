//
// test/server/api_units.cpp
//
// The pieces of timewheeld's API that need no server: RFC 3339 times both ways, the
// metrics registry's text format, the settings from flags and environment, and the store
// URL's refusals.
//
#define BOOST_TEST_MODULE server_api_units
#include <boost/test/unit_test.hpp>

#include <timewheeld/service/metrics.hpp>
#include <timewheeld/service/settings.hpp>
#include <timewheeld/service/store.hpp>
#include <timewheeld/service/task_json.hpp>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/io_context.hpp>

#include <stdlib.h>

#include <filesystem>
#include <map>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace service = timewheeld::service;
namespace dq = timewheel::dq;
using namespace std::chrono_literals;

BOOST_AUTO_TEST_CASE(rfc3339_round_trips_and_refuses_what_is_not_one) {
    const auto t = service::parse_rfc3339("2026-11-26T01:02:03.456Z");
    BOOST_TEST(service::format_rfc3339(t) == "2026-11-26T01:02:03.456Z");
    BOOST_TEST((service::parse_rfc3339("2026-11-26t03:02:03.456789+02:00") == t));
    BOOST_TEST((service::parse_rfc3339("2026-11-25T23:32:03.456-01:30") == t));
    BOOST_TEST((service::parse_rfc3339("1970-01-01T00:00:00Z") == dq::time_point{}));
    BOOST_TEST((service::parse_rfc3339("9999-12-31T23:59:59.999Z") == dq::max_due));
    BOOST_TEST(service::format_rfc3339(dq::max_due) == "9999-12-31T23:59:59.999Z");
    for (const char* bad :
         {"", "2026-11-26", "2026-11-26T01:02:03", "2026-11-26T01:02:03.Z", "2026-13-01T00:00:00Z",
          "2026-02-29T00:00:00Z", "2026-11-26T24:00:00Z", "2026-11-26T01:02:03Zjunk",
          "2026-11-26T01:02:03+25:00", "1969-12-31T23:59:59Z", "9999-12-31T23:59:59-01:00"}) {
        BOOST_CHECK_THROW(service::parse_rfc3339(bad), std::invalid_argument);
    }
}

BOOST_AUTO_TEST_CASE(metrics_render_the_prometheus_text_format) {
    service::metrics_registry r;
    r.counter("a_total", "Things.", {{"route", "GET /x"}, {"status", "200"}}).inc(3);
    r.counter("a_total", "Things.", {{"route", "GET /x"}, {"status", "200"}}).inc();
    r.gauge("b", "A level.").set(2.5);
    auto& h = r.histogram("c_seconds", "Durations.", {0.1, 1});
    h.observe(0.05);
    h.observe(500ms);
    h.observe(2.0);
    r.counter("d_total", "Quotes.", {{"v", "a\"b\\c\nd"}}).inc();
    const std::string expected = "# HELP a_total Things.\n"
                                 "# TYPE a_total counter\n"
                                 "a_total{route=\"GET /x\",status=\"200\"} 4\n"
                                 "# HELP b A level.\n"
                                 "# TYPE b gauge\n"
                                 "b 2.5\n"
                                 "# HELP c_seconds Durations.\n"
                                 "# TYPE c_seconds histogram\n"
                                 "c_seconds_bucket{le=\"0.10000000000000001\"} 1\n"
                                 "c_seconds_bucket{le=\"1\"} 2\n"
                                 "c_seconds_bucket{le=\"+Inf\"} 3\n"
                                 "c_seconds_sum 2.5499999999999998\n"
                                 "c_seconds_count 3\n"
                                 "# HELP d_total Quotes.\n"
                                 "# TYPE d_total counter\n"
                                 "d_total{v=\"a\\\"b\\\\c\\nd\"} 1\n";
    BOOST_TEST(r.render() == expected);
    BOOST_CHECK_THROW(r.gauge("a_total", "Things."), std::logic_error);
}

BOOST_AUTO_TEST_CASE(metrics_count_from_several_threads) {
    service::metrics_registry r;
    service::service_metrics m(r);
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; ++t) {
        threads.emplace_back([&] {
            for (int i = 0; i < 1000; ++i) {
                m.request("GET /healthz", 200);
                m.submitted.inc();
            }
        });
    }
    for (auto& t : threads) {
        t.join();
    }
    BOOST_TEST(m.submitted.value() == 4000u);
    BOOST_TEST(r.render().find("timewheeld_http_requests_total{route=\"GET /healthz\","
                               "status=\"200\"} 4000\n") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(settings_from_environment_then_flags) {
    std::map<std::string, std::string> env = {
        {"TIMEWHEELD_PORT", "9000"}, {"TIMEWHEELD_THREADS", "4"}, {"TIMEWHEELD_TOKEN", "from-env"}};
    auto getenv = [&](const char* name) -> const char* {
        auto it = env.find(name);
        return it == env.end() ? nullptr : it->second.c_str();
    };
    const char* argv[] = {"timewheeld",  "--port", "9001", "--max-body-bytes=2048",
                          "--log-level", "debug"};
    const auto p = service::parse_settings(6, argv, getenv);
    BOOST_TEST(!p.help);
    BOOST_TEST(p.settings.port == 9001);
    BOOST_TEST(p.settings.threads == 4u);
    BOOST_TEST(p.settings.token == "from-env");
    BOOST_TEST(p.settings.max_body_bytes == 2048u);
    BOOST_TEST(p.settings.bind == "127.0.0.1");
    BOOST_TEST((p.settings.log_level == service::log_level::debug));

    const char* bad_flag[] = {"timewheeld", "--threads", "0"};
    BOOST_CHECK_THROW(service::parse_settings(3, bad_flag, getenv), std::invalid_argument);
    env["TIMEWHEELD_PORT"] = "eighty";
    const char* none[] = {"timewheeld"};
    try {
        service::parse_settings(1, none, getenv);
        BOOST_FAIL("a bad variable was accepted");
    } catch (const std::invalid_argument& e) {
        BOOST_TEST(std::string(e.what()).find("TIMEWHEELD_PORT") != std::string::npos);
    }
}

BOOST_AUTO_TEST_CASE(the_default_store_is_the_embedded_one_in_the_working_directory) {
    const char* argv[] = {"timewheeld"};
    const auto p =
        service::parse_settings(1, argv, [](const char*) -> const char* { return nullptr; });
    BOOST_TEST(p.settings.store == "sqlite:timewheeld.db");
    BOOST_TEST(p.settings.threads == 1u);
    // --help says so, and that a relative path is from the working directory.
    const auto help = service::help_text();
    BOOST_TEST(help.find("(default sqlite:timewheeld.db)") != std::string::npos, help);
    BOOST_TEST(help.find("working directory") != std::string::npos, help);
    const char* redis[] = {"timewheeld", "--store", "redis://127.0.0.1:6379/q"};
    BOOST_TEST(service::parse_settings(3, redis, [](const char*) -> const char* {
                   return nullptr;
               }).settings.store == "redis://127.0.0.1:6379/q");
}

BOOST_AUTO_TEST_CASE(a_store_source_shares_one_sqlite_file_among_executors) {
    char tmpl[] = "/tmp/timewheeld-units-XXXXXX";
    BOOST_TEST_REQUIRE(::mkdtemp(tmpl) != nullptr);
    const std::string dir = tmpl;
    {
        boost::asio::io_context io1;
        boost::asio::io_context io2;
        service::store_source source("sqlite:" + dir + "/q.db");
        auto a = source.open(io1.get_executor());
        auto b = source.open(io2.get_executor());
        // Two stores on one file: with two separate opens the second would be refused (the
        // file is locked); these share it, each completing on its own executor.
        BOOST_TEST((a.store->get_executor() == boost::asio::any_io_executor(io1.get_executor())));
        BOOST_TEST((b.store->get_executor() == boost::asio::any_io_executor(io2.get_executor())));
        BOOST_CHECK_THROW(service::make_store("sqlite:" + dir + "/q.db", io1.get_executor()),
                          std::invalid_argument);
        a.close();
        b.close();
    }
    std::filesystem::remove_all(dir);
}

BOOST_AUTO_TEST_CASE(store_urls_that_are_refused) {
    boost::asio::io_context io;
    for (const char* bad :
         {"sqlite", "http://127.0.0.1:6379", "redis://", "redis://:6379", "redis://127.0.0.1:0",
          "redis://127.0.0.1:99999", "redis://127.0.0.1:6379/a{b}"}) {
        BOOST_CHECK_THROW(service::make_store(bad, io.get_executor()), std::invalid_argument);
    }
}
