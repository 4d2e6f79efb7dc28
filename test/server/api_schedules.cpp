//
// test/server/api_schedules.cpp
//
// The schedule endpoints of timewheeld, black-box over HTTP on 127.0.0.1: the timewheeld
// binary with its worker and its materialiser, on a real redis-server and on a SQLite file,
// calling a recording sink. A fast schedule's occurrences arrive each once and never before
// their instant (order and "never early" only: nothing timed); create is idempotent (201,
// 200, 409 for another spec), a page at a time, PATCH, DELETE, pause (no more callbacks),
// resume, trigger (one extra callback at once); /next and :preview across Berlin's 2026
// spring-forward gap, the instants written down from the tz database
// (`zdump -v -c 2026,2027 Europe/Berlin`); every bad input a 400 naming its field.
//
#define BOOST_TEST_MODULE server_api_schedules
#include <boost/test/unit_test.hpp>

#include <test/server/support/api_service.hpp>
#include <test/server/support/service_node.hpp>
#include <test/server/support/sink.hpp>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <vector>

namespace ts = timewheel::test;
namespace json = boost::json;
using verb = boost::beast::http::verb;
using namespace std::chrono_literals;

namespace {

// A sink that answers 200 and notes when each callback arrived (this machine's clock, the
// store's too), by its Idempotency-Key.
struct timed_sink {
    ts::sink sink;
    mutable std::mutex mutex;
    std::multimap<std::string, std::int64_t> arrivals; // key -> arrival, ms since the epoch

    timed_sink() {
        sink.respond([this](const ts::recorded_request& r) {
            const auto now = ts::now_ms();
            std::lock_guard lock(mutex);
            arrivals.emplace(r.header("Idempotency-Key").value_or(""), now);
            ts::reply ok;
            ok.status = 200;
            return ok;
        });
    }
    std::multimap<std::string, std::int64_t> snapshot() const {
        std::lock_guard lock(mutex);
        return arrivals;
    }
    // The keys of schedule `id`'s occurrences ("{id}@<instant>"), triggers left out.
    std::vector<std::string> occurrences_of(const std::string& id) const {
        std::set<std::string> keys;
        for (const auto& [k, at] : snapshot()) {
            if (k.starts_with("{" + id + "}@") && k.find("trigger") == std::string::npos) {
                keys.insert(k);
            }
        }
        return {keys.begin(), keys.end()};
    }
    std::size_t count(const std::string& key) const {
        std::lock_guard lock(mutex);
        return arrivals.count(key);
    }
};

// A service with its worker (and so its materialiser), allowed to call the sink on loopback.
ts::api_service::options with_worker(std::vector<std::string> extra = {}) {
    ts::api_service::options o;
    o.worker = true;
    o.queue = "schedules";
    o.args = {"--callback-allow-loopback"};
    o.args.insert(o.args.end(), extra.begin(), extra.end());
    return o;
}

std::string schedule_body(const std::string& id, const std::string& rule,
                          const std::string& url = "http://127.0.0.1:9/hook",
                          const std::string& extra = "") {
    return R"({"id": )" + ts::json_quote(id) + ", " + rule + R"(, "callback": {"url": )" +
           ts::json_quote(url) + R"(, "body": "tick"})" + extra + "}";
}

// `s` percent-encoded as one path segment (an occurrence's task id holds '{', '}', ':').
std::string segment(std::string_view s) {
    static constexpr char digits[] = "0123456789ABCDEF";
    std::string out;
    for (const char c : s) {
        const auto u = static_cast<unsigned char>(c);
        if (std::isalnum(u) || c == '-' || c == '.' || c == '_' || c == '~') {
            out += c;
        } else {
            out += '%';
            out += digits[u >> 4];
            out += digits[u & 15];
        }
    }
    return out;
}

// The instant of an occurrence from its key: "{id}@2026-11-28T01:02:03.400Z".
std::int64_t instant_of(const std::string& key) {
    return ts::epoch_ms(key.substr(key.find("}@") + 2));
}

// Both stores, each its own service: the schedules live where the tasks do.
std::vector<std::vector<std::string>> stores(const ts::temp_dir& dir) {
    return {{}, {"--store", ts::sqlite_store_url(dir)}};
}

} // namespace

BOOST_AUTO_TEST_SUITE(api_schedules, *boost::unit_test::precondition(ts::redis_available()))

