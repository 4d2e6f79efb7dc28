//
// test/server/api_units.cpp
//
// The pieces of timewheeld's API that need no server: RFC 3339 times both ways, the
// metrics registry's text format, the settings from flags and environment, the store
// URL's refusals, this node's callback figures over their window (against a model, from
// several threads), and the parameters of GET /v1/tasks.
//
#define BOOST_TEST_MODULE server_api_units
#include <boost/test/unit_test.hpp>

#include <timewheeld/service/metrics.hpp>
#include <timewheeld/service/node_stats.hpp>
#include <timewheeld/service/settings.hpp>
#include <timewheeld/service/store.hpp>
#include <timewheeld/service/task_json.hpp>
#include <timewheeld/service/task_list.hpp>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/io_context.hpp>

#include <stdlib.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <random>
#include <set>
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
    // A time a hostile store could reply with: shown at the edges, no overflow.
    BOOST_TEST(service::format_rfc3339(dq::time_point(dq::duration(INT64_MIN))) ==
               "1970-01-01T00:00:00.000Z");
    BOOST_TEST(service::format_rfc3339(dq::time_point(dq::duration(INT64_MAX))) ==
               "9999-12-31T23:59:59.999Z");
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
    for (const char* bad : {"sqlite",
                            "http://127.0.0.1:6379",
                            "redis://",
                            "redis://:6379",
                            "redis://127.0.0.1:0",
                            "redis://127.0.0.1:99999",
                            "redis://127.0.0.1:6379/a{b}",
                            "redis://h?wait=x",
                            "redis://h?wait=65",
                            "redis://h?wait_timeout_ms=0",
                            "redis://h?master=m",
                            "redis://h?colour=red",
                            "redis://h?shards=0",
                            "redis://h?shards=16385",
                            "redis://h?shards=",
                            "redis://h?shards=8x",
                            "redis+sentinel://127.0.0.1:26379/q",
                            "redis+sentinel:///q?master=m",
                            "redis+sentinel://a:1,,b:2?master=m",
                            "redis+sentinel://a:0?master=m",
                            "redis+sentinel://a?master=m&wait=-1"}) {
        BOOST_CHECK_THROW(service::make_store(bad, io.get_executor()), std::invalid_argument);
    }
}

BOOST_AUTO_TEST_CASE(a_cluster_url_names_its_seeds_credentials_and_queue) {
    const auto where =
        service::redis_location_of("redis+cluster://app:s3cret@127.0.0.1:7000,[::1]:7001,"
                                   "127.0.0.2/orders",
                                   {.operation_timeout = std::chrono::milliseconds(1234)});
    BOOST_TEST_REQUIRE(where.has_value());
    BOOST_TEST_REQUIRE(where->cluster.has_value());
    const auto& c = *where->cluster;
    BOOST_TEST(where->queue == "orders");
    BOOST_TEST(c.node.host == "127.0.0.1");
    BOOST_TEST(c.node.port == 7000);
    BOOST_TEST(c.node.username == "app");
    BOOST_TEST(c.node.password == "s3cret");
    BOOST_TEST(c.node.request_timeout.count() == 1234);
    BOOST_TEST_REQUIRE(c.seeds.size() == 2u);
    BOOST_TEST(c.seeds[0].first == "::1");
    BOOST_TEST(c.seeds[0].second == 7001);
    BOOST_TEST(c.seeds[1].first == "127.0.0.2");
    BOOST_TEST(c.seeds[1].second == 6379); // the default port, as redis:// has
    // What shares the store's Redis (the forwarding of results) gets the first seed.
    BOOST_TEST(where->config.host == "127.0.0.1");
    BOOST_TEST(where->config.port == 7000);
    // A standalone URL is no cluster, and one seed is enough.
    BOOST_TEST(!service::redis_location_of("redis://127.0.0.1:7000")->cluster.has_value());
    const auto one = service::redis_location_of("redis+cluster://127.0.0.1:7000");
    BOOST_TEST(one->cluster->seeds.empty());
    BOOST_TEST(one->queue == "timewheeld");
}

