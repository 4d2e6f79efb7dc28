//
// test/server/api_queries.cpp
//
// The views over many tasks, GET /v1/tasks and GET /v1/stats, and the /metrics gauges of the
// store's counts, black-box over HTTP on 127.0.0.1: a real timewheeld with its worker, on
// the SQLite store and on a real redis-server, and real receivers (support/sink.hpp) that
// answer 200, answer 400 (the task dies) or hold the request (the task stays running).
// With tasks in every state it lists each state and checks the ids against what was made,
// pages through 250 tasks, narrows by due time, id prefix and callback host, refuses every
// bad parameter naming it (and anything without the token), and reads the counts and this
// node's figures per destination.
//
#define BOOST_TEST_MODULE server_api_queries
#include <boost/test/unit_test.hpp>

#include <test/server/support/api_service.hpp>
#include <test/server/support/service_node.hpp>
#include <test/server/support/sink.hpp>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace ts = timewheel::test;
namespace json = boost::json;
using verb = boost::beast::http::verb;
using namespace std::chrono_literals;

namespace {

constexpr const char* token = "queries-token";
constexpr int delayed_count = 250;

// A timewheeld with its worker and a token, calling the sinks on loopback.
struct fixture {
    ts::temp_dir dir{"timewheeld-queries"};
    std::optional<ts::api_service> svc;
    // After the service: destroyed first, so that the held request ends before it stops.
    ts::sink ok;
    ts::sink bad;
    ts::sink hold;
    std::chrono::system_clock::time_point base; // the due time of d-000, whole seconds

    explicit fixture(bool sqlite) {
        ts::api_service::options o;
        o.worker = true;
        o.queue = "queries";
        o.args = {"--callback-allow-loopback", "--token", token,
                  // A scrape storm reads the store once: the gauges below are the first
                  // scrape's, and the second one reads nothing.
                  "--metrics-store-interval-ms", "3600000"};
        if (sqlite) {
            o.args.insert(o.args.end(), {"--store", ts::sqlite_store_url(dir)});
        }
        svc.emplace(o);
        bad.respond([](const ts::recorded_request&) {
            ts::reply r;
            r.status = 400;
            return r;
        });
        hold.respond([](const ts::recorded_request&) {
            ts::reply r;
            r.act = ts::reply::action::hang;
            return r;
        });
        base = std::chrono::floor<std::chrono::seconds>(std::chrono::system_clock::now() + 2h);
    }

    ts::api_reply call(verb method, const std::string& target, std::string body = {}) {
        return svc->request(method, target, std::move(body),
                            {{"Authorization", std::string("Bearer ") + token}});
    }
    ts::api_reply get(const std::string& target) { return call(verb::get, target); }

    void submit(const std::string& id, const std::string& due, const std::string& url) {
        const auto r = call(verb::post, "/v1/tasks",
                            R"({"id": )" + ts::json_quote(id) + ", " + due +
                                R"(, "callback": {"url": )" + ts::json_quote(url) +
                                R"(, "timeout_ms": 60000, "headers": {"X-Secret-Ish": "h"},
                                   "body": "b"}, "retry": {"attempts": 1}})");
        BOOST_TEST_REQUIRE(r.status == 201u, r);
    }

    std::string state_of(const std::string& id) {
        const auto r = get("/v1/tasks/" + id);
        BOOST_TEST_REQUIRE(r.status == 200u, r);
        return std::string(r.json().at("state").as_string());
    }

    // Every page of a listing, following next_cursor; the ids in order.
    std::vector<std::string> walk(const std::string& query, std::size_t* pages = nullptr) {
        std::vector<std::string> ids;
        std::string cursor;
        for (std::size_t n = 1;; ++n) {
            auto target = "/v1/tasks?" + query;
            if (!cursor.empty()) {
                target += "&cursor=" + cursor; // base64url-ish: the store's, sent as given
            }
            const auto r = get(target);
            BOOST_TEST_REQUIRE(r.status == 200u, target << " -> " << r);
            const auto page = r.json().as_object();
            for (const auto& e : page.at("entries").as_array()) {
                ids.emplace_back(e.at("id").as_string());
            }
            if (page.at("next_cursor").is_null()) {
                if (pages) {
                    *pages = n;
                }
                return ids;
            }
            cursor = percent_encode(std::string(page.at("next_cursor").as_string()));
            BOOST_TEST_REQUIRE(n < 1000u, "no end to " << query);
        }
    }

    static std::string percent_encode(const std::string& s) {
        std::string out;
        for (const unsigned char c : s) {
            if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
                out += static_cast<char>(c);
            } else {
                char buf[4];
                std::snprintf(buf, sizeof buf, "%%%02X", c);
                out += buf;
            }
        }
        return out;
    }
};

