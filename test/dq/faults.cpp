//
// test/dq/faults.cpp
//
// The durable queue under faults, with real processes: worker processes (dq_test_worker,
// test/dq/support/worker_main.cpp) killed with kill -9, frozen with kill -STOP past their
// lease, all down while tasks fall due, run with a clock 30 s fast or slow (libfaketime);
// cancels of prefetched tasks; retries by the policy into the dead letters and back. Every
// check is of counts, order and "never early" by the store's clock (Redis TIME), with
// generous watchdogs, never of speed.
//

#define BOOST_TEST_MODULE dq_faults
#include <test/dq/support/fault_env.hpp>

#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <filesystem>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace dq = timewheel::dq;
using namespace std::chrono_literals;
using timewheel::test::faketime_available;
using timewheel::test::fault_env;
using timewheel::test::ids_of;
using timewheel::test::make_tasks;
using timewheel::test::redis_available;
using timewheel::test::run_for;
using timewheel::test::run_record;
using timewheel::test::runs_per_id;
using timewheel::test::worker_spec;

namespace {

std::int64_t ms(dq::time_point t) {
    return t.time_since_epoch().count();
}

/// Waits (running the io_context) until `pred()` over the logged runs holds.
template <typename Pred>
bool wait_runs(fault_env& env, Pred pred, std::chrono::seconds limit = 60s) {
    return timewheel::test::run_until(
        env.io(),
        [&] {
            run_for(env.io(), 20ms);
            return pred(env.runs());
        },
        limit);
}

std::string counters_text(const std::map<std::string, std::int64_t>& c) {
    std::string out;
    for (const auto& [k, v] : c) {
        out += k + '=' + std::to_string(v) + ' ';
    }
    return out;
}

/// Every run started no earlier than its task's due time by the store's clock (the run
/// log's time is Redis TIME read just after the handler was called).
void check_never_early(const std::vector<run_record>& runs,
                       const std::map<std::string, std::int64_t>& due_ms) {
    std::size_t checked = 0;
    for (const auto& r : runs) {
        auto it = due_ms.find(r.id);
        if (it == due_ms.end() || r.store_ms < 0) {
            continue;
        }
        ++checked;
        BOOST_TEST(r.store_ms >= it->second, r.id << " attempt " << r.attempt << " by " << r.worker
                                                  << " started " << (it->second - r.store_ms)
                                                  << " ms before its due time");
    }
    BOOST_TEST(checked > 0u);
}

} // namespace

// --- The tools: signals and a skewed clock ---------------------------------------------

BOOST_AUTO_TEST_CASE(the_process_helper_delivers_its_signals) {
    const auto dir = std::filesystem::temp_directory_path();
    const auto out = dir / ("timewheel-dq-process-" + std::to_string(::getpid()) + ".out");
    std::filesystem::remove(out);
    {
        timewheel::test::child_process p({.argv = {"/bin/sleep", "60"}, .output = out});
        BOOST_TEST(p.running());
        p.stop();
        p.cont();
        BOOST_TEST(p.running());
        p.kill9();
        BOOST_TEST(!p.running());
        BOOST_TEST(p.exit_status() == -SIGKILL);
    }
    {
        timewheel::test::child_process p({.argv = {"/bin/sleep", "60"}, .output = out});
        p.terminate();
        BOOST_TEST(p.wait(10s));
        BOOST_TEST(p.exit_status() == -SIGTERM);
    }
    {
        timewheel::test::child_process p(
            {.argv = {"/bin/sh", "-c", "echo out; echo err >&2; exit 3"}, .output = out});
        BOOST_TEST(p.wait(10s));
        BOOST_TEST(p.exit_status() == 3);
        BOOST_TEST(p.output() == "out\nerr\n");
    }
    std::filesystem::remove(out);
}

