//
// test/dq/schedules.cpp
//
// Durable schedules on both stores (dq::redis_store against a real redis-server on loopback,
// dq::sqlite_store on a file of its own), each case run on each: the producer's operations
// and their errors, the materialiser (dq::scheduler) making every occurrence exactly one
// task with several materialisers racing, never again after the tasks were forgotten, the
// misfire and overlap policies, start_at/end_at; then Redis's own: an occurrence lives on its
// schedule's shard. Time is the stores' real clock; intervals are short, and what is
// asserted is order and exact instants, never how long something took.
//

#include <timewheel/dq/queue.hpp>
#include <timewheel/dq/redis_store.hpp>
#include <timewheel/dq/scheduler.hpp>
#include <timewheel/dq/sqlite_store.hpp>

#define BOOST_TEST_MODULE dq_schedules
#include <boost/mpl/list.hpp>
#include <boost/test/unit_test.hpp>

#include <test/dq/support/store_calls.hpp>
#include <test/redis/support/redis_fixture.hpp>
#include <test/support/temp_dir.hpp>

#include <boost/asio/io_context.hpp>

#include <chrono>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

namespace dq = timewheel::dq;
using timewheel::test::call;
using timewheel::test::redis_server;
using namespace std::chrono_literals;
using boost::system::error_code;

BOOST_TEST_DONT_PRINT_LOG_VALUE(std::optional<dq::time_point>)

using timewheel::test::resp_command;

namespace {

redis_server& server() {
    static auto instance = std::make_unique<redis_server>();
    return *instance;
}

// What every case needs of a store: the store(s) (`stores[0]` and, to race, more on the same
// data), and the operations called to completion.
struct fixture_base {
    boost::asio::io_context io;
    std::vector<std::unique_ptr<dq::store>> stores;

    virtual ~fixture_base() = default;
    dq::store& store() { return *stores.front(); }