BOOST_AUTO_TEST_CASE(cluster_urls_that_are_refused_say_what_is_wrong) {
    const std::pair<const char*, const char*> cases[] = {
        {"redis+cluster://", "at least one seed"},
        {"redis+cluster:///q", "at least one seed"},
        {"redis+cluster://127.0.0.1:7000,", "empty seed"},
        {"redis+cluster://127.0.0.1:7000,,127.0.0.1:7001", "empty seed"},
        {"redis+cluster://127.0.0.1:7000,127.0.0.1:70000", "malformed port '70000'"},
        {"redis+cluster://127.0.0.1:x", "malformed port 'x'"},
        {"redis+cluster://:7000", "needs a host"},
        {"redis+cluster://127.0.0.1:7000/a{b}", "queue name"},
        {"redis+cluster:127.0.0.1:7000", "unknown scheme"},
        {"redis+cluster://127.0.0.1:7000?wait=65", "?wait= must be a number from 0 to 64"},
        {"redis+cluster://127.0.0.1:7000?wait=1&wait_timeout_ms=0", "?wait_timeout_ms= must be"},
    };
    boost::asio::io_context io;
    for (const auto& [url, why] : cases) {
        try {
            service::make_store(url, io.get_executor());
            BOOST_ERROR("accepted: " << url);
        } catch (const std::invalid_argument& e) {
            BOOST_TEST(std::string(e.what()).find(why) != std::string::npos,
                       url << ": " << e.what());
        }
    }
}

BOOST_AUTO_TEST_CASE(redis_urls_keep_host_names_and_read_sentinels_and_wait) {
    const auto plain = service::redis_location_of("redis://redis.example:6380/q?wait=1");
    BOOST_TEST_REQUIRE(plain.has_value());
    BOOST_TEST(plain->config.host == "redis.example"); // resolved by the client, per attempt
    BOOST_TEST(plain->config.port == 6380);
    BOOST_TEST(plain->queue == "q");
    BOOST_TEST(plain->wait_replicas == 1u);
    BOOST_TEST(plain->wait_timeout.count() == 1000);
    BOOST_TEST(plain->shards == 64u); // dq::redis_store_options' default
    const auto few = service::redis_location_of("redis://127.0.0.1/q?shards=8");
    BOOST_TEST_REQUIRE(few.has_value());
    BOOST_TEST(few->shards == 8u);
    BOOST_TEST(
        service::redis_location_of("redis+cluster://127.0.0.1:7000/q?shards=16384")->shards ==
        16384u);
    // A Cluster takes ?wait= too: each shard's write waits on that shard's master.
    const auto c = service::redis_location_of(
        "redis+cluster://127.0.0.1:7000,127.0.0.1:7001/q?wait=1&wait_timeout_ms=300");
    BOOST_TEST_REQUIRE(c.has_value());
    BOOST_TEST_REQUIRE(c->cluster.has_value());
    BOOST_TEST(c->cluster->node.port == 7000);
    BOOST_TEST_REQUIRE(c->cluster->seeds.size() == 1u); // the others
    BOOST_TEST(c->cluster->seeds[0].second == 7001);
    BOOST_TEST(c->wait_replicas == 1u);
    BOOST_TEST(c->wait_timeout.count() == 300);
    BOOST_TEST(c->queue == "q");
    const auto s = service::redis_location_of(
        "redis+sentinel://u:pw@10.0.0.1,[::1]:26380,s3.example:7/"
        "jobs?master=main&wait=2&wait_timeout_ms=250&sentinel_password=spw");
    BOOST_TEST_REQUIRE(s.has_value());
    BOOST_TEST_REQUIRE(s->config.sentinels.size() == 3u);
    BOOST_TEST(s->config.sentinels[0].host == "10.0.0.1");
    BOOST_TEST(s->config.sentinels[0].port == 26379);
    BOOST_TEST(s->config.sentinels[1].host == "::1");
    BOOST_TEST(s->config.sentinels[1].port == 26380);
    BOOST_TEST(s->config.sentinels[2].host == "s3.example");
    BOOST_TEST(s->config.sentinels[2].port == 7);
    BOOST_TEST(s->config.master_name == "main");
    BOOST_TEST(s->config.username == "u");
    BOOST_TEST(s->config.password == "pw");
    BOOST_TEST(s->config.sentinel_password == "spw");
    BOOST_TEST(s->queue == "jobs");
    BOOST_TEST(s->wait_replicas == 2u);
    BOOST_TEST(s->wait_timeout.count() == 250);
    BOOST_TEST(!service::redis_location_of("sqlite:x.db").has_value());
}

// --- This node's callback figures (node_stats) ----------------------------------------------

