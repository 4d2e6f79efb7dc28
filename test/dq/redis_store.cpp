//
// test/dq/redis_store.cpp
//
// dq::redis_store against a real redis-server on loopback: the suite every store passes
// (support/store_cases.hpp: every operation and outcome, bad input that writes nothing,
// fencing, expired leases, retries to dead letters, the wake-up), then what is Redis's own:
// Redis out of memory, an unreachable server, the config check.
//

#include <timewheel/dq/redis_store.hpp>

#define BOOST_TEST_MODULE dq_redis_store
#include <boost/test/unit_test.hpp>

#include <test/dq/support/store_cases.hpp>
#include <test/redis/support/redis_fixture.hpp>

#include <timewheel/redis/error.hpp>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/write.hpp>

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
using timewheel::test::redis_available;
using timewheel::test::redis_server;
using namespace std::chrono_literals;
using boost::system::error_code;

using timewheel::test::resp_command;

namespace {

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

struct fixture : timewheel::test::store_fixture {
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

    // Keys other than the queue's config key (written at the first operation that reaches
    // the server, even when the script then refuses its input).
    long long task_keys() override {
        return raw_int(server(), {"DBSIZE"}) - raw_int(server(), {"EXISTS", "{t}:config"});
    }

    std::unique_ptr<dq::store> another_store() override {
        return std::make_unique<dq::redis_store>(io.get_executor(), server().config(),
                                                 static_cast<dq::redis_store&>(*store).options());
    }
};

std::unique_ptr<timewheel::test::store_fixture> make_fixture(dq::limits limits) {
    auto o = fixture::small();
    o.limits = limits;
    return std::make_unique<fixture>(o);
}

using timewheel::test::make;

} // namespace

BOOST_AUTO_TEST_SUITE(redis_store, *boost::unit_test::precondition(redis_available()))