    auto create(dq::schedule_spec s) {
        return call<dq::create_schedule_result>(
            io, [&](auto h) { store().create_schedule(std::move(s), std::move(h)); });
    }
    error_code replace(dq::schedule_spec s) {
        return std::get<0>(
            call<>(io, [&](auto h) { store().replace_schedule(std::move(s), std::move(h)); }));
    }
    auto get(std::string id) {
        return call<dq::schedule_status>(
            io, [&](auto h) { store().get_schedule(std::move(id), std::move(h)); });
    }
    dq::schedule_status get_ok(std::string id) {
        auto [ec, st] = get(std::move(id));
        BOOST_REQUIRE_MESSAGE(!ec, ec.message());
        return st;
    }
    auto list(std::string cursor, std::size_t n) {
        return call<dq::schedule_page>(
            io, [&](auto h) { store().list_schedules(std::move(cursor), n, std::move(h)); });
    }
    error_code del(std::string id) {
        return std::get<0>(
            call<>(io, [&](auto h) { store().delete_schedule(std::move(id), std::move(h)); }));
    }
    error_code pause(std::string id) {
        return std::get<0>(
            call<>(io, [&](auto h) { store().pause_schedule(std::move(id), std::move(h)); }));
    }
    error_code resume(std::string id) {
        return std::get<0>(
            call<>(io, [&](auto h) { store().resume_schedule(std::move(id), std::move(h)); }));
    }
    auto trigger(std::string id) {
        return call<std::string>(
            io, [&](auto h) { store().trigger_schedule(std::move(id), std::move(h)); });
    }
    auto due(dq::duration window) {
        return call<dq::due_schedules_result>(
            io, [&](auto h) { store().due_schedules(window, 100, std::move(h)); });
    }
    auto materialise(std::vector<dq::materialisation> m) {
        return call<std::vector<dq::materialise_result>>(
            io, [&](auto h) { store().materialise(std::move(m), std::move(h)); });
    }
    auto status(std::string id) {
        return call<dq::task_status>(io,
                                     [&](auto h) { store().status(std::move(id), std::move(h)); });
    }
    auto cancel(std::string id) {
        return call<dq::cancel_result>(
            io, [&](auto h) { store().cancel(std::move(id), std::move(h)); });
    }
    dq::time_point now() {
        auto [ec, t] = call<dq::time_point>(io, [&](auto h) { store().now(std::move(h)); });
        BOOST_REQUIRE(!ec);
        return t;
    }
    // One pass of `s`, to completion.
    bool pass(dq::scheduler& s) {
        auto [ec, more] = call<bool>(io, [&](auto h) { s.async_pass(std::move(h)); });
        BOOST_REQUIRE_MESSAGE(!ec, ec.message());
        return more;
    }
    // Claims, starts and finishes every task due by now + 1 s; how many.
    std::size_t finish_due() {
        dq::claim_options o;
        o.worker = "w";
        o.horizon = 1000ms;
        auto [ec, r] = call<dq::claim_result>(io, [&](auto h) { store().claim(o, std::move(h)); });
        BOOST_REQUIRE(!ec);
        std::vector<dq::ack> acks;
        for (auto& t : r.tasks) {
            acks.push_back({{t.id, t.token}, dq::outcome::success(), {}, {}});
        }
        if (acks.empty()) {
            return 0;
        }
        // A success ack of a prefetched task finishes it (the start is the worker's business).
        std::vector<dq::lease_ref> leases;
        for (auto& a : acks) {
            leases.push_back(a.lease);
        }
        while (true) {
            auto [ec2, s] = call<std::vector<dq::start_result>>(
                io, [&](auto h) { store().start(leases, std::move(h)); });
            BOOST_REQUIRE(!ec2);
            bool early = false;
            for (auto x : s) {
                early = early || x == dq::start_result::too_early;
            }
            if (!early) {
                break;
            }
            std::this_thread::sleep_for(20ms);
        }
        auto [ec3, res] = call<std::vector<dq::ack_result>>(
            io, [&](auto h) { store().acknowledge(acks, std::move(h)); });
        BOOST_REQUIRE(!ec3);
        return acks.size();
    }
};

struct redis_fx : fixture_base {
    explicit redis_fx(std::size_t n = 1, dq::duration done_retention = 24h) {
        server().command(resp_command({"FLUSHALL"}));
        dq::redis_store_options o;
        o.name = "t";
        o.shards = 4;
        o.buckets = 8;
        o.done_retention = done_retention;
        for (std::size_t i = 0; i < n; ++i) {
            stores.push_back(
                std::make_unique<dq::redis_store>(io.get_executor(), server().config(), o));
        }
    }
};

struct sqlite_fx : fixture_base {
    timewheel::test::temp_dir dir;
    explicit sqlite_fx(std::size_t n = 1, dq::duration done_retention = 24h) {
        dq::sqlite_store_options o;
        o.path = dir.file("q.db");
        o.done_retention = done_retention;
        stores.push_back(std::make_unique<dq::sqlite_store>(io.get_executor(), o));
        // More materialisers share the one database, as threads of one node do.
        for (std::size_t i = 1; i < n; ++i) {
            stores.push_back(std::make_unique<dq::sqlite_store>(
                io.get_executor(), static_cast<dq::sqlite_store&>(*stores.front())));
        }
    }
};

using fixtures = boost::mpl::list<redis_fx, sqlite_fx>;

dq::schedule_spec every(std::string id, dq::duration interval) {
    dq::schedule_spec s;
    s.id = std::move(id);
    s.every = interval;
    s.payload = "hello";
    return s;
}

dq::scheduler_options opts(dq::duration window, dq::duration period = 1000ms,
                           dq::duration grace = 60s, std::size_t max_occurrences = 256) {
    dq::scheduler_options o;
    o.window = window;
    o.period = period;
    o.grace = grace;
    o.max_occurrences = max_occurrences;
    return o;
}

dq::time_point ms(std::int64_t v) {
    return dq::time_point(dq::duration(v));
}

} // namespace