BOOST_AUTO_TEST_CASE(a_fast_schedule_calls_back_each_occurrence_once_and_never_early) {
    const ts::temp_dir dir("timewheeld-schedules");
    for (const auto& store : stores(dir)) {
        BOOST_TEST_CONTEXT("store " << (store.empty() ? "redis" : store[1])) {
            timed_sink s;
            ts::api_service svc(with_worker(store));
            const auto created = svc.post(
                "/v1/schedules", schedule_body("fast", R"("every_ms": 200)", s.sink.url("/tick")));
            BOOST_TEST_REQUIRE(created.status == 201u, created);
            BOOST_TEST(created.headers["Location"] == "/v1/schedules/fast");
            BOOST_TEST(created.json().at("every_ms").as_int64() == 200);
            BOOST_TEST(created.json().at("next_occurrence").at("at").is_string());

            BOOST_TEST_REQUIRE(ts::eventually([&] { return s.occurrences_of("fast").size() >= 5; }),
                               svc.log());
            BOOST_TEST_REQUIRE(svc.request(verb::delete_, "/v1/schedules/fast").status == 200u);
            const auto keys = s.occurrences_of("fast");
            const auto arrivals = s.snapshot();
            std::int64_t previous = 0;
            for (const auto& key : keys) {
                BOOST_TEST_CONTEXT(key) {
                    // Each occurrence once (the sink answered 200 every time).
                    BOOST_TEST(arrivals.count(key) == 1u);
                    const auto at = instant_of(key);
                    // Successive instants of the interval, in order.
                    BOOST_TEST(at > previous);
                    BOOST_TEST((at - instant_of(keys.front())) % 200 == 0);
                    previous = at;
                    // Never early: the callback arrived at or after its instant.
                    BOOST_TEST(arrivals.find(key)->second >= at);
                }
            }
            // The occurrences are ordinary tasks, visible through /v1/tasks.
            const auto task = svc.get("/v1/tasks/" + segment(keys.front()));
            BOOST_TEST_REQUIRE(task.status == 200u, task);
            BOOST_TEST(ts::eventually([&] {
                return svc.get("/v1/tasks/" + segment(keys.front())).json().at("state") ==
                       "finished";
            }));
        }
    }
}

