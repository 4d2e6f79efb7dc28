//
// test/dq/support/differential.hpp
//
// A randomized differential test of a dq::store against the reference model of
// support/model.hpp: submit (with and without replace), cancel, reschedule, claim, start,
// renew, acknowledge (success, retry with and without retry_after, failure), release, stale
// tokens, and real time passing. After every step the state and attempt count of every task
// match the model, and every due time lies where the store's clock says it must.
// test/dq/differential.cpp runs it on Redis, test/dq/sqlite_store.cpp on SQLite.
//
// TIMEWHEEL_SEED replays a run (the seed is printed); TIMEWHEEL_OPS sets the number of steps.
//
#ifndef TIMEWHEEL_TEST_DQ_SUPPORT_DIFFERENTIAL_HPP
#define TIMEWHEEL_TEST_DQ_SUPPORT_DIFFERENTIAL_HPP

#include <timewheel/dq/store.hpp>

#include <test/dq/support/model.hpp>
#include <test/dq/support/store_calls.hpp>
#include <test/support/seed.hpp>

#include <boost/asio/io_context.hpp>
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <chrono>
#include <iostream>
#include <map>
#include <random>
#include <string>
#include <thread>
#include <vector>

namespace timewheel::test {

namespace differential_detail {

namespace dq = timewheel::dq;
using namespace std::chrono_literals;
using boost::system::error_code;

constexpr auto horizon = 40ms;
constexpr auto slack = 15ms; // the shards' scripts read the clock one after the other

struct run_state {
    boost::asio::io_context& io;
    dq::store& store;
    std::mt19937_64 rng;
    model m;
    std::vector<std::string> ids;
    std::vector<dq::lease_ref> old_leases;   // tokens that were current once
    std::map<std::string, std::size_t> seen; // outcomes met, printed at the end (coverage)

    std::size_t pick(std::size_t n) {
        return std::uniform_int_distribution<std::size_t>(0, n - 1)(rng);
    }
    bool coin(int percent) { return pick(100) < static_cast<std::size_t>(percent); }

    dq::time_point now() {
        auto [ec, t] = call<dq::time_point>(io, [&](auto h) { store.now(std::move(h)); });
        BOOST_REQUIRE_MESSAGE(!ec, ec.message());
        return t;
    }

    dq::task_status status(const std::string& id) {
        auto [ec, st] = call<dq::task_status>(io, [&](auto h) { store.status(id, std::move(h)); });
        BOOST_REQUIRE_MESSAGE(!ec, id << ": " << ec.message());
        return st;
    }

    // Learns the due time the store gave a delayed task, and checks it lies in [lo, hi].
    void learn_due(const std::string& id, dq::time_point lo, dq::time_point hi) {
        const auto st = status(id);
        BOOST_REQUIRE_EQUAL(st.state, dq::task_state::delayed);
        BOOST_TEST((st.due >= lo && st.due <= hi),
                   id << ": due " << st.due.time_since_epoch().count() << " outside ["
                      << lo.time_since_epoch().count() << ", " << hi.time_since_epoch().count()
                      << "]");
        m.tasks.at(id).due = st.due;
    }

    dq::duration random_delay() {
        switch (pick(4)) {
        case 0:
            return 0ms;
        case 1:
            return dq::duration(static_cast<long>(pick(60)));
        case 2:
            return -5ms; // in the past
        default:
            return 1h;
        }
    }

    void step_submit() {
        // New ids now and then, so that tasks keep flowing through the states.
        if (ids.size() < 60 && coin(35)) {
            ids.push_back("n" + std::to_string(ids.size()));
        }
        const auto id = coin(35) ? ids.back() : ids[pick(ids.size())];
        dq::task t;
        t.id = id;
        const auto delay = random_delay();
        t.due = delay;
        t.payload = "p" + std::to_string(pick(1000)) + std::string(pick(200), 'x');
        t.retry = {static_cast<std::uint32_t>(1 + pick(3)), 5ms, 20ms};
        t.replace = coin(40);
        const auto expected = m.submit(id, t.replace, t.retry.max_attempts);
        const auto lo = now();
        auto [ec, r, got] = call<dq::submit_result, std::string>(
            io, [&](auto h) { store.submit(t, std::move(h)); });
        const auto hi = now();
        BOOST_REQUIRE_MESSAGE(!ec, ec.message());
        BOOST_TEST_REQUIRE(r == expected, "submit " << id);
        ++seen[std::string("submit ") + to_string(r)];
        if (r != dq::submit_result::exists) {
            learn_due(id, lo + delay, hi + delay);
            BOOST_TEST(status(id).payload == t.payload);
        }
    }