BOOST_AUTO_TEST_CASE(an_occurrence_id_is_the_schedule_id_as_a_hash_tag_and_the_utc_instant) {
    // 2026-03-29T01:00:00Z is 1774746000 s since the epoch (date -u -d @1774746000).
    BOOST_TEST(dq::occurrence_id("report", ms(1774746000123)) ==
               "{report}@2026-03-29T01:00:00.123Z");
    BOOST_TEST(dq::occurrence_id("r", ms(0)) == "{r}@1970-01-01T00:00:00.000Z");
    BOOST_TEST(dq::trigger_id("report", 2) == "{report}@trigger-2");
}

BOOST_AUTO_TEST_CASE_TEMPLATE(create_get_replace_delete_and_their_errors, F, fixtures) {
    F f;
    auto spec = every("s1", 60s);
    const auto before = f.now();
    auto [ec, r] = f.create(spec);
    BOOST_TEST(!ec);
    BOOST_TEST(r == dq::create_schedule_result::created);
    auto st = f.get_ok("s1");
    BOOST_TEST((st.spec == spec));
    BOOST_TEST(st.created >= before);
    BOOST_TEST(st.cursor == st.created);
    BOOST_TEST((st.next == std::optional(st.created + 60s)));
    BOOST_TEST(st.occurrences == 0u);
    BOOST_TEST(st.last_task.empty());

    // The same spec again (paused aside) is found; another under the id is a conflict.
    auto again = spec;
    again.paused = true;
    BOOST_TEST((f.create(again) == std::tuple(error_code(), dq::create_schedule_result::exists)));
    auto other = spec;
    other.payload = "changed";
    BOOST_TEST(std::get<0>(f.create(other)) == error_code(dq::error::schedule_conflict));
    BOOST_TEST(f.get_ok("s1").spec.payload == "hello");

    // Bad input names what was wrong and writes nothing.
    auto bad = [&](dq::schedule_spec s, dq::error e) {
        BOOST_TEST(std::get<0>(f.create(s)) == error_code(e), s.id << ": " << e);
        BOOST_TEST(std::get<0>(f.get(s.id)) != error_code());
    };
    bad(every("a{b}", 1s), dq::error::invalid_schedule_id);
    bad(every("", 1s), dq::error::empty_id);
    bad(every(std::string(201, 'x'), 1s), dq::error::id_too_long);
    bad(every("zero", 0ms), dq::error::invalid_rule);
    auto both = every("both", 1s);
    both.cron = "* * * * *";
    bad(both, dq::error::invalid_rule);
    auto zone = every("zone", 1s);
    zone.zone = "Europe/Berlin";
    bad(zone, dq::error::unknown_zone);
    auto expr = every("expr", 0ms);
    expr.cron = "61 * * * *";
    bad(expr, dq::error::invalid_cron);
    auto mars = every("mars", 0ms);
    mars.cron = "0 9 * * *";
    mars.zone = "Mars/Olympus_Mons";
    bad(mars, dq::error::unknown_zone);
    auto window = every("window", 1s);
    window.start_at = ms(2000);
    window.end_at = ms(2000);
    bad(window, dq::error::invalid_window);
    auto limit = every("limit", 1s);
    limit.misfire = dq::misfire_policy::run_all;
    limit.misfire_limit = 0;
    bad(limit, dq::error::invalid_argument);
    auto attempts = every("attempts", 1s);
    attempts.retry.max_attempts = 0;
    bad(attempts, dq::error::zero_attempts);
    BOOST_TEST(std::get<0>(f.get("none")) == error_code(dq::error::not_found));

    // Replace: the template changes; the rule unchanged keeps the cursor.
    other.retry.max_attempts = 2;
    BOOST_TEST(!f.replace(other));
    auto replaced = f.get_ok("s1");
    BOOST_TEST(replaced.spec.payload == "changed");
    BOOST_TEST(replaced.spec.retry.max_attempts == 2u);
    BOOST_TEST(replaced.cursor == st.cursor);
    BOOST_TEST(replaced.revision > st.revision);
    BOOST_TEST(f.replace(every("none", 1s)) == error_code(dq::error::not_found));
    BOOST_TEST(f.replace(every("s1", 0ms)) == error_code(dq::error::invalid_rule));

    BOOST_TEST(!f.del("s1"));
    BOOST_TEST(std::get<0>(f.get("s1")) == error_code(dq::error::not_found));
    BOOST_TEST(f.del("s1") == error_code(dq::error::not_found));
}

