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

#include "support/redis_fixture.hpp"
#include "support/store_cases.hpp"

#include <timewheel/redis/error.hpp>

#include <boost/asio/io_context.hpp>

#include <chrono>
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

struct fixture : dq_test::store_fixture {
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
};

std::unique_ptr<dq_test::store_fixture> make_fixture(dq::limits limits) {
    auto o = fixture::small();
    o.limits = limits;
    return std::make_unique<fixture>(o);
}

using dq_test::make;

} // namespace

BOOST_AUTO_TEST_SUITE(redis_store, *boost::unit_test::precondition(redis_available()))

DQ_TEST_STORE_CASES(make_fixture)

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