namespace {

using sys = std::chrono::system_clock;

// A time `s` seconds into a day that starts on a bucket boundary.
sys::time_point at(double s) {
    return sys::time_point(std::chrono::seconds(1'800'000'000)) +
           std::chrono::duration_cast<sys::duration>(std::chrono::duration<double>(s));
}

} // namespace

BOOST_AUTO_TEST_CASE(node_figures_count_the_window_and_forget_what_left_it) {
    service::node_stats stats(2, {}, at(0));
    stats[0].attempt(true, 3ms, at(1));
    stats[1].attempt(false, 700ms, at(5));
    stats[0].attempt(true, 40ms, at(12));
    auto f = stats.read(at(15));
    BOOST_TEST(f.window.count() == 300);
    BOOST_TEST_REQUIRE(f.throughput.size() == 30u);
    // Oldest first: the newest bucket holds 12 s, the one before it 1 s and 5 s.
    BOOST_TEST(f.throughput[29].fired == 1u);
    BOOST_TEST(f.throughput[28].fired == 2u);
    BOOST_TEST(f.throughput[28].succeeded == 1u);
    BOOST_TEST(f.throughput[28].failed == 1u);
    BOOST_TEST((f.throughput[29].at == at(10)));
    BOOST_TEST((f.throughput[0].at == at(10 - 290)));
    BOOST_TEST(f.lateness_count == 3u);
    BOOST_TEST(f.lateness_max.count() == 700);
    // 15 s up: 3 callbacks in 15 s.
    BOOST_TEST(f.callbacks_per_second == 0.2, boost::test_tools::tolerance(1e-9));
    // Bucket upper bounds: 3 ms is in (2, 5], 40 ms in (25, 50], 700 ms in (500, 1000] and
    // shown as the max, not the bound.
    BOOST_TEST(f.lateness_quantile(0.3).count() == 5);
    BOOST_TEST(f.lateness_quantile(0.5).count() == 50);
    BOOST_TEST(f.lateness_quantile(0.99).count() == 700);
    BOOST_TEST(f.lateness[2] == 1u);

    // 300 s later the first two have left the window; the third leaves 10 s after.
    f = stats.read(at(305));
    BOOST_TEST(f.lateness_count == 1u);
    BOOST_TEST(f.throughput[0].fired == 1u);
    f = stats.read(at(315));
    BOOST_TEST(f.lateness_count == 0u);
    BOOST_TEST(f.lateness_quantile(0.5).count() == 0);
    // A bucket written again after a long silence starts from zero.
    stats[0].attempt(true, 1ms, at(1000));
    f = stats.read(at(1001));
    BOOST_TEST(f.lateness_count == 1u);
    BOOST_TEST(f.throughput[29].fired == 1u);
}

BOOST_AUTO_TEST_CASE(node_figures_per_destination_keep_failures_errors_and_back_offs) {
    service::node_stats stats(1, {.max_error_bytes = 12}, at(0));
    auto a = stats.call_started("a.example:443");
    auto b = stats.call_started("b.example:80");
    auto b2 = stats.call_started("b.example:80");
    auto f = stats.read(at(1));
    BOOST_TEST_REQUIRE(f.hosts.size() == 2u);
    BOOST_TEST(f.hosts[0].name == "b.example:80"); // more in flight, no failure yet
    BOOST_TEST(f.hosts[0].in_flight == 2u);
    stats.call_ended(a);
    stats.call_ended(b);
    stats.call_ended(b2);
    stats.host_outcome(a, false,
                       "HTTP 500 fr\xc3\xa9"
                       "d",
                       at(2)); // cut before the é
    stats.host_outcome(b, true, "", at(2));
    stats.host_deferred(b2, 5000ms, at(2));
    f = stats.read(at(3));
    BOOST_TEST_REQUIRE(f.hosts.size() == 2u);
    BOOST_TEST(f.hosts[0].name == "a.example:443"); // the most failed first
    BOOST_TEST(f.hosts[0].failed == 1u);
    BOOST_TEST(f.hosts[0].in_flight == 0u);
    BOOST_TEST(f.hosts[0].last_error.value_or("") == "HTTP 500 fr");
    BOOST_TEST(f.hosts[1].succeeded == 1u);
    BOOST_TEST(f.hosts[1].backing_off == 1u);
    BOOST_TEST(!f.hosts[1].last_error);
    // The back-off ends 5 s after it began; then the window empties, and so does the list.
    BOOST_TEST(stats.read(at(8)).hosts[1].backing_off == 0u);
    BOOST_TEST(stats.read(at(400)).hosts.empty());
}

BOOST_AUTO_TEST_CASE(node_figures_keep_at_most_max_hosts_and_never_evict_a_call_under_way) {
    service::node_stats stats(1, {.max_hosts = 3}, at(0));
    const auto held = stats.call_started("held:1"); // under way throughout
    for (int i = 0; i < 100; ++i) {
        const auto h = stats.call_started("h" + std::to_string(i) + ":80");
        BOOST_TEST_REQUIRE(static_cast<bool>(h));
        stats.call_ended(h);
        stats.host_outcome(h, false, "x", at(1));
    }
    const auto f = stats.read(at(2));
    BOOST_TEST_REQUIRE(f.hosts.size() == 3u);
    std::set<std::string> names;
    for (const auto& h : f.hosts) {
        names.insert(h.name);
    }
    BOOST_TEST((names == std::set<std::string>{"held:1", "h98:80", "h99:80"}));
    // Every entry held by a call: no room, the call goes uncounted.
    const auto b = stats.call_started("b:1");
    const auto c = stats.call_started("c:1");
    BOOST_TEST(!stats.call_started("d:1"));
    stats.call_ended(held);
    stats.host_outcome(held, true, "", at(3));
    stats.call_ended(b);
    stats.call_ended(c);
}

BOOST_AUTO_TEST_CASE(node_figures_from_several_threads_match_a_model) {
    // Four threads record random attempts at random times; the merged window must hold
    // exactly what a plain count of the same events says.
    constexpr int threads = 4;
    constexpr int per_thread = 2000;
    service::node_stats stats(threads, {}, at(0));
    struct event {
        double t;
        bool ok;
        int late_ms;
    };
    std::vector<std::vector<event>> events(threads);
    std::mt19937 rng(29);
    for (auto& evs : events) {
        for (int i = 0; i < per_thread; ++i) {
            evs.push_back({std::uniform_real_distribution<double>(0, 600)(rng), rng() % 3 != 0,
                           static_cast<int>(rng() % 20000)});
        }
        std::sort(evs.begin(), evs.end(), [](auto& a, auto& b) { return a.t < b.t; });
    }
    std::vector<std::thread> workers;
    for (int w = 0; w < threads; ++w) {
        workers.emplace_back([&, w] {
            for (const auto& e : events[w]) {
                stats[w].attempt(e.ok, std::chrono::milliseconds(e.late_ms), at(e.t));
                const auto h = stats.call_started("host" + std::to_string(e.late_ms % 7) + ":80");
                stats.call_ended(h);
                // The destinations' table is shared by the threads, whose clocks go
                // forward together in the service; here they would not: one time for all.
                stats.host_outcome(h, e.ok, "e", at(600));
            }
        });
    }
    for (auto& t : workers) {
        t.join();
    }
    // Read at 605 s: the newest bucket is [600, 610), the oldest of the 30 [310, 320).
    const auto f = stats.read(at(605));
    const double oldest = 310;
    std::uint64_t fired = 0, ok = 0, lateness_max = 0;
    std::map<std::string, std::uint64_t> failed_by_host;
    for (const auto& evs : events) {
        for (const auto& e : evs) {
            if (e.t >= oldest) {
                ++fired;
                ok += e.ok ? 1 : 0;
                lateness_max = std::max<std::uint64_t>(lateness_max, e.late_ms);
            }
            failed_by_host["host" + std::to_string(e.late_ms % 7) + ":80"] += e.ok ? 0 : 1;
        }
    }
    std::uint64_t got_fired = 0, got_ok = 0;
    for (const auto& b : f.throughput) {
        got_fired += b.fired;
        got_ok += b.succeeded;
        BOOST_TEST(b.fired == b.succeeded + b.failed);
    }
    BOOST_TEST(got_fired == fired);
    BOOST_TEST(got_ok == ok);
    BOOST_TEST(f.lateness_count == fired);
    BOOST_TEST(static_cast<std::uint64_t>(f.lateness_max.count()) == lateness_max);
    BOOST_TEST_REQUIRE(f.hosts.size() == failed_by_host.size());
    for (const auto& h : f.hosts) {
        BOOST_TEST(h.failed == failed_by_host[h.name], h.name);
        BOOST_TEST(h.in_flight == 0u);
    }
}

BOOST_AUTO_TEST_CASE(a_callback_url_names_its_destination_as_host_and_port) {
    std::string out;
    const std::pair<const char*, const char*> good[] = {
        {"http://Example.COM/x", "example.com:80"},
        {"https://example.com?q", "example.com:443"},
        {"http://127.0.0.1:8080/hook", "127.0.0.1:8080"},
        {"HTTPS://[::1]:9443/a", "[::1]:9443"},
        {"http://[fe80::1]#f", "[fe80::1]:80"},
        {"http://h:/", "h:80"},
    };
    for (const auto& [url, want] : good) {
        BOOST_TEST_REQUIRE(service::destination_of(url, out), url);
        BOOST_TEST(out == want);
    }
    for (const char* bad :
         {"ftp://h/", "http://", "http://u@h/", "http://h:x/", "http://[::1/", "//h/", "h:80"}) {
        BOOST_TEST(!service::destination_of(bad, out), bad);
    }
    BOOST_TEST(service::host_matches("", "a:1"));
    BOOST_TEST(service::host_matches("a", "a:1"));
    BOOST_TEST(service::host_matches("a:1", "a:1"));
    BOOST_TEST(!service::host_matches("a:2", "a:1"));
    BOOST_TEST(!service::host_matches("b", "ab:1"));
    BOOST_TEST(service::host_matches("[::1]", "[::1]:80"));
    BOOST_TEST(!service::host_matches("a", ""));
}

BOOST_AUTO_TEST_CASE(task_list_parameters_are_checked_one_by_one) {
    using params = std::vector<std::pair<std::string, std::string>>;
    const service::validation_limits limits;
    const auto r = service::parse_task_list({{"state", "delayed"},
                                             {"due_after", "2026-11-26T01:00:00+01:00"},
                                             {"due_before", "2026-11-26T01:00:00.5Z"},
                                             {"id_prefix", "order-"},
                                             {"host", "Example.com:8080"},
                                             {"limit", "1000"},
                                             {"cursor", "opaque"}},
                                            limits);
    BOOST_TEST((r.query.state == dq::task_state::delayed));
    BOOST_TEST(!r.query.descending); // soonest first by default
    BOOST_TEST((*r.query.after == service::parse_rfc3339("2026-11-26T00:00:00Z")));
    BOOST_TEST((*r.query.before == service::parse_rfc3339("2026-11-26T01:00:00.500Z")));
    BOOST_TEST(r.query.id_prefix == "order-");
    BOOST_TEST(r.host == "example.com:8080");
    BOOST_TEST(r.query.limit == 1000u);
    BOOST_TEST(r.query.cursor == "opaque");
    // Ended states: newest first by default, and their own range.
    const auto d = service::parse_task_list(
        {{"state", "dead"}, {"ended_after", "2026-11-26T00:00:00Z"}}, limits);
    BOOST_TEST(d.query.descending);
    BOOST_TEST(d.query.limit == 100u);
    BOOST_TEST(d.query.after.has_value());
    BOOST_TEST(!service::parse_task_list({{"state", "finished"}, {"order", "asc"}}, limits)
                    .query.descending);

    const std::pair<params, const char*> bad[] = {
        {{}, "state"},
        {{{"state", "waiting"}}, "state"},
        {{{"state", "delayed"}, {"sort", "x"}}, "sort"},
        {{{"state", "delayed"}, {"state", "dead"}}, "state"},
        {{{"state", "delayed"}, {"order", "up"}}, "order"},
        {{{"state", "delayed"}, {"ended_after", "2026-11-26T00:00:00Z"}}, "ended_after"},
        {{{"state", "cancelled"}, {"due_before", "2026-11-26T00:00:00Z"}}, "due_before"},
        {{{"state", "running"}, {"due_after", "yesterday"}}, "due_after"},
        {{{"state", "running"},
          {"due_after", "2026-11-26T00:00:00Z"},
          {"due_before", "2026-11-26T00:00:00Z"}},
         "due_before"},
        {{{"state", "delayed"}, {"limit", "0"}}, "limit"},
        {{{"state", "delayed"}, {"limit", "1001"}}, "limit"},
        {{{"state", "delayed"}, {"limit", "10x"}}, "limit"},
        {{{"state", "delayed"}, {"limit", ""}}, "limit"},
        {{{"state", "delayed"}, {"host", ""}}, "host"},
        {{{"state", "delayed"}, {"host", "http://a/"}}, "host"},
        {{{"state", "delayed"}, {"id_prefix", std::string(257, 'x')}}, "id_prefix"},
        {{{"state", "delayed"}, {"id_prefix", std::string("a\0b", 3)}}, "id_prefix"},
        {{{"state", "delayed"}, {"due_after", "1969-12-31T23:59:59Z"}}, "due_after"},
    };
    for (const auto& [p, field] : bad) {
        try {
            service::parse_task_list(p, limits);
            BOOST_ERROR("accepted, expected a refusal naming " << field);
        } catch (const service::invalid_field& e) {
            BOOST_TEST(e.field() == field, e.what());
        }
    }
}