BOOST_AUTO_TEST_CASE(create_is_idempotent_then_get_list_patch_and_delete) {
    ts::api_service svc; // no worker: nothing fires
    const auto spec = schedule_body("daily", R"("cron": "0 9 * * *", "time_zone": "Europe/Berlin")",
                                    "http://127.0.0.1:9/hook",
                                    R"(, "retry": {"attempts": 3}, "misfire": {"policy":
                                       "run_all", "limit": 4}, "overlap": "forbid")");
    const auto first = svc.post("/v1/schedules", spec);
    BOOST_TEST_REQUIRE(first.status == 201u, first);
    const auto o = first.json().as_object();
    BOOST_TEST(o.at("id").as_string() == "daily");
    BOOST_TEST(o.at("cron").as_string() == "0 9 * * *");
    BOOST_TEST(o.at("time_zone").as_string() == "Europe/Berlin");
    BOOST_TEST(o.at("callback").at("url").as_string() == "http://127.0.0.1:9/hook");
    BOOST_TEST(o.at("retry").at("attempts").as_int64() == 3);
    BOOST_TEST(o.at("misfire").at("policy").as_string() == "run_all");
    BOOST_TEST(o.at("misfire").at("limit").as_int64() == 4);
    BOOST_TEST(o.at("overlap").as_string() == "forbid");
    BOOST_TEST(o.at("paused").as_bool() == false);
    BOOST_TEST(o.at("last_task_id").is_null());
    // 09:00 in Berlin is 07:00 or 08:00 UTC, whichever the date's offset.
    const std::string next(o.at("next_occurrence").at("at").as_string());
    BOOST_TEST((next.substr(10) == "T08:00:00.000Z" || next.substr(10) == "T07:00:00.000Z"), next);
    const std::string local(o.at("next_occurrence").at("local").as_string());
    BOOST_TEST(local.substr(10, 9) == "T09:00:00", local);

    // The same spec again: 200, the schedule as it is; another spec under the id: 409.
    const auto again = svc.post("/v1/schedules", spec);
    BOOST_TEST_REQUIRE(again.status == 200u, again);
    BOOST_TEST(again.json().at("cron").as_string() == "0 9 * * *");
    const auto other = svc.post("/v1/schedules", schedule_body("daily", R"("cron": "0 10 * * *")"));
    BOOST_TEST(other.status == 409u, other);
    BOOST_TEST(other.error_code() == "schedule_conflict");
    BOOST_TEST(svc.get("/v1/schedules/daily").json().at("cron").as_string() == "0 9 * * *");

    // A page at a time.
    for (const char* id : {"s-1", "s-2"}) {
        BOOST_TEST_REQUIRE(
            svc.post("/v1/schedules", schedule_body(id, R"("every_ms": 3600000)")).status == 201u);
    }
    const auto page1 = svc.get("/v1/schedules?limit=2");
    BOOST_TEST_REQUIRE(page1.status == 200u, page1);
    BOOST_TEST_REQUIRE(page1.json().at("entries").as_array().size() == 2u);
    BOOST_TEST_REQUIRE(page1.json().at("next_cursor").is_string());
    const auto page2 = svc.get("/v1/schedules?limit=2&cursor=" +
                               std::string(page1.json().at("next_cursor").as_string()));
    BOOST_TEST_REQUIRE(page2.status == 200u, page2);
    BOOST_TEST_REQUIRE(page2.json().at("entries").as_array().size() == 1u);
    BOOST_TEST(page2.json().at("next_cursor").is_null());
    std::set<std::string> ids;
    for (const auto* p : {&page1, &page2}) {
        const auto page = p->json();
        for (const auto& e : page.at("entries").as_array()) {
            ids.emplace(e.at("id").as_string());
        }
    }
    BOOST_TEST(ids == (std::set<std::string>{"daily", "s-1", "s-2"}));
    BOOST_TEST(svc.get("/v1/schedules?limit=0").status == 400u);

    // PATCH: the fields given replace theirs; the others stay.
    const auto patched = svc.request(verb::patch, "/v1/schedules/daily",
                                     R"({"cron": "30 2 * * *", "overlap": "allow"})");
    BOOST_TEST_REQUIRE(patched.status == 200u, patched);
    BOOST_TEST(patched.json().at("cron").as_string() == "30 2 * * *");
    BOOST_TEST(patched.json().at("time_zone").as_string() == "Europe/Berlin");
    BOOST_TEST(patched.json().at("overlap").as_string() == "allow");
    BOOST_TEST(patched.json().at("misfire").at("policy").as_string() == "run_all");
    const auto to_interval =
        svc.request(verb::patch, "/v1/schedules/daily", R"({"every_ms": 60000})");
    BOOST_TEST_REQUIRE(to_interval.status == 200u, to_interval);
    BOOST_TEST(!to_interval.json().as_object().contains("cron"));
    BOOST_TEST(to_interval.json().at("time_zone").as_string() == "UTC");
    const auto bad_patch =
        svc.request(verb::patch, "/v1/schedules/daily", R"({"cron": "0 25 * * *"})");
    BOOST_TEST(bad_patch.status == 400u, bad_patch);
    BOOST_TEST(svc.get("/v1/schedules/daily").json().at("every_ms").as_int64() == 60000);
    BOOST_TEST(svc.request(verb::patch, "/v1/schedules/nobody", R"({"paused": true})").status ==
               404u);

    // DELETE: gone, then 404.
    const auto deleted = svc.request(verb::delete_, "/v1/schedules/daily");
    BOOST_TEST_REQUIRE(deleted.status == 200u, deleted);
    BOOST_TEST(svc.get("/v1/schedules/daily").status == 404u);
    BOOST_TEST(svc.request(verb::delete_, "/v1/schedules/daily").status == 404u);
    BOOST_TEST(svc.get("/v1/schedules/daily").error_code() == "not_found");
}

