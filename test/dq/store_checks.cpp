//
// test/dq/store_checks.cpp
//
// dq::store checks every operation's input before a store sees it: a store (here one that
// only records what reaches its do_* overrides) never meets bad input, and the input it
// meets is in the bounds the stores rely on. The cases every real store must pass with the
// same input are in support/store_cases.hpp; this file proves the checks sit in the one
// place they all go through, so a new store cannot forget one.
//
// Its last cases check the other direction for dq::redis_store: what Redis answers. A fake
// Redis (support/fake_redis.hpp) answers each operation's script call with a hostile reply;
// the operation must complete once, with an error and no result, and the store work again.
//

#define BOOST_TEST_MODULE dq_store_checks
#include <boost/test/unit_test.hpp>

#include <timewheel/dq/detail/input_checks.hpp>
#include <timewheel/dq/error.hpp>
#include <timewheel/dq/redis_store.hpp>
#include <timewheel/dq/store.hpp>
#include <timewheel/redis/error.hpp>

#include <test/dq/support/fake_redis.hpp>
#include <test/redis/support/redis_fixture.hpp>

#include <boost/asio/io_context.hpp>

#include <algorithm>
#include <cctype>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace dq = timewheel::dq;
using boost::system::error_code;

namespace {

// Records each do_* call and completes it at once with success.
class recording_store final : public dq::store {
public:
    explicit recording_store(boost::asio::io_context& io)
        : ex_(io.get_executor()) {}

    executor_type get_executor() const override { return ex_; }
    const dq::limits& get_limits() const noexcept override { return limits_; }
    void wait_wakeup(handler<void(error_code, dq::time_point)>) override {}
    void now(handler<void(error_code, dq::time_point)> h) override {
        std::move(h)(error_code(), dq::time_point());
    }

    std::vector<std::string> calls;
    std::vector<dq::task> tasks;
    std::vector<dq::ack> acks;
    dq::limits limits_{.max_id_bytes = 16, .max_payload_bytes = 64};

private:
    void do_submit(dq::task t,
                   handler<void(error_code, dq::submit_result, std::string)> h) override {
        calls.push_back("submit");
        tasks.push_back(t);
        std::move(h)(error_code(), dq::submit_result::created, t.id);
    }
    void do_cancel(std::string, handler<void(error_code, dq::cancel_result)> h) override {
        calls.push_back("cancel");
        std::move(h)(error_code(), dq::cancel_result::cancelled);
    }
    void do_reschedule(std::string, dq::due_time, handler<void(error_code)> h) override {
        calls.push_back("reschedule");
        std::move(h)(error_code());
    }
    void do_status(std::string, handler<void(error_code, dq::task_status)> h) override {
        calls.push_back("status");
        std::move(h)(error_code(), dq::task_status{});
    }
    void do_list_dead(std::string, std::size_t,
                      handler<void(error_code, dq::dead_page)> h) override {
        calls.push_back("list_dead");
        std::move(h)(error_code(), dq::dead_page{});
    }
    void do_requeue_dead(std::string, dq::due_time, handler<void(error_code)> h) override {
        calls.push_back("requeue_dead");
        std::move(h)(error_code());
    }
    void do_delete_dead(std::string, handler<void(error_code)> h) override {
        calls.push_back("delete_dead");
        std::move(h)(error_code());
    }
    void do_claim(const dq::claim_options&,
                  handler<void(error_code, dq::claim_result)> h) override {
        calls.push_back("claim");
        std::move(h)(error_code(), dq::claim_result{});
    }
    void do_start(std::vector<dq::lease_ref> l,
                  handler<void(error_code, std::vector<dq::start_result>)> h) override {
        calls.push_back("start");
        std::move(h)(error_code(), std::vector<dq::start_result>(l.size()));
    }
    void do_renew(std::vector<dq::lease_ref> l, dq::duration,
                  handler<void(error_code, std::vector<dq::ack_result>)> h) override {
        calls.push_back("renew");
        std::move(h)(error_code(), std::vector<dq::ack_result>(l.size()));
    }
    void do_acknowledge(std::vector<dq::ack> a,
                        handler<void(error_code, std::vector<dq::ack_result>)> h) override {
        calls.push_back("acknowledge");
        acks = a;
        std::move(h)(error_code(), std::vector<dq::ack_result>(a.size()));
    }
    void do_release(std::vector<dq::lease_ref>, handler<void(error_code)> h) override {
        calls.push_back("release");
        std::move(h)(error_code());
    }

    // Records the decoded start, and answers with `next_` as the page's end.
    void do_list_tasks(
        dq::task_query q, std::optional<dq::task_position> from,
        handler<void(error_code, dq::task_page, std::optional<dq::task_position>)> h) override {
        calls.push_back("list_tasks");
        listed.emplace_back(std::move(q), std::move(from));
        std::move(h)(error_code(), dq::task_page{}, next_);
    }

public:
    std::vector<std::pair<dq::task_query, std::optional<dq::task_position>>> listed;
    std::optional<dq::task_position> next_;

private:
    executor_type ex_;
};

struct fixture {
    boost::asio::io_context io;
    recording_store store{io};