BOOST_AUTO_TEST_CASE_TEMPLATE(list_pages_cover_every_schedule_once, F, fixtures) {
    F f;
    std::set<std::string> made;
    for (int i = 0; i < 11; ++i) {
        const auto id = "s" + std::to_string(i);
        BOOST_TEST(!std::get<0>(f.create(every(id, 1h))));
        made.insert(id);
    }
    std::multiset<std::string> seen;
    std::string cursor;
    int pages = 0;
    do {
        auto [ec, page] = f.list(cursor, 3);
        BOOST_REQUIRE(!ec);
        BOOST_TEST(page.entries.size() <= 3u);
        for (auto& e : page.entries) {
            seen.insert(e.spec.id);
            BOOST_TEST(e.next.has_value());
        }
        cursor = page.cursor;
        BOOST_REQUIRE(++pages < 20);
    } while (!cursor.empty());
    BOOST_TEST((std::set<std::string>(seen.begin(), seen.end()) == made));
    BOOST_TEST(seen.size() == made.size());
    BOOST_TEST(std::get<0>(f.list("", 0)) == error_code(dq::error::invalid_argument));
}

BOOST_AUTO_TEST_CASE_TEMPLATE(pause_resume_and_trigger, F, fixtures) {
    F f;
    BOOST_TEST(!std::get<0>(f.create(every("p", 50ms))));
    BOOST_TEST(!f.pause("p"));
    BOOST_TEST(!f.pause("p")); // no error when paused already
    BOOST_TEST(f.get_ok("p").spec.paused);
    BOOST_TEST(std::get<1>(f.due(1h)).schedules.empty());
    dq::scheduler s(f.store(), opts(500ms));
    f.pass(s);
    BOOST_TEST(f.get_ok("p").occurrences == 0u);

    // A trigger makes a task now, paused or not, with the schedule's template.
    auto [ec, t1] = f.trigger("p");
    BOOST_TEST(!ec);
    BOOST_TEST(t1 == "{p}@trigger-1");
    auto [ec1, task] = f.status(t1);
    BOOST_TEST(!ec1);
    BOOST_TEST(task.payload == "hello");
    BOOST_TEST(task.state == dq::task_state::delayed);
    BOOST_TEST(std::get<1>(f.trigger("p")) == "{p}@trigger-2");
    auto st = f.get_ok("p");
    BOOST_TEST(st.triggers == 2u);
    BOOST_TEST(st.last_task == "{p}@trigger-2");

    // Resume: from now on, nothing missed while paused is made up.
    std::this_thread::sleep_for(120ms);
    const auto resumed_at = f.now();
    BOOST_TEST(!f.resume("p"));
    const auto r = f.get_ok("p");
    BOOST_TEST(!r.spec.paused);
    BOOST_TEST(r.cursor >= resumed_at - 5ms); // the store's clock, read after ours
    f.pass(s);
    const auto after = f.get_ok("p");
    BOOST_TEST(after.occurrences >= 1u);
    BOOST_TEST(after.skipped_misfire == 0u);
    auto [ec2, first] = f.status(
        dq::occurrence_id("p", *dq::schedule_rule(after.spec, after.created).next_after(r.cursor)));
    BOOST_TEST(!ec2);
    BOOST_TEST(first.due > r.cursor);

    for (const char* id : {"nope"}) {
        BOOST_TEST(f.pause(id) == error_code(dq::error::not_found));
        BOOST_TEST(f.resume(id) == error_code(dq::error::not_found));
        BOOST_TEST(std::get<0>(f.trigger(id)) == error_code(dq::error::not_found));
    }
}

