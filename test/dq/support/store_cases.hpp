//
// test/dq/support/store_cases.hpp
//
// The behavioural suite every dq::store passes (dq::redis_store in test/dq/redis_store.cpp,
// dq::sqlite_store in test/dq/sqlite_store.cpp): every operation and outcome, bad input that
// writes nothing, fencing, expired leases, retries to dead letters, dead-letter pages and
// the wake-up. A test file derives a fixture from store_fixture (its store, and how it counts
// what the store holds) and expands DQ_TEST_STORE_CASES(make_fixture), where
// make_fixture(dq::limits) returns a std::unique_ptr to a fresh fixture on an empty store.
//
#ifndef TIMEWHEEL_TEST_DQ_SUPPORT_STORE_CASES_HPP
#define TIMEWHEEL_TEST_DQ_SUPPORT_STORE_CASES_HPP

#include <timewheel/dq/store.hpp>

#include <test/dq/support/store_calls.hpp>

#include <boost/asio/io_context.hpp>
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

namespace timewheel::test {

namespace dq = timewheel::dq;
using namespace std::chrono_literals;
using boost::system::error_code;

/// The limits bad_input_fails_with_its_code_and_writes_nothing runs with.
inline dq::limits small_limits() {
    dq::limits l;
    l.max_id_bytes = 8;
    l.max_payload_bytes = 16;
    return l;
}

/// A store on an io_context, and its operations called to completion.
struct store_fixture {
    boost::asio::io_context io;
    std::unique_ptr<dq::store> store;

    virtual ~store_fixture() = default;

    /// What the store holds for tasks (keys, rows): 0 when nothing was ever written.
    virtual long long task_keys() = 0;

    /// Another store on the same data, on `io` (another node: its own connection to Redis;
    /// for SQLite, a store sharing the engine, as timewheeld's threads do).
    virtual std::unique_ptr<dq::store> another_store() = 0;

    auto submit_many(std::vector<dq::task> ts, dq::store* on = nullptr) {
        return timewheel::test::call<std::vector<dq::submit_outcome>>(
            io, [&](auto h) { (on ? *on : *store).submit_many(std::move(ts), std::move(h)); });
    }

