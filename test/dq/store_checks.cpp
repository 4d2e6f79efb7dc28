//
// test/dq/store_checks.cpp
//
// dq::store checks every operation's input before a store sees it: a store (here one that
// only records what reaches its do_* overrides) never meets bad input, and the input it
// meets is in the bounds the stores rely on. The cases every real store must pass with the
// same input are in support/store_cases.hpp; this file proves the checks sit in the one
// place they all go through, so a new store cannot forget one.
//

#define BOOST_TEST_MODULE dq_store_checks
#include <boost/test/unit_test.hpp>

#include <timewheel/dq/detail/input_checks.hpp>
#include <timewheel/dq/error.hpp>
#include <timewheel/dq/store.hpp>

#include <boost/asio/io_context.hpp>

#include <cctype>
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