// libfaketime with a relative offset shifts CLOCK_REALTIME and CLOCK_MONOTONIC alike (so
// steady_clock reads about the faked wall clock), at the true rate: a worker's intervals
// stay true, its absolute readings are off by the skew.
BOOST_AUTO_TEST_CASE(libfaketime_skews_the_worker_clock_and_keeps_intervals_true,
                     *boost::unit_test::precondition(faketime_available())) {
    const auto dir = std::filesystem::temp_directory_path();
    for (const std::string skew : {"", "+30s", "-30s"}) {
        BOOST_TEST_CONTEXT("skew '" << skew << "'") {
            const auto out = dir / ("timewheel-dq-clocks-" + std::to_string(::getpid()) + ".out");
            std::filesystem::remove(out);
            const auto before = std::chrono::system_clock::now();
            timewheel::test::child_process p({.argv = {TIMEWHEEL_DQ_TEST_WORKER, "--print-clocks"},
                                              .output = out,
                                              .faketime = skew,
                                              .preload = {TIMEWHEEL_DQ_TEST_TIMERFD}});
            BOOST_TEST_REQUIRE(p.wait(30s));
            const auto after = std::chrono::system_clock::now();
            BOOST_TEST_REQUIRE(p.exit_status() == 0, p.output());
            std::istringstream in(p.output());
            std::map<std::string, std::int64_t> v;
            std::string k;
            std::int64_t x = 0;
            while (in >> k >> x) {
                v[k] = x;
            }
            std::filesystem::remove(out);
            const auto lo =
                std::chrono::duration_cast<std::chrono::milliseconds>(before.time_since_epoch())
                    .count();
            const auto hi =
                std::chrono::duration_cast<std::chrono::milliseconds>(after.time_since_epoch())
                    .count();
            const std::int64_t shift = skew.empty() ? 0 : (skew[0] == '+' ? 30000 : -30000);
            BOOST_TEST(v.at("system_ms") >= lo + shift);
            BOOST_TEST(v.at("system_ms") <= hi + shift);
            BOOST_TEST(v.at("timer_200ms_took_ms") >= 200); // never early, at the true rate
            BOOST_TEST_MESSAGE("steady_clock reads " << v.at("steady_ms") << " ms, system_clock "
                                                     << v.at("system_ms") << " ms");
        }
    }
}

BOOST_AUTO_TEST_SUITE(faults, *boost::unit_test::precondition(redis_available()))

// --- The worker process itself ----------------------------------------------------------

// SIGTERM stops dq_test_worker through dq::worker::async_stop: it exits 0 after writing its
// counters, and what it ran is finished in the store.
BOOST_AUTO_TEST_CASE(the_worker_process_stops_gracefully_on_sigterm) {
    fault_env env;
    auto tasks = make_tasks("g", 20, [](std::size_t) { return dq::due_time(dq::duration(0)); });
    const auto ids = ids_of(tasks);
    for (const auto& [ec, r] : env.submit_all(tasks)) {
        BOOST_TEST_REQUIRE(!ec, ec.message());
    }
    auto& w = env.start_worker({.name = "w", .handler_time = 0ms});
    BOOST_TEST_REQUIRE(env.wait_all(ids, dq::task_state::finished, 30s));
    w.terminate();
    BOOST_TEST_REQUIRE(w.wait(30s));
    BOOST_TEST(w.exit_status() == 0, "exit status " << w.exit_status() << ":\n" << w.output());
    const auto c = timewheel::test::read_counters(env.counters_path("w"));
    BOOST_TEST(c.at("runs") == 20);
    BOOST_TEST(c.at("acks_ok") == 20);
    BOOST_TEST(c.at("acks_stale") == 0);
}

// --- 1. kill -9 of a worker: at-least-once, duplicates bounded by what it held -----------

