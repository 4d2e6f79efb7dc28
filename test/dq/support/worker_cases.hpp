//
// test/dq/support/worker_cases.hpp
//
// The dq::worker cases every store runs (test/dq/worker.cpp on Redis, test/dq/sqlite_worker.cpp
// on SQLite): a task runs once, at or after its due time by the store's clock; many random
// due times all run, in due order within each start batch; a cancel or a reschedule reaches
// a prefetched task; retries follow the policy to the dead letters and back; a steady stream
// is claimed half a horizon at a time, never early; acks pending when a task fires go with
// its start call. A test file
// derives a fixture from worker_fixture and expands DQ_TEST_WORKER_CASES(make_fixture),
// where make_fixture() returns a std::unique_ptr to a fresh fixture on an empty store.
//
#ifndef TIMEWHEEL_TEST_DQ_SUPPORT_WORKER_CASES_HPP
#define TIMEWHEEL_TEST_DQ_SUPPORT_WORKER_CASES_HPP

#include <timewheel/dq/store.hpp>
#include <timewheel/dq/worker.hpp>

#include <test/dq/support/forwarding_store.hpp>
#include <test/dq/support/store_calls.hpp>

#include <boost/asio/io_context.hpp>
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <vector>

namespace timewheel::test {

namespace dq = timewheel::dq;
using namespace std::chrono_literals;
using boost::system::error_code;
using timewheel::test::run_until;

/// A store on an io_context, and what the worker cases ask of it.
struct worker_fixture {
    boost::asio::io_context io;
    std::unique_ptr<dq::store> store;

    virtual ~worker_fixture() = default;

