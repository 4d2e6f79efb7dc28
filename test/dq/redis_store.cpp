//
// test/dq/redis_store.cpp
//
// dq::redis_store against a real redis-server on loopback: every operation and outcome, bad
// input that writes nothing, fencing, expired leases, retries to dead letters, Redis out of
// memory, an unreachable server, the config check and the wake-up.
//

#include <timewheel/dq/redis_store.hpp>

#define BOOST_TEST_MODULE dq_redis_store
#include <boost/test/unit_test.hpp>

#include "support/redis_fixture.hpp"
#include "support/store_calls.hpp"

#include <timewheel/redis/error.hpp>

#include <boost/asio/io_context.hpp>

#include <algorithm>
#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

namespace dq = timewheel::dq;
namespace redis = timewheel::redis;
using timewheel::test_support::redis_available;
using timewheel::test_support::redis_server;
using namespace std::chrono_literals;
using boost::system::error_code;

namespace {

std::string resp_command(const std::vector<std::string>& words) {
    std::string s = "*" + std::to_string(words.size()) + "\r\n";
    for (const auto& w : words) {
        s += "$" + std::to_string(w.size()) + "\r\n" + w + "\r\n";
    }
    return s;
}

// An integer reply of a raw command (":N\r\n").
long long raw_int(redis_server& srv, const std::vector<std::string>& words) {
    const auto r = srv.command(resp_command(words));
    BOOST_REQUIRE_MESSAGE(r.size() > 1 && r[0] == ':', "unexpected reply: " << r);
    return std::stoll(r.substr(1));
}

redis_server& server() {
    static auto instance = std::make_unique<redis_server>();
    return *instance;
}

struct fixture {
    boost::asio::io_context io;
    std::unique_ptr<dq::redis_store> store;

    explicit fixture(dq::redis_store_options opt = small()) {
        server().command(resp_command({"FLUSHALL"}));
        store =
            std::make_unique<dq::redis_store>(io.get_executor(), server().config(), std::move(opt));
    }

    static dq::redis_store_options small() {
        dq::redis_store_options o;
        o.name = "t";
        o.shards = 4;
        o.buckets = 8;
        return o;
    }