BOOST_AUTO_TEST_CASE(kill9_of_a_worker_loses_nothing_and_duplicates_at_most_what_it_held) {
    fault_env env;
    constexpr std::size_t n = 300;
    auto tasks = make_tasks("k", n, [](std::size_t i) {
        return dq::due_time(dq::duration(200 + static_cast<long>(i % 100) * 10));
    });
    const auto ids = ids_of(tasks);
    for (const auto& [ec, r] : env.submit_all(tasks)) {
        BOOST_TEST_REQUIRE(!ec, ec.message());
    }

    // Worker a alone: handlers that take a while, so that some run when it dies.
    env.start_worker({.name = "a", .handler_time = 100ms, .lease = 1500ms, .concurrency = 8});
    BOOST_TEST_REQUIRE(wait_runs(env, [](const auto& runs) { return runs.size() >= 40; }));
    env.worker("a").kill9();

    // What a held when it died: every task still leased (prefetched or running); nobody
    // else claims until b starts.
    std::size_t held = 0, finished_before = 0;
    for (const auto& [id, s] : env.statuses(ids)) {
        BOOST_TEST_REQUIRE(s.has_value(), id << " lost");
        held += s->state == dq::task_state::prefetched || s->state == dq::task_state::running;
        finished_before += s->state == dq::task_state::finished;
    }
    std::size_t unfinished_runs = 0;
    for (const auto& r : env.runs()) {
        unfinished_runs += r.outcome.empty();
    }
    BOOST_TEST_MESSAGE("a died holding " << held << " tasks, " << unfinished_runs
                                         << " of its runs cut short, " << finished_before
                                         << " finished");
    BOOST_TEST(held > 0u);
    BOOST_TEST(unfinished_runs <= held);

    // Worker b takes the rest, including a's tasks once their leases expire.
    env.start_worker({.name = "b", .handler_time = 10ms, .lease = 1500ms, .concurrency = 16});
    BOOST_TEST_REQUIRE(env.wait_all(ids, dq::task_state::finished, 90s));
    env.stop_worker("b");

    const auto runs = env.runs();
    const auto per_id = runs_per_id(runs);
    std::size_t duplicates = 0;
    for (const auto& id : ids) {
        BOOST_TEST(per_id.contains(id), id << " never ran");
        if (auto it = per_id.find(id); it != per_id.end()) {
            duplicates += static_cast<std::size_t>(it->second - 1);
        }
    }
    BOOST_TEST_MESSAGE(duplicates << " duplicate runs");
    BOOST_TEST(duplicates <= held);
    // A duplicate is only ever a task a had started and not acknowledged.
    for (const auto& r : runs) {
        if (r.worker == "b" && per_id.at(r.id) > 1) {
            BOOST_TEST(
                std::any_of(runs.begin(), runs.end(),
                            [&](const run_record& x) { return x.worker == "a" && x.id == r.id; }),
                r.id);
        }
    }
}

// --- 2. kill -STOP past the lease: the frozen worker's acks are stale -------------------