BOOST_AUTO_TEST_CASE(pause_stops_the_callbacks_resume_restarts_them_and_trigger_adds_one) {
    timed_sink s;
    ts::api_service svc(with_worker());
    BOOST_TEST_REQUIRE(
        svc.post("/v1/schedules", schedule_body("p", R"("every_ms": 200)", s.sink.url("/p")))
            .status == 201u);
    BOOST_TEST_REQUIRE(ts::eventually([&] { return s.occurrences_of("p").size() >= 2; }),
                       svc.log());

    const auto paused = svc.post("/v1/schedules/p/pause", "");
    BOOST_TEST_REQUIRE(paused.status == 200u, paused);
    BOOST_TEST(paused.json().at("paused").as_bool());
    // What was materialised before the pause may still run: wait until every task the
    // schedule created has finished, then no more arrive.
    const auto settled = [&] {
        const auto st = svc.get("/v1/schedules/p").json();
        const auto& last = st.at("last_task_id");
        if (last.is_null()) {
            return false;
        }
        const auto t = svc.get("/v1/tasks/" + segment(std::string(last.as_string())));
        return t.status == 200u && t.json().at("state").as_string() == "finished" &&
               s.count(std::string(last.as_string())) == 1u;
    };
    BOOST_TEST_REQUIRE(ts::eventually(settled), svc.log());
    const auto at_pause = s.snapshot().size();
    // Longer than several intervals (not a timed assertion: nothing may arrive at all).
    std::this_thread::sleep_for(1500ms);
    BOOST_TEST(s.snapshot().size() == at_pause);

    // A trigger while paused: one extra callback at once, the task in the answer.
    const auto triggered = svc.post("/v1/schedules/p/trigger", "");
    BOOST_TEST_REQUIRE(triggered.status == 201u, triggered);
    const std::string task_id(triggered.json().at("id").as_string());
    BOOST_TEST(task_id.starts_with("{p}@"), task_id);
    BOOST_TEST(triggered.headers["Location"] == "/v1/tasks/" + segment(task_id));
    BOOST_TEST_REQUIRE(ts::eventually([&] { return s.count(task_id) == 1u; }), svc.log());
    BOOST_TEST(s.snapshot().size() == at_pause + 1);

    const auto resumed = svc.post("/v1/schedules/p/resume", "");
    BOOST_TEST_REQUIRE(resumed.status == 200u, resumed);
    BOOST_TEST(!resumed.json().at("paused").as_bool());
    const auto before = s.occurrences_of("p").size();
    BOOST_TEST_REQUIRE(ts::eventually([&] { return s.occurrences_of("p").size() >= before + 2; }),
                       svc.log());

    for (const char* action : {"pause", "resume", "trigger"}) {
        BOOST_TEST(svc.post(std::string("/v1/schedules/nobody/") + action, "").status == 404u);
    }
}

BOOST_AUTO_TEST_CASE(next_and_preview_show_the_berlin_spring_forward_gap) {
    ts::api_service svc;
    // zdump: 2026-03-29 01:00:00 UT is 03:00:00 CEST (02:00-02:59 local do not exist).
    const std::vector<std::pair<std::string, std::string>> expected = {
        {"2026-03-28T01:30:00.000Z", "2026-03-28T02:30:00+01:00"},
        {"2026-03-29T01:00:00.000Z", "2026-03-29T03:00:00+02:00"},
        {"2026-03-30T00:30:00.000Z", "2026-03-30T02:30:00+02:00"},
    };
    auto check = [&](const ts::api_reply& r) {
        BOOST_TEST_REQUIRE(r.status == 200u, r);
        BOOST_TEST(r.json().at("time_zone").as_string() == "Europe/Berlin");
        const auto body = r.json();
        const auto& list = body.at("occurrences").as_array();
        BOOST_TEST_REQUIRE(list.size() == expected.size(), r);
        for (std::size_t i = 0; i < list.size(); ++i) {
            BOOST_TEST(list[i].at("at").as_string() == expected[i].first);
            BOOST_TEST(list[i].at("local").as_string() == expected[i].second);
        }
    };
    BOOST_TEST_REQUIRE(
        svc.post("/v1/schedules",
                 schedule_body("berlin", R"("cron": "30 2 * * *", "time_zone": "Europe/Berlin")"))
            .status == 201u);
    check(svc.get("/v1/schedules/berlin/next?count=3&after=2026-03-27T12:00:00Z"));
    check(svc.post("/v1/schedules:preview", R"({"cron": "30 2 * * *", "time_zone":
                   "Europe/Berlin", "after": "2026-03-27T12:00:00Z", "count": 3})"));

    // zdump: 2026-10-25 00:59:59 UT is 02:59:59 CEST, 01:00:00 UT is 02:00:00 CET: 02:30
    // happens twice that night, and fires once, the first time.
    const auto fold = svc.post("/v1/schedules:preview", R"({"cron": "30 2 * * *", "time_zone":
        "Europe/Berlin", "after": "2026-10-23T12:00:00Z", "count": 3})");
    BOOST_TEST_REQUIRE(fold.status == 200u, fold);
    std::vector<std::string> fold_at;
    const auto fold_json = fold.json();
    for (const auto& o : fold_json.at("occurrences").as_array()) {
        fold_at.emplace_back(std::string(o.at("at").as_string()) + " " +
                             std::string(o.at("local").as_string()));
    }
    BOOST_TEST(fold_at ==
                   (std::vector<std::string>{"2026-10-24T00:30:00.000Z 2026-10-24T02:30:00+02:00",
                                             "2026-10-25T00:30:00.000Z 2026-10-25T02:30:00+02:00",
                                             "2026-10-26T01:30:00.000Z 2026-10-26T02:30:00+01:00"}),
               boost::test_tools::per_element());

    // An interval from its start: start_at itself is the first occurrence.
    const auto every = svc.post("/v1/schedules:preview", R"({"every_ms": 90000, "start_at":
        "2030-01-01T00:00:00Z", "end_at": "2030-01-01T00:04:00Z", "count": 10})");
    BOOST_TEST_REQUIRE(every.status == 200u, every);
    std::vector<std::string> at;
    const auto every_json = every.json();
    for (const auto& o : every_json.at("occurrences").as_array()) {
        at.emplace_back(o.at("at").as_string());
    }
    BOOST_TEST(at ==
                   (std::vector<std::string>{"2030-01-01T00:00:00.000Z", "2030-01-01T00:01:30.000Z",
                                             "2030-01-01T00:03:00.000Z"}),
               boost::test_tools::per_element());

    // count is bounded; after must be a time.
    BOOST_TEST(svc.get("/v1/schedules/berlin/next?count=0").error_field() == "count");
    BOOST_TEST(svc.get("/v1/schedules/berlin/next?count=101").error_field() == "count");
    BOOST_TEST(svc.get("/v1/schedules/berlin/next?after=soon").error_field() == "after");
    BOOST_TEST(svc.get("/v1/schedules/nobody/next").status == 404u);
    BOOST_TEST(svc.get("/v1/schedules:preview").status == 405u);
}