    // Runs what was posted; returns the error the operation completed with.
    template <typename Start>
    error_code run(Start start) {
        std::optional<error_code> got;
        start([&](error_code ec, auto&&...) { got = ec; });
        io.restart();
        io.run();
        BOOST_REQUIRE(got.has_value());
        return *got;
    }
};

dq::lease_ref lease(std::string id, std::string token = "t0k3n") {
    return dq::lease_ref{std::move(id), std::move(token)};
}

dq::ack ack_of(dq::lease_ref l, dq::outcome o = {}) {
    dq::ack a;
    a.lease = std::move(l);
    a.outcome = std::move(o);
    return a;
}

} // namespace

BOOST_FIXTURE_TEST_CASE(bad_input_fails_with_its_own_code_and_never_reaches_the_store, fixture) {
    const std::string long_id(17, 'x');
    const std::string nul_id("a\0b", 3);
    const auto submit = [&](dq::task t) {
        return run([&](auto h) { store.submit(std::move(t), std::move(h)); });
    };
    dq::task t;
    t.id = long_id;
    BOOST_TEST(submit(t) == error_code(dq::error::id_too_long));
    t.id = nul_id;
    BOOST_TEST(submit(t) == error_code(dq::error::invalid_id));
    t.id = "ok";
    t.payload.assign(65, 'p');
    BOOST_TEST(submit(t) == error_code(dq::error::payload_too_large));
    t.payload.clear();
    t.due = dq::max_due + dq::duration(1);
    BOOST_TEST(submit(t) == error_code(dq::error::due_out_of_range));
    t.due = dq::duration(0);
    t.retry.max_attempts = 0;
    BOOST_TEST(submit(t) == error_code(dq::error::zero_attempts));
    t.retry = {};
    t.retry.base = t.retry.cap + dq::duration(1);
    BOOST_TEST(submit(t) == error_code(dq::error::invalid_backoff));

    BOOST_TEST(run([&](auto h) { store.cancel("", std::move(h)); }) ==
               error_code(dq::error::empty_id));
    BOOST_TEST(run([&](auto h) { store.status(long_id, std::move(h)); }) ==
               error_code(dq::error::id_too_long));
    BOOST_TEST(run([&](auto h) { store.delete_dead(nul_id, std::move(h)); }) ==
               error_code(dq::error::invalid_id));
    BOOST_TEST(run([&](auto h) {
                   store.reschedule("ok", dq::time_point(dq::duration(-1)), std::move(h));
               }) == error_code(dq::error::due_out_of_range));
    BOOST_TEST(run([&](auto h) {
                   store.requeue_dead("ok", dq::max_due + dq::duration(1), std::move(h));
               }) == error_code(dq::error::due_out_of_range));
    BOOST_TEST(run([&](auto h) { store.list_dead("", 0, std::move(h)); }) ==
               error_code(dq::error::invalid_argument));
    BOOST_TEST(run([&](auto h) {
                   store.list_dead("", dq::detail::max_dead_page + 1, std::move(h));
               }) == error_code(dq::error::invalid_argument));

    dq::claim_options c;
    c.batch = 0;
    BOOST_TEST(run([&](auto h) { store.claim(c, std::move(h)); }) ==
               error_code(dq::error::invalid_argument));
    c = {};
    c.worker.assign(dq::detail::max_worker_bytes + 1, 'w');
    BOOST_TEST(run([&](auto h) { store.claim(c, std::move(h)); }) ==
               error_code(dq::error::invalid_argument));
    c = {};
    c.lease = dq::duration(0);
    BOOST_TEST(run([&](auto h) { store.claim(c, std::move(h)); }) ==
               error_code(dq::error::invalid_argument));

    const std::vector<dq::lease_ref> no_token{lease("ok", "")};
    const std::vector<dq::lease_ref> bad_id{lease(long_id)};
    BOOST_TEST(run([&](auto h) { store.start(no_token, std::move(h)); }) ==
               error_code(dq::error::invalid_argument));
    BOOST_TEST(run([&](auto h) { store.release(bad_id, std::move(h)); }) ==
               error_code(dq::error::id_too_long));
    BOOST_TEST(run([&](auto h) { store.renew({lease("ok")}, dq::duration(0), std::move(h)); }) ==
               error_code(dq::error::invalid_argument));
    BOOST_TEST(run([&](auto h) {
                   store.renew(std::vector<dq::lease_ref>(dq::detail::max_batch + 1, lease("ok")),
                               dq::duration(1000), std::move(h));
               }) == error_code(dq::error::invalid_argument));
    dq::outcome back_in_time;
    back_in_time.what = dq::outcome::kind::retry;
    back_in_time.retry_after = dq::duration(-1);
    BOOST_TEST(run([&](auto h) {
                   store.acknowledge({ack_of(lease("ok")), ack_of(lease("ok"), back_in_time)},
                                     std::move(h));
               }) == error_code(dq::error::invalid_argument));
    BOOST_TEST(run([&](auto h) {
                   store.acknowledge({ack_of(lease(std::string(64 + 1, 't')))}, std::move(h));
               }) == error_code(dq::error::id_too_long));

    BOOST_TEST(store.calls.empty(), "reached the store: " << store.calls.size() << " calls");
}