    // Half the time a task the model holds as pending (delayed or prefetched), when there is
    // one: picked among all ids, a cancel met one rarely enough that a run on a quiet machine,
    // where workers claim tasks sooner, could end without a successful cancel.
    void step_cancel() {
        std::vector<std::string> pending;
        if (coin(50)) {
            for (const auto& i : ids) {
                const auto* t = m.find(i);
                if (t && (t->state == dq::task_state::delayed ||
                          t->state == dq::task_state::prefetched)) {
                    pending.push_back(i);
                }
            }
        }
        const auto id = pending.empty() ? ids[pick(ids.size())] : pending[pick(pending.size())];
        const auto expected = m.cancel(id);
        auto [ec, r] = call<dq::cancel_result>(io, [&](auto h) { store.cancel(id, std::move(h)); });
        BOOST_REQUIRE_MESSAGE(!ec, ec.message());
        BOOST_TEST_REQUIRE(r == expected, "cancel " << id);
        ++seen[std::string("cancel ") + to_string(r)];
    }

    void step_reschedule() {
        const auto& id = ids[pick(ids.size())];
        const auto delay = random_delay();
        const auto expected = m.reschedule(id);
        const auto lo = now();
        auto [ec] = call<>(io, [&](auto h) { store.reschedule(id, delay, std::move(h)); });
        const auto hi = now();
        if (expected) {
            BOOST_TEST_REQUIRE(ec == error_code(*expected),
                               "reschedule " << id << ": " << ec.message());
        } else {
            BOOST_REQUIRE_MESSAGE(!ec, "reschedule " << id << ": " << ec.message());
            learn_due(id, lo + delay, hi + delay);
        }
    }

    void step_claim() {
        dq::claim_options o;
        // Now and then a horizon that reaches the far tasks (kept in time slots until then).
        o.horizon = coin(10) ? dq::duration(2h) : dq::duration(horizon);
        o.batch = 4096;
        o.lease = 60s;
        o.worker = "w" + std::to_string(pick(3));
        auto [ec, r] = call<dq::claim_result>(io, [&](auto h) { store.claim(o, std::move(h)); });
        BOOST_REQUIRE_MESSAGE(!ec, ec.message());
        const auto limit = r.server_time + o.horizon;
        std::map<std::string, const dq::claimed_task*> got;
        for (const auto& t : r.tasks) {
            BOOST_TEST_REQUIRE(got.emplace(t.id, &t).second, "claimed twice: " << t.id);
        }
        for (auto& [id, t] : m.tasks) {
            const auto it = got.find(id);
            if (t.state != dq::task_state::delayed) {
                BOOST_TEST_REQUIRE((it == got.end()), "claimed a " << t.state << " task: " << id);
                continue;
            }
            const auto c = model::due_by(t, limit, slack);
            if (c == model::claimable::yes) {
                BOOST_TEST_REQUIRE((it != got.end()), "due task not claimed: " << id);
            } else if (c == model::claimable::no) {
                BOOST_TEST_REQUIRE((it == got.end()), "claimed before its horizon: " << id);
            }
            if (it != got.end()) {
                const auto& ct = *it->second;
                BOOST_TEST(ct.attempt == t.attempt + 1);
                BOOST_TEST((ct.due == t.due));
                BOOST_TEST(ct.retry.max_attempts == t.max_attempts);
                BOOST_TEST(!ct.token.empty());
                m.claimed(id, ct.token, ct.attempt);
                ++seen["claimed"];
            }
        }
        // The next due time is the earliest still delayed (or none).
        std::optional<dq::time_point> next;
        for (auto& [id, t] : m.tasks) {
            if (t.state == dq::task_state::delayed && (!next || t.due < *next)) {
                next = t.due;
            }
        }
        BOOST_TEST((r.next_due == next));
    }

    // Some current leases and some stale ones.
    std::vector<dq::lease_ref> some_leases() {
        std::vector<dq::lease_ref> out;
        for (auto& [id, t] : m.tasks) {
            if (!t.token.empty() && coin(60)) {
                out.push_back({id, t.token});
            }
        }
        for (std::size_t i = 0; i < 2 && !old_leases.empty(); ++i) {
            out.push_back(old_leases[pick(old_leases.size())]);
        }
        std::shuffle(out.begin(), out.end(), rng);
        // One lease per task in a call: the model cannot order two of them.
        std::map<std::string, bool> seen;
        std::vector<dq::lease_ref> unique;
        for (auto& l : out) {
            if (seen.emplace(l.id, true).second) {
                unique.push_back(l);
            }
        }
        return unique;
    }