BOOST_AUTO_TEST_CASE(every_bad_schedule_is_a_400_naming_its_field_and_nothing_is_stored) {
    ts::api_service svc;
    struct bad {
        std::string id, body, field;
    };
    const std::vector<bad> cases = {
        {"b1", schedule_body("b1", R"("cron": "0 25 * * *")"), "cron"},
        {"b2", schedule_body("b2", R"("cron": "0 9 * * *", "time_zone": "Mars/Olympus")"),
         "time_zone"},
        {"b3", schedule_body("b3", R"("cron": "0 9 * * *", "every_ms": 1000)"), "cron"},
        {"b4", R"({"id": "b4", "callback": {"url": "http://127.0.0.1:9/"}})", "cron"},
        {"b5",
         schedule_body("b5", R"("every_ms": 1000)", "http://127.0.0.1:9/",
                       R"(, "misfire": {"policy": "sometimes"})"),
         "misfire.policy"},
        {"b6",
         schedule_body("b6", R"("every_ms": 1000)", "http://127.0.0.1:9/",
                       R"(, "misfire": {"policy": "skip", "limit": 3})"),
         "misfire.limit"},
        {"b7",
         schedule_body("b7", R"("every_ms": 1000)", "http://127.0.0.1:9/",
                       R"(, "overlap": "maybe")"),
         "overlap"},
        {"b8", schedule_body("b8", R"("every_ms": 1000, "colour": "red")"), "colour"},
        {"b9", schedule_body("b9", R"("every_ms": 10)"), "every_ms"},
        {"b10", schedule_body("b10", R"("every_ms": 1000, "time_zone": "Europe/Berlin")"),
         "time_zone"},
        {"b11", schedule_body("b11", R"("every_ms": 1000, "start_at": "2030-01-02T00:00:00Z",
                                        "end_at": "2030-01-01T00:00:00Z")"),
         "end_at"},
        {"b12", R"({"id": "b12", "every_ms": 1000})", "callback"},
        {"b13", schedule_body("b13", R"("every_ms": 1000)", "ftp://127.0.0.1/"), "callback.url"},
        {"", schedule_body("{b14}", R"("every_ms": 1000)"), "id"},
        {"", R"({"every_ms": 1000, "callback": {"url": "http://127.0.0.1:9/"}})", "id"},
        {"b16",
         schedule_body("b16", R"("every_ms": 1000)", "http://127.0.0.1:9/",
                       R"(, "retry": {"attempts": 0})"),
         "retry.attempts"},
        {"b17", schedule_body("b17", R"("cron": "0 9 * * *", "paused": "yes")"), "paused"},
    };
    for (const auto& c : cases) {
        BOOST_TEST_CONTEXT(c.body) {
            const auto r = svc.post("/v1/schedules", c.body);
            BOOST_TEST(r.status == 400u, r);
            BOOST_TEST(r.error_code() == "invalid_field");
            BOOST_TEST(r.error_field() == c.field);
            if (!c.id.empty()) {
                BOOST_TEST(svc.get("/v1/schedules/" + c.id).status == 404u);
            }
        }
    }
    // A bad expression: the cron engine's own words, and where in the expression.
    const auto r = svc.post("/v1/schedules", cases[0].body);
    BOOST_TEST(r.json().at("error").at("message").as_string() ==
               "field 2 (hour): 25 is out of range 0-23");
    BOOST_TEST(r.json().at("error").at("position").as_int64() == 2);
    const auto zone = svc.post("/v1/schedules", cases[1].body);
    BOOST_TEST(zone.json().at("error").at("message").as_string().find("Mars/Olympus") !=
               std::string::npos);
    BOOST_TEST(svc.get("/v1/schedules").json().at("entries").as_array().empty());
}

BOOST_AUTO_TEST_CASE(schedules_need_the_token_like_every_route) {
    ts::api_service::options o;
    o.env = {"TIMEWHEELD_TOKEN=s3cret"};
    ts::api_service svc(o);
    const auto body = schedule_body("auth", R"("every_ms": 60000)");
    BOOST_TEST(svc.post("/v1/schedules", body).status == 401u);
    BOOST_TEST(svc.get("/v1/schedules").status == 401u);
    BOOST_TEST(svc.get("/v1/schedules/auth/next").status == 401u);
    BOOST_TEST(svc.post("/v1/schedules:preview", R"({"every_ms": 1000})").status == 401u);
    const auto with_token =
        svc.request(verb::post, "/v1/schedules", body, {{"Authorization", "Bearer s3cret"}});
    BOOST_TEST(with_token.status == 201u, with_token);
}

// Two nodes on one Redis both materialise (no leader); one killed with -9 while occurrences
// come due: the other goes on, and every occurrence in between is one task whose callback
// arrived (again only if the killed node was making it), none early, none missing.
BOOST_AUTO_TEST_CASE(two_nodes_one_killed_every_occurrence_is_one_task_none_missing_none_early) {
    ts::redis_server redis;
    timed_sink s;
    const std::string store = "redis://127.0.0.1:" + std::to_string(redis.port()) + "/pair";
    const std::vector<std::string> args = {"--lease-ms", "1000"};
    ts::service_node a({.store = store, .args = args});
    ts::service_node b({.store = store, .args = args});
    const auto created =
        a.post("/v1/schedules", schedule_body("pair", R"("every_ms": 200)", s.sink.url("/pair")));
    BOOST_TEST_REQUIRE(created.status == 201u, created);
    BOOST_TEST_REQUIRE(ts::eventually([&] { return s.occurrences_of("pair").size() >= 5; }),
                       a.log());
    a.kill9();
    const auto at_kill = s.occurrences_of("pair").size();
    BOOST_TEST_REQUIRE(
        ts::eventually([&] { return s.occurrences_of("pair").size() >= at_kill + 15; }, 60s),
        b.log());
    BOOST_TEST_REQUIRE(b.request(verb::delete_, "/v1/schedules/pair").status == 200u);
    // What was materialised before the delete still runs: the keys so far, then the checks.
    const auto keys = s.occurrences_of("pair");
    const auto arrivals = s.snapshot();
    std::size_t twice = 0;
    for (std::size_t i = 0; i < keys.size(); ++i) {
        BOOST_TEST_CONTEXT(keys[i]) {
            const auto at = instant_of(keys[i]);
            // No occurrence missing between the first and the last: consecutive instants.
            if (i > 0) {
                BOOST_TEST(at - instant_of(keys[i - 1]) == 200);
            }
            const auto n = arrivals.count(keys[i]);
            BOOST_TEST(n >= 1u);
            // A second time only for a callback the killed node made but had not acked (its
            // lease ran out): at least once, as any task's.
            BOOST_TEST(n <= 2u);
            twice += n == 2 ? 1 : 0;
            for (auto [it, end] = arrivals.equal_range(keys[i]); it != end; ++it) {
                BOOST_TEST(it->second >= at); // never early
            }
        }
    }
    BOOST_TEST_MESSAGE(keys.size() << " occurrences, " << at_kill << " before the kill, " << twice
                                   << " delivered twice");
}

BOOST_AUTO_TEST_SUITE_END()