BOOST_AUTO_TEST_CASE_TEMPLATE(racing_materialisers_make_each_occurrence_exactly_one_task, F,
                              fixtures) {
    F f(3);
    const std::vector<std::string> ids{"a", "b", "c"};
    for (const auto& id : ids) {
        BOOST_TEST(!std::get<0>(f.create(every(id, 20ms))));
    }
    std::vector<std::unique_ptr<dq::scheduler>> scheds;
    for (auto& st : f.stores) {
        scheds.push_back(std::make_unique<dq::scheduler>(*st, opts(200ms, 50ms, 60s, 4)));
    }
    // Passes started together, on three stores (three connections on Redis): they read the
    // same revisions and race to commit.
    const auto end = std::chrono::steady_clock::now() + 1500ms;
    while (std::chrono::steady_clock::now() < end) {
        int done = 0;
        for (auto& s : scheds) {
            s->async_pass([&](error_code ec, bool) {
                BOOST_TEST(!ec);
                ++done;
            });
        }
        BOOST_REQUIRE(timewheel::test::run_until(
            f.io, [&] { return done == 3; }, 60s));
        std::this_thread::sleep_for(10ms);
    }
    std::uint64_t created = 0;
    std::uint64_t lost = 0;
    for (auto& s : scheds) {
        created += s->stats().created;
        lost += s->stats().lost;
    }
    std::uint64_t expected = 0;
    for (const auto& id : ids) {
        const auto st = f.get_ok(id);
        const auto rule = dq::schedule_rule(st.spec, st.created);
        // Every occurrence from the creation to the cursor: a task due exactly then.
        std::uint64_t n = 0;
        for (auto t = rule.next_after(st.created); t && *t <= st.cursor; t = rule.next_after(*t)) {
            auto [ec, task] = f.status(dq::occurrence_id(id, *t));
            BOOST_TEST(!ec, id << " misses " << t->time_since_epoch().count());
            BOOST_TEST(task.due == *t);
            ++n;
        }
        BOOST_TEST(n >= 40u); // 1.5 s of 20 ms
        BOOST_TEST(st.occurrences == n);
        BOOST_TEST(st.skipped_misfire == 0u);
        expected += n;
    }
    // Created once each: the materialisers' own counts add up to the occurrences.
    BOOST_TEST(created == expected);
    BOOST_TEST_MESSAGE("occurrences " << expected << ", lost races " << lost);
}

BOOST_AUTO_TEST_CASE_TEMPLATE(a_finished_and_forgotten_occurrence_is_never_created_again, F,
                              fixtures) {
    F f(1, 0ms); // a finished task is forgotten at once
    BOOST_TEST(!std::get<0>(f.create(every("f", 100ms))));
    const auto st = f.get_ok("f");
    // Plan as a materialiser would, commit once, then replay the same plan (a node that read
    // the same revision and commits later).
    const auto t = *st.next;
    dq::materialisation m;
    m.schedule_id = "f";
    m.revision = st.revision;
    m.occurrences = {{t, dq::occurrence_id("f", t)}};
    m.cursor = t;
    m.next = t + 100ms;
    m.payload = "hello";
    auto [ec, r] = f.materialise({m});
    BOOST_REQUIRE(!ec);
    BOOST_TEST(r.at(0).committed);
    BOOST_TEST(r.at(0).created == 1u);
    std::this_thread::sleep_for(150ms);
    BOOST_TEST(f.finish_due() == 1u);
    BOOST_TEST(std::get<0>(f.status(m.occurrences[0].task_id)) == error_code(dq::error::not_found));
    auto [ec2, r2] = f.materialise({m});
    BOOST_REQUIRE(!ec2);
    BOOST_TEST(!r2.at(0).committed);
    BOOST_TEST(r2.at(0).created == 0u);
    BOOST_TEST(std::get<0>(f.status(m.occurrences[0].task_id)) == error_code(dq::error::not_found));
    BOOST_TEST(f.get_ok("f").occurrences == 1u);
}