BOOST_AUTO_TEST_CASE(a_worker_frozen_past_its_lease_gets_stale_acks_and_finishes_nothing) {
    fault_env env;
    constexpr std::size_t n = 40;
    auto tasks = make_tasks("s", n, [](std::size_t i) {
        return dq::due_time(dq::duration(200 + static_cast<long>(i) * 5));
    });
    const auto ids = ids_of(tasks);
    for (const auto& [ec, r] : env.submit_all(tasks)) {
        BOOST_TEST_REQUIRE(!ec, ec.message());
    }

    // a runs long handlers on a short lease; freeze it while it runs some.
    const auto lease = 1000ms;
    env.start_worker({.name = "a", .handler_time = 400ms, .lease = lease, .concurrency = 6});
    BOOST_TEST_REQUIRE(wait_runs(env, [](const auto& runs) { return runs.size() >= 6; }));
    env.worker("a").stop();
    std::set<std::string> open_at_stop;
    std::size_t a_runs_at_stop = 0;
    for (const auto& r : env.runs()) {
        if (r.worker == "a") {
            ++a_runs_at_stop;
            if (r.outcome.empty()) {
                open_at_stop.insert(r.id);
            }
        }
    }
    BOOST_TEST_REQUIRE(!open_at_stop.empty());

    // b finishes everything, a's running tasks once their leases have expired; a stays
    // frozen for well over its lease.
    const auto frozen_since = std::chrono::steady_clock::now();
    env.start_worker({.name = "b", .handler_time = 10ms, .lease = lease, .concurrency = 16});
    BOOST_TEST_REQUIRE(env.wait_all(ids, dq::task_state::finished, 60s));
    run_for(env.io(), std::max<std::chrono::steady_clock::duration>(
                          0ms, frozen_since + 3 * lease - std::chrono::steady_clock::now()));

    // a wakes up: its handlers end, its acks come back stale, and it finishes nothing.
    env.worker("a").cont();
    BOOST_TEST_REQUIRE(wait_runs(env, [&](const auto& runs) {
        return std::all_of(runs.begin(), runs.end(), [&](const run_record& r) {
            return r.worker != "a" || !r.outcome.empty();
        });
    }));
    run_for(env.io(), 500ms); // its batched acks go out
    const auto a = env.stop_worker("a");
    env.stop_worker("b");
    BOOST_TEST_MESSAGE("a: " << a.at("acks_stale") << " stale acks, " << a.at("acks_ok") << " ok; "
                             << open_at_stop.size() << " runs open at the stop");
    BOOST_TEST(a.at("acks_stale") >= static_cast<std::int64_t>(open_at_stop.size()));
    // Nor did it start anything after it woke: what it still held was stale.
    const auto all_runs = env.runs();
    BOOST_TEST(std::count_if(all_runs.begin(), all_runs.end(), [](const run_record& r) {
                   return r.worker == "a";
               }) == static_cast<std::ptrdiff_t>(a_runs_at_stop));

    // The store: each task finished exactly once; those a held were finished by b.
    for (const auto& [id, s] : env.statuses(ids)) {
        BOOST_TEST_REQUIRE(s.has_value());
        BOOST_TEST((s->state == dq::task_state::finished), id);
        const auto successes = std::count_if(s->log.begin(), s->log.end(),
                                             [](const auto& a) { return a.outcome == "success"; });
        BOOST_TEST(successes == 1, id << " finished " << successes << " times");
        if (open_at_stop.contains(id)) {
            for (const auto& rec : s->log) {
                if (rec.outcome == "success") {
                    BOOST_TEST(rec.worker == "b", id << " finished by " << rec.worker);
                }
            }
        }
    }
}

// --- 4. All workers down past many due times ---------------------------------------------

BOOST_AUTO_TEST_CASE(everything_due_while_all_workers_were_down_runs_when_one_comes_back) {
    fault_env env;
    const auto now = env.store_now();
    // Half due long ago (absolute times in the past), half due during the downtime.
    constexpr std::size_t n = 200;
    std::map<std::string, std::int64_t> due_ms;
    std::vector<dq::task> tasks;
    for (std::size_t i = 0; i < n; ++i) {
        const std::string id = "d" + std::to_string(i);
        const auto due = i % 2 == 0 ? now - 10min - std::chrono::seconds(i)
                                    : now + std::chrono::milliseconds(10 * i);
        tasks.push_back({.id = id, .due = due, .payload = "x", .retry = {}});
        due_ms[id] = ms(due);
    }
    const auto ids = ids_of(tasks);
    for (const auto& [ec, r] : env.submit_all(tasks)) {
        BOOST_TEST_REQUIRE(!ec, ec.message());
    }
    // A worker comes and goes before: it ran some, then all are down.
    env.start_worker({.name = "early", .handler_time = 0ms});
    BOOST_TEST_REQUIRE(wait_runs(env, [](const auto& runs) { return !runs.empty(); }));
    env.worker("early").kill9();

    // Down for well past every due time.
    run_for(env.io(), 2500ms);
    std::size_t delayed = 0;
    for (const auto& [id, s] : env.statuses(ids)) {
        BOOST_TEST_REQUIRE(s.has_value());
        delayed += s->state == dq::task_state::delayed;
    }
    BOOST_TEST(delayed > 0u);

    // One worker comes back, with leases far longer than its handlers: it runs each task
    // once (a lease counted from a due time long past would expire at once and be
    // re-claimed under the worker's feet).
    env.start_worker({.name = "back", .handler_time = 0ms, .lease = 10000ms});
    BOOST_TEST_REQUIRE(env.wait_all(ids, dq::task_state::finished, 60s));
    env.stop_worker("back");
    const auto runs = env.runs();
    const auto per_id = runs_per_id(runs);
    std::map<std::string, int> back_runs;
    for (const auto& r : runs) {
        back_runs[r.id] += r.worker == "back";
    }
    for (const auto& id : ids) {
        BOOST_TEST(per_id.contains(id), id << " never ran");
        BOOST_TEST(back_runs[id] <= 1, id << " ran " << back_runs[id] << " times on one worker");
    }
    check_never_early(runs, due_ms);
}