    void remember(const std::vector<dq::lease_ref>& leases) {
        for (const auto& l : leases) {
            old_leases.push_back(l);
        }
    }

    void step_start() {
        auto leases = some_leases();
        if (leases.empty()) {
            return;
        }
        const auto lo = now();
        auto [ec, r] = call<std::vector<dq::start_result>>(
            io, [&](auto h) { store.start(leases, std::move(h)); });
        const auto hi = now();
        BOOST_REQUIRE_MESSAGE(!ec, ec.message());
        BOOST_REQUIRE_EQUAL(r.size(), leases.size());
        for (std::size_t i = 0; i < leases.size(); ++i) {
            const auto& l = leases[i];
            if (!m.holds(l.id, l.token)) {
                BOOST_TEST_REQUIRE(r[i] == dq::start_result::stale, "start " << l.id);
                ++seen["start stale"];
                continue;
            }
            auto& t = m.tasks.at(l.id);
            if (t.due > hi) {
                BOOST_TEST_REQUIRE(r[i] == dq::start_result::too_early, "start " << l.id);
            } else if (t.due <= lo) {
                BOOST_TEST_REQUIRE(r[i] == dq::start_result::started, "start " << l.id);
            } else {
                BOOST_TEST_REQUIRE(r[i] != dq::start_result::stale, "start " << l.id);
            }
            if (r[i] == dq::start_result::started) {
                t.state = dq::task_state::running;
            }
            ++seen[std::string("start ") + to_string(r[i])];
        }
    }

    void step_ack() {
        auto leases = some_leases();
        if (leases.empty()) {
            return;
        }
        std::vector<dq::ack> acks;
        for (auto& l : leases) {
            dq::ack a;
            a.lease = l;
            switch (pick(5)) {
            case 0:
            case 1:
                a.outcome = dq::outcome::success();
                break;
            case 3:
                a.outcome = dq::outcome::defer("held " + l.id, dq::duration(pick(2) ? 0 : 3600000));
                break;
            case 2:
                a.outcome = coin(50) ? dq::outcome::retry("boom " + l.id)
                                     : dq::outcome::retry("later " + l.id,
                                                          dq::duration(pick(2) ? 0 : 3600000));
                break;
            default:
                a.outcome = dq::outcome::failure("bad " + l.id);
            }
            acks.push_back(std::move(a));
        }
        const auto lo = now();
        auto [ec, r] = call<std::vector<dq::ack_result>>(
            io, [&](auto h) { store.acknowledge(acks, std::move(h)); });
        const auto hi = now();
        BOOST_REQUIRE_MESSAGE(!ec, ec.message());
        BOOST_REQUIRE_EQUAL(r.size(), acks.size());
        for (std::size_t i = 0; i < acks.size(); ++i) {
            const auto& a = acks[i];
            if (!m.holds(a.lease.id, a.lease.token)) {
                BOOST_TEST_REQUIRE(r[i] == dq::ack_result::stale, "ack " << a.lease.id);
                ++seen["ack stale"];
                continue;
            }
            BOOST_TEST_REQUIRE(r[i] == dq::ack_result::ok, "ack " << a.lease.id);
            m.acked(a.lease.id, a.outcome.what);
            ++seen[std::string("ack -> ") + to_string(m.tasks.at(a.lease.id).state)];
            remember({a.lease});
            const auto& t = m.tasks.at(a.lease.id);
            if (a.outcome.what == dq::outcome::kind::defer) {
                ++seen["ack deferred"];
                BOOST_TEST(status(a.lease.id).last_error == a.outcome.error);
            }
            if (t.state == dq::task_state::delayed) {
                if (a.outcome.retry_after) {
                    learn_due(a.lease.id, lo + *a.outcome.retry_after, hi + *a.outcome.retry_after);
                } else {
                    // Full jitter: within [0, min(cap, base * 2^(attempt-1))].
                    const auto cap = std::min<long>(20, 5L << (t.attempt - 1));
                    learn_due(a.lease.id, lo, hi + dq::duration(cap));
                }
            }
            if (t.state == dq::task_state::dead) {
                BOOST_TEST(status(a.lease.id).last_error == a.outcome.error);
            }
        }
    }