std::string due_at(std::chrono::system_clock::time_point t) {
    return R"("due_at": ")" + ts::rfc3339(t) + "\"";
}

// `t` as RFC 3339 at +01:00 (the API takes any offset).
std::string at_plus_one(std::chrono::system_clock::time_point t) {
    auto s = ts::rfc3339(t + 1h); // "...Z" of the local time at +01:00
    s.pop_back();
    return s + "%2B01:00"; // '+' percent-encoded: in a query it would be a space
}

std::string id_of(int i) {
    char buf[16];
    std::snprintf(buf, sizeof buf, "d-%03d", i);
    return buf;
}

std::set<std::string> as_set(const std::vector<std::string>& v) {
    return {v.begin(), v.end()};
}

void lists_counts_and_figures(bool sqlite) {
    fixture f(sqlite);
    // Delayed: 250, due a minute apart from `base`; every fifth calls a.example:81 (never
    // called: due in hours).
    for (int i = 0; i < delayed_count; ++i) {
        f.submit(id_of(i), due_at(f.base + std::chrono::minutes(i)),
                 i % 5 == 0 ? "http://a.example:81/x" : "http://127.0.0.1:9/never");
    }
    // Cancelled: 2. Finished: 3 (answered 200). Dead: 2 (answered 400). Running: 1 (held).
    for (const char* id : {"c-0", "c-1"}) {
        f.submit(id, due_at(f.base), "http://127.0.0.1:9/never");
        BOOST_TEST_REQUIRE(f.call(verb::delete_, std::string("/v1/tasks/") + id).status == 200u);
    }
    for (const char* id : {"f-0", "f-1", "f-2"}) {
        f.submit(id, R"("delay_ms": 0)", f.ok.url("/ok"));
    }
    for (const char* id : {"x-0", "x-1"}) {
        f.submit(id, R"("delay_ms": 0)", f.bad.url("/bad"));
    }
    f.submit("r-0", R"("delay_ms": 0)", f.hold.url("/hold"));
    BOOST_TEST_REQUIRE(ts::eventually([&] {
        return f.state_of("f-0") == "finished" && f.state_of("f-1") == "finished" &&
               f.state_of("f-2") == "finished" && f.state_of("x-0") == "dead" &&
               f.state_of("x-1") == "dead" && f.state_of("r-0") == "running";
    }));

    // Each state lists what it holds, nothing else.
    const std::map<std::string, std::set<std::string>> expected = {
        {"cancelled", {"c-0", "c-1"}},
        {"finished", {"f-0", "f-1", "f-2"}},
        {"dead", {"x-0", "x-1"}},
        {"running", {"r-0"}},
        {"prefetched", {}},
    };
    for (const auto& [state, ids] : expected) {
        const auto r = f.get("/v1/tasks?state=" + state + "&limit=1000");
        BOOST_TEST_REQUIRE(r.status == 200u, r);
        std::set<std::string> got;
        const auto page = r.json(); // (a loop over a temporary's member would dangle)
        for (const auto& e : page.at("entries").as_array()) {
            got.emplace(e.at("id").as_string());
            BOOST_TEST(e.at("state").as_string() == state);
            const bool ended = state == "cancelled" || state == "finished" || state == "dead";
            BOOST_TEST(e.as_object().contains("ended_at") == ended, e);
            // A list shows no headers and no body.
            if (e.at("callback").is_object()) {
                BOOST_TEST(e.at("callback").as_object().size() == 2u, e);
                BOOST_TEST(e.at("callback").at("method").as_string() == "POST");
            }
        }
        BOOST_TEST((got == ids), state);
        BOOST_TEST(page.at("next_cursor").is_null());
    }
    const auto dead = f.get("/v1/tasks?state=dead").json().at("entries").as_array().at(0);
    BOOST_TEST(dead.at("attempt").to_number<std::int64_t>() == 1);
    BOOST_TEST(!dead.at("last_error").is_null(), dead);
    BOOST_TEST(dead.at("callback").at("url").as_string() == f.bad.url("/bad"));

    // 250 delayed tasks in pages of 100: each once, soonest first; and newest first.
    std::size_t pages = 0;
    const auto all = f.walk("state=delayed&limit=100", &pages);
    BOOST_TEST(pages == 3u);
    BOOST_TEST_REQUIRE(all.size() == static_cast<std::size_t>(delayed_count));
    for (int i = 0; i < delayed_count; ++i) {
        BOOST_TEST(all[static_cast<std::size_t>(i)] == id_of(i));
    }
    auto desc = f.walk("state=delayed&order=desc&limit=100");
    std::reverse(desc.begin(), desc.end());
    BOOST_TEST((desc == all));

    // Due time: [10 min, 20 min) from base, the start given at +01:00.
    const auto window = f.walk("state=delayed&due_after=" + at_plus_one(f.base + 10min) +
                               "&due_before=" + ts::rfc3339(f.base + 20min));
    std::vector<std::string> want;
    for (int i = 10; i < 20; ++i) {
        want.push_back(id_of(i));
    }
    BOOST_TEST((window == want));
    // Id prefix.
    BOOST_TEST((f.walk("state=delayed&id_prefix=d-01") == want));
    // Callback host: with its port, without it, and a port it does not use; in small pages
    // (the service reads more store pages while its answer is short).
    std::set<std::string> fifth;
    for (int i = 0; i < delayed_count; i += 5) {
        fifth.insert(id_of(i));
    }
    const auto by_host = f.walk("state=delayed&host=a.example:81&limit=7");
    BOOST_TEST(by_host.size() == fifth.size()); // each once
    BOOST_TEST((as_set(by_host) == fifth));
    BOOST_TEST((as_set(f.walk("state=delayed&host=A.example")) == fifth));
    BOOST_TEST(f.walk("state=delayed&host=a.example:82").empty());
    if (sqlite) { // (Redis forgets a finished task's callback)
        BOOST_TEST((as_set(f.walk("state=finished&host=127.0.0.1:" +
                                  std::to_string(f.ok.port()))) == expected.at("finished")));
    }

    // Every bad parameter: 400 naming it, and nothing without the token.
    const auto a_cursor = fixture::percent_encode(
        std::string(f.get("/v1/tasks?state=delayed&limit=1").json().at("next_cursor").as_string()));
    const std::pair<std::string, std::string> refused[] = {
        {"", "state"},
        {"state=waiting", "state"},
        {"state=delayed&colour=red", "colour"},
        {"state=delayed&state=dead", "state"},
        {"state=delayed&order=sideways", "order"},
        {"state=dead&due_after=2026-01-01T00:00:00Z", "due_after"},
        {"state=delayed&ended_before=2026-01-01T00:00:00Z", "ended_before"},
        {"state=delayed&due_before=tomorrow", "due_before"},
        {"state=delayed&due_after=2026-01-02T00:00:00Z&due_before=2026-01-01T00:00:00Z",
         "due_before"},
        {"state=delayed&limit=0", "limit"},
        {"state=delayed&limit=1001", "limit"},
        {"state=delayed&host=http%3A%2F%2Fa%2F", "host"},
        {"state=delayed&cursor=%25%25not-a-cursor", "cursor"},
        {"state=delayed&cursor=%zz", "cursor"},
        {"state=dead&cursor=" + a_cursor, "cursor"}, // a cursor of another state
    };
    for (const auto& [query, field] : refused) {
        const auto r = f.get("/v1/tasks?" + query);
        BOOST_TEST(r.status == 400u, query << " -> " << r);
        if (r.status == 400u) {
            BOOST_TEST(r.error_field() == field, query << " -> " << r);
        }
    }
    for (const char* target : {"/v1/tasks?state=delayed", "/v1/stats"}) {
        BOOST_TEST(f.svc->get(target).status == 401u, target);
        BOOST_TEST(
            f.svc->request(verb::get, target, "", {{"Authorization", "Bearer nope"}}).status ==
                401u,
            target);
    }
    BOOST_TEST(f.call(verb::post, "/v1/stats", "{}").status == 405u);

    // The counts by state, and this node's figures: the failing host first.
    const auto s = f.get("/v1/stats");
    BOOST_TEST_REQUIRE(s.status == 200u, s);
    const auto st = s.json().as_object();
    const auto& counts = st.at("counts");
    BOOST_TEST(counts.at("delayed").to_number<std::int64_t>() == delayed_count, s);
    BOOST_TEST(counts.at("prefetched").to_number<std::int64_t>() == 0);
    BOOST_TEST(counts.at("running").to_number<std::int64_t>() == 1);
    BOOST_TEST(counts.at("finished").to_number<std::int64_t>() == 3);
    BOOST_TEST(counts.at("dead").to_number<std::int64_t>() == 2);
    BOOST_TEST(counts.at("cancelled").to_number<std::int64_t>() == 2);
    BOOST_TEST(st.at("due_now").to_number<std::int64_t>() == 0);
    BOOST_TEST(st.at("oldest_due_age_ms").is_null());
    const auto& node = st.at("node");
    BOOST_TEST(node.at("window_s").to_number<std::int64_t>() == 300);
    BOOST_TEST(node.at("throughput").as_array().size() == 30u);
    std::int64_t fired = 0, succeeded = 0, failed = 0;
    for (const auto& b : node.at("throughput").as_array()) {
        fired += b.at("fired").to_number<std::int64_t>();
        succeeded += b.at("succeeded").to_number<std::int64_t>();
        failed += b.at("failed").to_number<std::int64_t>();
    }
    BOOST_TEST(fired == 5); // the held one has not ended
    BOOST_TEST(succeeded == 3);
    BOOST_TEST(failed == 2);
    BOOST_TEST(node.at("lateness_ms").at("count").to_number<std::int64_t>() == 5);
    BOOST_TEST(node.at("callbacks_per_second").as_double() > 0.0);
    const auto& hist = node.at("lateness_histogram").as_array();
    BOOST_TEST_REQUIRE(hist.size() == 17u);
    BOOST_TEST(hist.back().at("le_ms").is_null());
    std::int64_t in_hist = 0;
    for (const auto& b : hist) {
        in_hist += b.at("count").to_number<std::int64_t>();
    }
    BOOST_TEST(in_hist == 5);
    const auto& hosts = st.at("hosts").as_array();
    BOOST_TEST_REQUIRE(hosts.size() == 3u, s);
    const auto name = [](const ts::sink& k) { return "127.0.0.1:" + std::to_string(k.port()); };
    BOOST_TEST(hosts[0].at("host").as_string() == name(f.bad));
    BOOST_TEST(hosts[0].at("failed").to_number<std::int64_t>() == 2);
    BOOST_TEST(std::string(hosts[0].at("last_error").as_string()).find("400") != std::string::npos,
               s);
    std::map<std::string, json::object> by_name;
    for (const auto& h : hosts) {
        by_name[std::string(h.at("host").as_string())] = h.as_object();
    }
    BOOST_TEST(by_name[name(f.ok)].at("succeeded").to_number<std::int64_t>() == 3);
    BOOST_TEST(by_name[name(f.ok)].at("failed").to_number<std::int64_t>() == 0);
    BOOST_TEST(by_name[name(f.ok)].at("last_error").is_null());
    BOOST_TEST(by_name[name(f.hold)].at("in_flight").to_number<std::int64_t>() == 1);

    // The /metrics gauges, read once for a storm of scrapes.
    const auto metrics = f.get("/metrics");
    BOOST_TEST_REQUIRE(metrics.status == 200u, metrics);
    const auto gauge = [&](const std::string& text, const std::string& series) {
        return ts::metric_value(text, series);
    };
    BOOST_TEST(gauge(metrics.body, "timewheeld_tasks{state=\"delayed\"}") == "250");
    BOOST_TEST(gauge(metrics.body, "timewheeld_tasks{state=\"running\"}") == "1");
    BOOST_TEST(gauge(metrics.body, "timewheeld_tasks{state=\"dead\"}") == "2");
    BOOST_TEST(gauge(metrics.body, "timewheeld_tasks{state=\"cancelled\"}") == "2");
    BOOST_TEST(gauge(metrics.body, "timewheeld_tasks_due_now") == "0");
    BOOST_TEST(gauge(metrics.body, "timewheeld_oldest_due_age_seconds") == "0");
    const auto reads = [&](const std::string& text) {
        return gauge(text, "timewheeld_store_round_trip_seconds_count{op=\"count_tasks\"}");
    };
    const auto first = reads(metrics.body);
    BOOST_TEST(!first.empty());
    for (int i = 0; i < 5; ++i) {
        BOOST_TEST(reads(f.get("/metrics").body) == first);
    }
}

} // namespace

BOOST_AUTO_TEST_CASE(tasks_are_listed_counted_and_their_callbacks_figured_on_sqlite) {
    lists_counts_and_figures(true);
}

BOOST_AUTO_TEST_CASE(tasks_are_listed_counted_and_their_callbacks_figured_on_redis) {
    lists_counts_and_figures(false);
}