// --- 5. Skewed worker clocks ------------------------------------------------------------

BOOST_AUTO_TEST_CASE(a_worker_30s_fast_or_slow_never_starts_a_task_early,
                     *boost::unit_test::precondition(faketime_available())) {
    fault_env env;
    for (const std::string skew : {"+30s", "-30s"}) {
        BOOST_TEST_CONTEXT("clock " << skew) {
            const std::string prefix = skew[0] == '+' ? "fast" : "slow";
            const auto now = env.store_now();
            std::map<std::string, std::int64_t> due_ms;
            std::vector<dq::task> tasks;
            for (std::size_t i = 0; i < 60; ++i) {
                const std::string id = prefix + std::to_string(i);
                const auto due = now + std::chrono::milliseconds(500 + 25 * i);
                tasks.push_back({.id = id, .due = due, .payload = "x", .retry = {}});
                due_ms[id] = ms(due);
            }
            const auto ids = ids_of(tasks);
            for (const auto& [ec, r] : env.submit_all(tasks)) {
                BOOST_TEST_REQUIRE(!ec, ec.message());
            }
            env.start_worker({.name = prefix, .faketime = skew, .handler_time = 0ms});
            // A worker that armed by its own clock would be 30 s late: the watchdog is
            // shorter than the skew.
            const bool finished = env.wait_all(ids, dq::task_state::finished, 25s);
            const auto c = env.stop_worker(prefix);
            BOOST_TEST_REQUIRE(finished, "the worker's counters: " << counters_text(c)
                                                                   << env.worker(prefix).output());
            // The worker's clock really was skewed (its system clock minus Redis TIME).
            const auto skew_ms = c.at("clock_skew_ms");
            if (skew[0] == '+') {
                BOOST_TEST(skew_ms > 25000);
            } else {
                BOOST_TEST(skew_ms < -25000);
            }
            std::vector<run_record> mine;
            for (const auto& r : env.runs()) {
                if (r.worker == prefix) {
                    mine.push_back(r);
                }
            }
            BOOST_TEST(mine.size() >= ids.size());
            check_never_early(mine, due_ms);
        }
    }
}

// --- 6. Cancel of a prefetched task ---------------------------------------------------------