BOOST_FIXTURE_TEST_CASE(good_input_reaches_the_store_once_with_its_bounds_applied, fixture) {
    dq::task t;
    t.payload = "p";
    BOOST_TEST(!run([&](auto h) { store.submit(t, std::move(h)); }));
    BOOST_REQUIRE_EQUAL(store.tasks.size(), 1u);
    BOOST_TEST(store.tasks[0].id.size() == 12u, "a task without an id is given one");

    dq::outcome slow;
    slow.what = dq::outcome::kind::retry;
    slow.retry_after = dq::duration::max();
    slow.error.assign(dq::detail::max_error_bytes + 100, 'e');
    BOOST_TEST(!run([&](auto h) { store.acknowledge({ack_of(lease("ok"), slow)}, std::move(h)); }));
    BOOST_REQUIRE_EQUAL(store.acks.size(), 1u);
    BOOST_TEST(store.acks[0].outcome.retry_after->count() == dq::detail::max_backoff_ms);
    BOOST_TEST(store.acks[0].outcome.error.size() == dq::detail::max_error_bytes);

    BOOST_TEST(!run([&](auto h) { store.cancel("ok", std::move(h)); }));
    BOOST_TEST(!run([&](auto h) { store.list_dead("", 1, std::move(h)); }));
    BOOST_TEST(!run([&](auto h) { store.claim(dq::claim_options{}, std::move(h)); }));
    BOOST_TEST(!run([&](auto h) { store.start({lease("ok")}, std::move(h)); }));
    const std::vector<std::string> want{"submit",    "acknowledge", "cancel",
                                        "list_dead", "claim",       "start"};
    BOOST_TEST(store.calls == want, boost::test_tools::per_element());
}

BOOST_FIXTURE_TEST_CASE(an_empty_batch_completes_at_once_without_the_store, fixture) {
    BOOST_TEST(!run([&](auto h) { store.start({}, std::move(h)); }));
    BOOST_TEST(!run([&](auto h) { store.renew({}, dq::duration(1000), std::move(h)); }));
    BOOST_TEST(!run([&](auto h) { store.acknowledge({}, std::move(h)); }));
    BOOST_TEST(!run([&](auto h) { store.release({}, std::move(h)); }));
    BOOST_TEST(store.calls.empty());
}

BOOST_FIXTURE_TEST_CASE(a_listing_cursor_carries_its_position_and_bad_input_never_reaches_the_store,
                        fixture) {
    // A page's end comes back as a cursor, which the next query hands the store decoded,
    // whatever bytes the id holds.
    const dq::task_position end{dq::time_point(dq::duration(1774746000123)),
                                std::string("{a}\xff\x01.z", 6)};
    store.next_ = end;
    dq::task_query q;
    q.state = dq::task_state::dead;
    q.descending = true;
    std::string cursor;
    store.list_tasks(q, [&](error_code ec, dq::task_page p) {
        BOOST_TEST(!ec);
        cursor = p.cursor;
    });
    io.run();
    BOOST_REQUIRE(!cursor.empty());
    for (char c : cursor) {
        BOOST_TEST((std::isalnum(static_cast<unsigned char>(c)) || c == '.'));
    }
    q.cursor = cursor;
    store.next_.reset();
    BOOST_TEST(!run([&](auto h) { store.list_tasks(q, std::move(h)); }));
    BOOST_REQUIRE(store.listed.size() == 2u);
    BOOST_TEST(!store.listed[0].second.has_value());
    BOOST_REQUIRE(store.listed[1].second.has_value());
    BOOST_TEST((*store.listed[1].second == end));
    BOOST_TEST(store.listed[1].first.cursor.empty());

    // Bad input: never reaches the store.
    const auto listing = [&](dq::task_query bad) {
        return run([&](auto h) { store.list_tasks(std::move(bad), std::move(h)); });
    };
    auto bad = q;
    bad.limit = 0;
    BOOST_TEST(listing(bad) == error_code(dq::error::invalid_argument));
    bad.limit = dq::detail::max_task_page + 1;
    BOOST_TEST(listing(bad) == error_code(dq::error::invalid_argument));
    bad = q;
    bad.state = dq::task_state::finished; // another state's cursor
    BOOST_TEST(listing(bad) == error_code(dq::error::invalid_argument));
    bad = q;
    bad.descending = false; // another order's cursor
    BOOST_TEST(listing(bad) == error_code(dq::error::invalid_argument));
    bad = q;
    bad.cursor = cursor.substr(0, 2) + "1." + std::string(2 * 17, 'a'); // an id over the limit
    BOOST_TEST(listing(bad) == error_code(dq::error::invalid_argument));
    bad = q;
    bad.cursor.clear();
    bad.after = dq::time_point(dq::duration(5));
    bad.before = dq::time_point(dq::duration(5));
    BOOST_TEST(listing(bad) == error_code(dq::error::invalid_argument));
    bad.after.reset();
    bad.before = dq::max_due + dq::duration(1);
    BOOST_TEST(listing(bad) == error_code(dq::error::invalid_argument));
    bad.before.reset();
    bad.id_prefix.assign(17, 'x');
    BOOST_TEST(listing(bad) == error_code(dq::error::id_too_long));
    bad.id_prefix = std::string("a\0", 2);
    BOOST_TEST(listing(bad) == error_code(dq::error::invalid_id));
    BOOST_TEST(store.listed.size() == 2u);
}