    void step_release() {
        auto leases = some_leases();
        if (leases.empty()) {
            return;
        }
        auto [ec] = call<>(io, [&](auto h) { store.release(leases, std::move(h)); });
        BOOST_REQUIRE_MESSAGE(!ec, ec.message());
        for (const auto& l : leases) {
            if (m.holds(l.id, l.token) && m.tasks.at(l.id).state == dq::task_state::prefetched) {
                auto& t = m.tasks.at(l.id);
                t.state = dq::task_state::delayed;
                t.token.clear();
                remember({l});
            }
        }
    }

    void step_renew() {
        auto leases = some_leases();
        if (leases.empty()) {
            return;
        }
        auto [ec, r] = call<std::vector<dq::ack_result>>(
            io, [&](auto h) { store.renew(leases, 60s, std::move(h)); });
        BOOST_REQUIRE_MESSAGE(!ec, ec.message());
        for (std::size_t i = 0; i < leases.size(); ++i) {
            const bool ok = m.holds(leases[i].id, leases[i].token);
            BOOST_TEST_REQUIRE((r[i] == (ok ? dq::ack_result::ok : dq::ack_result::stale)),
                               "renew " << leases[i].id);
        }
    }

    void check_all() {
        for (const auto& id : ids) {
            const auto* t = m.find(id);
            auto [ec, st] =
                call<dq::task_status>(io, [&](auto h) { store.status(id, std::move(h)); });
            if (!t) {
                BOOST_TEST_REQUIRE(ec == error_code(dq::error::not_found), id);
                continue;
            }
            BOOST_REQUIRE_MESSAGE(!ec, id << ": " << ec.message());
            BOOST_TEST_REQUIRE(st.state == t->state, id);
            BOOST_TEST_REQUIRE(st.attempt == model::reported_attempt(*t), id << " in " << t->state);
            if (t->state == dq::task_state::delayed || t->state == dq::task_state::prefetched ||
                t->state == dq::task_state::running) {
                BOOST_TEST_REQUIRE((st.due == t->due), id);
            }
        }
    }

    void run(std::size_t steps) {
        for (std::size_t s = 0; s < steps; ++s) {
            const auto op = pick(100);
            BOOST_TEST_CONTEXT("step " << s << " op " << op) {
                if (op < 25) {
                    step_submit();
                } else if (op < 32) {
                    step_cancel();
                } else if (op < 39) {
                    step_reschedule();
                } else if (op < 55) {
                    step_claim();
                } else if (op < 67) {
                    step_start();
                } else if (op < 82) {
                    step_ack();
                } else if (op < 87) {
                    step_release();
                } else if (op < 91) {
                    step_renew();
                } else {
                    std::this_thread::sleep_for(dq::duration(static_cast<long>(pick(40))));
                }
                check_all();
            }
        }
        for (const auto& [what, n] : seen) {
            std::cout << "  " << what << ": " << n << "\n";
        }
        // The run met the outcomes that matter (a seed that did not is too short a run).
        BOOST_TEST(seen["ack -> finished"] > 0);
        BOOST_TEST(seen["ack -> dead"] > 0);
        BOOST_TEST(seen["ack -> delayed"] > 0);
        BOOST_TEST(seen["ack stale"] > 0);
        BOOST_TEST(seen["ack deferred"] > 0);
        BOOST_TEST(seen["start started"] > 0);
        BOOST_TEST(seen["cancel cancelled"] > 0);
    }
};

} // namespace differential_detail

/// Runs `steps` random operations on `store` (empty at first) from `seed`, checking each.
inline void differential(boost::asio::io_context& io, dq::store& store, std::uint64_t seed,
                         std::size_t steps) {
    differential_detail::run_state st{io, store, std::mt19937_64(seed), {}, {}, {}, {}};
    for (int i = 0; i < 12; ++i) {
        st.ids.push_back("id" + std::to_string(i));
    }
    st.ids.push_back("{tagged}:x");
    st.ids.push_back(std::string(40, 'L'));
    st.run(steps);
}

/// The number of steps: $TIMEWHEEL_OPS, or `fallback` (enough for the run to meet every
/// outcome the end checks for).
inline std::size_t differential_steps(std::size_t fallback = 400) {
    return static_cast<std::size_t>(
        timewheel::test::env_number("TIMEWHEEL_OPS").value_or(fallback));
}

} // namespace timewheel::test

#endif // TIMEWHEEL_TEST_DQ_SUPPORT_DIFFERENTIAL_HPP
