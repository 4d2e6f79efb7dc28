//
// test/dq/sqlite_crash.cpp
//
// dq::sqlite_store keeps every acknowledged submit through a kill -9: a child process
// (support/sqlite_submitter.cpp) submits in a loop and prints each id the store acknowledged;
// it is killed mid-stream, the file is reopened, and every printed id is there and runs
// (a dq::worker runs them all). Done three times, killed at different points.
//

#include <timewheel/dq/sqlite_store.hpp>
#include <timewheel/dq/worker.hpp>

#define BOOST_TEST_MODULE dq_sqlite_crash
#include <boost/test/unit_test.hpp>

#include <test/dq/support/sqlite_file.hpp>
#include <test/dq/support/store_calls.hpp>
#include <test/support/process.hpp>

#include <boost/asio/io_context.hpp>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace dq = timewheel::dq;
using namespace std::chrono_literals;
using boost::system::error_code;

namespace {

// The complete lines of a file (a line cut by the kill has no newline yet).
std::vector<std::string> complete_lines(const std::filesystem::path& p) {
    std::ifstream in(p, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    const std::string text = ss.str();
    std::vector<std::string> out;
    std::size_t start = 0;
    for (std::size_t nl; (nl = text.find('\n', start)) != std::string::npos; start = nl + 1) {
        out.push_back(text.substr(start, nl - start));
    }
    return out;
}

} // namespace

BOOST_AUTO_TEST_CASE(every_acknowledged_submit_survives_a_kill_9_and_runs) {
    for (const std::size_t kill_after : {300u, 1500u, 4000u}) {
        BOOST_TEST_CONTEXT("killed after " << kill_after << " acknowledgements") {
            timewheel::test::temp_dir dir;
            const auto db = dir.file("q.db");
            const auto out = dir.path() / "acked.txt";
            timewheel::test::child_process child(
                {.argv = {TIMEWHEEL_DQ_TEST_SQLITE_SUBMITTER, db}, .output = out});
            const auto limit = std::chrono::steady_clock::now() + 120s;
            while (complete_lines(out).size() < kill_after &&
                   std::chrono::steady_clock::now() < limit && child.running()) {
                std::this_thread::sleep_for(5ms);
            }
            BOOST_REQUIRE_MESSAGE(child.running(), "the submitter exited early");
            child.kill9();
            const auto acked = complete_lines(out);
            BOOST_REQUIRE_GE(acked.size(), kill_after);

            boost::asio::io_context io;
            dq::sqlite_store_options opt;
            opt.path = db;
            dq::sqlite_store store(io.get_executor(), opt);
            for (const auto& id : acked) {
                BOOST_REQUIRE_MESSAGE(id.starts_with("k"), "not an id: " << id);
                auto [ec, st] = timewheel::test::call<dq::task_status>(
                    io, [&](auto h) { store.status(id, std::move(h)); });
                BOOST_REQUIRE_MESSAGE(!ec, id << ": " << ec.message());
                BOOST_TEST(st.payload == "payload of " + id);
            }
            std::set<std::string> ran;
            dq::worker_options o;
            o.claim.worker = "after-crash";
            o.claim.batch = 512;
            dq::worker w(store, o, [&](dq::job j) {
                ran.insert(std::string(j.id()));
                j.succeed();
            });
            w.start();
            BOOST_REQUIRE(timewheel::test::run_until(
                io,
                [&] {
                    return std::all_of(acked.begin(), acked.end(),
                                       [&](const std::string& id) { return ran.count(id) > 0; });
                },
                120s));
            std::optional<error_code> stopped;
            w.async_stop(std::chrono::steady_clock::now() + 10s,
                         [&](error_code ec) { stopped = ec; });
            BOOST_REQUIRE(timewheel::test::run_until(
                io, [&] { return stopped.has_value(); }, 60s));
            BOOST_TEST_MESSAGE(acked.size() << " acknowledged, " << ran.size() << " ran");
        }
    }
}