    std::string submit(std::string id, dq::due_time due, std::string payload = "p",
                       dq::retry_policy retry = {}) {
        dq::task t;
        t.id = std::move(id);
        t.due = due;
        t.payload = std::move(payload);
        t.retry = retry;
        auto [ec, r, out] = timewheel::test::call<dq::submit_result, std::string>(
            io, [&](auto h) { store->submit(std::move(t), std::move(h)); });
        BOOST_REQUIRE_MESSAGE(!ec, ec.message());
        BOOST_REQUIRE(r == dq::submit_result::created);
        return out;
    }
    dq::time_point now() {
        auto [ec, t] =
            timewheel::test::call<dq::time_point>(io, [&](auto h) { store->now(std::move(h)); });
        BOOST_REQUIRE_MESSAGE(!ec, ec.message());
        return t;
    }
    dq::task_status status(std::string id) {
        auto [ec, st] = timewheel::test::call<dq::task_status>(
            io, [&](auto h) { store->status(std::move(id), std::move(h)); });
        BOOST_REQUIRE_MESSAGE(!ec, ec.message());
        return st;
    }
    dq::cancel_result cancel(std::string id) {
        auto [ec, r] = timewheel::test::call<dq::cancel_result>(
            io, [&](auto h) { store->cancel(std::move(id), std::move(h)); });
        BOOST_REQUIRE_MESSAGE(!ec, ec.message());
        return r;
    }
    bool wait(std::function<bool()> done, std::chrono::seconds limit = 30s) {
        return run_until(io, std::move(done), limit);
    }
    error_code stop(dq::worker& w, std::chrono::steady_clock::duration grace = 10s) {
        std::optional<error_code> out;
        w.async_stop(std::chrono::steady_clock::now() + grace, [&](error_code ec) { out = ec; });
        BOOST_REQUIRE(wait([&] { return out.has_value(); }, 60s));
        return *out;
    }
};

inline dq::worker_options options(std::string name = "w1") {
    dq::worker_options o;
    o.claim.worker = std::move(name);
    o.on_error = [](std::string_view what, error_code ec) {
        BOOST_TEST_MESSAGE("worker: " << what << " failed: " << ec.message());
    };
    return o;
}

// What a handler saw of one run: the task, and the store's clock read just after it began.
struct run {
    std::string id;
    std::uint32_t attempt;
    dq::time_point due;
    dq::time_point store_time; // the store's now(), asked from inside the handler
    // Which answer of the store started it, when no task waits for a handler slot: the
    // worker's count of start calls answered and of claims answered when the handler ran
    // (a claim starts the tasks already due itself).
    std::uint64_t batch;
    std::uint64_t claims;
};

// A handler that reads the store's clock, records the run, then succeeds.
inline auto recording_handler(dq::store& store, std::vector<run>& runs,
                              const dq::worker* const* w) {
    return [&store, &runs, w](dq::job j) {
        const std::uint64_t batch = (*w)->stats().start_batches;
        const std::uint64_t claims = (*w)->stats().claims;
        store.now(
            [&runs, batch, claims, j = std::move(j)](error_code ec, dq::time_point t) mutable {
                BOOST_TEST(!ec);
                runs.push_back({j.id(), j.attempt(), j.due(), t, batch, claims});
                j.succeed();
            });
    };
}

namespace worker_cases {

inline void a_task_runs_once_never_before_its_due_time_by_the_stores_clock(worker_fixture& f) {
    std::vector<run> runs;
    const dq::worker* wp = nullptr;
    dq::worker w(*f.store, options(), recording_handler(*f.store, runs, &wp));
    wp = &w;
    w.start();
    const auto submitted = f.now();
    f.submit("once", 400ms, "hello");
    BOOST_REQUIRE(f.wait([&] { return w.stats().acked == 1; }));
    timewheel::test::run_for(f.io, 600ms); // time for a second run, which must not come
    BOOST_REQUIRE_EQUAL(runs.size(), 1u);
    BOOST_TEST(runs[0].id == "once");
    BOOST_TEST(runs[0].attempt == 1u);
    BOOST_TEST(runs[0].due >= submitted + 400ms);
    BOOST_TEST((runs[0].store_time >= runs[0].due), "ran before its due time");
    BOOST_TEST(runs[0].store_time < runs[0].due + 10s); // generous: it did run
    const auto st = f.status("once");
    BOOST_TEST(st.state == dq::task_state::finished);
    BOOST_TEST(st.attempt == 1u);
    BOOST_TEST(w.stats().claimed == 1u);
    BOOST_TEST(w.stats().started == 1u);
    BOOST_TEST(w.stats().succeeded == 1u);
    BOOST_TEST(w.stats().ack_stale == 0u);
    BOOST_TEST(w.clock_rtt() > std::chrono::steady_clock::duration(0));
    BOOST_TEST(f.stop(w) == error_code());
}

inline void many_random_due_times_all_run_in_due_order_within_each_batch(worker_fixture& f) {
    std::vector<run> runs;
    const dq::worker* wp = nullptr;
    auto o = options();
    o.claim.batch = 64; // several claims, several batches
    // A slot for every task: none waits for one, so the handlers that run together are those
    // of one answer of the store (a start call, or a claim that started due tasks), which
    // must run earliest first.
    o.concurrency = 1000;
    dq::worker w(*f.store, o, recording_handler(*f.store, runs, &wp));
    wp = &w;
    w.start();
    std::mt19937 rng(14);
    std::uniform_int_distribution<int> delay(0, 1500);
    constexpr int n = 600;
    for (int i = 0; i < n; ++i) {
        f.submit("r" + std::to_string(i), dq::duration(delay(rng)));
    }
    BOOST_REQUIRE(f.wait([&] { return runs.size() >= n && w.stats().acked >= n; }, 60s));
    timewheel::test::run_for(f.io, 300ms);
    BOOST_TEST(runs.size() == std::size_t(n));
    std::set<std::string> ids;
    std::size_t early = 0, disorder = 0;
    for (std::size_t i = 0; i < runs.size(); ++i) {
        ids.insert(runs[i].id);
        early += runs[i].store_time < runs[i].due;
        if (i > 0 && runs[i].batch == runs[i - 1].batch && runs[i].claims == runs[i - 1].claims &&
            runs[i].due < runs[i - 1].due) {
            ++disorder;
        }
    }
    BOOST_TEST(ids.size() == std::size_t(n)); // each exactly once
    BOOST_TEST(early == 0u);
    BOOST_TEST(disorder == 0u);
    BOOST_TEST(w.stats().start_batches > 1u);
    BOOST_TEST(w.stats().ack_batches < std::uint64_t(n)); // acks went in batches
    BOOST_TEST(f.stop(w) == error_code());
}

inline void a_cancel_before_the_due_time_wins_also_over_a_prefetched_task(worker_fixture& f) {
    std::vector<run> runs;
    const dq::worker* wp = nullptr;
    auto o = options();
    o.claim.horizon = 5s; // claims them at once: prefetched long before due
    dq::worker w(*f.store, o, recording_handler(*f.store, runs, &wp));
    wp = &w;
    f.submit("pre", 1500ms);
    f.submit("late", 30s); // beyond the horizon: still delayed when cancelled
    f.submit("keep", 1500ms);
    w.start();
    BOOST_REQUIRE(f.wait([&] { return w.stats().claimed == 2; }));
    BOOST_TEST(f.status("pre").state == dq::task_state::prefetched);
    BOOST_TEST(f.cancel("pre") == dq::cancel_result::cancelled);
    BOOST_TEST(f.cancel("late") == dq::cancel_result::cancelled);
    BOOST_REQUIRE(f.wait([&] { return runs.size() == 1 && w.stats().stale == 1; }));
    timewheel::test::run_for(f.io, 300ms);
    BOOST_REQUIRE_EQUAL(runs.size(), 1u);
    BOOST_TEST(runs[0].id == "keep");
    BOOST_TEST(f.status("pre").state == dq::task_state::cancelled);
    BOOST_TEST(f.status("late").state == dq::task_state::cancelled);
    BOOST_TEST(f.stop(w) == error_code());
}

inline void a_prefetched_task_rescheduled_runs_once_at_its_new_time(worker_fixture& f) {
    std::vector<run> runs;
    const dq::worker* wp = nullptr;
    auto o = options();
    o.claim.horizon = 5s;
    dq::worker w(*f.store, o, recording_handler(*f.store, runs, &wp));
    wp = &w;
    f.submit("move", 600ms);
    w.start();
    BOOST_REQUIRE(f.wait([&] { return w.stats().claimed == 1; }));
    const auto new_due = f.now() + 1500ms;
    auto [ec] = timewheel::test::call<>(
        f.io, [&](auto h) { f.store->reschedule("move", new_due, std::move(h)); });
    BOOST_REQUIRE_MESSAGE(!ec, ec.message());
    BOOST_REQUIRE(f.wait([&] { return w.stats().acked == 1; }));
    timewheel::test::run_for(f.io, 300ms);
    BOOST_REQUIRE_EQUAL(runs.size(), 1u);
    BOOST_TEST(runs[0].due == new_due);
    BOOST_TEST((runs[0].store_time >= new_due), "ran before its new due time");
    BOOST_TEST(w.stats().stale == 1u); // the old lease, refused at its old time
    BOOST_TEST(f.stop(w) == error_code());
}

inline void retries_follow_the_policy_then_dead_then_requeued_runs_again(worker_fixture& f) {
    struct seen {
        std::uint32_t attempt;
        dq::time_point began, reported; // the store's clock
    };
    std::vector<seen> runs;
    bool succeed = false;
    dq::worker w(*f.store, options(), [&](dq::job j) {
        f.store->now([&, j = std::move(j)](error_code, dq::time_point began) mutable {
            f.store->now([&, began, j = std::move(j)](error_code, dq::time_point t) mutable {
                runs.push_back({j.attempt(), began, t});
                if (succeed) {
                    j.succeed();
                } else {
                    j.retry("boom " + std::to_string(j.attempt()), 300ms);
                }
            });
        });
    });
    w.start();
    f.submit("flaky", 0ms, "p", {3, 10ms, 40ms});
    BOOST_REQUIRE(f.wait([&] { return w.stats().retried == 3 && w.stats().acked == 3; }));
    timewheel::test::run_for(f.io, 500ms);
    BOOST_REQUIRE_EQUAL(runs.size(), 3u);
    for (std::size_t i = 0; i < runs.size(); ++i) {
        BOOST_TEST(runs[i].attempt == i + 1);
        if (i > 0) { // retry_after: not before the report + 300 ms, by the store's clock
            BOOST_TEST((runs[i].began >= runs[i - 1].reported + 300ms), "retry " << i << " early");
        }
    }
    auto st = f.status("flaky");
    BOOST_TEST(st.state == dq::task_state::dead);
    BOOST_TEST(st.attempt == 3u);
    BOOST_TEST(st.last_error == "boom 3");
    BOOST_TEST(w.stats().failed == 0u);

    succeed = true;
    auto [ec] = timewheel::test::call<>(
        f.io, [&](auto h) { f.store->requeue_dead("flaky", 0ms, std::move(h)); });
    BOOST_REQUIRE_MESSAGE(!ec, ec.message());
    BOOST_REQUIRE(f.wait([&] { return w.stats().succeeded == 1 && w.stats().acked == 4; }));
    BOOST_TEST(runs.back().attempt == 1u);
    BOOST_TEST(f.status("flaky").state == dq::task_state::finished);
    BOOST_TEST(f.stop(w) == error_code());
}

// A job held back by the handler's own flow control (nothing was done) is deferred: it runs
// again after the deferral with the same attempt number, and a task allowed one attempt is
// not made dead by any number of deferrals.
inline void a_deferred_job_runs_again_with_the_same_attempt(worker_fixture& f) {
    std::vector<std::uint32_t> attempts;
    dq::worker w(*f.store, options(), [&](dq::job j) {
        attempts.push_back(j.attempt());
        if (attempts.size() <= 3) {
            j.defer("held back " + std::to_string(attempts.size()), 20ms);
        } else {
            j.succeed();
        }
    });
    w.start();
    f.submit("once", 0ms, "p", {1, 10ms, 10ms});
    BOOST_REQUIRE(f.wait([&] { return w.stats().succeeded == 1 && w.stats().acked == 4; }));
    BOOST_TEST(attempts == std::vector<std::uint32_t>({1, 1, 1, 1}), "every run is attempt 1");
    BOOST_TEST(w.stats().deferred == 3u);
    BOOST_TEST(w.stats().retried == 0u);
    auto st = f.status("once");
    BOOST_TEST(st.state == dq::task_state::finished);
    BOOST_TEST(st.attempt == 1u);
    BOOST_TEST(st.log.size() == 1u);
    BOOST_TEST(f.stop(w) == error_code());
}

// A job that gives its slot back (it waits for something outside) keeps its lease and its
// duty to report, and the worker runs other tasks meanwhile, beyond `concurrency`.
inline void a_job_that_yields_its_slot_lets_other_tasks_run(worker_fixture& f) {
    auto o = options();
    o.concurrency = 1;
    o.claim.lease = 300ms; // renewed every 100 ms while it waits
    std::vector<dq::job> kept;
    std::vector<std::string> ran;
    std::size_t most_awaiting = 0;
    std::optional<dq::worker> w;
    w.emplace(*f.store, o, [&](dq::job j) {
        ran.push_back(j.id());
        if (j.id().starts_with("wait")) {
            BOOST_TEST(j.payload() == "p");
            j.yield_slot();
            j.yield_slot(); // a second call changes nothing
            BOOST_TEST(j.payload().empty());
            BOOST_TEST(j.id().starts_with("wait"));
            kept.push_back(std::move(j));
            most_awaiting = std::max(most_awaiting, w->stats().awaiting);
        } else {
            j.succeed();
        }
    });
    w->start();
    f.submit("wait-1", 0ms);
    f.submit("wait-2", 0ms);
    BOOST_REQUIRE(f.wait([&] { return kept.size() == 2; }));
    f.submit("other-1", 0ms);
    f.submit("other-2", 0ms);
    BOOST_REQUIRE(f.wait([&] { return w->stats().succeeded == 2 && w->stats().acked == 2; }));
    BOOST_TEST(most_awaiting == 2u);
    BOOST_TEST(w->stats().running == 0u);
    BOOST_TEST(w->stats().awaiting == 2u);
    // Longer than the lease: the waiting jobs' leases are renewed.
    timewheel::test::run_for(f.io, 700ms);
    BOOST_TEST(w->stats().renewals > 0u);
    BOOST_TEST(f.status("wait-1").state == dq::task_state::running);
    for (auto& j : kept) {
        BOOST_TEST(!j.lease_lost());
        j.succeed();
    }
    BOOST_REQUIRE(f.wait([&] { return w->stats().acked == 4; }));
    BOOST_TEST(w->stats().ack_stale == 0u);
    BOOST_TEST(w->stats().awaiting == 0u);
    BOOST_TEST(f.status("wait-2").state == dq::task_state::finished);
    BOOST_TEST(f.stop(*w) == error_code());
}

// A renewal that finds a waiting job's lease lost (here: another party acknowledged the
// lease, as a worker that took the task over and ran it would) tells the job, which stays
// valid; its report is then refused as stale.
inline void a_job_whose_lease_is_lost_is_told(worker_fixture& f) {
    auto o = options();
    o.claim.lease = 300ms;
    std::optional<dq::job> kept;
    int told = 0;
    dq::worker w(*f.store, o, [&](dq::job j) {
        j.yield_slot();
        j.on_lease_lost([&] { ++told; });
        kept.emplace(std::move(j));
    });
    w.start();
    f.submit("lost", 0ms);
    BOOST_REQUIRE(f.wait([&] { return kept.has_value(); }));
    BOOST_TEST(!kept->lease_lost());
    auto [ec, r] = timewheel::test::call<std::vector<dq::ack_result>>(f.io, [&](auto h) {
        f.store->acknowledge(
            {dq::ack{{kept->id(), kept->task().token}, dq::outcome::failure("taken over"), {}, {}}},
            std::move(h));
    });
    BOOST_REQUIRE(!ec);
    BOOST_REQUIRE(r.at(0) == dq::ack_result::ok);
    BOOST_REQUIRE(f.wait([&] { return told == 1; }));
    BOOST_TEST(kept->valid());
    BOOST_TEST(kept->lease_lost());
    BOOST_TEST(w.stats().lease_lost == 1u);
    // Registered after the loss: told at once (from a handler of its own).
    int late = 0;
    kept->on_lease_lost([&] { ++late; });
    BOOST_TEST(late == 0);
    BOOST_REQUIRE(f.wait([&] { return late == 1; }));
    kept->succeed();
    BOOST_REQUIRE(f.wait([&] { return w.stats().ack_stale == 1; }));
    BOOST_TEST(told == 1);
    BOOST_TEST(f.stop(w) == error_code());
}

// Logs what a worker asks of the store, in order: "claim", "start:<ids>", "ack:<ids>".
class call_log_store final : public forwarding_store {
public:
    using forwarding_store::forwarding_store;
    std::vector<std::string> calls;

private:
    static std::string ids(std::string what, const std::vector<dq::lease_ref>& l) {
        for (const auto& x : l) {
            what += ":" + x.id;
        }
        return what;
    }
    void do_claim(const dq::claim_options& o,
                  handler<void(error_code, dq::claim_result)> h) override {
        calls.push_back("claim");
        forwarding_store::do_claim(o, std::move(h));
    }
    void do_start(std::vector<dq::lease_ref> l,
                  handler<void(error_code, std::vector<dq::start_result>)> h) override {
        calls.push_back(ids("start", l));
        forwarding_store::do_start(std::move(l), std::move(h));
    }
    void do_acknowledge(std::vector<dq::ack> a,
                        handler<void(error_code, std::vector<dq::ack_result>)> h) override {
        std::vector<dq::lease_ref> l;
        for (const auto& x : a) {
            l.push_back(x.lease);
        }
        calls.push_back(ids("ack", l));
        forwarding_store::do_acknowledge(std::move(a), std::move(h));
    }
};

inline void a_steady_stream_is_claimed_half_a_horizon_at_a_time_never_early(worker_fixture& f) {
    // Submitted before the worker starts: no wake-ups, only the claims' own timing.
    constexpr int n = 40;
    for (int i = 0; i < n; ++i) {
        f.submit("s" + std::to_string(i), 300ms + i * 10ms);
    }
    std::vector<run> runs;
    const dq::worker* wp = nullptr;
    dq::worker w(*f.store, options(), recording_handler(*f.store, runs, &wp));
    wp = &w;
    w.start();
    BOOST_REQUIRE(f.wait([&] { return w.stats().acked == std::uint64_t(n); }));
    BOOST_REQUIRE_EQUAL(runs.size(), std::size_t(n));
    for (const auto& r : runs) {
        BOOST_TEST((r.store_time >= r.due), r.id << " ran before its due time");
        BOOST_TEST(r.attempt == 1u);
    }
    // Each claim takes the tasks of half a horizon (100 ms, about 10 here), not one task:
    // a stalled machine only makes claims take more at once.
    BOOST_TEST(w.stats().claims <= std::uint64_t(n / 2), w.stats().claims << " claims");
    BOOST_TEST(w.stats().claimed == std::uint64_t(n));
    BOOST_TEST(f.stop(w) == error_code());
}

inline void acks_pending_when_a_task_fires_go_with_its_start_call(worker_fixture& f) {
    call_log_store logged(*f.store);
    auto o = options();
    o.ack_delay = 3600s; // never by the timer here: only with a start call, or at the stop
    int ran = 0;
    dq::worker w(logged, o, [&ran](dq::job j) {
        ++ran;
        j.succeed();
    });
    f.submit("first", 300ms);
    f.submit("second", 700ms);
    w.start();
    BOOST_REQUIRE(f.wait([&] { return w.stats().ack_batches == 1; }));
    const auto& c = logged.calls;
    const auto second = std::find(c.begin(), c.end(), "start:second");
    BOOST_REQUIRE(second != c.end());
    BOOST_REQUIRE(second + 1 != c.end());
    BOOST_TEST(*(second + 1) == "ack:first"); // issued right after it, in the same turn
    BOOST_TEST(std::count_if(c.begin(), second,
                             [](const std::string& x) { return x.starts_with("ack"); }) == 0);
    BOOST_TEST(f.status("first").state == dq::task_state::finished);
    // The last ack, with no start call after it, goes at the stop: once "second" has run
    // (its start answered; a stop before that releases it instead, on a loaded machine).
    BOOST_REQUIRE(f.wait([&] { return ran == 2; }));
    BOOST_TEST(f.stop(w) == error_code());
    BOOST_TEST(c.back() == "ack:second");
    BOOST_TEST(w.stats().acked == 2u);
    BOOST_TEST(f.status("second").state == dq::task_state::finished);
}

} // namespace worker_cases

} // namespace timewheel::test

