//
// test/dq/fault_redis_restart.cpp
//
// Acknowledged submits survive a kill -9 of redis-server (appendonly yes, appendfsync
// always): the server is killed under a load of pipelined submits and restarted on the same
// directory and port; every submit that was acknowledged is still there (status, from a
// fresh connection), and a worker process then runs every one of them.
//

#define BOOST_TEST_MODULE dq_fault_redis_restart
#include <test/dq/support/fault_env.hpp>

#include <timewheel/redis/error.hpp>

#include <boost/test/unit_test.hpp>

#include <set>
#include <string>
#include <vector>

namespace dq = timewheel::dq;
namespace redis = timewheel::redis;
using namespace std::chrono_literals;
using timewheel::test::fault_env;
using timewheel::test::redis_available;
using timewheel::test::run_for;
using timewheel::test::run_until;

BOOST_AUTO_TEST_SUITE(fault_redis_restart, *boost::unit_test::precondition(redis_available()))

BOOST_AUTO_TEST_CASE(acknowledged_submits_survive_kill9_of_redis_and_run) {
    fault_env env({.args = {"--appendonly", "yes", "--appendfsync", "always"}});

    // Submits with 128 in flight; after `kill_after` acknowledgements the server is killed
    // with requests written and unanswered, then restarted on the same dir and port.
    constexpr std::size_t total = 6000;
    constexpr std::size_t kill_after = 2500;
    constexpr std::size_t in_flight = 128;
    std::vector<std::string> acknowledged;
    std::set<std::string> failed;
    std::size_t next = 0, outstanding = 0, other_errors = 0;
    bool killed = false;
    boost::system::error_code first_other;
    auto submit_one = [&] {
        const std::string id = "r" + std::to_string(next++);
        ++outstanding;
        // Due 0.3 s to 1.3 s from now by the store's clock: most are due by the time the
        // worker comes, some are still delayed.
        env.queue().async_submit(
            {.id = id,
             .due = dq::duration(300 + static_cast<long>(next % 1000)),
             .payload = "p" + id,
             .retry = {}},
            [&, id](boost::system::error_code ec, dq::submit_result r, std::string got) {
                --outstanding;
                if (!ec) {
                    BOOST_TEST((r == dq::submit_result::created), id);
                    BOOST_TEST(got == id);
                    acknowledged.push_back(id);
                } else if (ec == redis::error::connection_lost) {
                    failed.insert(id); // written, unanswered: may or may not exist
                } else {
                    ++other_errors;
                    if (!first_other) {
                        first_other = ec;
                    }
                }
            });
    };
    const bool loaded = run_until(
        env.io(),
        [&] {
            while (!killed && outstanding < in_flight && next < total) {
                submit_one();
            }
            if (!killed && acknowledged.size() >= kill_after) {
                env.server().kill9();
                killed = true;
            }
            return killed || next == total;
        },
        60s);
    BOOST_TEST_REQUIRE(loaded);
    BOOST_TEST_REQUIRE(killed, "the load ended before the kill");
    const std::size_t acked_before_kill = acknowledged.size();
    BOOST_TEST_MESSAGE("killed with " << outstanding << " submits outstanding, "
                                      << acked_before_kill << " acknowledged");
    BOOST_TEST(outstanding > 0u); // the kill hit requests in flight

    // Let the store see the loss, then bring the server back on the same files.
    run_for(env.io(), 200ms);
    env.server().start();
    BOOST_TEST_REQUIRE(run_until(
        env.io(), [&] { return outstanding == 0; }, 60s));
    BOOST_TEST(other_errors == 0u, "unexpected submit errors, first: " << first_other.message());
    BOOST_TEST_MESSAGE(failed.size() << " submits failed with connection_lost");

    // From a fresh connection: every acknowledged submit is there, with its payload.
    env.reopen_store();
    const auto states = env.statuses(acknowledged);
    std::size_t missing = 0;
    for (const auto& id : acknowledged) {
        const auto& s = states.at(id);
        if (!s) {
            ++missing;
            BOOST_TEST_MESSAGE("lost: " << id);
            continue;
        }
        BOOST_TEST(s->payload == "p" + id);
    }
    BOOST_TEST(missing == 0u,
               missing << " of " << acknowledged.size() << " acknowledged submits lost");

    // A submit that failed may or may not have been written; submitting it again is safe
    // (created or exists, never twice).
    std::vector<dq::task> again;
    for (const auto& id : failed) {
        again.push_back({.id = id, .due = dq::duration(0), .payload = "p" + id, .retry = {}});
    }
    for (const auto& [ec, r] : env.submit_all(again)) {
        BOOST_TEST(!ec, ec.message());
        BOOST_TEST((r == dq::submit_result::created || r == dq::submit_result::exists));
    }

    // And everything acknowledged runs: a worker process takes them all.
    std::vector<std::string> all = acknowledged;
    all.insert(all.end(), failed.begin(), failed.end());
    env.start_worker({.name = "w", .handler_time = 0ms, .concurrency = 64});
    std::size_t never_ran = all.size();
    run_until(
        env.io(),
        [&] {
            run_for(env.io(), 100ms);
            const auto per_id = timewheel::test::runs_per_id(env.runs());
            never_ran = 0;
            for (const auto& id : all) {
                never_ran += !per_id.contains(id);
            }
            return never_ran == 0;
        },
        120s);
    BOOST_TEST(never_ran == 0u);
    BOOST_TEST(env.wait_all(all, dq::task_state::finished, 60s));
    env.stop_worker("w");
}

BOOST_AUTO_TEST_SUITE_END()