// What Redis answers is checked too: dq::redis_store against a fake Redis
// (support/fake_redis.hpp) that answers each operation's script call with a hostile reply.
// Each operation must complete once, with an error and no result, and the store must work
// again as soon as the replies are well-formed.

namespace {

namespace net = boost::asio;
using timewheel::test::fake_redis;
using namespace std::chrono_literals;

// An operation of the store, and a well-formed reply of its script. `first` answers a script
// call made before the one under test (list_tasks before task_entries); `empty_ok`: an empty
// array is a well-formed (empty) answer.
struct operation {
    using start_fn = std::function<void(dq::redis_store&, std::function<void(error_code, bool)>)>;
    operation(std::string n, std::string g, start_fn s, std::string f = {}, bool e = false)
        : name(std::move(n))
        , good(std::move(g))
        , start(std::move(s))
        , first(std::move(f))
        , empty_ok(e) {}
    std::string name;
    std::string good;
    start_fn start;
    std::string first;
    bool empty_ok;
};

constexpr auto t0 = dq::time_point(dq::duration(1700000000000));

// The handler of an operation that completes with an error code alone.
auto only_error(std::function<void(error_code, bool)> d) {
    return [d = std::move(d)](error_code ec) { d(ec, false); };
}

std::vector<operation> operations() {
    using done = std::function<void(error_code, bool)>;
    // lua/queues.lua's record: generation 1, created and updated at 1000 ms, no settings.
    const std::string queue_record("\0\0\0\0\0\1\0\0\0\0\3\xe8\0\0\0\0\3\xe8", 18);
    const auto leases = [] { return std::vector<dq::lease_ref>{lease("a")}; };
    dq::materialisation m;
    m.schedule_id = "s";
    m.cursor = t0;
    m.payload = "p";
    dq::schedule_spec spec;
    spec.id = "s";
    spec.every = 1000ms;
    spec.payload = "p";
    dq::task_query q;
    q.limit = 10;
    return {
        {"submit", "*1\r\n$7\r\ncreated\r\n",
         [](dq::redis_store& s, done d) {
             dq::task t;
             t.id = "a";
             t.due = t0;
             t.payload = "p";
             s.submit(std::move(t),
                      [d](error_code ec, dq::submit_result, std::string) { d(ec, false); });
         }},
        {"cancel", "$9\r\ncancelled\r\n",
         [](dq::redis_store& s, done d) {
             s.cancel("a", [d](error_code ec, dq::cancel_result) { d(ec, false); });
         }},
        {"reschedule", "$2\r\nok\r\n",
         [](dq::redis_store& s, done d) { s.reschedule("a", t0, only_error(d)); }},
        {"requeue_dead", "$2\r\nok\r\n",
         [](dq::redis_store& s, done d) { s.requeue_dead("a", t0, only_error(d)); }},
        {"delete_dead", "$2\r\nok\r\n",
         [](dq::redis_store& s, done d) { s.delete_dead("a", only_error(d)); }},
        {"status",
         "*11\r\n$7\r\ndelayed\r\n:0\r\n:1000\r\n:1000\r\n:1000\r\n:3\r\n:100\r\n:1000\r\n$0\r\n"
         "\r\n$1\r\np\r\n$0\r\n\r\n",
         [](dq::redis_store& s, done d) {
             s.status("a", [d](error_code ec, dq::task_status st) { d(ec, !st.id.empty()); });
         }},
        {"list_dead", "*4\r\n$1\r\na\r\n:5\r\n:1\r\n$3\r\nerr\r\n",
         [](dq::redis_store& s, done d) {
             s.list_dead("", 10,
                         [d](error_code ec, dq::dead_page p) { d(ec, !p.entries.empty()); });
         },
         "", true},
        {"claim", "*2\r\n:1700000000000\r\n:-1\r\n",
         [](dq::redis_store& s, done d) {
             dq::claim_options o;
             o.worker = "w";
             o.batch = 4;
             s.claim(o, [d](error_code ec, dq::claim_result r) { d(ec, !r.tasks.empty()); });
         }},
        {"start", "$1\r\nr\r\n",
         [leases](dq::redis_store& s, done d) {
             s.start(leases(),
                     [d](error_code ec, std::vector<dq::start_result> r) { d(ec, !r.empty()); });
         }},
        {"renew", "$1\r\no\r\n",
         [leases](dq::redis_store& s, done d) {
             s.renew(leases(), 1000ms,
                     [d](error_code ec, std::vector<dq::ack_result> r) { d(ec, !r.empty()); });
         }},
        {"ack", "$1\r\no\r\n",
         [](dq::redis_store& s, done d) {
             s.acknowledge({ack_of(lease("a"))}, [d](error_code ec, std::vector<dq::ack_result> r) {
                 d(ec, !r.empty());
             });
         }},
        {"release", "$1\r\no\r\n",
         [leases](dq::redis_store& s, done d) { s.release(leases(), only_error(d)); }},
        {"earliest_due", "*2\r\n:1700000000000\r\n:-1\r\n",
         [](dq::redis_store& s, done d) {
             s.earliest_due([d](error_code ec, dq::time_point, std::optional<dq::time_point> e) {
                 d(ec, e.has_value());
             });
         }},
        {"list_tasks", "*3\r\n:0\r\n:0\r\n$0\r\n\r\n",
         [q](dq::redis_store& s, done d) {
             s.list_tasks(q, [d](error_code ec, dq::task_page p) { d(ec, !p.entries.empty()); });
         }},
        {"task_entries", "*6\r\n:1\r\n:1000\r\n:0\r\n$0\r\n\r\n$1\r\np\r\n$0\r\n\r\n",
         [q](dq::redis_store& s, done d) {
             s.list_tasks(q, [d](error_code ec, dq::task_page p) { d(ec, !p.entries.empty()); });
         },
         "*5\r\n:0\r\n:0\r\n$0\r\n\r\n:1000\r\n$1\r\na\r\n"},
        {"count_tasks", "*9\r\n:1700000000000\r\n:1\r\n:0\r\n:0\r\n:0\r\n:0\r\n:0\r\n:0\r\n:-1\r\n",
         [](dq::redis_store& s, done d) {
             s.count_tasks([d](error_code ec, dq::task_counts c) { d(ec, c.delayed != 0); });
         }},
        {"create_queue", "$7\r\ncreated\r\n",
         [](dq::redis_store& s, done d) {
             s.create_queue({"q", std::nullopt},
                            [d](error_code ec, dq::create_queue_result) { d(ec, false); });
         }},
        {"update_queue", "$2\r\nok\r\n",
         [](dq::redis_store& s, done d) {
             s.update_queue({"q", std::nullopt}, only_error(d));
         }},
        {"get_queue", "$18\r\n" + queue_record + "\r\n",
         [](dq::redis_store& s, done d) {
             s.get_queue("q",
                         [d](error_code ec, dq::queue_status st) { d(ec, !st.spec.id.empty()); });
         }},
        {"list_queues", "*2\r\n$1\r\nq\r\n$18\r\n" + queue_record + "\r\n",
         [](dq::redis_store& s, done d) {
             s.list_queues("q", "", 10,
                           [d](error_code ec, dq::queue_page p) { d(ec, !p.entries.empty()); });
         },
         "", true},
        {"create_schedule", "$7\r\ncreated\r\n",
         [spec](dq::redis_store& s, done d) {
             s.create_schedule(spec,
                               [d](error_code ec, dq::create_schedule_result) { d(ec, false); });
         }},
        {"delete_schedule", "$2\r\nok\r\n",
         [](dq::redis_store& s, done d) { s.delete_schedule("s", only_error(d)); }},
        {"get_schedule", "",
         [](dq::redis_store& s, done d) {
             s.get_schedule(
                 "s", [d](error_code ec, dq::schedule_status st) { d(ec, !st.spec.id.empty()); });
         }},
        {"list_schedules", "*0\r\n",
         [](dq::redis_store& s, done d) {
             s.list_schedules(
                 "", 10, [d](error_code ec, dq::schedule_page p) { d(ec, !p.entries.empty()); });
         },
         "", true},
        {"due_schedules", "*1\r\n:1700000000000\r\n",
         [](dq::redis_store& s, done d) {
             s.due_schedules(1000ms, 10, [d](error_code ec, dq::due_schedules_result r) {
                 d(ec, !r.schedules.empty());
             });
         }},
        {"materialise", "*3\r\n:1\r\n:1\r\n:0\r\n",
         [m](dq::redis_store& s, done d) {
             s.materialise({m}, [d](error_code ec, std::vector<dq::materialise_result> r) {
                 d(ec, !r.empty());
             });
         }},
    };
}

// A hostile reply; `whole`: it arrives complete and well-formed as RESP, so the store itself
// must refuse it (store_error), where a broken one fails the connection first.
struct hostile {
    std::string what;
    fake_redis::answer answer;
    bool whole = true;
};

std::vector<hostile> hostile_replies() {
    std::string nested;
    for (int i = 0; i < 40; ++i) {
        nested += "*1\r\n";
    }
    std::string strings = "*12\r\n";
    std::string integers = "*40\r\n";
    for (int i = 0; i < 40; ++i) {
        strings += i < 12 ? "$1\r\nx\r\n" : "";
        integers += ":1\r\n";
    }
    return {
        {"an integer", {":7\r\n"}},
        {"an error", {"-ERR hostile\r\n"}},
        {"a nil", {"$-1\r\n"}},
        {"a nil array", {"*-1\r\n"}},
        {"an empty array", {"*0\r\n"}},
        {"a short array", {"*1\r\n$1\r\nx\r\n"}},
        {"a long array of integers", {integers}},
        {"an array of strings", {strings}},
        {"an array holding an array", {"*2\r\n*1\r\n:1\r\n:2\r\n"}},
        {"an unknown word", {"$5\r\nbogus\r\n"}},
        {"an unknown letter", {"$1\r\nz\r\n"}},
        {"100 MB announced, 64 KiB sent",
         {"$104857600\r\n" + std::string(65536, 'x'), true},
         false},
        {"2^31-1 elements announced", {"*2147483647\r\n:1\r\n", true}, false},
        {"a negative count", {"*-5\r\n:1\r\n", true}, false},
        {"arrays nested 40 deep", {nested + ":1\r\n", true}, false},
        {"a reply cut short", {"*4\r\n$1\r\na\r\n:5\r", true}, false},
        {"garbage", {std::string("\x00\xff garbage\r\n\r\n", 14), true}, false},
    };
}

// Runs `op` on `store`: its error and whether it carried a result. Fails unless it completed
// exactly once (a second completion would be posted by the first's turn: polled for).
std::pair<error_code, bool> run_once(net::io_context& io, dq::redis_store& store,
                                     const operation& op) {
    int completions = 0;
    std::pair<error_code, bool> out;
    op.start(store, [&](error_code ec, bool result) {
        ++completions;
        out = {ec, result};
    });
    BOOST_REQUIRE_MESSAGE(timewheel::test::run_until(
                              io, [&] { return completions > 0; }, 30s),
                          op.name << " never completed");
    io.restart();
    io.poll();
    BOOST_TEST(completions == 1);
    return out;
}

struct hostile_fixture {
    net::io_context io;
    fake_redis fake{io};
    dq::redis_store store{io.get_executor(), config(fake.port()), options()};