BOOST_AUTO_TEST_CASE(a_cancel_acknowledged_before_the_due_time_means_it_never_runs) {
    fault_env env;
    const auto now = env.store_now();
    constexpr std::size_t n = 40;
    std::vector<dq::task> tasks;
    for (std::size_t i = 0; i < n; ++i) {
        tasks.push_back(
            {.id = "c" + std::to_string(i), .due = now + 3s, .payload = "x", .retry = {}});
    }
    const auto ids = ids_of(tasks);
    for (const auto& [ec, r] : env.submit_all(tasks)) {
        BOOST_TEST_REQUIRE(!ec, ec.message());
    }
    // A horizon longer than the wait: the worker prefetches them all into its wheel.
    env.start_worker({.name = "w", .lease = 10000ms, .horizon = 10000ms});
    BOOST_TEST_REQUIRE(env.wait_all(ids, dq::task_state::prefetched, 20s));

    // Cancel every other one, well before the due time.
    std::set<std::string> cancelled;
    std::size_t answered = 0;
    for (std::size_t i = 0; i < n; i += 2) {
        env.queue().async_cancel(
            ids[i], [&, id = ids[i]](boost::system::error_code ec, dq::cancel_result r) {
                BOOST_TEST(!ec, ec.message());
                BOOST_TEST((r == dq::cancel_result::cancelled), id);
                cancelled.insert(id);
                ++answered;
            });
    }
    BOOST_TEST_REQUIRE(timewheel::test::run_until(env.io(), [&] { return answered == n / 2; }));
    BOOST_TEST_REQUIRE(ms(env.store_now()) < ms(now + 3s)); // acknowledged before the due time

    std::vector<std::string> kept;
    for (const auto& id : ids) {
        if (!cancelled.contains(id)) {
            kept.push_back(id);
        }
    }
    BOOST_TEST_REQUIRE(env.wait_all(kept, dq::task_state::finished, 30s));
    // Past the due time by a margin, in case a cancelled one were about to start late.
    while (env.store_now() < now + 4s) {
        run_for(env.io(), 100ms);
    }
    env.stop_worker("w");
    const auto per_id = runs_per_id(env.runs());
    for (const auto& id : cancelled) {
        BOOST_TEST(!per_id.contains(id), id << " ran after its cancel was acknowledged");
    }
    for (const auto& id : kept) {
        BOOST_TEST(per_id.contains(id), id << " never ran");
    }
    for (const auto& [id, s] :
         env.statuses(std::vector<std::string>(cancelled.begin(), cancelled.end()))) {
        BOOST_TEST_REQUIRE(s.has_value());
        BOOST_TEST((s->state == dq::task_state::cancelled), id << " is " << s->state);
    }
}

// --- 7. Retries by the policy, dead letters, re-queue -------------------------------------