    auto submit(dq::task t) {
        return timewheel::test::call<dq::submit_result, std::string>(
            io, [&](auto h) { store->submit(std::move(t), std::move(h)); });
    }
    auto cancel(std::string id) {
        return timewheel::test::call<dq::cancel_result>(
            io, [&](auto h) { store->cancel(std::move(id), std::move(h)); });
    }
    error_code reschedule(std::string id, dq::due_time due) {
        return std::get<0>(timewheel::test::call<>(
            io, [&](auto h) { store->reschedule(std::move(id), due, std::move(h)); }));
    }
    auto status(std::string id) {
        return timewheel::test::call<dq::task_status>(
            io, [&](auto h) { store->status(std::move(id), std::move(h)); });
    }
    dq::task_status status_ok(std::string id) {
        auto [ec, st] = status(std::move(id));
        BOOST_REQUIRE_MESSAGE(!ec, ec.message());
        return st;
    }
    auto list_dead(std::string cursor, std::size_t n) {
        return timewheel::test::call<dq::dead_page>(
            io, [&](auto h) { store->list_dead(std::move(cursor), n, std::move(h)); });
    }
    error_code requeue(std::string id, dq::due_time due) {
        return std::get<0>(timewheel::test::call<>(
            io, [&](auto h) { store->requeue_dead(std::move(id), due, std::move(h)); }));
    }
    error_code delete_dead(std::string id) {
        return std::get<0>(timewheel::test::call<>(
            io, [&](auto h) { store->delete_dead(std::move(id), std::move(h)); }));
    }
    auto claim(dq::claim_options o = {}) {
        if (o.worker.empty()) {
            o.worker = "w1";
        }
        return timewheel::test::call<dq::claim_result>(
            io, [&](auto h) { store->claim(o, std::move(h)); });
    }
    dq::claim_result claim_ok(dq::claim_options o = {}) {
        auto [ec, r] = claim(std::move(o));
        BOOST_REQUIRE_MESSAGE(!ec, ec.message());
        return r;
    }
    auto start(std::vector<dq::lease_ref> l) {
        return timewheel::test::call<std::vector<dq::start_result>>(
            io, [&](auto h) { store->start(std::move(l), std::move(h)); });
    }
    auto renew(std::vector<dq::lease_ref> l, dq::duration d) {
        return timewheel::test::call<std::vector<dq::ack_result>>(
            io, [&](auto h) { store->renew(std::move(l), d, std::move(h)); });
    }
    auto ack(std::vector<dq::ack> a) {
        return timewheel::test::call<std::vector<dq::ack_result>>(
            io, [&](auto h) { store->acknowledge(std::move(a), std::move(h)); });
    }
    dq::ack_result ack_one(const dq::claimed_task& t, dq::outcome o) {
        auto [ec, r] = ack({dq::ack{{t.id, t.token}, std::move(o), {}, {}}});
        BOOST_REQUIRE_MESSAGE(!ec, ec.message());
        BOOST_REQUIRE_EQUAL(r.size(), 1u);
        return r[0];
    }
    error_code release(std::vector<dq::lease_ref> l) {
        return std::get<0>(timewheel::test::call<>(
            io, [&](auto h) { store->release(std::move(l), std::move(h)); }));
    }
    dq::time_point now() {
        auto [ec, t] =
            timewheel::test::call<dq::time_point>(io, [&](auto h) { store->now(std::move(h)); });
        BOOST_REQUIRE(!ec);
        return t;
    }
    // Claims, and starts, the one task due now.
    dq::claimed_task claim_and_start() {
        auto r = claim_ok();
        BOOST_REQUIRE_EQUAL(r.tasks.size(), 1u);
        auto [ec, s] = start({{r.tasks[0].id, r.tasks[0].token}});
        BOOST_REQUIRE(!ec);
        BOOST_REQUIRE(s.at(0) == dq::start_result::started);
        return r.tasks[0];
    }
};

inline dq::task make(std::string id, dq::due_time due = dq::duration(0),
                     std::string payload = "p") {
    dq::task t;
    t.id = std::move(id);
    t.due = due;
    t.payload = std::move(payload);
    return t;
}

namespace store_cases {

inline void submit_answers_created_exists_and_replaced(store_fixture& f) {
    auto [ec, r, id] = f.submit(make("a", 10s, "one"));
    BOOST_TEST(!ec);
    BOOST_TEST(r == dq::submit_result::created);
    BOOST_TEST(id == "a");
    auto before = f.status_ok("a");
    BOOST_TEST(before.state == dq::task_state::delayed);
    BOOST_TEST(before.payload == "one");
    BOOST_TEST(before.attempt == 0u);
    BOOST_TEST((before.due - before.created).count() == 10000);

    auto [ec2, r2, id2] = f.submit(make("a", 20s, "two"));
    BOOST_TEST(!ec2);
    BOOST_TEST(r2 == dq::submit_result::exists);
    BOOST_TEST(f.status_ok("a").payload == "one");

    auto t = make("a", dq::time_point(dq::duration(4102444800000)), std::string(300, 'x'));
    t.replace = true;
    auto [ec3, r3, id3] = f.submit(t);
    BOOST_TEST(!ec3);
    BOOST_TEST(r3 == dq::submit_result::replaced);
    auto after = f.status_ok("a");
    BOOST_TEST(after.payload == std::string(300, 'x'));
    BOOST_TEST(after.due.time_since_epoch().count() == 4102444800000);

    // Generated ids: short, distinct, and the task is there.
    auto [ec4, r4, gen] = f.submit(make("", 1s));
    BOOST_TEST(!ec4);
    BOOST_TEST(r4 == dq::submit_result::created);
    BOOST_TEST(gen.size() == 12u);
    BOOST_TEST(f.status_ok(gen).state == dq::task_state::delayed);
    auto [ec5, r5, gen2] = f.submit(make("", 1s));
    BOOST_TEST(gen2 != gen);

    // A custom policy and a payload with every byte value survive the record's codec.
    std::string bytes;
    for (int i = 0; i < 256; ++i) {
        bytes.push_back(static_cast<char>(i));
    }
    auto c = make("custom", 1h, bytes + bytes);
    c.retry = {7, 3ms, 9000ms};
    BOOST_TEST(!std::get<0>(f.submit(c)));
    auto cs = f.status_ok("custom");
    BOOST_TEST(cs.payload == bytes + bytes);
    BOOST_TEST(cs.retry == c.retry);
}

// Run with small_limits().
inline void bad_input_fails_with_its_code_and_writes_nothing(store_fixture& f) {
    auto expect = [&](dq::task t, dq::error e) {
        auto [ec, r, id] = f.submit(std::move(t));
        BOOST_TEST(ec == error_code(e), ec.message() << " instead of " << e);
    };
    expect(make("123456789"), dq::error::id_too_long);
    expect(make(std::string("a\0b", 3)), dq::error::invalid_id);
    expect(make("a", dq::duration(0), std::string(17, 'x')), dq::error::payload_too_large);
    expect(make("a", dq::time_point(dq::duration(-1))), dq::error::due_out_of_range);
    expect(make("a", dq::max_due + dq::duration(1)), dq::error::due_out_of_range);
    expect(make("a", dq::duration(dq::max_due.time_since_epoch())), dq::error::due_out_of_range);
    auto z = make("a");
    z.retry.max_attempts = 0;
    expect(z, dq::error::zero_attempts);
    auto b = make("a");
    b.retry.base = 10s;
    b.retry.cap = 1s;
    expect(b, dq::error::invalid_backoff);
    b.retry.base = -1ms;
    expect(b, dq::error::invalid_backoff);

    BOOST_TEST(std::get<0>(f.cancel("")) == error_code(dq::error::empty_id));
    BOOST_TEST(std::get<0>(f.status("")) == error_code(dq::error::empty_id));
    BOOST_TEST(f.reschedule("a", dq::time_point(dq::duration(-5))) ==
               error_code(dq::error::due_out_of_range));
    BOOST_TEST(f.requeue("", 0ms) == error_code(dq::error::empty_id));
    dq::claim_options zero;
    zero.batch = 0;
    BOOST_TEST(std::get<0>(f.claim(zero)) == error_code(dq::error::invalid_argument));
    dq::claim_options no_lease;
    no_lease.lease = 0ms;
    BOOST_TEST(std::get<0>(f.claim(no_lease)) == error_code(dq::error::invalid_argument));
    BOOST_TEST(std::get<0>(f.renew({{"a", "t"}}, 0ms)) == error_code(dq::error::invalid_argument));
    BOOST_TEST(std::get<0>(f.start({{"", "t"}})) == error_code(dq::error::empty_id));
    BOOST_TEST(std::get<0>(f.list_dead("", 0)) == error_code(dq::error::invalid_argument));
    BOOST_TEST(std::get<0>(f.list_dead("garbage", 5)) == error_code(dq::error::invalid_argument));
    BOOST_TEST(f.task_keys() == 0);

    // The limits are inclusive.
    auto [ec, r, id] = f.submit(make("12345678", dq::duration(0), std::string(16, 'x')));
    BOOST_TEST(!ec);
    BOOST_TEST(r == dq::submit_result::created);
}

inline void claim_start_acknowledge_finishes_a_task_with_its_log(store_fixture& f) {
    BOOST_TEST(!std::get<0>(f.submit(make("job", 0ms, "body"))));
    const auto t0 = f.now();
    auto r = f.claim_ok();
    BOOST_REQUIRE_EQUAL(r.tasks.size(), 1u);
    const auto& t = r.tasks[0];
    BOOST_TEST(t.id == "job");
    BOOST_TEST(t.payload == "body");
    BOOST_TEST(t.attempt == 1u);
    BOOST_TEST(!t.token.empty());
    BOOST_TEST(!r.next_due.has_value());
    BOOST_TEST(r.server_time >= t0);
    BOOST_TEST(f.status_ok("job").state == dq::task_state::prefetched);
    BOOST_TEST(f.claim_ok().tasks.empty()); // leased: nobody else gets it

    auto [ec, s] = f.start({{t.id, t.token}});
    BOOST_TEST(!ec);
    BOOST_TEST((s == std::vector<dq::start_result>{dq::start_result::started}));
    auto running = f.status_ok("job");
    BOOST_TEST(running.state == dq::task_state::running);
    BOOST_TEST(running.attempt == 1u);

    BOOST_TEST(f.ack_one(t, dq::outcome::success()) == dq::ack_result::ok);
    auto done = f.status_ok("job");
    BOOST_TEST(done.state == dq::task_state::finished);
    BOOST_REQUIRE_EQUAL(done.log.size(), 1u);
    BOOST_TEST(done.log[0].outcome == "success");
    BOOST_TEST(done.log[0].worker == "w1");
    BOOST_TEST(done.log[0].attempt == 1u);
    BOOST_TEST(done.attempt == 1u);
    // Finished: a re-submit is a no-op, a second ack is stale.
    BOOST_TEST((std::get<1>(f.submit(make("job"))) == dq::submit_result::exists));
    BOOST_TEST(f.ack_one(t, dq::outcome::success()) == dq::ack_result::stale);
    BOOST_TEST((std::get<1>(f.cancel("job")) == dq::cancel_result::too_late));
}

inline void start_refuses_a_task_whose_due_time_has_not_come(store_fixture& f) {
    BOOST_TEST(!std::get<0>(f.submit(make("later", 30s))));
    dq::claim_options o;
    o.horizon = 60s;
    auto r = f.claim_ok(o);
    BOOST_REQUIRE_EQUAL(r.tasks.size(), 1u);
    BOOST_TEST(r.tasks[0].due > r.server_time);
    auto [ec, s] = f.start({{r.tasks[0].id, r.tasks[0].token}});
    BOOST_TEST(!ec);
    BOOST_TEST((s.at(0) == dq::start_result::too_early));
    BOOST_TEST(f.status_ok("later").state == dq::task_state::prefetched);
    // Nothing due within the default horizon, and the next due time is reported.
    BOOST_TEST(!std::get<0>(f.submit(make("far", 40s))));
    auto r2 = f.claim_ok();
    BOOST_TEST(r2.tasks.empty());
    BOOST_REQUIRE(r2.next_due.has_value());
    BOOST_TEST(*r2.next_due == f.status_ok("far").due);
}

inline void cancel_delayed_prefetched_running_and_unknown(store_fixture& f) {
    BOOST_TEST(!std::get<0>(f.submit(make("d", 10s))));
    BOOST_TEST((std::get<1>(f.cancel("d")) == dq::cancel_result::cancelled));
    BOOST_TEST(f.status_ok("d").state == dq::task_state::cancelled);
    BOOST_TEST((std::get<1>(f.cancel("d")) == dq::cancel_result::too_late));
    BOOST_TEST((std::get<1>(f.submit(make("d"))) == dq::submit_result::exists));
    BOOST_TEST((std::get<1>(f.cancel("nope")) == dq::cancel_result::not_found));

    // Prefetched: its lease becomes stale, it never starts.
    BOOST_TEST(!std::get<0>(f.submit(make("p", 0ms))));
    auto r = f.claim_ok();
    BOOST_REQUIRE_EQUAL(r.tasks.size(), 1u);
    BOOST_TEST((std::get<1>(f.cancel("p")) == dq::cancel_result::cancelled));
    auto [ec, s] = f.start({{r.tasks[0].id, r.tasks[0].token}});
    BOOST_TEST((s.at(0) == dq::start_result::stale));
    BOOST_TEST(f.ack_one(r.tasks[0], dq::outcome::success()) == dq::ack_result::stale);
    BOOST_TEST(f.status_ok("p").state == dq::task_state::cancelled);
    BOOST_TEST(f.claim_ok().tasks.empty());

    // Running: too late, it finishes normally.
    BOOST_TEST(!std::get<0>(f.submit(make("r", 0ms))));
    auto t = f.claim_and_start();
    BOOST_TEST((std::get<1>(f.cancel("r")) == dq::cancel_result::too_late));
    BOOST_TEST(f.ack_one(t, dq::outcome::success()) == dq::ack_result::ok);
    BOOST_TEST(f.status_ok("r").state == dq::task_state::finished);
}

inline void reschedule_moves_delayed_and_takes_back_prefetched(store_fixture& f) {
    BOOST_TEST(!std::get<0>(f.submit(make("a", 10s))));
    const auto far = dq::time_point(dq::duration(4102444800000));
    BOOST_TEST(!f.reschedule("a", far));
    BOOST_TEST(f.status_ok("a").due == far);
    BOOST_TEST(f.reschedule("zz", 1s) == error_code(dq::error::not_found));

    BOOST_TEST(!std::get<0>(f.submit(make("p", 0ms))));
    auto r = f.claim_ok();
    BOOST_REQUIRE_EQUAL(r.tasks.size(), 1u);
    BOOST_TEST(!f.reschedule("p", 1h));
    auto st = f.status_ok("p");
    BOOST_TEST(st.state == dq::task_state::delayed);
    BOOST_TEST(st.attempt == 0u);
    auto [ec, s] = f.start({{r.tasks[0].id, r.tasks[0].token}});
    BOOST_TEST((s.at(0) == dq::start_result::stale));

    BOOST_TEST(!std::get<0>(f.submit(make("r", 0ms))));
    auto t = f.claim_and_start();
    BOOST_TEST(f.reschedule("r", 1h) == error_code(dq::error::wrong_state));
    BOOST_TEST(f.ack_one(t, dq::outcome::success()) == dq::ack_result::ok);
    BOOST_TEST(f.reschedule("r", 1h) == error_code(dq::error::wrong_state));
}

inline void a_stale_token_changes_nothing_and_an_expired_lease_comes_back(store_fixture& f) {
    BOOST_TEST(!std::get<0>(f.submit(make("x", 0ms))));
    dq::claim_options o;
    o.lease = 100ms;
    auto r = f.claim_ok(o);
    BOOST_REQUIRE_EQUAL(r.tasks.size(), 1u);
    const auto old = r.tasks[0];
    auto [ec, s] = f.start({{old.id, old.token}});
    BOOST_TEST((s.at(0) == dq::start_result::started));
    // A wrong token is stale and changes nothing.
    BOOST_TEST(f.ack_one({old.id, "nottoken", {}, 1, {}, {}}, dq::outcome::success()) ==
               dq::ack_result::stale);
    BOOST_TEST(f.status_ok("x").state == dq::task_state::running);

    std::this_thread::sleep_for(150ms);
    o.lease = 30s;
    auto again = f.claim_ok(o);
    BOOST_REQUIRE_EQUAL(again.tasks.size(), 1u);
    const auto fresh = again.tasks[0];
    BOOST_TEST(fresh.id == "x");
    BOOST_TEST(fresh.attempt == 2u);
    BOOST_TEST(fresh.token != old.token);

    auto [rec, rr] = f.renew({{old.id, old.token}}, 10s);
    BOOST_TEST((rr.at(0) == dq::ack_result::stale));
    BOOST_TEST(f.ack_one(old, dq::outcome::success()) == dq::ack_result::stale);
    auto st = f.status_ok("x");
    BOOST_TEST(st.state == dq::task_state::prefetched);
    BOOST_REQUIRE_EQUAL(st.log.size(), 1u);
    BOOST_TEST(st.log[0].outcome == "lease_expired");

    auto [rec2, rr2] = f.renew({{fresh.id, fresh.token}}, 10s);
    BOOST_TEST((rr2.at(0) == dq::ack_result::ok));
    BOOST_TEST(
        (std::get<1>(f.start({{fresh.id, fresh.token}})).at(0) == dq::start_result::started));
    BOOST_TEST(f.ack_one(fresh, dq::outcome::success()) == dq::ack_result::ok);
    BOOST_TEST(f.status_ok("x").state == dq::task_state::finished);
}

inline void retries_follow_the_policy_then_the_task_is_dead_and_can_be_requeued(store_fixture& f) {
    auto t = make("r", 0ms);
    t.retry = {3, 1000ms, 1500ms};
    BOOST_TEST(!std::get<0>(f.submit(t)));

    // Retry 1: full jitter within [0, base].
    auto a1 = f.claim_and_start();
    const auto t0 = f.now();
    BOOST_TEST(f.ack_one(a1, dq::outcome::retry("e1")) == dq::ack_result::ok);
    const auto t1 = f.now();
    auto s1 = f.status_ok("r");
    BOOST_TEST(s1.state == dq::task_state::delayed);
    BOOST_TEST(s1.attempt == 1u);
    BOOST_TEST(s1.last_error == "e1");
    BOOST_TEST(s1.due >= t0);
    BOOST_TEST(s1.due <= t1 + 1000ms);

    // retry_after is honoured exactly.
    BOOST_TEST(!f.reschedule("r", 0ms));
    auto a2 = f.claim_and_start();
    BOOST_TEST(a2.attempt == 2u);
    const auto t2 = f.now();
    BOOST_TEST(f.ack_one(a2, dq::outcome::retry("e2", 5000ms)) == dq::ack_result::ok);
    const auto t3 = f.now();
    auto s2 = f.status_ok("r");
    BOOST_TEST(s2.due >= t2 + 5000ms);
    BOOST_TEST(s2.due <= t3 + 5000ms);

    // The third attempt is the last: a retry makes it dead with its last error.
    BOOST_TEST(!f.reschedule("r", 0ms));
    auto a3 = f.claim_and_start();
    BOOST_TEST(a3.attempt == 3u);
    BOOST_TEST(f.ack_one(a3, dq::outcome::retry("e3")) == dq::ack_result::ok);
    auto dead = f.status_ok("r");
    BOOST_TEST(dead.state == dq::task_state::dead);
    BOOST_TEST(dead.attempt == 3u);
    BOOST_TEST(dead.last_error == "e3");
    BOOST_TEST(dead.log.size() == 3u);
    BOOST_TEST((std::get<1>(f.submit(make("r"))) == dq::submit_result::exists));

    auto [ec, page] = f.list_dead("", 10);
    BOOST_TEST(!ec);
    BOOST_REQUIRE_EQUAL(page.entries.size(), 1u);
    BOOST_TEST(page.entries[0].id == "r");
    BOOST_TEST(page.entries[0].attempt == 3u);
    BOOST_TEST(page.entries[0].last_error == "e3");
    BOOST_TEST(page.cursor.empty());

    BOOST_TEST(!f.requeue("r", 0ms));
    auto back = f.status_ok("r");
    BOOST_TEST(back.state == dq::task_state::delayed);
    BOOST_TEST(back.attempt == 0u);
    BOOST_TEST(back.payload == "p");
    BOOST_TEST(f.requeue("r", 0ms) == error_code(dq::error::not_found));
    BOOST_TEST(f.delete_dead("r") == error_code(dq::error::not_found));

    // A permanent failure is dead at once, whatever attempts are left; delete forgets it.
    auto a4 = f.claim_and_start();
    BOOST_TEST(a4.attempt == 1u);
    BOOST_TEST(f.ack_one(a4, dq::outcome::failure("bad")) == dq::ack_result::ok);
    BOOST_TEST(f.status_ok("r").state == dq::task_state::dead);
    BOOST_TEST(!f.delete_dead("r"));
    BOOST_TEST(std::get<0>(f.status("r")) == error_code(dq::error::not_found));
}

// A deferral (the worker held the run back: nothing was sent) delays the task by its time
// and gives the attempt back: the count stays, the next claim has the same number, no log
// entry is written, and however many deferrals come, the task never dies of them. A stale
// token's deferral changes nothing.
inline void a_deferral_delays_without_counting_the_attempt(store_fixture& f) {
    auto t = make("d", 0ms);
    t.retry = {1, 1000ms, 1000ms}; // one attempt: a retry would make it dead
    BOOST_TEST(!std::get<0>(f.submit(t)));

    for (int i = 0; i < 3; ++i) {
        auto a = f.claim_and_start();
        BOOST_TEST(a.attempt == 1u);
        const auto t0 = f.now();
        BOOST_TEST(f.ack_one(a, dq::outcome::defer("held " + std::to_string(i), 5000ms)) ==
                   dq::ack_result::ok);
        const auto t1 = f.now();
        auto st = f.status_ok("d");
        BOOST_TEST(st.state == dq::task_state::delayed);
        BOOST_TEST(st.attempt == 0u);
        BOOST_TEST(st.last_error == "held " + std::to_string(i));
        BOOST_TEST(st.due >= t0 + 5000ms);
        BOOST_TEST(st.due <= t1 + 5000ms);
        BOOST_TEST(st.log.empty());
        // Not due for 5 s: a claim does not take it; a reschedule makes it due again.
        BOOST_TEST(f.claim_ok().tasks.empty());
        // Its lease is gone: a second ack with the same token is stale.
        BOOST_TEST(f.ack_one(a, dq::outcome::success()) == dq::ack_result::stale);
        BOOST_TEST(!f.reschedule("d", 0ms));
    }

    // Fencing: a deferral with a stale token changes nothing.
    auto a = f.claim_and_start();
    BOOST_TEST(a.attempt == 1u);
    auto stale = a;
    stale.token = "not-the-token";
    BOOST_TEST(f.ack_one(stale, dq::outcome::defer("stale", 0ms)) == dq::ack_result::stale);
    auto running = f.status_ok("d");
    BOOST_TEST(running.state == dq::task_state::running);
    BOOST_TEST(running.attempt == 1u);

    // A defer without a time is due at once; then the one attempt runs and counts.
    BOOST_TEST(f.ack_one(a, dq::outcome{dq::outcome::kind::defer, std::nullopt, "now"}) ==
               dq::ack_result::ok);
    auto b = f.claim_and_start();
    BOOST_TEST(b.attempt == 1u);
    BOOST_TEST(f.ack_one(b, dq::outcome::retry("e1")) == dq::ack_result::ok);
    auto dead = f.status_ok("d");
    BOOST_TEST(dead.state == dq::task_state::dead);
    BOOST_TEST(dead.attempt == 1u);
    BOOST_REQUIRE_EQUAL(dead.log.size(), 1u);
    BOOST_TEST(dead.log[0].attempt == 1u);
    BOOST_TEST(dead.log[0].outcome == "retry");

    // After a counted attempt, a deferral keeps the count where it is.
    auto t2 = make("e", 0ms);
    t2.retry = {3, 0ms, 0ms};
    BOOST_TEST(!std::get<0>(f.submit(t2)));
    auto e1 = f.claim_and_start();
    BOOST_TEST(f.ack_one(e1, dq::outcome::retry("first", 0ms)) == dq::ack_result::ok);
    auto e2 = f.claim_and_start();
    BOOST_TEST(e2.attempt == 2u);
    BOOST_TEST(f.ack_one(e2, dq::outcome::defer("held", 0ms)) == dq::ack_result::ok);
    BOOST_TEST(f.status_ok("e").attempt == 1u);
    auto e3 = f.claim_and_start();
    BOOST_TEST(e3.attempt == 2u);
    BOOST_TEST(f.ack_one(e3, dq::outcome::success()) == dq::ack_result::ok);
    auto done = f.status_ok("e");
    BOOST_TEST(done.state == dq::task_state::finished);
    BOOST_TEST(done.attempt == 2u);
    BOOST_TEST(done.log.size() == 2u);
}

inline void release_gives_back_a_prefetched_task_without_counting_it(store_fixture& f) {
    BOOST_TEST(!std::get<0>(f.submit(make("a", 0ms))));
    auto r = f.claim_ok();
    BOOST_REQUIRE_EQUAL(r.tasks.size(), 1u);
    BOOST_TEST(!f.release({{r.tasks[0].id, r.tasks[0].token}}));
    auto st = f.status_ok("a");
    BOOST_TEST(st.state == dq::task_state::delayed);
    BOOST_TEST(st.attempt == 0u);
    BOOST_TEST(st.due == r.tasks[0].due);
    auto again = f.claim_ok();
    BOOST_REQUIRE_EQUAL(again.tasks.size(), 1u);
    BOOST_TEST(again.tasks[0].attempt == 1u);
}

inline void dead_letters_are_listed_in_pages(store_fixture& f) {
    std::set<std::string> ids;
    for (int i = 0; i < 7; ++i) {
        auto t = make("d" + std::to_string(i), 0ms);
        ids.insert(t.id);
        BOOST_TEST(!std::get<0>(f.submit(t)));
    }
    dq::claim_options o;
    o.batch = 100;
    auto r = f.claim_ok(o);
    BOOST_REQUIRE_EQUAL(r.tasks.size(), 7u);
    std::vector<dq::ack> acks;
    for (auto& t : r.tasks) {
        acks.push_back({{t.id, t.token}, dq::outcome::failure("x" + t.id), {}, {}});
    }
    auto [ec, res] = f.ack(acks);
    BOOST_TEST(!ec);
    BOOST_TEST(res.size() == 7u);
    std::set<std::string> seen;
    std::string cursor;
    int pages = 0;
    do {
        auto [ec2, page] = f.list_dead(cursor, 3);
        BOOST_REQUIRE(!ec2);
        BOOST_TEST(page.entries.size() <= 3u);
        for (auto& e : page.entries) {
            BOOST_TEST(seen.insert(e.id).second, "listed twice: " << e.id);
            BOOST_TEST(e.last_error == "x" + e.id);
        }
        cursor = page.cursor;
        ++pages;
    } while (!cursor.empty() && pages < 10);
    BOOST_TEST(seen == ids);
    BOOST_TEST(pages >= 3);
}

inline void a_new_earliest_task_publishes_a_wakeup(store_fixture& f) {
    std::optional<std::pair<error_code, dq::time_point>> got;
    f.store->wait_wakeup([&](error_code ec, dq::time_point t) { got.emplace(ec, t); });
    timewheel::test::run_for(f.io, 300ms); // let the subscription reach the server
    BOOST_TEST(!std::get<0>(f.submit(make("w", 1h))));
    BOOST_REQUIRE(timewheel::test::run_until(
        f.io, [&] { return got.has_value(); }, 10s));
    BOOST_TEST(!got->first);
    BOOST_TEST(got->second == f.status_ok("w").due);
}

inline void earliest_due_is_the_first_delayed_task_not_a_claimed_one(store_fixture& f) {
    auto earliest = [&] {
        auto [ec, now, e] = timewheel::test::call<dq::time_point, std::optional<dq::time_point>>(
            f.io, [&](auto h) { f.store->earliest_due(std::move(h)); });
        BOOST_REQUIRE_MESSAGE(!ec, ec.message());
        return std::pair(now, e);
    };
    const auto n = f.now();
    const auto [now0, none] = earliest();
    BOOST_TEST(!none.has_value());
    BOOST_TEST((now0 >= n));
    // One due 5 s ago (waiting for a worker), one due in an hour (in a far slot with Redis).
    BOOST_TEST(!std::get<0>(f.submit(make("late", n - 5s))));
    BOOST_TEST(!std::get<0>(f.submit(make("far", n + 1h))));
    const auto [now1, e1] = earliest();
    BOOST_REQUIRE(e1.has_value());
    BOOST_TEST((*e1 == n - 5s));
    BOOST_TEST((now1 >= n));
    // Claimed, it waits no more for a worker: the next is the one due in an hour.
    auto r = f.claim_ok();
    BOOST_REQUIRE_EQUAL(r.tasks.size(), 1u);
    BOOST_TEST(r.tasks[0].id == "late");
    const auto [now2, e2] = earliest();
    BOOST_REQUIRE(e2.has_value());
    BOOST_TEST((*e2 == n + 1h));
    BOOST_TEST(std::get<1>(f.cancel("far")) == dq::cancel_result::cancelled);
    BOOST_TEST(!earliest().second.has_value());
}

// --- Replace, debounce and submit_many ---------------------------------------------------------

inline dq::task replacing(dq::task t, std::optional<dq::duration> max_delay = std::nullopt) {
    t.replace = true;
    t.max_delay = max_delay;
    return t;
}

inline void replace_takes_back_a_prefetched_task_but_never_a_running_one(store_fixture& f) {
    BOOST_TEST(std::get<1>(f.submit(make("a", 0ms, "one"))) == dq::submit_result::created);
    auto c = f.claim_ok();
    BOOST_REQUIRE_EQUAL(c.tasks.size(), 1u);
    // Prefetched: replaced, and the worker's lease is stale.
    auto [ec, r, id] = f.submit(replacing(make("a", 0ms, "two")));
    BOOST_TEST(!ec);
    BOOST_TEST(r == dq::submit_result::replaced);
    auto st = f.status_ok("a");
    BOOST_TEST(st.state == dq::task_state::delayed);
    BOOST_TEST(st.payload == "two");
    BOOST_TEST(st.attempt == 0u);
    auto [sec, started] = f.start({{c.tasks[0].id, c.tasks[0].token}});
    BOOST_REQUIRE(!sec);
    BOOST_TEST(started.at(0) == dq::start_result::stale);
    // Running: not replaced, nothing changed.
    const auto run = f.claim_and_start();
    BOOST_TEST(run.payload == "two");
    BOOST_TEST(std::get<1>(f.submit(replacing(make("a", 1h, "three"), 1s))) ==
               dq::submit_result::exists);
    st = f.status_ok("a");
    BOOST_TEST(st.state == dq::task_state::running);
    BOOST_TEST(st.payload == "two");
    // Finished: not replaced either.
    BOOST_TEST(f.ack_one(run, dq::outcome::success()) == dq::ack_result::ok);
    BOOST_TEST(std::get<1>(f.submit(replacing(make("a", 1h, "four")))) ==
               dq::submit_result::exists);
    BOOST_TEST(f.status_ok("a").state == dq::task_state::finished);
}

inline void debounce_caps_the_due_time_at_the_first_submit_plus_max_delay(store_fixture& f) {
    // The first submit is capped too.
    auto [ec, r, id] = f.submit(replacing(make("d", 1h, "1"), 5s));
    BOOST_REQUIRE(!ec);
    BOOST_TEST(r == dq::submit_result::created);
    const auto first = f.status_ok("d");
    BOOST_TEST((first.due == first.created + 5s));
    // A replacement within the cap takes its own due time, earlier or later...
    const auto soon = first.created + 2s;
    BOOST_TEST(std::get<1>(f.submit(replacing(make("d", soon, "2"), 5s))) ==
               dq::submit_result::replaced);
    BOOST_TEST((f.status_ok("d").due == soon));
    // ...and one past it stops at it, whatever max_delay the later submit gives: the cap
    // counts from the first submit (its creation), not from this one.
    BOOST_TEST(std::get<1>(f.submit(replacing(make("d", 1h, "3"), 4s))) ==
               dq::submit_result::replaced);
    auto st = f.status_ok("d");
    BOOST_TEST((st.due == first.created + 4s));
    BOOST_TEST((st.created == first.created));
    BOOST_TEST(st.payload == "3");
    // A plain replace is not capped.
    const auto far = first.created + 10h;
    BOOST_TEST(std::get<1>(f.submit(replacing(make("d", far, "4")))) ==
               dq::submit_result::replaced);
    BOOST_TEST((f.status_ok("d").due == far));
    // max_delay without replace, or negative: refused, nothing changed.
    auto bad = make("d", 1s, "5");
    bad.max_delay = 1s;
    BOOST_TEST(std::get<0>(f.submit(bad)) == error_code(dq::error::invalid_argument));
    BOOST_TEST(std::get<0>(f.submit(replacing(make("e", 1s), -1ms))) ==
               error_code(dq::error::invalid_argument));
    BOOST_TEST(f.status_ok("d").payload == "4");
    BOOST_TEST(std::get<0>(f.status("e")) == error_code(dq::error::not_found));
}

inline void debounce_from_two_stores_at_once_never_passes_the_cap(store_fixture& f) {
    auto other = f.another_store();
    // Both stores' submits in flight together, each with a delay around the cap: whatever
    // their order, one creates the task and every due time stays within the cap from it.
    constexpr int n = 200;
    std::vector<std::optional<std::tuple<error_code, dq::submit_result>>> got(n);
    std::mt19937 rng(42);
    for (int i = 0; i < n; ++i) {
        auto t = replacing(make("race", dq::duration(rng() % 4000), std::to_string(i)), 2s);
        (i % 2 ? *other : *f.store)
            .submit(std::move(t), [&got, i](error_code ec, dq::submit_result r, std::string) {
                got[i].emplace(ec, r);
            });
    }
    BOOST_REQUIRE(timewheel::test::run_until(
        f.io,
        [&] { return std::all_of(got.begin(), got.end(), [](auto& g) { return g.has_value(); }); },
        std::chrono::seconds(60)));
    int created = 0;
    for (const auto& g : got) {
        BOOST_TEST(!std::get<0>(*g));
        created += std::get<1>(*g) == dq::submit_result::created;
    }
    BOOST_TEST(created == 1);
    const auto st = f.status_ok("race");
    BOOST_TEST((st.due <= st.created + 2s));
    BOOST_TEST((st.due >= st.created));
}

// A random sequence of batches (new, known, repeated and bad ids; keep, replace and debounce;
// tasks claimed, started and finished between batches) against a model of what each submit
// must answer and what the store must hold after it.
inline void submit_many_answers_each_task_in_order_as_the_model_says(store_fixture& f) {
    struct known {
        dq::task_state state = dq::task_state::delayed;
        std::string payload;
        dq::time_point given{};                // the due time last asked for
        std::optional<dq::duration> max_delay; // its debounce, if any
        std::optional<dq::time_point> created; // learnt from the store
        std::string token;
    };
    std::map<std::string, known> m;
    std::mt19937_64 rng(7);
    auto pick = [&](std::size_t n) { return static_cast<std::size_t>(rng() % n); };
    const auto base = f.now();
    std::size_t seen_replaced = 0, seen_exists = 0, seen_bad = 0, seen_capped = 0;
    for (int round = 0; round < 12; ++round) {
        std::vector<dq::task> batch;
        std::vector<std::optional<dq::error>> bad;
        const auto size = 1 + pick(40);
        for (std::size_t k = 0; k < size; ++k) {
            // Due now (to be claimed) or within a day (to be capped or not).
            const auto given = pick(4) == 0 ? base - 1s : base + dq::duration(pick(86400000));
            auto t = make("id" + std::to_string(pick(30)), given,
                          "p" + std::to_string(round) + "." + std::to_string(k));
            switch (pick(4)) {
            case 0:
                break;
            case 1:
                t.replace = true;
                break;
            default:
                t.replace = true;
                t.max_delay = dq::duration(pick(2 * 86400000));
                break;
            }
            std::optional<dq::error> b;
            switch (pick(12)) {
            case 0:
                t.id = std::string("b\0d", 3);
                b = dq::error::invalid_id;
                break;
            case 1:
                t.retry.max_attempts = 0;
                b = dq::error::zero_attempts;
                break;
            case 2:
                t.replace = false;
                t.max_delay = 1s;
                b = dq::error::invalid_argument;
                break;
            case 3:
                t.id.clear(); // generated
                break;
            default:
                break;
            }
            batch.push_back(std::move(t));
            bad.push_back(b);
        }
        auto [ec, out] = f.submit_many(batch);
        BOOST_REQUIRE(!ec);
        BOOST_REQUIRE_EQUAL(out.size(), batch.size());
        std::set<std::string> touched;
        for (std::size_t k = 0; k < batch.size(); ++k) {
            const auto& t = batch[k];
            const auto& o = out[k];
            if (bad[k]) {
                BOOST_TEST(o.ec == error_code(*bad[k]), "item " << k);
                ++seen_bad;
                continue;
            }
            BOOST_REQUIRE_MESSAGE(!o.ec, "item " << k << ": " << o.ec.message());
            const auto id = t.id.empty() ? o.id : t.id;
            BOOST_TEST(!id.empty());
            if (!t.id.empty()) {
                BOOST_TEST(o.id == t.id);
            }
            auto it = m.find(id);
            dq::submit_result expected = dq::submit_result::created;
            if (it != m.end()) {
                const auto s = it->second.state;
                expected =
                    t.replace && (s == dq::task_state::delayed || s == dq::task_state::prefetched)
                        ? dq::submit_result::replaced
                        : dq::submit_result::exists;
            }
            BOOST_TEST(o.result == expected, "item " << k << " " << id);
            if (expected == dq::submit_result::exists) {
                ++seen_exists;
                continue;
            }
            seen_replaced += expected == dq::submit_result::replaced;
            auto& e = m[id];
            e.state = dq::task_state::delayed;
            e.token.clear();
            e.payload = t.payload;
            e.given = std::get<dq::time_point>(t.due);
            e.max_delay = t.max_delay;
            touched.insert(id);
        }
        for (const auto& id : touched) {
            auto& e = m.at(id);
            const auto st = f.status_ok(id);
            if (e.created) {
                BOOST_TEST((st.created == *e.created), id);
            }
            e.created = st.created;
            auto due = e.given;
            if (e.max_delay && *e.created + *e.max_delay < due) {
                due = *e.created + *e.max_delay;
                ++seen_capped;
            }
            BOOST_TEST(st.state == dq::task_state::delayed, id);
            BOOST_TEST(st.payload == e.payload, id);
            BOOST_TEST((st.due == due), id << " due " << st.due.time_since_epoch().count()
                                           << " expected " << due.time_since_epoch().count());
        }
        // Move some tasks on: claim what is due (prefetched), start some, finish some.
        dq::claim_options co;
        co.horizon = 0ms;
        co.batch = 8;
        auto c = f.claim_ok(co);
        for (const auto& ct : c.tasks) {
            auto& e = m.at(ct.id);
            BOOST_TEST(e.state == dq::task_state::delayed, ct.id);
            e.state = dq::task_state::prefetched;
            e.token = ct.token;
            if (pick(2) == 0) {
                auto [sec, sr] = f.start({{ct.id, ct.token}});
                BOOST_REQUIRE(!sec);
                BOOST_TEST(sr.at(0) == dq::start_result::started);
                e.state = dq::task_state::running;
                if (pick(2) == 0) {
                    BOOST_TEST(f.ack_one(ct, dq::outcome::success()) == dq::ack_result::ok);
                    e.state = dq::task_state::finished;
                }
            }
        }
    }
    // The run met every answer.
    BOOST_TEST(seen_replaced > 0u);
    BOOST_TEST(seen_exists > 0u);
    BOOST_TEST(seen_bad > 0u);
    BOOST_TEST(seen_capped > 0u);
    BOOST_TEST(std::count_if(m.begin(), m.end(), [](const auto& kv) {
                   return kv.second.state == dq::task_state::finished;
               }) > 0);
}

inline void submit_many_refuses_no_task_or_too_many_and_writes_nothing(store_fixture& f) {
    BOOST_TEST(std::get<0>(f.submit_many({})) == error_code(dq::error::invalid_argument));
    std::vector<dq::task> many(4001, make("x", 1s));
    BOOST_TEST(std::get<0>(f.submit_many(many)) == error_code(dq::error::invalid_argument));
    BOOST_TEST(f.task_keys() == 0);
    // Every task bad: each answered, nothing written.
    std::vector<dq::task> bad(3, make("y", 1s));
    bad[0].retry.max_attempts = 0;
    bad[1].due = dq::time_point(dq::duration(-1));
    bad[2].id = std::string(300, 'i');
    auto [ec, out] = f.submit_many(bad);
    BOOST_REQUIRE(!ec);
    BOOST_REQUIRE_EQUAL(out.size(), 3u);
    BOOST_TEST(out[0].ec == error_code(dq::error::zero_attempts));
    BOOST_TEST(out[1].ec == error_code(dq::error::due_out_of_range));
    BOOST_TEST(out[2].ec == error_code(dq::error::id_too_long));
    BOOST_TEST(f.task_keys() == 0);
}

} // namespace store_cases

} // namespace timewheel::test