DQ_TEST_STORE_CASES(make_fixture)

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
    // A finished task's log moved into its "done" entry: "h" holds only the others' (dead
    // ones here), and "done" and its order list "dl" agree.
    long long logged = 0;
    long long remembered = 0;
    for (int s = 0; s < 4; ++s) {
        const std::string p = "{t:" + std::to_string(s) + "}:";
        logged += raw_int(server(), {"HLEN", p + "h"});
        const auto done = raw_int(server(), {"HLEN", p + "done"});
        BOOST_TEST(done == raw_int(server(), {"LLEN", p + "dl"}));
        remembered += done + raw_int(server(), {"ZCARD", p + "dead"});
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

// KL, the lease set, holds from the first claim on one member that is no task's (a NUL
// byte, then 64 more) at +inf, so that it is a skiplist: as a listpack every lease cost a
// scan of the others to add and to remove. A KL an older version wrote (a listpack, without
// that member) still expires its leases, and the next claim converts it.
BOOST_AUTO_TEST_CASE(the_lease_set_is_a_skiplist_and_one_an_older_version_wrote_still_works) {
    auto opt = fixture::small();
    opt.shards = 1;
    fixture f(opt);
    auto encoding = [] {
        return server().command(resp_command({"OBJECT", "ENCODING", "{t:0}:l"}));
    };
    BOOST_TEST(!std::get<0>(f.submit(make("old", 0ms))));
    BOOST_TEST(!std::get<0>(f.submit(make("held", 0ms))));
    auto first = f.claim_ok();
    BOOST_REQUIRE_EQUAL(first.tasks.size(), 2u);
    BOOST_TEST(encoding().find("skiplist") != std::string::npos, encoding());
    const auto old = first.tasks[0].id == "old" ? first.tasks[0] : first.tasks[1];
    const auto held = first.tasks[0].id == "old" ? first.tasks[1] : first.tasks[0];
    // As an older version left it: the leases alone, in a listpack; old's expired long ago.
    server().command(resp_command({"DEL", "{t:0}:l"}));
    BOOST_TEST(raw_int(server(), {"ZADD", "{t:0}:l", "1", "old", "99999999999999", "held"}) == 2);
    BOOST_TEST(encoding().find("listpack") != std::string::npos, encoding());

    BOOST_TEST(!std::get<0>(f.submit(make("new", 0ms))));
    auto second = f.claim_ok();
    // The expired lease came back (prefetched: at its due time, its attempt not counted);
    // held's did not, and the listpack became a skiplist.
    BOOST_REQUIRE_EQUAL(second.tasks.size(), 2u);
    std::set<std::string> ids;
    for (const auto& t : second.tasks) {
        ids.insert(t.id);
        BOOST_TEST(t.attempt == 1u);
    }
    BOOST_TEST((ids == std::set<std::string>{"old", "new"}));
    BOOST_TEST(encoding().find("skiplist") != std::string::npos, encoding());
    BOOST_TEST(raw_int(server(), {"ZCARD", "{t:0}:l"}) == 4);
    BOOST_TEST(raw_int(server(), {"ZCOUNT", "{t:0}:l", "+inf", "+inf"}) == 1);

    BOOST_TEST(f.ack_one(old, dq::outcome::success()) == dq::ack_result::stale);
    BOOST_TEST(f.ack_one(held, dq::outcome::success()) == dq::ack_result::ok);
    for (const auto& t : second.tasks) {
        BOOST_TEST(f.ack_one(t, dq::outcome::success()) == dq::ack_result::ok);
    }
    for (const auto* id : {"old", "held", "new"}) {
        BOOST_TEST(f.status_ok(id).state == dq::task_state::finished, id);
    }
    // The member stays, never due: no lease left, and nothing to claim.
    BOOST_TEST(raw_int(server(), {"ZCARD", "{t:0}:l"}) == 1);
    BOOST_TEST(raw_int(server(), {"ZCOUNT", "{t:0}:l", "-inf", "(+inf"}) == 0);
    BOOST_TEST(f.claim_ok().tasks.empty());
    BOOST_TEST(raw_int(server(), {"HLEN", "{t:0}:k"}) == 0);
}

BOOST_AUTO_TEST_CASE(with_a_subscription_claims_reach_every_shard_and_see_other_producers) {
    auto opt = fixture::small();
    opt.shards = 8;
    fixture f(opt);
    // A second store (another producer) writes without telling f's cache: only its wake-ups
    // and f's periodic full visits do.
    dq::redis_store producer(f.io.get_executor(), server().config(), opt);
    auto submit_other = [&](dq::task t) {
        auto [ec, r, id] = timewheel::test::call<dq::submit_result, std::string>(
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
    timewheel::test::run_for(f.io, 300ms);  // let the subscription reach the server
    BOOST_TEST(f.claim_ok().tasks.empty()); // every shard now cached as empty

    // A hot shard with many old tasks, and one task in each other shard: small claims take
    // them all (no shard waits behind the hot one for ever).
    const auto now = f.now();
    std::set<std::string> want;
    std::vector<bool> placed(opt.shards, false);
    std::size_t hot = 0;
    std::size_t cold = 0;
    for (int i = 0; hot < 40 || cold < opt.shards - 1; ++i) {
        const std::string id = "t" + std::to_string(i);
        const auto s = producer.shard_of(id); // the same options: the same shards
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
        timewheel::test::run_for(f.io, 1ms); // deliver the wake-ups
        for (const auto& t : f.claim_ok(o).tasks) {
            BOOST_TEST(!got.count(t.id));
            got.insert(t.id);
        }
    }
    BOOST_TEST(got == want);
    listening = false;
}

BOOST_AUTO_TEST_CASE(a_claim_smaller_than_the_shard_count_finds_a_due_task_by_its_second_call) {
    auto opt = fixture::small();
    opt.shards = 8;
    fixture f(opt);
    // Unsubscribed: every claim visits every shard, and a batch of 1 can lease in one shard
    // only. Another producer's task is unknown to f until a visit reads that shard's next
    // due; the next claim must then go there, not to the shard whose turn it is.
    dq::redis_store producer(f.io.get_executor(), server().config(), opt);
    dq::claim_options o;
    o.batch = 1;
    BOOST_TEST(f.claim_ok(o).tasks.empty()); // every shard read: all empty
    std::string id;
    for (int i = 0; id.empty(); ++i) {
        const auto candidate = "t" + std::to_string(i);
        if (producer.shard_of(candidate) == 5) { // neither of the next two turns (1, 2)
            id = candidate;
        }
    }
    auto [ec, r, sid] = timewheel::test::call<dq::submit_result, std::string>(
        f.io, [&](auto h) { producer.submit(make(id, f.now() - 1s), std::move(h)); });
    BOOST_REQUIRE(!ec);
    std::vector<std::string> got;
    for (int call = 0; call < 2 && got.empty(); ++call) {
        for (const auto& t : f.claim_ok(o).tasks) {
            got.push_back(t.id);
        }
    }
    BOOST_TEST(got == std::vector<std::string>{id});
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

BOOST_AUTO_TEST_CASE(the_shard_count_is_fixed_at_first_use) {
    fixture f;
    BOOST_TEST(!std::get<0>(f.submit(make("a", 1s))));
    auto o = fixture::small();
    o.shards = 8;
    dq::redis_store other(f.io.get_executor(), server().config(), o);
    auto [ec, r, id] = timewheel::test::call<dq::submit_result, std::string>(
        f.io, [&](auto h) { other.submit(make("b", 1s), std::move(h)); });
    BOOST_TEST(ec == error_code(dq::error::not_configured));
}

BOOST_AUTO_TEST_CASE(the_submits_of_one_turn_go_as_one_call_a_shard_each_answered_on_its_own) {
    auto opt = fixture::small();
    opt.shards = 1;
    fixture f(opt);
    BOOST_TEST(!std::get<0>(f.submit(make("warm", 1h)))); // loads the queue and the script
    server().command(resp_command({"CONFIG", "RESETSTAT"}));
    std::vector<std::pair<error_code, dq::submit_result>> got(20);
    int answered = 0;
    for (int i = 0; i < 20; ++i) {
        // "t0" twice: the second sees the first, in order, within the one call.
        const std::string id = i == 10 ? "t0" : "t" + std::to_string(i);
        f.store->submit(make(id, 1h),
                        [&got, &answered, i](error_code ec, dq::submit_result r, std::string) {
                            got[static_cast<std::size_t>(i)] = {ec, r};
                            ++answered;
                        });
    }
    BOOST_REQUIRE(timewheel::test::run_until(
        f.io, [&] { return answered == 20; }, std::chrono::seconds(60)));
    for (int i = 0; i < 20; ++i) {
        const auto& [ec, r] = got[static_cast<std::size_t>(i)];
        BOOST_TEST(!ec);
        BOOST_TEST((r == (i == 10 ? dq::submit_result::exists : dq::submit_result::created)));
    }
    const auto stats = server().command(resp_command({"INFO", "commandstats"}));
    BOOST_TEST(stats.find("cmdstat_fcall:calls=1,") != std::string::npos, stats);
    BOOST_TEST(f.status_ok("t19").state == dq::task_state::delayed);
}

namespace {

// Redis's own figures for FCALL since the last CONFIG RESETSTAT: calls, and microseconds
// spent in them (INFO commandstats: "cmdstat_fcall:calls=8,usec=5723,...").
std::pair<long long, long long> fcall_stats() {
    const auto stats = server().command(resp_command({"INFO", "commandstats"}));
    const auto at = stats.find("cmdstat_fcall:");
    if (at == std::string::npos) {
        return {0, 0};
    }
    const auto number = [&](const std::string& name) {
        const auto p = stats.find(name + "=", at);
        return std::stoll(stats.substr(p + name.size() + 1));
    };
    return {number("calls"), number("usec")};
}

} // namespace

// Redis CPU per task (printed, not asserted: nothing timed is), and the call count (asserted):
// submit_many sends one script call per shard for up to 128 tasks, all in one pipeline.
BOOST_AUTO_TEST_CASE(submit_many_sends_one_call_per_shard_and_128_tasks) {
    fixture f;                                            // 4 shards
    BOOST_TEST(!std::get<0>(f.submit(make("warm", 1h)))); // loads the queue and the script
    constexpr int n = 1000;
    // Due soon (the shard's near set: a ZADD each) and an hour ahead (the slots, which
    // split as they fill), a ms apart; the batch an hour after the single submits there, so
    // that its slots start empty too.
    for (const auto ahead : {dq::duration(5s), dq::duration(1h)}) {
        const auto now = f.now();
        const auto batch = [&](const std::string& prefix, dq::time_point at) {
            std::vector<dq::task> ts;
            for (int i = 0; i < n; ++i) {
                ts.push_back(
                    make(prefix + std::to_string(i), at + dq::duration(i), std::string(100, 'p')));
            }
            return ts;
        };
        const auto tag = std::to_string(ahead.count());
        // 1000 submits one after the other: a call each.
        server().command(resp_command({"CONFIG", "RESETSTAT"}));
        for (auto& t : batch("single-" + tag + "-", now + ahead)) {
            BOOST_REQUIRE(!std::get<0>(f.submit(std::move(t))));
        }
        const auto [single_calls, single_usec] = fcall_stats();
        BOOST_TEST(single_calls == n);
        // The same in one submit_many.
        server().command(resp_command({"CONFIG", "RESETSTAT"}));
        auto many = batch("many-" + tag + "-", now + (ahead > 10s ? 2 * ahead : ahead));
        std::vector<int> per_shard(4);
        for (const auto& t : many) {
            ++per_shard[static_cast<dq::redis_store&>(*f.store).shard_of(t.id)];
        }
        auto [ec, out] = f.submit_many(std::move(many));
        BOOST_REQUIRE(!ec);
        BOOST_TEST(std::all_of(out.begin(), out.end(), [](const auto& o) {
            return !o.ec && o.result == dq::submit_result::created;
        }));
        const auto [many_calls, many_usec] = fcall_stats();
        long long expected_calls = 0;
        for (const int k : per_shard) {
            expected_calls += (k + 127) / 128;
        }
        BOOST_TEST(many_calls == expected_calls);
        BOOST_TEST_MESSAGE("Redis FCALL time per task, due in "
                           << ahead.count() << " ms: 1000 single submits "
                           << double(single_usec) / n << " us (" << single_calls
                           << " calls), one submit_many " << double(many_usec) / n << " us ("
                           << many_calls << " calls)");
    }
}

BOOST_AUTO_TEST_CASE(a_queue_written_in_an_earlier_key_layout_is_refused_and_left_untouched) {
    // Layout 1 kept finished tasks in a sorted set, and records in buckets of another hash;
    // layout 2 sharded an id with braces by all of it, where layout 3 takes its hash tag
    // only: read with this version's scripts, their tasks would be lost or misread.
    for (const char* version : {"1", "2"}) {
        fixture f;
        server().command(resp_command(
            {"HSET", "{t}:config", "shards", "4", "buckets", "8", "version", version}));
        server().command(resp_command({"ZADD", "{t:0}:done", "1", "old"}));
        auto [ec, r, id] = timewheel::test::call<dq::submit_result, std::string>(
            f.io, [&](auto h) { f.store->submit(make("b", 1s), std::move(h)); });
        BOOST_TEST(ec == error_code(dq::error::not_configured), "layout " << version);
        BOOST_TEST(raw_int(server(), {"ZCARD", "{t:0}:done"}) == 1);
        BOOST_TEST(raw_int(server(), {"DBSIZE"}) == 2);
    }
}

BOOST_AUTO_TEST_CASE(finished_tasks_past_done_retention_are_forgotten_with_their_logs) {
    auto opt = fixture::small();
    opt.shards = 1;
    opt.done_retention = 0ms; // a finished task is past it at once
    fixture f(opt);
    BOOST_TEST(!std::get<0>(f.submit(make("kept", 1h))));
    for (const auto* id : {"r1", "r2"}) {
        BOOST_TEST(!std::get<0>(f.submit(make(id, 0ms))));
        auto a = f.claim_and_start();
        BOOST_TEST(a.id == id);
        BOOST_TEST(f.ack_one(a, dq::outcome::success()) == dq::ack_result::ok);
        BOOST_TEST(std::get<0>(f.status(id)) == error_code(dq::error::not_found));
        // Forgotten, so a re-submit creates it again.
        BOOST_TEST(std::get<1>(f.submit(make(id, 1h))) == dq::submit_result::created);
    }
    BOOST_TEST(raw_int(server(), {"HLEN", "{t:0}:done"}) == 0);
    BOOST_TEST(raw_int(server(), {"LLEN", "{t:0}:dl"}) == 0);
    BOOST_TEST(f.status_ok("kept").state == dq::task_state::delayed);
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
        auto [ec, r, id] = timewheel::test::call<dq::submit_result, std::string>(
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
    auto [ec, st] = timewheel::test::call<dq::task_status>(
        io, [&](auto h) { store.status(failed_id, std::move(h)); });
    BOOST_TEST(ec == error_code(dq::error::not_found));
    long long delayed = 0;
    for (int s = 0; s < 4; ++s) {
        delayed += raw_int(small, {"ZCARD", "{t:" + std::to_string(s) + "}:d"});
    }
    BOOST_TEST(delayed == created);
    // Cancelling still works (it frees memory).
    auto [cec, cr] = timewheel::test::call<dq::cancel_result>(
        io, [&](auto h) { store.cancel("k0", std::move(h)); });
    BOOST_TEST(!cec, cec.message());
    BOOST_TEST((cr == dq::cancel_result::cancelled));
    // So do a claim, its start and its acknowledgement (functions flagged allow-oom: a worker
    // drains a full Redis), and the reads (no-writes).
    dq::claim_options co;
    co.batch = 5;
    auto [clec, claimed] =
        timewheel::test::call<dq::claim_result>(io, [&](auto h) { store.claim(co, std::move(h)); });
    BOOST_TEST(!clec, clec.message());
    BOOST_TEST(claimed.tasks.size() == 5u);
    std::vector<dq::lease_ref> leases;
    std::vector<dq::ack> acks;
    for (const auto& t : claimed.tasks) {
        leases.push_back({t.id, t.token});
        acks.push_back(
            {{t.id, t.token}, dq::outcome::success(), claimed.server_time, claimed.server_time});
    }
    auto [sec, started] = timewheel::test::call<std::vector<dq::start_result>>(
        io, [&](auto h) { store.start(leases, std::move(h)); });
    BOOST_TEST(!sec, sec.message());
    BOOST_TEST(started.size() == 5u);
    auto [aec, acked] = timewheel::test::call<std::vector<dq::ack_result>>(
        io, [&](auto h) { store.acknowledge(acks, std::move(h)); });
    BOOST_TEST(!aec, aec.message());
    BOOST_TEST(std::count(acked.begin(), acked.end(), dq::ack_result::ok) == 5);
    // (a copy: clang 14 does not let a lambda capture a structured binding)
    const std::string first = claimed.tasks[0].id;
    auto [stec, st2] = timewheel::test::call<dq::task_status>(
        io, [&](auto h) { store.status(first, std::move(h)); });
    BOOST_TEST(!stec, stec.message());
    BOOST_TEST(st2.state == dq::task_state::finished);
}

// The functions are loaded once per connection at first use, however many calls are in
// flight then (no herd: each of them resent with the library's text), and again when Redis
// has lost them (FUNCTION FLUSH, a restart without persistence): once, not once a call.
BOOST_AUTO_TEST_CASE(the_functions_load_once_at_first_use_and_after_a_flush) {
    server().command(resp_command({"FUNCTION", "FLUSH"}));
    server().command(resp_command({"CONFIG", "RESETSTAT"}));
    fixture f;
    constexpr int n = 1024;
    int answered = 0;
    for (int i = 0; i < n; ++i) {
        f.store->submit(make("b" + std::to_string(i), 1h),
                        [&answered](error_code ec, dq::submit_result r, std::string) {
                            BOOST_TEST(!ec, ec.message());
                            BOOST_TEST((r == dq::submit_result::created));
                            ++answered;
                        });
        // And a call of its own for each (status is not batched by turn, as submit is).
        f.store->status("b" + std::to_string(i), [&answered](error_code ec, dq::task_status) {
            BOOST_TEST((!ec || ec == dq::error::not_found), ec.message());
            ++answered;
        });
    }
    BOOST_REQUIRE(timewheel::test::run_until(
        f.io, [&] { return answered == 2 * n; }, std::chrono::seconds(120)));
    const auto loads = [] {
        const auto stats = server().command(resp_command({"INFO", "commandstats"}));
        const std::string name = "cmdstat_function|load:calls=";
        const auto at = stats.find(name);
        return at == std::string::npos ? 0 : std::stoi(stats.substr(at + name.size()));
    };
    BOOST_TEST(loads() == 1);
    BOOST_TEST(f.status_ok("b1023").state == dq::task_state::delayed);

    server().command(resp_command({"FUNCTION", "FLUSH"}));
    answered = 0;
    for (int i = 0; i < n; ++i) {
        f.store->status("b" + std::to_string(i), [&answered](error_code ec, dq::task_status s) {
            BOOST_TEST(!ec, ec.message());
            BOOST_TEST(s.state == dq::task_state::delayed);
            ++answered;
        });
    }
    BOOST_REQUIRE(timewheel::test::run_until(
        f.io, [&] { return answered == n; }, std::chrono::seconds(120)));
    BOOST_TEST(loads() == 2);
}

// Before Redis 7.0 there is no FUNCTION: the store says so (a loopback peer that answers
// every command as Redis 6.2 answers FUNCTION and FCALL).
BOOST_AUTO_TEST_CASE(a_redis_without_functions_gets_a_clear_error) {
    namespace net = boost::asio;
    net::io_context peer_io;
    net::ip::tcp::acceptor acceptor(peer_io, {net::ip::make_address("127.0.0.1"), 0});
    std::thread peer([&] {
        net::ip::tcp::socket s(peer_io);
        acceptor.accept(s);
        // Reads RESP arrays of bulk strings; answers FUNCTION and FCALL with Redis 6.2's
        // unknown-command error, anything else (a handshake's CLIENT SETNAME) with +OK.
        std::string in;
        std::size_t pos = 0;
        char buf[65536];
        boost::system::error_code ec;
        const auto line = [&](std::size_t& p) -> std::optional<std::string> {
            const auto e = in.find("\r\n", p);
            if (e == std::string::npos) {
                return std::nullopt;
            }
            auto l = in.substr(p, e - p);
            p = e + 2;
            return l;
        };
        for (;;) {
            const auto got = s.read_some(net::buffer(buf), ec);
            if (ec) {
                return;
            }
            in.append(buf, got);
            for (;;) {
                std::size_t p = pos;
                auto head = line(p);
                if (!head || head->empty() || (*head)[0] != '*') {
                    break;
                }
                const int argc = std::stoi(head->substr(1));
                std::string name;
                bool whole = true;
                for (int a = 0; a < argc && whole; ++a) {
                    auto len = line(p);
                    if (!len) {
                        whole = false;
                        break;
                    }
                    const auto n = std::stoul(len->substr(1));
                    if (in.size() < p + n + 2) {
                        whole = false;
                        break;
                    }
                    if (a == 0) {
                        name = in.substr(p, n);
                    }
                    p += n + 2;
                }
                if (!whole) {
                    break;
                }
                pos = p;
                const bool v7 = name == "FUNCTION" || name == "FCALL" || name == "FCALL_RO";
                const auto reply =
                    v7 ? "-ERR unknown command `" + name + "`, with args beginning with: \r\n"
                       : std::string("+OK\r\n");
                net::write(s, net::buffer(reply), ec);
            }
        }
    });
    {
        boost::asio::io_context io;
        redis::config cfg;
        cfg.port = acceptor.local_endpoint().port();
        cfg.request_timeout = 10s;
        dq::redis_store store(io.get_executor(), cfg, fixture::small());
        auto [ec, r, id] = timewheel::test::call<dq::submit_result, std::string>(
            io, [&](auto h) { store.submit(make("a"), std::move(h)); });
        BOOST_TEST(ec == error_code(dq::error::store_too_old), ec.message());
        BOOST_TEST(ec.message().find("Redis 7.0 or later") != std::string::npos, ec.message());
        store.close();
        timewheel::test::run_for(io, 20ms);
    }
    peer.join();
}

BOOST_AUTO_TEST_CASE(an_unreachable_server_fails_after_the_request_timeout) {
    boost::asio::io_context io;
    redis::config cfg;
    cfg.port = timewheel::test::free_port(); // nobody listens there
    cfg.request_timeout = 300ms;
    cfg.connect_timeout = 100ms;
    dq::redis_store store(io.get_executor(), cfg, fixture::small());
    auto [ec, r, id] = timewheel::test::call<dq::submit_result, std::string>(
        io, [&](auto h) { store.submit(make("a"), std::move(h)); });
    BOOST_TEST(ec == error_code(redis::error::request_timeout), ec.message());
    auto [ec2, c] =
        timewheel::test::call<dq::claim_result>(io, [&](auto h) { store.claim({}, std::move(h)); });
    BOOST_TEST(ec2 == error_code(redis::error::request_timeout), ec2.message());
}

// wait_replicas: a write answered only once a replica has it. Without a replica the write is
// made on the master but fails not_replicated (the API's 503); reads do not wait; with a
// replica linked the same writes succeed.
BOOST_AUTO_TEST_CASE(with_wait_replicas_a_write_no_replica_acknowledged_fails_not_replicated) {
    auto opt = fixture::small();
    opt.wait_replicas = 1;
    opt.wait_timeout = 50ms;
    fixture f(opt);
    auto [ec, r, id] = f.submit(make("a", 1h));
    BOOST_TEST(ec == error_code(dq::error::not_replicated), ec.message());
    BOOST_TEST(f.status_ok("a").state == dq::task_state::delayed); // on the master; no WAIT
    {
        redis_server replica(
            {.args = {"--replicaof", "127.0.0.1", std::to_string(server().port())}});
        BOOST_REQUIRE(timewheel::test::run_until(
            f.io,
            [&] {
                return server()
                           .command(resp_command({"INFO", "replication"}))
                           .find("state=online") != std::string::npos;
            },
            60s));
        // A store that waits long enough for a loaded machine's replica (not a bound).
        auto patient_opt = opt;
        patient_opt.wait_timeout = 20s;
        dq::redis_store patient(f.io.get_executor(), server().config(), patient_opt);
        auto [ec2, r2, id2] = timewheel::test::call<dq::submit_result, std::string>(
            f.io, [&](auto h) { patient.submit(make("b", 1h), std::move(h)); });
        BOOST_TEST(!ec2, ec2.message());
        BOOST_TEST((r2 == dq::submit_result::created));
        auto [ec3, r3] = timewheel::test::call<dq::cancel_result>(
            f.io, [&](auto h) { patient.cancel("a", std::move(h)); });
        BOOST_TEST(!ec3, ec3.message());
    }
    // A Cluster store takes it too (each shard's write waits on its own master: the
    // Cluster failover test, test/redis_ha/cluster_failover.py, runs with ?wait=1).
    redis::cluster_config cluster;
    cluster.node = server().config();
    BOOST_CHECK_NO_THROW(dq::redis_store(f.io.get_executor(), cluster, opt));
}

BOOST_AUTO_TEST_SUITE_END()