    static timewheel::redis::config config(std::uint16_t port) {
        timewheel::redis::config cfg;
        cfg.host = "127.0.0.1";
        cfg.port = port;
        cfg.request_timeout = 2s; // silence fails after this
        cfg.reconnect_min_delay = 1ms;
        cfg.reconnect_max_delay = 5ms;
        return cfg;
    }
    static dq::redis_store_options options() {
        dq::redis_store_options o;
        o.name = "h";
        o.shards = 1; // one script call an operation
        o.buckets = 1;
        return o;
    }

    std::pair<error_code, bool> run(const operation& op) { return run_once(io, store, op); }

    // Runs `op` once more, answered with its good reply: the store goes on after a bad one.
    void check_good_reply(const operation& op) {
        fake.queued.clear();
        if (!op.first.empty()) {
            fake.queued.push_back({op.first});
        }
        fake.script = {op.good};
        const auto good = run(op);
        BOOST_TEST(!good.first, good.first.message());
        fake.queued.clear();
    }
};

} // namespace

BOOST_FIXTURE_TEST_CASE(a_hostile_reply_fails_its_operation_once_and_the_store_goes_on,
                        hostile_fixture) {
    for (const auto& op : operations()) {
        for (const auto& h : hostile_replies()) {
            if (op.empty_ok && h.answer.bytes == "*0\r\n") {
                continue;
            }
            BOOST_TEST_CONTEXT(op.name << " answered " << h.what) {
                if (!op.first.empty()) {
                    fake.queued.push_back({op.first});
                }
                fake.script = h.answer;
                const int before = fake.script_calls;
                const auto [ec, result] = run(op);
                BOOST_TEST(ec.failed());
                if (h.whole) {
                    BOOST_TEST(ec == error_code(dq::error::store_error), ec.message());
                }
                BOOST_TEST(!result);
                BOOST_TEST(fake.script_calls > before); // the reply under test was read
                fake.queued.clear();
                if (!op.good.empty()) {
                    check_good_reply(op);
                }
            }
        }
    }
}