/// One case of the suite as a Boost.Test case on a fixture made by `make`.
#define DQ_TEST_STORE_CASE(name, make)                                                             \
    BOOST_AUTO_TEST_CASE(name) {                                                                   \
        auto fixture_ptr = make;                                                                   \
        timewheel::test::store_cases::name(*fixture_ptr);                                          \
    }

/// The whole suite, each case on a fresh fixture from make_fixture(dq::limits).
#define DQ_TEST_STORE_CASES(make_fixture)                                                          \
    DQ_TEST_STORE_CASE(submit_answers_created_exists_and_replaced,                                 \
                       make_fixture(timewheel::dq::limits{}))                                      \
    DQ_TEST_STORE_CASE(bad_input_fails_with_its_code_and_writes_nothing,                           \
                       make_fixture(timewheel::test::small_limits()))                              \
    DQ_TEST_STORE_CASE(claim_start_acknowledge_finishes_a_task_with_its_log,                       \
                       make_fixture(timewheel::dq::limits{}))                                      \
    DQ_TEST_STORE_CASE(start_refuses_a_task_whose_due_time_has_not_come,                           \
                       make_fixture(timewheel::dq::limits{}))                                      \
    DQ_TEST_STORE_CASE(cancel_delayed_prefetched_running_and_unknown,                              \
                       make_fixture(timewheel::dq::limits{}))                                      \
    DQ_TEST_STORE_CASE(reschedule_moves_delayed_and_takes_back_prefetched,                         \
                       make_fixture(timewheel::dq::limits{}))                                      \
    DQ_TEST_STORE_CASE(a_stale_token_changes_nothing_and_an_expired_lease_comes_back,              \
                       make_fixture(timewheel::dq::limits{}))                                      \
    DQ_TEST_STORE_CASE(retries_follow_the_policy_then_the_task_is_dead_and_can_be_requeued,        \
                       make_fixture(timewheel::dq::limits{}))                                      \
    DQ_TEST_STORE_CASE(release_gives_back_a_prefetched_task_without_counting_it,                   \
                       make_fixture(timewheel::dq::limits{}))                                      \
    DQ_TEST_STORE_CASE(a_deferral_delays_without_counting_the_attempt,                             \
                       make_fixture(timewheel::dq::limits{}))                                      \
    DQ_TEST_STORE_CASE(dead_letters_are_listed_in_pages, make_fixture(timewheel::dq::limits{}))    \
    DQ_TEST_STORE_CASE(a_new_earliest_task_publishes_a_wakeup,                                     \
                       make_fixture(timewheel::dq::limits{}))                                      \
    DQ_TEST_STORE_CASE(earliest_due_is_the_first_delayed_task_not_a_claimed_one,                   \
                       make_fixture(timewheel::dq::limits{}))                                      \
    DQ_TEST_STORE_CASE(replace_takes_back_a_prefetched_task_but_never_a_running_one,               \
                       make_fixture(timewheel::dq::limits{}))                                      \
    DQ_TEST_STORE_CASE(debounce_caps_the_due_time_at_the_first_submit_plus_max_delay,              \
                       make_fixture(timewheel::dq::limits{}))                                      \
    DQ_TEST_STORE_CASE(debounce_from_two_stores_at_once_never_passes_the_cap,                      \
                       make_fixture(timewheel::dq::limits{}))                                      \
    DQ_TEST_STORE_CASE(submit_many_answers_each_task_in_order_as_the_model_says,                   \
                       make_fixture(timewheel::dq::limits{}))                                      \
    DQ_TEST_STORE_CASE(submit_many_refuses_no_task_or_too_many_and_writes_nothing,                 \
                       make_fixture(timewheel::dq::limits{}))

#endif // TIMEWHEEL_TEST_DQ_SUPPORT_STORE_CASES_HPP