BOOST_AUTO_TEST_CASE_TEMPLATE(misfire_policies_with_a_cursor_far_behind, F, fixtures) {
    F f;
    const auto now = f.now();
    struct want {
        dq::misfire_policy p;
        std::uint32_t limit;
        std::size_t missed_run;
    };
    const std::map<std::string, want> cases{
        {"latest", {dq::misfire_policy::run_latest, 100, 1}},
        {"skip", {dq::misfire_policy::skip, 100, 0}},
        {"all", {dq::misfire_policy::run_all, 5, 5}},
    };
    const auto anchor = now - 120s;
    for (const auto& [id, w] : cases) {
        auto spec = every(id, 1s);
        spec.start_at = anchor;
        spec.misfire = w.p;
        spec.misfire_limit = w.limit;
        BOOST_TEST(!std::get<0>(f.create(spec)));
        // Put the cursor 60 s back (what a store left alone for a minute looks like).
        const auto st = f.get_ok(id);
        dq::materialisation m;
        m.schedule_id = id;
        m.revision = st.revision;
        m.cursor = anchor + 60s;
        m.next = anchor + 61s;
        auto [ec, r] = f.materialise({m});
        BOOST_REQUIRE(!ec);
        BOOST_REQUIRE(r.at(0).committed);
    }
    dq::scheduler s(f.store(), opts(500ms, 1000ms, 2s));
    f.pass(s);
    for (const auto& [id, w] : cases) {
        const auto st = f.get_ok(id);
        const auto pass_now = st.cursor; // at least the last instant taken
        // Occurrences from anchor + 61 s up to the grace before the pass are missed: those
        // the policy keeps are the latest ones.
        std::vector<dq::time_point> missed;
        std::vector<dq::time_point> on_time;
        for (auto t = anchor + 61s; t <= st.cursor; t += 1s) {
            auto [ec, task] = f.status(dq::occurrence_id(id, t));
            (ec ? missed : on_time).push_back(t);
        }
        BOOST_TEST_MESSAGE(id << ": " << missed.size() << " not created, " << on_time.size()
                              << " created");
        BOOST_TEST(st.occurrences == on_time.size());
        BOOST_TEST(st.skipped_misfire == missed.size());
        // The created ones are consecutive, ending at the cursor: the kept missed ones and
        // those within the grace and window.
        BOOST_REQUIRE(!on_time.empty() || w.missed_run == 0);
        for (std::size_t i = 1; i < on_time.size(); ++i) {
            BOOST_TEST((on_time[i] - on_time[i - 1]).count() == 1000);
        }
        // Within the grace (2 s) and the window (0.5 s): 2 or 3 occurrences are on time.
        const auto kept = on_time.size();
        BOOST_TEST(kept >= w.missed_run + 2);
        BOOST_TEST(kept <= w.missed_run + 3);
        (void)pass_now;
    }
}

BOOST_AUTO_TEST_CASE_TEMPLATE(overlap_forbid_skips_an_occurrence_while_the_last_task_is_pending, F,
                              fixtures) {
    F f;
    auto spec = every("o", 1h);
    spec.overlap = dq::overlap_policy::forbid;
    BOOST_TEST(!std::get<0>(f.create(spec)));
    const auto base = f.now() + 10h;
    auto step = [&](dq::time_point at) {
        const auto st = f.get_ok("o");
        dq::materialisation m;
        m.schedule_id = "o";
        m.revision = st.revision;
        m.occurrences = {{at, dq::occurrence_id("o", at)}};
        m.cursor = at;
        m.next = at + 1h;
        m.forbid_overlap = true;
        m.payload = "x";
        auto [ec, r] = f.materialise({m});
        BOOST_REQUIRE(!ec);
        BOOST_REQUIRE(r.at(0).committed);
        return r.at(0);
    };
    BOOST_TEST(step(base).created == 1u);
    // The first is still delayed: the second is skipped.
    auto second = step(base + 1h);
    BOOST_TEST(second.created == 0u);
    BOOST_TEST(second.overlapped == 1u);
    BOOST_TEST(std::get<0>(f.status(dq::occurrence_id("o", base + 1h))) ==
               error_code(dq::error::not_found));
    // Once it has ended (cancelled, as finished or dead would), the next one runs.
    BOOST_TEST(std::get<1>(f.cancel(dq::occurrence_id("o", base))) == dq::cancel_result::cancelled);
    BOOST_TEST(step(base + 2h).created == 1u);
    const auto st = f.get_ok("o");
    BOOST_TEST(st.occurrences == 2u);
    BOOST_TEST(st.skipped_overlap == 1u);
    BOOST_TEST(st.last_task == dq::occurrence_id("o", base + 2h));
}