BOOST_FIXTURE_TEST_CASE(a_hostile_time_reply_or_silence_fails_once_and_the_store_goes_on,
                        hostile_fixture) {
    const operation probe{
        "probe", "", [](dq::redis_store& s, auto d) {
            s.probe([d](error_code ec, dq::time_point t) { d(ec, t != dq::time_point()); });
        }};
    for (const auto& bad :
         {":7\r\n", "*2\r\n:1\r\n:2\r\n", "*2\r\n$3\r\nabc\r\n$1\r\n0\r\n",
          "*2\r\n$2\r\n-1\r\n$1\r\n0\r\n", "*2\r\n$1\r\n1\r\n$7\r\n1000000\r\n",
          "*2\r\n$20\r\n99999999999999999999\r\n$1\r\n0\r\n", "*3\r\n:1\r\n:2\r\n:3\r\n"}) {
        BOOST_TEST_CONTEXT("TIME answered " << bad) {
            fake.time = {bad};
            const auto [ec, result] = run(probe);
            BOOST_TEST(ec == error_code(dq::error::store_error), ec.message());
            BOOST_TEST(!result);
        }
    }
    fake.time = {"*2\r\n$10\r\n1700000000\r\n$6\r\n000000\r\n"};
    const auto [ec, result] = run(probe);
    BOOST_TEST(!ec, ec.message());
    BOOST_TEST(result);

    // Silence: the request times out; the store works again on a new connection.
    const auto ops = operations();
    const auto& cancel = ops.at(1);
    fake.script = {"", false, true};
    const auto silent_ec = run(cancel).first;
    BOOST_TEST(silent_ec == error_code(timewheel::redis::error::request_timeout),
               silent_ec.message());
    fake.script = {cancel.good};
    const int connections = fake.connections;
    fake.drop_connections();
    BOOST_TEST_REQUIRE(
        timewheel::test::run_until(io, [&] { return fake.connections > connections; }));
    const auto good_ec = run(cancel).first;
    BOOST_TEST(!good_ec, good_ec.message());
}