BOOST_AUTO_TEST_CASE(retries_follow_the_policy_then_the_task_is_dead_and_can_be_requeued) {
    fault_env env;
    const dq::retry_policy policy{.max_attempts = 4, .base = 300ms, .cap = 500ms};
    constexpr std::size_t n = 12;
    std::vector<dq::task> tasks;
    std::map<std::string, std::int64_t> retry_after;
    for (std::size_t i = 0; i < n; ++i) {
        // Payloads tell the test worker what to answer: "retry" (the policy's backoff),
        // "retry-after:<ms>", "failure" (permanent).
        std::string payload = "retry";
        if (i % 4 == 1) {
            payload = "retry-after:250";
            retry_after["t" + std::to_string(i)] = 250;
        } else if (i % 4 == 3) {
            payload = "failure";
        }
        tasks.push_back({.id = "t" + std::to_string(i),
                         .due = dq::duration(100),
                         .payload = payload,
                         .retry = policy});
    }
    const auto ids = ids_of(tasks);
    for (const auto& [ec, r] : env.submit_all(tasks)) {
        BOOST_TEST_REQUIRE(!ec, ec.message());
    }
    env.start_worker({.name = "w", .handler_time = 20ms});

    // While they retry, watch the store: a task waiting for its n-th retry is due within
    // [0, min(cap, base * 2^(n-1))] of when its attempt was acknowledged (its `updated`).
    std::size_t observed = 0;
    const bool all_dead = timewheel::test::run_until(
        env.io(),
        [&] {
            std::size_t dead = 0;
            for (const auto& [id, s] : env.statuses(ids)) {
                BOOST_TEST_REQUIRE(s.has_value());
                if (s->state == dq::task_state::dead) {
                    ++dead;
                } else if (s->state == dq::task_state::delayed && s->attempt >= 1) {
                    ++observed;
                    const auto wait = s->due - s->updated;
                    auto bound =
                        std::min<dq::duration>(policy.cap, policy.base * (1 << (s->attempt - 1)));
                    if (auto it = retry_after.find(id); it != retry_after.end()) {
                        bound = dq::duration(it->second);
                        BOOST_TEST(wait == bound, id << " retry after " << wait.count());
                    }
                    BOOST_TEST(wait >= dq::duration(0), id);
                    BOOST_TEST(wait <= bound, id << " attempt " << s->attempt << " waits "
                                                 << wait.count() << " ms");
                }
            }
            return dead == n;
        },
        60s);
    BOOST_TEST_REQUIRE(all_dead);
    BOOST_TEST(observed > 0u);

    const auto runs = env.runs();
    std::map<std::string, std::vector<run_record>> by_id;
    for (const auto& r : runs) {
        by_id[r.id].push_back(r);
    }
    for (const auto& id : ids) {
        const bool permanent =
            tasks[static_cast<std::size_t>(std::stoi(id.substr(1)))].payload == "failure";
        const std::uint32_t expected = permanent ? 1 : policy.max_attempts;
        auto& rs = by_id[id];
        BOOST_TEST(rs.size() == expected, id << " ran " << rs.size() << " times");
        for (std::size_t k = 0; k < rs.size(); ++k) {
            BOOST_TEST(rs[k].attempt == k + 1, id);
            // A retry starts after the previous attempt ended plus its retry-after, by the
            // store's clock (the previous handler ran at least 20 ms after its TIME).
            if (k > 0 && retry_after.contains(id) && rs[k].store_ms >= 0 &&
                rs[k - 1].store_ms >= 0) {
                BOOST_TEST(rs[k].store_ms >= rs[k - 1].store_ms + 20 + retry_after.at(id), id);
            }
        }
        const auto s = env.status(id);
        BOOST_TEST_REQUIRE(s.has_value());
        BOOST_TEST((s->state == dq::task_state::dead));
        BOOST_TEST(s->attempt == expected);
        BOOST_TEST(s->last_error == "boom " + std::to_string(expected),
                   id << ": " << s->last_error);
        BOOST_TEST(s->log.size() == expected);
    }

    // The dead letters, three to a page, hold every one of them.
    std::set<std::string> listed;
    std::string cursor;
    int pages = 0;
    do {
        bool done = false;
        env.queue().async_list_dead(cursor, 3,
                                    [&](boost::system::error_code ec, dq::dead_page page) {
                                        BOOST_TEST_REQUIRE(!ec, ec.message());
                                        BOOST_TEST(page.entries.size() <= 3u);
                                        for (const auto& e : page.entries) {
                                            listed.insert(e.id);
                                            BOOST_TEST(e.last_error.starts_with("boom "));
                                        }
                                        cursor = page.cursor;
                                        done = true;
                                    });
        BOOST_TEST_REQUIRE(timewheel::test::run_until(env.io(), [&] { return done; }));
    } while (!cursor.empty() && ++pages < 100);
    BOOST_TEST(listed == std::set<std::string>(ids.begin(), ids.end()));

    // Re-queue one to a worker that succeeds; delete another.
    env.stop_worker("w");
    bool requeued = false, deleted = false;
    env.queue().async_requeue_dead("t0", dq::duration(0), [&](boost::system::error_code ec) {
        BOOST_TEST(!ec, ec.message());
        requeued = true;
    });
    env.queue().async_delete_dead("t2", [&](boost::system::error_code ec) {
        BOOST_TEST(!ec, ec.message());
        deleted = true;
    });
    BOOST_TEST_REQUIRE(timewheel::test::run_until(env.io(), [&] { return requeued && deleted; }));
    BOOST_TEST(!env.status("t2").has_value());
    const auto again = env.status("t0");
    BOOST_TEST_REQUIRE(again.has_value());
    BOOST_TEST(
        (again->state == dq::task_state::delayed || again->state == dq::task_state::finished));
    // The payload still says "retry": this worker answers success whatever it says.
    env.start_worker({.name = "ok", .handler_time = 0ms, .outcome = "success"});
    BOOST_TEST_REQUIRE(env.wait_all({"t0"}, dq::task_state::finished, 30s));
    env.stop_worker("ok");
}

BOOST_AUTO_TEST_SUITE_END()