BOOST_AUTO_TEST_CASE_TEMPLATE(start_at_and_end_at_bound_the_occurrences, F, fixtures) {
    F f;
    const auto now = f.now();
    auto spec = every("w", 100ms);
    spec.start_at = now + 300ms;
    spec.end_at = now + 700ms;
    BOOST_TEST(!std::get<0>(f.create(spec)));
    dq::scheduler s(f.store(), opts(5s));
    f.pass(s);
    const auto st = f.get_ok("w");
    BOOST_TEST(st.occurrences == 4u);
    BOOST_TEST(!st.next.has_value()); // ended
    for (auto t : {300ms, 400ms, 500ms, 600ms}) {
        auto [ec, task] = f.status(dq::occurrence_id("w", now + t));
        BOOST_TEST(!ec);
        BOOST_TEST(task.due == now + t);
    }
    BOOST_TEST(std::get<0>(f.status(dq::occurrence_id("w", now + 700ms))) ==
               error_code(dq::error::not_found));
    BOOST_TEST(std::get<0>(f.status(dq::occurrence_id("w", now + 200ms))) ==
               error_code(dq::error::not_found));
    // An ended schedule is no longer the materialiser's.
    const auto due = std::get<1>(f.due(1h));
    for (const auto& d : due.schedules) {
        BOOST_TEST(d.spec.id != "w");
    }
}

BOOST_AUTO_TEST_CASE_TEMPLATE(a_running_scheduler_stops_with_operation_aborted, F, fixtures) {
    F f;
    BOOST_TEST(!std::get<0>(f.create(every("r", 30ms))));
    dq::scheduler s(f.store(), opts(200ms, 20ms));
    std::optional<error_code> out;
    s.async_run([&](error_code ec) { out = ec; });
    timewheel::test::run_until(
        f.io, [&] { return s.stats().created >= 5; }, 10s);
    BOOST_TEST(s.stats().created >= 5u);
    s.stop();
    BOOST_REQUIRE(timewheel::test::run_until(
        f.io, [&] { return out.has_value(); }, 10s));
    BOOST_TEST(*out == error_code(boost::asio::error::operation_aborted));
    BOOST_TEST(s.stats().errors == 0u);
}

BOOST_AUTO_TEST_CASE(on_redis_an_occurrence_lives_on_its_schedules_shard) {
    redis_fx f;
    auto& rs = static_cast<dq::redis_store&>(f.store());
    // Four schedules cover more than one shard of four.
    std::set<std::size_t> shards;
    for (const char* id : {"x1", "x2", "x3", "x4", "x5"}) {
        BOOST_TEST(!std::get<0>(f.create(every(id, 50ms))));
        shards.insert(rs.shard_of(id));
        const auto occ = dq::occurrence_id(id, ms(1774746000000));
        BOOST_TEST(rs.shard_of(occ) == rs.shard_of(id));
        BOOST_TEST(dq::redis_store::hash(occ) == dq::redis_store::hash(id));
    }
    BOOST_TEST(shards.size() > 1u);
    dq::scheduler s(f.store(), opts(300ms));
    f.pass(s);
    for (const char* id : {"x1", "x2", "x3", "x4", "x5"}) {
        const auto st = f.get_ok(id);
        BOOST_TEST(st.occurrences >= 1u);
        // Found by status, which looks on shard_of(task id): the script wrote it on the
        // schedule's shard, the same one.
        BOOST_TEST(!std::get<0>(f.status(st.last_task)));
        const auto key = "{t:" + std::to_string(rs.shard_of(id)) + "}:sc";
        BOOST_TEST(server().command(resp_command({"HEXISTS", key, id})) == ":1\r\n");
    }
    // Braces elsewhere than a tag's first pair do not count: an empty tag is no tag.
    BOOST_TEST(dq::redis_store::hash("{}x") != dq::redis_store::hash(""));
    BOOST_TEST(dq::redis_store::hash("a{b}c") == dq::redis_store::hash("b"));
}