BOOST_FIXTURE_TEST_CASE(a_queue_list_of_bad_names_or_more_than_asked_for_fails, hostile_fixture) {
    const auto ops = operations();
    const auto& list = *std::find_if(ops.begin(), ops.end(),
                                     [](const operation& o) { return o.name == "list_queues"; });
    // queues_read.lua's record: generation 1, created and updated at 1000 ms, no settings.
    const std::string record("\0\0\0\0\0\1\0\0\0\0\3\xe8\0\0\0\0\3\xe8", 18);
    const auto entry = [&](const std::string& name) {
        return "$" + std::to_string(name.size()) + "\r\n" + name + "\r\n$18\r\n" + record + "\r\n";
    };
    // list asks for 10 (11 with the one that tells whether a next page exists).
    std::string twelve = "*24\r\n";
    for (int i = 0; i < 12; ++i) {
        twelve += entry("q" + std::to_string(10 + i));
    }
    const std::pair<const char*, std::string> bad[] = {
        {"a name outside the alphabet", "*2\r\n" + entry("Q<script>")},
        {"an empty name", "*2\r\n" + entry("")},
        {"names out of order", "*4\r\n" + entry("qb") + entry("qa")},
        {"a name twice", "*4\r\n" + entry("qa") + entry("qa")},
        {"more entries than asked for", twelve},
    };
    for (const auto& [what, reply] : bad) {
        BOOST_TEST_CONTEXT("list_queues answered " << what) {
            fake.script = {reply};
            const auto [ec, result] = run(list);
            BOOST_TEST(ec == error_code(dq::error::store_error), ec.message());
            BOOST_TEST(!result);
        }
    }
    check_good_reply(list);
}

BOOST_FIXTURE_TEST_CASE(a_claim_answered_with_more_tasks_than_it_asked_for_fails, hostile_fixture) {
    const auto ops = operations();
    const auto& claim =
        *std::find_if(ops.begin(), ops.end(), [](const operation& o) { return o.name == "claim"; });
    // claim.lua's reply: the clock, the next due, then 9 elements a task.
    const auto reply = [](int tasks) {
        std::string r = "*" + std::to_string(2 + 9 * tasks) + "\r\n:1700000000000\r\n:-1\r\n";
        for (int i = 0; i < tasks; ++i) {
            const auto id = std::to_string(i);
            r += "$" + std::to_string(id.size()) + "\r\n" + id +
                 "\r\n$2\r\ntk\r\n:1700000000000\r\n:1\r\n$1\r\np\r\n:3\r\n:100\r\n:1000\r\n:0\r\n";
        }
        return r;
    };
    fake.script = {reply(5)}; // the operation asks for 4
    const auto [ec, result] = run(claim);
    BOOST_TEST(ec == error_code(dq::error::store_error), ec.message());
    BOOST_TEST(!result);
    fake.script = {reply(4)};
    const auto [good_ec, good_result] = run(claim);
    BOOST_TEST(!good_ec, good_ec.message());
    BOOST_TEST(good_result);
}

