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

// Keys on one line, for a failure's message.
std::string joined(const std::vector<std::string>& keys) {
    std::string out;
    for (const auto& k : keys) {
        out += (out.empty() ? "" : " ") + k;
    }
    return out;
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
    // An expression over the engine's 256 bytes (a valid one, were it shorter): refused
    // before it is parsed, naming cron.
    std::string list = "0";
    while (list.size() <= 256) {
        list += ",0";
    }
    const auto long_cron =
        svc.post("/v1/schedules", schedule_body("b18", R"("cron": ")" + list + R"( 9 * * *")"));
    BOOST_TEST(long_cron.status == 400u, long_cron);
    BOOST_TEST(long_cron.error_field() == "cron");
    BOOST_TEST(long_cron.json().at("error").at("message").as_string() == "longer than 256 bytes");
    BOOST_TEST(svc.get("/v1/schedules/b18").status == 404u);
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

// A node without a worker materialises too (an API-only node makes the tasks that the
// worker nodes run); --no-scheduler turns that off, worker or not.
BOOST_AUTO_TEST_CASE(a_node_without_a_worker_materialises_schedules_unless_told_not_to) {
    for (const bool scheduler : {true, false}) {
        BOOST_TEST_CONTEXT((scheduler ? "--no-worker" : "--no-worker --no-scheduler")) {
            ts::api_service::options o; // --no-worker
            o.args = {"--schedule-period-ms", "100"};
            if (!scheduler) {
                o.args.push_back("--no-scheduler");
            }
            ts::api_service svc(o);
            BOOST_TEST_REQUIRE(
                svc.post("/v1/schedules", schedule_body("m", R"("every_ms": 200)")).status == 201u);
            const auto occurrences = [&] {
                return svc.get("/v1/schedules/m").json().at("counts").at("occurrences").as_int64();
            };
            if (scheduler) {
                BOOST_TEST_REQUIRE(ts::eventually([&] { return occurrences() >= 3; }), svc.log());
                // Its tasks exist, waiting for a worker: nothing runs them here.
                const auto last = svc.get("/v1/schedules/m").json().at("last_task_id");
                BOOST_TEST_REQUIRE(last.is_string());
                const auto task = svc.get("/v1/tasks/" + segment(std::string(last.as_string())));
                BOOST_TEST_REQUIRE(task.status == 200u, task);
                BOOST_TEST(task.json().at("state").as_string() == "delayed");
            } else {
                // Several periods and occurrences (not a timed assertion: nothing may happen).
                std::this_thread::sleep_for(1500ms);
                BOOST_TEST(occurrences() == 0);
                BOOST_TEST(svc.get("/v1/schedules/m").json().at("last_task_id").is_null());
            }
        }
    }
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

// All nodes down across several occurrences, then started again on the same store: the
// misfire policy decides which missed occurrences run. Three schedules on one half-second
// grid (the same start_at), one per policy, on one node with a short grace; the node killed
// with -9 for about ten occurrences. An occurrence is "missed" when it is more than the grace
// before the store's clock of the pass that finds it, and the first pass after the restart
// finds all three schedules with the same clock: so where each one resumes is exact relative
// to the others, whatever that pass's clock was. `skip` resumes at the first occurrence
// within the grace (F), `run_latest` one occurrence earlier (the latest missed, then F on),
// `run_all` with limit 3 three earlier; the occurrences between the kill and those are the
// schedule's `skipped_misfire`. Order and "never early" only: nothing timed.
BOOST_AUTO_TEST_CASE(all_nodes_down_across_occurrences_then_restarted_the_misfire_policy_holds) {
    const ts::temp_dir dir("timewheeld-misfire");
    ts::redis_server redis;
    constexpr std::int64_t interval = 500;
    constexpr std::int64_t grace = 500;
    struct policy {
        std::string id, misfire;
        std::int64_t kept; // missed occurrences it runs (before F)
    };
    const std::vector<policy> policies = {{"latest", R"({"policy": "run_latest"})", 1},
                                          {"skip", R"({"policy": "skip"})", 0},
                                          {"all", R"({"policy": "run_all", "limit": 3})", 3}};
    for (const auto& store : {"redis://127.0.0.1:" + std::to_string(redis.port()) + "/misfire",
                              ts::sqlite_store_url(dir)}) {
        BOOST_TEST_CONTEXT("store " << store) {
            timed_sink s;
            ts::service_node node({.store = store,
                                   .args = {"--lease-ms", "1000", "--schedule-window-ms", "500",
                                            "--schedule-period-ms", "100", "--schedule-grace-ms",
                                            std::to_string(grace)}});
            for (const auto& p : policies) {
                const auto created = node.post(
                    "/v1/schedules",
                    schedule_body(p.id,
                                  R"("every_ms": )" + std::to_string(interval) +
                                      R"(, "start_at": "2026-01-01T00:00:00Z")",
                                  s.sink.url("/" + p.id), R"(, "misfire": )" + p.misfire));
                BOOST_TEST_REQUIRE(created.status == 201u, created);
            }
            BOOST_TEST_REQUIRE(ts::eventually([&] {
                                   return std::ranges::all_of(policies, [&](const policy& p) {
                                       return s.occurrences_of(p.id).size() >= 2;
                                   });
                               }),
                               node.log());
            const auto killed_at = ts::now_ms();
            node.kill9();
            // Down across about ten occurrences: more than the window materialised ahead,
            // the grace and run_all's limit together.
            std::this_thread::sleep_for(5s);
            const auto restarted_at = ts::now_ms();
            node.start();
            // Each goes on past its restart, then stops (what was materialised still runs).
            BOOST_TEST_REQUIRE(ts::eventually([&] {
                                   return std::ranges::all_of(policies, [&](const policy& p) {
                                       const auto keys = s.occurrences_of(p.id);
                                       return !keys.empty() &&
                                              instant_of(keys.back()) > restarted_at + 1000;
                                   });
                               }),
                               node.log());
            for (const auto& p : policies) {
                BOOST_TEST_REQUIRE(node.post("/v1/schedules/" + p.id + "/pause", "").status ==
                                   200u);
            }
            BOOST_TEST_REQUIRE(ts::eventually([&] {
                                   return std::ranges::all_of(policies, [&](const policy& p) {
                                       const auto st = node.get("/v1/schedules/" + p.id).json();
                                       const auto& last = st.at("last_task_id");
                                       return last.is_string() &&
                                              s.count(std::string(last.as_string())) >= 1u;
                                   });
                               }),
                               node.log());

            std::map<std::string, std::int64_t> resumed_at; // F - kept * interval, per policy
            const auto arrivals = s.snapshot();
            for (const auto& p : policies) {
                BOOST_TEST_CONTEXT("policy " << p.misfire) {
                    const auto keys = s.occurrences_of(p.id);
                    std::vector<std::size_t> jumps;
                    for (std::size_t i = 0; i < keys.size(); ++i) {
                        const auto at = instant_of(keys[i]);
                        BOOST_TEST_CONTEXT(keys[i]) {
                            if (i > 0) {
                                const auto step = at - instant_of(keys[i - 1]);
                                BOOST_TEST(step % interval == 0);
                                if (step != interval) {
                                    jumps.push_back(i);
                                }
                            }
                            // Each occurrence once; twice only for one the killed node was
                            // calling back and had not acked (at least once, as any task).
                            const auto n = arrivals.count(keys[i]);
                            BOOST_TEST(n <= (at <= killed_at + 1000 ? 2u : 1u));
                            for (auto [it, e] = arrivals.equal_range(keys[i]); it != e; ++it) {
                                BOOST_TEST(it->second >= at); // never early
                            }
                        }
                    }
                    // Consecutive before the kill and after the restart: one jump, the
                    // missed occurrences that did not run.
                    BOOST_TEST_REQUIRE(jumps.size() == 1u, joined(keys));
                    const auto j = jumps.front();
                    const auto missing =
                        (instant_of(keys[j]) - instant_of(keys[j - 1])) / interval - 1;
                    BOOST_TEST(instant_of(keys[j - 1]) < restarted_at);
                    resumed_at[p.id] = instant_of(keys[j]) + p.kept * interval;
                    // The API counts them, and every other occurrence became one task.
                    const auto st = node.get("/v1/schedules/" + p.id).json();
                    BOOST_TEST(st.at("counts").at("skipped_misfire").as_int64() == missing);
                    const auto tasks = st.at("counts").at("occurrences").as_int64();
                    BOOST_TEST(ts::eventually([&] {
                                   return static_cast<std::int64_t>(
                                              s.occurrences_of(p.id).size()) == tasks;
                               }),
                               tasks << " tasks, " << keys.size() << " called back");
                    BOOST_TEST_MESSAGE(p.id << ": " << keys.size() << " occurrences, " << missing
                                            << " skipped, resumed at " << keys[j]);
                }
            }
            // skip resumes at F, the first occurrence within the grace of the restart's first
            // pass (so at or after the restart less the grace); run_latest at F less one
            // interval, run_all at F less three (their resumed_at is F for both).
            BOOST_TEST(resumed_at["skip"] >= restarted_at - grace);
            BOOST_TEST(resumed_at["latest"] == resumed_at["skip"]);
            BOOST_TEST(resumed_at["all"] == resumed_at["skip"]);
        }
    }
}

// The clock moved with libfaketime to a few seconds before a DST transition (or a skipped
// day), one timewheeld per transition on a SQLite file (the store's clock is the process's:
// on Redis it would be Redis's TIME, which libfaketime does not reach), all at once: each
// schedule's occurrences that arrive while the clock crosses the transition are exactly the
// ones written down below from `zdump -v` (quoted), never computed by the code under test.
// A schedule every second on each node is the witness that the node's clock went past the
// last instant looked at (an occurrence that should not fire would have been materialised
// and called back by then). The DST policy itself is the cron engine's (docs/cron.md,
// test/cron/schedule.cpp); this is the service holding it under a moved clock.
BOOST_AUTO_TEST_CASE(the_clock_moved_across_dst_transitions_each_zone_fires_as_the_tz_database_says,
                     *boost::unit_test::precondition(ts::faketime_available())) {
    struct schedule {
        std::string id, cron;
        std::vector<std::string> expected; // the instants that fire while the clock runs
    };
    struct transition {
        std::string zone;
        std::string clock; // where libfaketime starts the node's clock, UTC
        std::string until; // the witness's instant that ends the watch
        std::vector<schedule> schedules;
    };
    // clang-format off
    const std::vector<transition> transitions = {
        // Europe/Berlin  Sun Mar 29 00:59:59 2026 UT = Sun Mar 29 01:59:59 2026 CET isdst=0 gmtoff=3600
        // Europe/Berlin  Sun Mar 29 01:00:00 2026 UT = Sun Mar 29 03:00:00 2026 CEST isdst=1 gmtoff=7200
        // 02:30 does not exist: once, at the gap's end.
        {"Europe/Berlin", "2026-03-29T00:59:48.000Z", "2026-03-29T01:00:08.000Z",
         {{"gap", "30 2 * * *", {"2026-03-29T01:00:00.000Z"}},
          {"after", "5 0 3 * * *", {"2026-03-29T01:00:05.000Z"}}}},
        // Europe/Berlin  Sun Oct 25 00:59:59 2026 UT = Sun Oct 25 02:59:59 2026 CEST isdst=1 gmtoff=7200
        // Europe/Berlin  Sun Oct 25 01:00:00 2026 UT = Sun Oct 25 02:00:00 2026 CET isdst=0 gmtoff=3600
        // 02:59:55 fires in the first pass; 02:00:05 came in the first pass before the
        // schedule existed and does not fire in the second (01:00:05 UT); the same
        // wall-clock time every hour (hour `*`) follows elapsed time and does.
        {"Europe/Berlin", "2026-10-25T00:59:45.000Z", "2026-10-25T01:00:09.000Z",
         {{"first", "55 59 2 * * *", {"2026-10-25T00:59:55.000Z"}},
          {"once", "5 0 2 * * *", {}},
          {"hourly", "5 0 * * * *", {"2026-10-25T01:00:05.000Z"}}}},
        // Australia/Lord_Howe  Sat Oct  3 15:29:59 2026 UT = Sun Oct  4 01:59:59 2026 +1030 isdst=0 gmtoff=37800
        // Australia/Lord_Howe  Sat Oct  3 15:30:00 2026 UT = Sun Oct  4 02:30:00 2026 +11 isdst=1 gmtoff=39600
        // A 30-minute gap: 02:15 fires at 02:30+11:00.
        {"Australia/Lord_Howe", "2026-10-03T15:29:48.000Z", "2026-10-03T15:30:04.000Z",
         {{"gap", "15 2 * * *", {"2026-10-03T15:30:00.000Z"}}}},
        // America/Santiago  Sun Sep  6 03:59:59 2026 UT = Sat Sep  5 23:59:59 2026 -04 isdst=0 gmtoff=-14400
        // America/Santiago  Sun Sep  6 04:00:00 2026 UT = Sun Sep  6 01:00:00 2026 -03 isdst=1 gmtoff=-10800
        // Midnight of 6 September does not exist: daily and that day's, at 01:00-03:00.
        {"America/Santiago", "2026-09-06T03:59:48.000Z", "2026-09-06T04:00:04.000Z",
         {{"midnight", "0 0 * * *", {"2026-09-06T04:00:00.000Z"}},
          {"sixth", "0 0 6 9 *", {"2026-09-06T04:00:00.000Z"}}}},
        // Asia/Beirut  Sat Mar 28 21:59:59 2026 UT = Sat Mar 28 23:59:59 2026 EET isdst=0 gmtoff=7200
        // Asia/Beirut  Sat Mar 28 22:00:00 2026 UT = Sun Mar 29 01:00:00 2026 EEST isdst=1 gmtoff=10800
        {"Asia/Beirut", "2026-03-28T21:59:48.000Z", "2026-03-28T22:00:04.000Z",
         {{"midnight", "0 0 * * *", {"2026-03-28T22:00:00.000Z"}}}},
        // Pacific/Apia  Fri Dec 30 09:59:59 2011 UT = Thu Dec 29 23:59:59 2011 -10 isdst=1 gmtoff=-36000
        // Pacific/Apia  Fri Dec 30 10:00:00 2011 UT = Sat Dec 31 00:00:00 2011 +14 isdst=1 gmtoff=50400
        // 30 December does not exist: 09:00 daily and 12:00 on the 30th fire when it ends;
        // every hour of the 30th (hour `*`) does not fire at all.
        {"Pacific/Apia", "2011-12-30T09:59:48.000Z", "2011-12-30T10:00:04.000Z",
         {{"nine", "0 9 * * *", {"2011-12-30T10:00:00.000Z"}},
          {"noon30", "0 12 30 12 *", {"2011-12-30T10:00:00.000Z"}},
          {"hours30", "0 * 30 12 *", {}}}},
        // Rules that changed between years, America/Sao_Paulo:
        // America/Sao_Paulo  Sun Nov  4 02:59:59 2018 UT = Sat Nov  3 23:59:59 2018 -03 isdst=0 gmtoff=-10800
        // America/Sao_Paulo  Sun Nov  4 03:00:00 2018 UT = Sun Nov  4 01:00:00 2018 -02 isdst=1 gmtoff=-7200
        // America/Sao_Paulo  Sun Feb 17 02:00:00 2019 UT = Sat Feb 16 23:00:00 2019 -03 isdst=0 gmtoff=-10800
        // (its last line: no transition after, DST abolished). 00:30 is in 2018's gap, and an
        // ordinary -03:00 time on the same Sunday of 2019.
        {"America/Sao_Paulo", "2018-11-04T02:59:48.000Z", "2018-11-04T03:00:04.000Z",
         {{"half", "30 0 * * *", {"2018-11-04T03:00:00.000Z"}}}},
        {"America/Sao_Paulo", "2019-11-03T03:29:48.000Z", "2019-11-03T03:30:04.000Z",
         {{"half", "30 0 * * *", {"2019-11-03T03:30:00.000Z"}}}},
    };
    // clang-format on

    timed_sink s;
    const ts::temp_dir dir("timewheeld-dst");
    struct running {
        std::unique_ptr<ts::service_node> node;
        std::string prefix; // of its schedules' ids: one sink for all
        std::int64_t spawned_at;
    };
    std::vector<running> nodes;
    for (std::size_t i = 0; i < transitions.size(); ++i) {
        const auto& t = transitions[i];
        std::string faketime = "@" + t.clock.substr(0, 19);
        faketime[11] = ' ';
        const auto spawned_at = ts::now_ms();
        nodes.push_back({std::make_unique<ts::service_node>(ts::service_node::options{
                             .store = ts::sqlite_store_url(dir, "dst-" + std::to_string(i) + ".db"),
                             .faketime = faketime,
                             .preload = {TIMEWHEEL_DQ_TEST_TIMERFD}}),
                         "z" + std::to_string(i) + "-", spawned_at});
    }
    for (std::size_t i = 0; i < transitions.size(); ++i) {
        const auto& t = transitions[i];
        auto& n = *nodes[i].node;
        for (const auto& sc : t.schedules) {
            const auto r = n.post("/v1/schedules",
                                  schedule_body(nodes[i].prefix + sc.id,
                                                R"("cron": )" + ts::json_quote(sc.cron) +
                                                    R"(, "time_zone": )" + ts::json_quote(t.zone),
                                                s.sink.url("/dst")));
            BOOST_TEST_REQUIRE(r.status == 201u, r);
            // Created (its cursor set) 7 s after the moved clock's start at most, before any
            // instant looked at (10 s or more after it), or the test proves nothing.
            BOOST_TEST_REQUIRE(ts::epoch_ms(std::string(r.json().at("created_at").as_string())) <
                                   ts::epoch_ms(t.clock) + 7000,
                               t.zone << " " << r);
        }
        BOOST_TEST_REQUIRE(
            n.post("/v1/schedules", schedule_body(nodes[i].prefix + "witness",
                                                  R"("every_ms": 1000)", s.sink.url("/witness")))
                .status == 201u);
    }
    BOOST_TEST_REQUIRE(ts::eventually(
        [&] {
            for (std::size_t i = 0; i < transitions.size(); ++i) {
                const auto w = s.occurrences_of(nodes[i].prefix + "witness");
                if (w.empty() || instant_of(w.back()) < ts::epoch_ms(transitions[i].until)) {
                    return false;
                }
            }
            return true;
        },
        60s));

    const auto arrivals = s.snapshot();
    for (std::size_t i = 0; i < transitions.size(); ++i) {
        const auto& t = transitions[i];
        for (const auto& sc : t.schedules) {
            const auto id = nodes[i].prefix + sc.id;
            BOOST_TEST_CONTEXT(t.zone << " " << t.clock << " " << sc.cron) {
                std::vector<std::string> expected;
                for (const auto& at : sc.expected) {
                    expected.push_back("{" + id + "}@" + at);
                }
                const auto got = s.occurrences_of(id);
                BOOST_TEST(got == expected, boost::test_tools::per_element());
                for (const auto& key : got) {
                    BOOST_TEST(arrivals.count(key) == 1u, key);
                    // Never early by the node's clock: it read at most the moved clock's
                    // start plus the time since it was spawned.
                    const auto arrived = arrivals.find(key)->second;
                    BOOST_TEST(ts::epoch_ms(t.clock) + (arrived - nodes[i].spawned_at) >=
                                   instant_of(key),
                               key);
                }
            }
        }
    }
}

BOOST_AUTO_TEST_SUITE_END()

// --- Named queues (docs/server.md, "Queues"): created like schedules, on both stores -------

namespace {

std::string queued_task(const std::string& id, const std::string& queue,
                        const std::string& extra = "") {
    return R"({"id": )" + ts::json_quote(id) + R"(, "queue": )" + ts::json_quote(queue) +
           R"(, "delay_ms": 600000, "callback": {"url": "http://127.0.0.1:9/hook"})" + extra + "}";
}

} // namespace

BOOST_AUTO_TEST_CASE(queues_are_created_once_read_listed_changed_and_deleted_on_both_stores) {
    for (const bool sqlite : {false, true}) {
        BOOST_TEST_CONTEXT((sqlite ? "sqlite" : "redis")) {
            ts::api_service::options o;
            o.default_store = sqlite;
            ts::api_service svc(o);
            const std::string spec =
                R"({"id": "acme/billing", "retry": {"attempts": 3, "base_ms": 10, "cap_ms": 50}})";
            const auto first = svc.post("/v1/queues", spec);
            BOOST_TEST_REQUIRE(first.status == 201u, first);
            BOOST_TEST(first.json().at("id").as_string() == "acme/billing");
            BOOST_TEST(first.json().at("generation").as_int64() == 1);
            BOOST_TEST(first.json().at("retry").at("attempts").as_int64() == 3);
            BOOST_TEST(first.headers["Location"] == "/v1/queues/acme%2Fbilling");
            const auto again = svc.post("/v1/queues", spec);
            BOOST_TEST(again.status == 200u, again);
            const auto other = svc.post("/v1/queues", R"({"id": "acme/billing"})");
            BOOST_TEST(other.status == 409u, other);
            BOOST_TEST(other.error_code() == "queue_conflict");
            const auto got = svc.get("/v1/queues/acme%2Fbilling");
            BOOST_TEST_REQUIRE(got.status == 200u, got);
            BOOST_TEST(got.json().at("retry").at("cap_ms").as_int64() == 50);
            const auto dflt = svc.get("/v1/queues/default");
            BOOST_TEST(dflt.status == 200u, dflt);
            BOOST_TEST(dflt.json().at("generation").as_int64() == 0);

            // Not built yet: refused by name, never accepted and ignored.
            for (const char* f :
                 {"rate_per_s", "concurrency", "flow", "signing_secrets", "paused"}) {
                const auto r =
                    svc.post("/v1/queues", R"({"id": "limited", ")" + std::string(f) + R"(": 5})");
                BOOST_TEST(r.status == 400u, r);
                BOOST_TEST(r.error_field() == f);
                BOOST_TEST(r.json().at("error").at("message").as_string().find(
                               "not supported yet") != std::string::npos);
            }
            // Bad names: 400 naming the id; nothing stored.
            for (const char* bad : {R"({"id": "Billing"})", R"({"id": "a/b/c"})", R"({"id": ""})",
                                    R"({"id": "default"})", R"({})"}) {
                const auto r = svc.post("/v1/queues", bad);
                BOOST_TEST(r.status == 400u, r);
                BOOST_TEST(r.error_field() == "id");
            }
            BOOST_TEST(svc.get("/v1/queues/limited").status == 404u);
            BOOST_TEST(svc.get("/v1/queues/Billing").status == 400u);

            // A list with the default queue, a page at a time, and by prefix.
            BOOST_TEST_REQUIRE(svc.post("/v1/queues", R"({"id": "zeta"})").status == 201u);
            std::vector<std::string> names;
            std::string cursor;
            for (int pages = 0; pages < 10; ++pages) {
                const auto page = svc.get("/v1/queues?limit=1" +
                                          (cursor.empty() ? "" : "&cursor=" + segment(cursor)));
                BOOST_TEST_REQUIRE(page.status == 200u, page);
                const auto body = page.json();
                for (const auto& e : body.at("entries").as_array()) {
                    names.emplace_back(e.at("id").as_string());
                }
                if (body.at("next_cursor").is_null()) {
                    break;
                }
                cursor = body.at("next_cursor").as_string();
            }
            BOOST_TEST(names == (std::vector<std::string>{"acme/billing", "default", "zeta"}),
                       boost::test_tools::per_element());
            const auto acme = svc.get("/v1/queues?id_prefix=acme%2F");
            BOOST_TEST_REQUIRE(acme.status == 200u, acme);
            BOOST_TEST(acme.json().at("entries").as_array().size() == 1u);

            // Tasks: the queue must exist; its retry applies when the task gives none.
            const auto unknown = svc.post("/v1/tasks", queued_task("t-0", "nowhere"));
            BOOST_TEST(unknown.status == 400u, unknown);
            BOOST_TEST(unknown.error_code() == "unknown_queue");
            BOOST_TEST(unknown.error_field() == "queue");
            BOOST_TEST(svc.get("/v1/tasks/t-0").status == 404u);
            const auto badq = svc.post("/v1/tasks", queued_task("t-0", "No"));
            BOOST_TEST(badq.status == 400u, badq);
            BOOST_TEST(badq.error_field() == "queue");
            const auto t1 = svc.post("/v1/tasks", queued_task("t-1", "acme/billing"));
            BOOST_TEST_REQUIRE(t1.status == 201u, t1);
            BOOST_TEST(t1.json().at("queue").as_string() == "acme/billing");
            BOOST_TEST(t1.json().at("retry").at("attempts").as_int64() == 3);
            const auto t1s = svc.get("/v1/tasks/t-1");
            BOOST_TEST(t1s.json().at("queue").as_string() == "acme/billing");
            BOOST_TEST(t1s.json().at("retry").at("cap_ms").as_int64() == 50);
            const auto t2 = svc.post(
                "/v1/tasks", queued_task("t-2", "acme/billing", R"(, "retry": {"attempts": 7})"));
            BOOST_TEST_REQUIRE(t2.status == 201u, t2);
            BOOST_TEST(svc.get("/v1/tasks/t-2").json().at("retry").at("attempts").as_int64() == 7);
            const auto t3 = svc.post("/v1/tasks", queued_task("t-3", "default"));
            BOOST_TEST_REQUIRE(t3.status == 201u, t3);
            BOOST_TEST(svc.get("/v1/tasks/t-3").json().at("queue").as_string() == "default");
            const auto batch =
                svc.post("/v1/tasks:batch", R"({"tasks": [)" + queued_task("b-1", "zeta") + ", " +
                                                queued_task("b-2", "nowhere") + ", " +
                                                queued_task("b-3", "acme/billing") + "]}");
            BOOST_TEST_REQUIRE(batch.status == 200u, batch);
            const auto results = batch.json().at("results").as_array();
            BOOST_TEST(results[0].at("status").as_int64() == 201);
            BOOST_TEST(results[1].at("status").as_int64() == 400);
            BOOST_TEST(results[1].at("error").at("code").as_string() == "unknown_queue");
            BOOST_TEST(results[2].at("status").as_int64() == 201);
            BOOST_TEST(results[2].at("task").at("retry").at("attempts").as_int64() == 3);
            BOOST_TEST(svc.get("/v1/tasks/b-2").status == 404u);

            // GET /v1/tasks?queue= filters.
            const auto listed = svc.get("/v1/tasks?state=delayed&queue=acme%2Fbilling");
            BOOST_TEST_REQUIRE(listed.status == 200u, listed);
            std::set<std::string> ids;
            const auto listed_body = listed.json();
            for (const auto& e : listed_body.at("entries").as_array()) {
                ids.emplace(e.at("id").as_string());
                BOOST_TEST(e.at("queue").as_string() == "acme/billing");
            }
            BOOST_TEST(ids == (std::set<std::string>{"t-1", "t-2", "b-3"}));
            BOOST_TEST(svc.get("/v1/tasks?state=finished&queue=zeta").status == 400u);

            // PATCH changes the settings, not the tasks already submitted.
            const auto patched = svc.request(verb::patch, "/v1/queues/acme%2Fbilling",
                                             R"({"retry": {"attempts": 9}})");
            BOOST_TEST_REQUIRE(patched.status == 200u, patched);
            BOOST_TEST(patched.json().at("generation").as_int64() == 2);
            BOOST_TEST(patched.json().at("retry").at("attempts").as_int64() == 9);
            BOOST_TEST(svc.request(verb::patch, "/v1/queues/acme%2Fbilling", R"({"paused": true})")
                           .status == 400u);
            BOOST_TEST(
                svc.request(verb::patch, "/v1/queues/default", R"({"retry": null})").status ==
                400u);
            BOOST_TEST(svc.request(verb::patch, "/v1/queues/nobody", R"({})").status == 404u);

            // DELETE: refused while tasks can still run, and for the default queue.
            const auto busy = svc.request(verb::delete_, "/v1/queues/acme%2Fbilling");
            BOOST_TEST(busy.status == 409u, busy);
            BOOST_TEST(busy.error_code() == "queue_not_empty");
            BOOST_TEST(svc.request(verb::delete_, "/v1/queues/default").status == 400u);
            for (const char* id : {"t-1", "t-2", "b-3"}) {
                BOOST_TEST(svc.request(verb::delete_, std::string("/v1/tasks/") + id).status ==
                           200u);
            }
            const auto deleted = svc.request(verb::delete_, "/v1/queues/acme%2Fbilling");
            BOOST_TEST(deleted.status == 200u, deleted);
            BOOST_TEST(svc.get("/v1/queues/acme%2Fbilling").status == 404u);
            BOOST_TEST(svc.request(verb::delete_, "/v1/queues/acme%2Fbilling").status == 404u);
        }
    }
}