    auto submit(dq::task t) {
        return dq_test::call<dq::submit_result, std::string>(
            io, [&](auto h) { store->submit(std::move(t), std::move(h)); });
    }
    auto cancel(std::string id) {
        return dq_test::call<dq::cancel_result>(
            io, [&](auto h) { store->cancel(std::move(id), std::move(h)); });
    }
    error_code reschedule(std::string id, dq::due_time due) {
        return std::get<0>(dq_test::call<>(
            io, [&](auto h) { store->reschedule(std::move(id), due, std::move(h)); }));
    }
    auto status(std::string id) {
        return dq_test::call<dq::task_status>(
            io, [&](auto h) { store->status(std::move(id), std::move(h)); });
    }
    dq::task_status status_ok(std::string id) {
        auto [ec, st] = status(std::move(id));
        BOOST_REQUIRE_MESSAGE(!ec, ec.message());
        return st;
    }
    auto list_dead(std::string cursor, std::size_t n) {
        return dq_test::call<dq::dead_page>(
            io, [&](auto h) { store->list_dead(std::move(cursor), n, std::move(h)); });
    }
    error_code requeue(std::string id, dq::due_time due) {
        return std::get<0>(dq_test::call<>(
            io, [&](auto h) { store->requeue_dead(std::move(id), due, std::move(h)); }));
    }
    error_code delete_dead(std::string id) {
        return std::get<0>(
            dq_test::call<>(io, [&](auto h) { store->delete_dead(std::move(id), std::move(h)); }));
    }
    auto claim(dq::claim_options o = {}) {
        if (o.worker.empty()) {
            o.worker = "w1";
        }
        return dq_test::call<dq::claim_result>(io, [&](auto h) { store->claim(o, std::move(h)); });
    }
    dq::claim_result claim_ok(dq::claim_options o = {}) {
        auto [ec, r] = claim(std::move(o));
        BOOST_REQUIRE_MESSAGE(!ec, ec.message());
        return r;
    }
    auto start(std::vector<dq::lease_ref> l) {
        return dq_test::call<std::vector<dq::start_result>>(
            io, [&](auto h) { store->start(std::move(l), std::move(h)); });
    }
    auto renew(std::vector<dq::lease_ref> l, dq::duration d) {
        return dq_test::call<std::vector<dq::ack_result>>(
            io, [&](auto h) { store->renew(std::move(l), d, std::move(h)); });
    }
    auto ack(std::vector<dq::ack> a) {
        return dq_test::call<std::vector<dq::ack_result>>(
            io, [&](auto h) { store->acknowledge(std::move(a), std::move(h)); });
    }
    dq::ack_result ack_one(const dq::claimed_task& t, dq::outcome o) {
        auto [ec, r] = ack({dq::ack{{t.id, t.token}, std::move(o), {}, {}}});
        BOOST_REQUIRE_MESSAGE(!ec, ec.message());
        BOOST_REQUIRE_EQUAL(r.size(), 1u);
        return r[0];
    }
    error_code release(std::vector<dq::lease_ref> l) {
        return std::get<0>(
            dq_test::call<>(io, [&](auto h) { store->release(std::move(l), std::move(h)); }));
    }
    dq::time_point now() {
        auto [ec, t] = dq_test::call<dq::time_point>(io, [&](auto h) { store->now(std::move(h)); });
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
    // Keys other than the queue's config key (written at the first operation that reaches
    // the server, even when the script then refuses its input).
    long long task_keys() {
        return raw_int(server(), {"DBSIZE"}) - raw_int(server(), {"EXISTS", "{t}:config"});
    }
};

dq::task make(std::string id, dq::due_time due = dq::duration(0), std::string payload = "p") {
    dq::task t;
    t.id = std::move(id);
    t.due = due;
    t.payload = std::move(payload);
    return t;
}

} // namespace

BOOST_AUTO_TEST_SUITE(redis_store, *boost::unit_test::precondition(redis_available()))

BOOST_AUTO_TEST_CASE(submit_answers_created_exists_and_replaced) {
    fixture f;
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

BOOST_AUTO_TEST_CASE(bad_input_fails_with_its_code_and_writes_nothing) {
    dq::redis_store_options o = fixture::small();
    o.limits.max_id_bytes = 8;
    o.limits.max_payload_bytes = 16;
    fixture f(o);
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

BOOST_AUTO_TEST_CASE(claim_start_acknowledge_finishes_a_task_with_its_log) {
    fixture f;
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

BOOST_AUTO_TEST_CASE(start_refuses_a_task_whose_due_time_has_not_come) {
    fixture f;
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

BOOST_AUTO_TEST_CASE(cancel_delayed_prefetched_running_and_unknown) {
    fixture f;
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

BOOST_AUTO_TEST_CASE(reschedule_moves_delayed_and_takes_back_prefetched) {
    fixture f;
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

BOOST_AUTO_TEST_CASE(a_stale_token_changes_nothing_and_an_expired_lease_comes_back) {
    fixture f;
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

BOOST_AUTO_TEST_CASE(retries_follow_the_policy_then_the_task_is_dead_and_can_be_requeued) {
    fixture f;
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

BOOST_AUTO_TEST_CASE(the_log_keeps_each_tasks_attempts_in_order_and_is_forgotten_with_it) {
    auto opt = fixture::small();
    opt.log_maxlen = 3;
    opt.done_max = 20;
    fixture f(opt);
    auto t = make("many", 0ms);
    t.retry = {10, 0ms, 0ms};
    BOOST_TEST(!std::get<0>(f.submit(t)));
    // Five attempts, four retries with distinct errors, then success: the last three stay.
    for (int i = 1; i <= 5; ++i) {
        auto a = f.claim_and_start();
        BOOST_TEST(a.attempt == std::uint32_t(i));
        const auto o =
            i < 5 ? dq::outcome::retry("e" + std::to_string(i), 0ms) : dq::outcome::success();
        BOOST_TEST(f.ack_one(a, o) == dq::ack_result::ok);
    }
    auto st = f.status_ok("many");
    BOOST_TEST(st.state == dq::task_state::finished);
    BOOST_TEST(st.attempt == 5u);
    BOOST_REQUIRE_EQUAL(st.log.size(), 3u);
    BOOST_TEST(st.log[0].attempt == 3u);
    BOOST_TEST(st.log[0].outcome == "retry");
    BOOST_TEST(st.log[0].error == "e3");
    BOOST_TEST(st.log[1].error == "e4");
    BOOST_TEST(st.log[2].attempt == 5u);
    BOOST_TEST(st.log[2].outcome == "success");
    BOOST_TEST(st.log[2].worker == "w1");
    BOOST_TEST(st.log[2].started <= st.log[2].ended);

    // Many tasks acked in one batch: each status shows its own one attempt.
    std::vector<dq::ack> acks;
    for (int i = 0; i < 60; ++i) {
        BOOST_TEST(!std::get<0>(f.submit(make("b" + std::to_string(i), 0ms))));
    }
    dq::claim_options o;
    o.batch = 100;
    auto r = f.claim_ok(o);
    BOOST_REQUIRE_EQUAL(r.tasks.size(), 60u);
    std::vector<dq::lease_ref> leases;
    for (const auto& c : r.tasks) {
        leases.push_back({c.id, c.token});
        acks.push_back({{c.id, c.token}, dq::outcome::failure("bad " + c.id), {}, {}});
    }
    BOOST_TEST(!std::get<0>(f.start(leases)));
    auto [ec, res] = f.ack(acks);
    BOOST_TEST(!ec);
    for (int i = 0; i < 60; i += 7) {
        const std::string id = "b" + std::to_string(i);
        auto s = f.status_ok(id);
        BOOST_TEST(s.state == dq::task_state::dead);
        BOOST_REQUIRE_EQUAL(s.log.size(), 1u);
        BOOST_TEST(s.log[0].outcome == "failure");
        BOOST_TEST(s.log[0].error == "bad " + id);
    }
    // Deleting a dead letter forgets its log.
    BOOST_TEST(!f.delete_dead("b0"));
    BOOST_TEST(std::get<0>(f.status("b0")) == error_code(dq::error::not_found));

    // Finished tasks beyond done_max (20 a shard) are forgotten, their logs with them: the
    // log hashes hold no more than the done and dead sets remember.
    for (int i = 0; i < 120; ++i) {
        BOOST_TEST(!std::get<0>(f.submit(make("d" + std::to_string(i), 0ms))));
    }
    std::size_t finished = 0;
    while (finished < 120) {
        auto c = f.claim_ok(o);
        BOOST_REQUIRE(!c.tasks.empty());
        std::vector<dq::ack> ok;
        std::vector<dq::lease_ref> ls;
        for (const auto& x : c.tasks) {
            ls.push_back({x.id, x.token});
            ok.push_back({{x.id, x.token}, dq::outcome::success(), {}, {}});
        }
        BOOST_TEST(!std::get<0>(f.start(ls)));
        BOOST_TEST(!std::get<0>(f.ack(ok)));
        finished += c.tasks.size();
    }
    long long logged = 0;
    long long remembered = 0;
    for (int s = 0; s < 4; ++s) {
        const std::string p = "{t:" + std::to_string(s) + "}:";
        logged += raw_int(server(), {"HLEN", p + "h"});
        remembered +=
            raw_int(server(), {"ZCARD", p + "done"}) + raw_int(server(), {"ZCARD", p + "dead"});
    }
    BOOST_TEST(logged <= remembered);
    BOOST_TEST(remembered <= 4 * (20 + 32) + 59);
}

BOOST_AUTO_TEST_CASE(claim_starts_due_tasks_up_to_start_due_and_never_one_not_yet_due) {
    fixture f;
    for (int i = 0; i < 6; ++i) {
        BOOST_TEST(!std::get<0>(f.submit(make("now" + std::to_string(i), 0ms))));
    }
    BOOST_TEST(!std::get<0>(f.submit(make("soon", 30s))));
    const auto before = f.now();
    dq::claim_options o;
    o.horizon = 60s; // "soon" is claimed too, but must not start
    o.batch = 100;
    o.start_due = 4;
    auto r = f.claim_ok(o);
    BOOST_REQUIRE_EQUAL(r.tasks.size(), 7u);
    std::size_t running = 0;
    for (const auto& t : r.tasks) {
        if (t.running) {
            ++running;
            BOOST_TEST(t.due <= r.server_time);
            BOOST_TEST(t.id != "soon");
            auto st = f.status_ok(t.id);
            BOOST_TEST(st.state == dq::task_state::running);
            BOOST_TEST(st.attempt == 1u);
            // Already running: start() agrees, and the ack finishes it.
            auto [ec, s] = f.start({{t.id, t.token}});
            BOOST_TEST((s.at(0) == dq::start_result::started));
            BOOST_TEST(f.ack_one(t, dq::outcome::success()) == dq::ack_result::ok);
            BOOST_TEST(f.status_ok(t.id).state == dq::task_state::finished);
        } else {
            BOOST_TEST(f.status_ok(t.id).state == dq::task_state::prefetched);
        }
    }
    // start_due is spread over the shards claimed from: at most 4, at least one here.
    BOOST_TEST(running <= 4u);
    BOOST_TEST(running >= 1u);
    BOOST_TEST(r.server_time >= before);
    // Tokens are distinct, and a claim without start_due starts nothing.
    std::set<std::string> tokens;
    for (const auto& t : r.tasks) {
        tokens.insert(t.token);
    }
    BOOST_TEST(tokens.size() == r.tasks.size());
    BOOST_TEST(!std::get<0>(f.submit(make("plain", 0ms))));
    auto p = f.claim_ok();
    BOOST_REQUIRE_EQUAL(p.tasks.size(), 1u);
    BOOST_TEST(!p.tasks[0].running);
    BOOST_TEST(f.status_ok("plain").state == dq::task_state::prefetched);
}

BOOST_AUTO_TEST_CASE(with_a_subscription_claims_reach_every_shard_and_see_other_producers) {
    auto opt = fixture::small();
    opt.shards = 8;
    fixture f(opt);
    // A second store (another producer) writes without telling f's cache: only its wake-ups
    // and f's periodic full visits do.
    dq::redis_store producer(f.io.get_executor(), server().config(), opt);
    auto submit_other = [&](dq::task t) {
        auto [ec, r, id] = dq_test::call<dq::submit_result, std::string>(
            f.io, [&](auto h) { producer.submit(std::move(t), std::move(h)); });
        BOOST_REQUIRE(!ec);
    };
    bool listening = true;
    std::function<void()> listen = [&] {
        f.store->wait_wakeup([&](error_code ec, dq::time_point) {
            if (!ec && listening) {
                listen();
            }
        });
    };
    listen();
    timewheel::test_support::run_for(f.io, 300ms); // let the subscription reach the server
    BOOST_TEST(f.claim_ok().tasks.empty());        // every shard now cached as empty

    // A hot shard with many old tasks, and one task in each other shard: small claims take
    // them all (no shard waits behind the hot one for ever).
    const auto now = f.now();
    std::set<std::string> want;
    std::vector<bool> placed(opt.shards, false);
    std::size_t hot = 0;
    std::size_t cold = 0;
    for (int i = 0; hot < 40 || cold < opt.shards - 1; ++i) {
        const std::string id = "t" + std::to_string(i);
        const auto s = f.store->shard_of(id);
        if (s == 0 && hot < 40) {
            submit_other(make(id, now - 10s + std::chrono::milliseconds(i)));
            want.insert(id);
            ++hot;
        } else if (s != 0 && !placed[s]) {
            placed[s] = true;
            submit_other(make(id, now - 5s));
            want.insert(id);
            ++cold;
        }
    }
    std::set<std::string> got;
    dq::claim_options o;
    o.batch = 4;
    for (int round = 0; round < 200 && got.size() < want.size(); ++round) {
        timewheel::test_support::run_for(f.io, 1ms); // deliver the wake-ups
        for (const auto& t : f.claim_ok(o).tasks) {
            BOOST_TEST(!got.count(t.id));
            got.insert(t.id);
        }
    }
    BOOST_TEST(got == want);
    listening = false;
}

BOOST_AUTO_TEST_CASE(dense_far_due_times_split_their_slots_and_every_task_stays_reachable) {
    auto opt = fixture::small();
    opt.shards = 1;
    fixture f(opt);
    // 600 tasks due within one 10-second slot, some at the very same ms: the slot splits so
    // that every slot set stays a listpack (at most 128 tasks), and cancel, reschedule and
    // claim still find each task in its slot.
    const auto base = f.now() + 60s;
    for (int i = 0; i < 600; ++i) {
        const auto due = i < 200 ? base : base + std::chrono::milliseconds(i * 13 % 9000);
        BOOST_TEST(!std::get<0>(f.submit(make("s" + std::to_string(i), due))));
    }
    const auto r = server().command(resp_command({"KEYS", "{t:0}:w:*"}));
    std::size_t slots = 0;
    std::size_t total = 0;
    for (std::size_t at = r.find("{t:0}:w:"); at != std::string::npos;
         at = r.find("{t:0}:w:", at + 1)) {
        const auto key = r.substr(at, r.find('\r', at) - at);
        ++slots;
        const auto n = raw_int(server(), {"ZCARD", key});
        total += static_cast<std::size_t>(n);
        const auto enc = server().command(resp_command({"OBJECT", "ENCODING", key}));
        // 200 tasks due at the same ms cannot be split apart: that slot alone may exceed.
        if (n <= 128) {
            BOOST_TEST(enc.find("listpack") != std::string::npos);
        }
    }
    BOOST_TEST(slots >= 4u);
    BOOST_TEST(total == 600u);
    BOOST_TEST((std::get<1>(f.cancel("s450")) == dq::cancel_result::cancelled));
    BOOST_TEST((std::get<1>(f.cancel("s5")) == dq::cancel_result::cancelled));
    BOOST_TEST(!f.reschedule("s300", 0ms));
    BOOST_TEST(!f.reschedule("s301", base + 5s));
    // Everything else is claimed, in due order, once its time is within the horizon.
    dq::claim_options o;
    o.horizon = 70s;
    o.batch = 2000;
    auto c = f.claim_ok(o);
    BOOST_TEST(c.tasks.size() == 598u);
    std::set<std::string> ids;
    for (std::size_t i = 0; i < c.tasks.size(); ++i) {
        ids.insert(c.tasks[i].id);
        if (i > 0) {
            BOOST_TEST(c.tasks[i - 1].due <= c.tasks[i].due);
        }
    }
    BOOST_TEST(ids.size() == 598u);
    BOOST_TEST(!ids.count("s450"));
    BOOST_TEST(!ids.count("s5"));
    BOOST_TEST(ids.count("s300"));
    BOOST_TEST(ids.count("s301"));
    BOOST_TEST(raw_int(server(), {"ZCARD", "{t:0}:wi"}) == 0);
}

BOOST_AUTO_TEST_CASE(release_gives_back_a_prefetched_task_without_counting_it) {
    fixture f;
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

BOOST_AUTO_TEST_CASE(dead_letters_are_listed_in_pages) {
    fixture f;
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

BOOST_AUTO_TEST_CASE(the_shard_count_is_fixed_at_first_use) {
    fixture f;
    BOOST_TEST(!std::get<0>(f.submit(make("a", 1s))));
    auto o = fixture::small();
    o.shards = 8;
    dq::redis_store other(f.io.get_executor(), server().config(), o);
    auto [ec, r, id] = dq_test::call<dq::submit_result, std::string>(
        f.io, [&](auto h) { other.submit(make("b", 1s), std::move(h)); });
    BOOST_TEST(ec == error_code(dq::error::not_configured));
}

BOOST_AUTO_TEST_CASE(a_new_earliest_task_publishes_a_wakeup) {
    fixture f;
    std::optional<std::pair<error_code, dq::time_point>> got;
    f.store->wait_wakeup([&](error_code ec, dq::time_point t) { got.emplace(ec, t); });
    timewheel::test_support::run_for(f.io, 300ms); // let the subscription reach the server
    BOOST_TEST(!std::get<0>(f.submit(make("w", 1h))));
    BOOST_REQUIRE(timewheel::test_support::run_until(
        f.io, [&] { return got.has_value(); }, 10s));
    BOOST_TEST(!got->first);
    BOOST_TEST(got->second == f.status_ok("w").due);
}

BOOST_AUTO_TEST_CASE(redis_out_of_memory_fails_the_submit_and_writes_nothing) {
    redis_server small({.args = {"--maxmemory", "2mb", "--maxmemory-policy", "noeviction"}});
    boost::asio::io_context io;
    dq::redis_store store(io.get_executor(), small.config(), fixture::small());
    int created = 0;
    error_code failure;
    std::string failed_id;
    for (int i = 0; i < 100000 && !failure; ++i) {
        auto t = make("k" + std::to_string(i), 0ms, std::string(2000, 'x'));
        auto [ec, r, id] = dq_test::call<dq::submit_result, std::string>(
            io, [&](auto h) { store.submit(t, std::move(h)); });
        if (ec) {
            failure = ec;
            failed_id = t.id;
        } else {
            ++created;
        }
    }
    BOOST_TEST(failure == error_code(dq::error::store_full), failure.message());
    BOOST_TEST(created > 0);
    auto [ec, st] =
        dq_test::call<dq::task_status>(io, [&](auto h) { store.status(failed_id, std::move(h)); });
    BOOST_TEST(ec == error_code(dq::error::not_found));
    long long delayed = 0;
    for (int s = 0; s < 4; ++s) {
        delayed += raw_int(small, {"ZCARD", "{t:" + std::to_string(s) + "}:d"});
    }
    BOOST_TEST(delayed == created);
    // Cancelling still works (it frees memory).
    auto [cec, cr] =
        dq_test::call<dq::cancel_result>(io, [&](auto h) { store.cancel("k0", std::move(h)); });
    BOOST_TEST(!cec, cec.message());
    BOOST_TEST((cr == dq::cancel_result::cancelled));
}

BOOST_AUTO_TEST_CASE(an_unreachable_server_fails_after_the_request_timeout) {
    boost::asio::io_context io;
    redis::config cfg;
    cfg.port = timewheel::test_support::free_port(); // nobody listens there
    cfg.request_timeout = 300ms;
    cfg.connect_timeout = 100ms;
    dq::redis_store store(io.get_executor(), cfg, fixture::small());
    auto [ec, r, id] = dq_test::call<dq::submit_result, std::string>(
        io, [&](auto h) { store.submit(make("a"), std::move(h)); });
    BOOST_TEST(ec == error_code(redis::error::request_timeout), ec.message());
    auto [ec2, c] =
        dq_test::call<dq::claim_result>(io, [&](auto h) { store.claim({}, std::move(h)); });
    BOOST_TEST(ec2 == error_code(redis::error::request_timeout), ec2.message());
}

BOOST_AUTO_TEST_SUITE_END()