// Values out of range in replies of the right shape: each would do harm if taken (a cast
// that truncates an attempt count, a time that overflows chrono arithmetic or is before the
// epoch, a negative count or backoff), so each fails its operation with store_error.
BOOST_FIXTURE_TEST_CASE(a_value_out_of_range_in_a_well_formed_reply_fails, hostile_fixture) {
    const auto ops = operations();
    const auto find = [&](std::string_view name) -> const operation& {
        return *std::find_if(ops.begin(), ops.end(),
                             [&](const operation& o) { return o.name == name; });
    };
    const auto ints = [](std::initializer_list<std::string> values) {
        std::string r;
        for (const auto& v : values) {
            r += ":" + v + "\r\n";
        }
        return r;
    };
    // status.lua: state, attempt, due, created, updated, max_attempts, base, cap, error,
    // payload, then a log entry (attempt, worker, started, ended, outcome, error).
    const auto status = [&](std::string attempt, std::string due, std::string max_attempts,
                            std::string base, std::string cap, std::string started) {
        return "*17\r\n$7\r\ndelayed\r\n" +
               ints({attempt, due, "1000", "1000", max_attempts, base, cap}) +
               "$0\r\n\r\n$1\r\np\r\n$0\r\n\r\n" + ints({"1"}) + "$1\r\nw\r\n" +
               ints({started, "1000"}) + "$2\r\nok\r\n$0\r\n\r\n";
    };
    // claim.lua: the clock, the next due, then one task (id, token, due, attempt, payload,
    // max_attempts, base, cap, running).
    const auto claim = [&](std::string now, std::string next, std::string due, std::string attempt,
                           std::string max_attempts, std::string base) {
        return "*11\r\n" + ints({now, next}) + "$1\r\na\r\n$2\r\ntk\r\n" + ints({due, attempt}) +
               "$1\r\np\r\n" + ints({max_attempts, base, "1000", "0"});
    };
    const std::string big = "4294967296";       // 2^32: truncated by a 32-bit cast
    const std::string late = "253402300800000"; // a ms past max_due
    const std::string huge = "9223372036854775807";
    const std::vector<std::pair<std::string, std::string>> cases = {
        {"status", status("1", "-1", "3", "100", "1000", "1000")},
        {"status", status("1", late, "3", "100", "1000", "1000")},
        {"status", status(big, "1000", "3", "100", "1000", "1000")},
        {"status", status("1", "1000", "0", "100", "1000", "1000")},
        {"status", status("1", "1000", big, "100", "1000", "1000")},
        {"status", status("1", "1000", "3", "-100", "1000", "1000")},
        {"status", status("1", "1000", "3", "100", huge, "1000")},
        {"status", status("1", "1000", "3", "100", "1000", "-5")},
        {"list_dead", "*4\r\n$1\r\na\r\n:-5\r\n:1\r\n$3\r\nerr\r\n"},
        {"list_dead", "*4\r\n$1\r\na\r\n:5\r\n:" + big + "\r\n$3\r\nerr\r\n"},
        {"claim", claim("-1", "-1", "1000", "1", "3", "100")},
        {"claim", claim(huge, "-1", "1000", "1", "3", "100")},
        {"claim", claim("1000", "-2", "1000", "1", "3", "100")},
        {"claim", claim("1000", "-1", late, "1", "3", "100")},
        {"claim", claim("1000", "-1", "1000", big, "3", "100")},
        {"claim", claim("1000", "-1", "1000", "1", "0", "100")},
        {"claim", claim("1000", "-1", "1000", "1", "3", "-1")},
        {"earliest_due", "*2\r\n:-1\r\n:-1\r\n"},
        {"earliest_due", "*2\r\n:1000\r\n:-7\r\n"},
        {"earliest_due", "*2\r\n:1000\r\n:" + huge + "\r\n"},
        {"list_tasks", "*5\r\n:0\r\n:0\r\n$0\r\n\r\n:-1000\r\n$1\r\na\r\n"},
        {"list_tasks", "*3\r\n:1\r\n:" + late + "\r\n$1\r\na\r\n"},
        {"task_entries", "*6\r\n:1\r\n:-1000\r\n:0\r\n$0\r\n\r\n$1\r\np\r\n$0\r\n\r\n"},
        {"task_entries", "*6\r\n:1\r\n:1000\r\n:" + big + "\r\n$0\r\n\r\n$1\r\np\r\n$0\r\n\r\n"},
        {"count_tasks", "*9\r\n" + ints({"1000", "-1", "0", "0", "0", "0", "0", "0", "-1"})},
        {"count_tasks", "*9\r\n" + ints({"1000", huge, "0", "0", "0", "0", "0", "0", "-1"})},
        {"count_tasks", "*9\r\n" + ints({"-1", "1", "0", "0", "0", "0", "0", "0", "-1"})},
        {"count_tasks", "*9\r\n" + ints({"1000", "1", "0", "0", "0", "0", "0", "0", "-9"})},
        {"due_schedules", "*1\r\n:-1\r\n"},
        {"due_schedules", "*1\r\n:" + huge + "\r\n"},
        {"materialise", "*3\r\n:1\r\n:" + big + "\r\n:0\r\n"},
        {"materialise", "*3\r\n:1\r\n:1\r\n:-1\r\n"},
    };
    for (const auto& [name, reply] : cases) {
        const auto& op = find(name);
        BOOST_TEST_CONTEXT(name << " answered " << reply) {
            if (!op.first.empty()) {
                fake.queued.push_back({op.first});
            }
            fake.script = {reply};
            const auto [ec, result] = run(op);
            BOOST_TEST(ec == error_code(dq::error::store_error), ec.message());
            BOOST_TEST(!result);
            check_good_reply(op);
        }
    }
}

// On a Cluster with wait_replicas each write is followed by its own WAIT, sent to the write's
// master, whose reply the store takes out of the response: a WAIT answered with anything but
// a count of at least wait_replicas (fewer, negative, an error, another type: well-formed
// replies; a broken stream fails as every other, dq_store_checks above) fails the write
// with not_replicated, never passes it as replicated nor shifts it onto the script's reply.
BOOST_AUTO_TEST_CASE(a_hostile_wait_reply_on_a_cluster_fails_the_write) {
    net::io_context io;
    fake_redis fake{io};
    fake.cluster = true;
    timewheel::redis::cluster_config cfg;
    cfg.node = hostile_fixture::config(fake.port());
    auto opt = hostile_fixture::options();
    opt.wait_replicas = 1;
    dq::redis_store store{io.get_executor(), cfg, opt};
    const auto ops = operations();
    const auto& submit = ops.front();
    BOOST_TEST_REQUIRE(submit.name == "submit");
    fake.script = {submit.good};
    for (const std::string wait :
         {":0\r\n", ":-1\r\n", "-ERR no replicas\r\n", "$1\r\n1\r\n", "*1\r\n:1\r\n"}) {
        BOOST_TEST_CONTEXT("WAIT answered " << wait) {
            fake.wait = {wait};
            const int before = fake.waits;
            const auto [ec, result] = run_once(io, store, submit);
            BOOST_TEST(ec == error_code(dq::error::not_replicated), ec.message());
            BOOST_TEST(fake.waits == before + 1); // the WAIT under test was read
        }
    }
    fake.wait = {":1\r\n"};
    const auto [ec, result] = run_once(io, store, submit);
    BOOST_TEST(!ec, ec.message());
}