/// One case as a Boost.Test case on a fixture made by `make`.
#define DQ_TEST_WORKER_CASE(name, make)                                                            \
    BOOST_AUTO_TEST_CASE(name) {                                                                   \
        auto fixture_ptr = make;                                                                   \
        timewheel::test::worker_cases::name(*fixture_ptr);                                         \
    }

/// The shared worker cases, each on a fresh fixture from make_fixture().
#define DQ_TEST_WORKER_CASES(make_fixture)                                                         \
    DQ_TEST_WORKER_CASE(a_task_runs_once_never_before_its_due_time_by_the_stores_clock,            \
                        make_fixture())                                                            \
    DQ_TEST_WORKER_CASE(many_random_due_times_all_run_in_due_order_within_each_batch,              \
                        make_fixture())                                                            \
    DQ_TEST_WORKER_CASE(a_cancel_before_the_due_time_wins_also_over_a_prefetched_task,             \
                        make_fixture())                                                            \
    DQ_TEST_WORKER_CASE(a_prefetched_task_rescheduled_runs_once_at_its_new_time, make_fixture())   \
    DQ_TEST_WORKER_CASE(retries_follow_the_policy_then_dead_then_requeued_runs_again,              \
                        make_fixture())                                                            \
    DQ_TEST_WORKER_CASE(a_deferred_job_runs_again_with_the_same_attempt, make_fixture())           \
    DQ_TEST_WORKER_CASE(a_job_that_yields_its_slot_lets_other_tasks_run, make_fixture())           \
    DQ_TEST_WORKER_CASE(a_job_whose_lease_is_lost_is_told, make_fixture())                         \
    DQ_TEST_WORKER_CASE(a_steady_stream_is_claimed_half_a_horizon_at_a_time_never_early,           \
                        make_fixture())                                                            \
    DQ_TEST_WORKER_CASE(acks_pending_when_a_task_fires_go_with_its_start_call, make_fixture())

#endif // TIMEWHEEL_TEST_DQ_SUPPORT_WORKER_CASES_HPP
