//
// bench/dq/sqlite_bench.cpp
//
// What dq::sqlite_store costs (docs/dq.md, "The SQLite store"): acknowledged submits per
// second with many in flight (group commit), claim+start+ack per second driven by hand
// (one batch at a time), and tasks per second run end to end by a dq::worker; each with
// fsync (synchronous=FULL, the default) and without (synchronous=NORMAL). One database file
// in the directory given (default: the system's temporary directory), removed at the end.
//
//   sqlite_bench [directory] [tasks]
//

#include <timewheel/dq/sqlite_store.hpp>
#include <timewheel/dq/worker.hpp>

#include <boost/asio/io_context.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace dq = timewheel::dq;
using boost::system::error_code;
using clk = std::chrono::steady_clock;

namespace {

double seconds_since(clk::time_point t0) {
    return std::chrono::duration<double>(clk::now() - t0).count();
}

template <typename Done>
void run_until(boost::asio::io_context& io, Done done) {
    io.restart();
    while (!done()) {
        io.run_one();
    }
}

std::string task_id(const char* prefix, long i) {
    std::string id = prefix;
    id += std::to_string(i);
    return id;
}

// Submits n tasks due now, `in_flight` at a time; returns submits per second.
double submit_rate(boost::asio::io_context& io, dq::sqlite_store& store, const char* prefix, long n,
                   long in_flight) {
    long sent = 0, done = 0;
    std::function<void()> one = [&] {
        dq::task t;
        t.id = task_id(prefix, sent++);
        t.payload = std::string(100, 'x');
        store.submit(std::move(t), [&](error_code ec, dq::submit_result, std::string) {
            if (ec) {
                std::fprintf(stderr, "submit: %s\n", ec.message().c_str());
                std::exit(1);
            }
            ++done;
            if (sent < n) {
                one();
            }
        });
    };
    const auto t0 = clk::now();
    for (long i = 0; i < in_flight && sent < n; ++i) {
        one();
    }
    run_until(io, [&] { return done == n; });
    return double(n) / seconds_since(t0);
}

// Claims, starts and acknowledges everything due, one batch of `batch` at a time.
double claim_start_ack_rate(boost::asio::io_context& io, dq::sqlite_store& store, long n,
                            std::size_t batch) {
    long finished = 0;
    const auto t0 = clk::now();
    while (finished < n) {
        dq::claim_options o;
        o.batch = batch;
        o.horizon = dq::duration(0);
        o.worker = "bench";
        std::optional<dq::claim_result> claimed;
        store.claim(o, [&](error_code ec, dq::claim_result r) {
            if (ec) {
                std::exit(1);
            }
            claimed = std::move(r);
        });
        run_until(io, [&] { return claimed.has_value(); });
        if (claimed->tasks.empty()) {
            break;
        }
        std::vector<dq::lease_ref> leases;
        for (auto& t : claimed->tasks) {
            leases.push_back({t.id, t.token});
        }
        bool started = false;
        store.start(leases, [&](error_code ec, std::vector<dq::start_result>) {
            if (ec) {
                std::exit(1);
            }
            started = true;
        });
        run_until(io, [&] { return started; });
        std::vector<dq::ack> acks;
        for (auto& l : leases) {
            acks.push_back({std::move(l), dq::outcome::success(), {}, {}});
        }
        bool acked = false;
        store.acknowledge(std::move(acks), [&](error_code ec, std::vector<dq::ack_result>) {
            if (ec) {
                std::exit(1);
            }
            acked = true;
        });
        run_until(io, [&] { return acked; });
        finished += static_cast<long>(claimed->tasks.size());
    }
    return double(finished) / seconds_since(t0);
}

// A dq::worker runs n tasks already due; returns tasks per second.
double worker_rate(boost::asio::io_context& io, dq::sqlite_store& store, long n) {
    dq::worker_options o;
    o.claim.worker = "bench";
    o.claim.batch = 512;
    o.concurrency = 1024;
    o.ack_batch = 512;
    long ran = 0;
    dq::worker w(store, o, [&](dq::job j) {
        ++ran;
        j.succeed();
    });
    const auto t0 = clk::now();
    w.start();
    run_until(io, [&] { return ran >= n && w.stats().acked >= std::uint64_t(n); });
    const double rate = double(n) / seconds_since(t0);
    bool stopped = false;
    w.async_stop(clk::now() + std::chrono::seconds(10), [&](error_code) { stopped = true; });
    run_until(io, [&] { return stopped; });
    return rate;
}

void run(const std::filesystem::path& dir, long n, bool fsync) {
    const auto path = dir / "timewheel-sqlite-bench.db";
    for (const char* suffix : {"", "-wal", "-shm"}) {
        std::filesystem::remove(path.string() + suffix);
    }
    boost::asio::io_context io;
    dq::sqlite_store_options opt;
    opt.path = path.string();
    opt.fsync = fsync;
    {
        dq::sqlite_store store(io.get_executor(), opt);
        const char* mode = fsync ? "fsync (synchronous=FULL)" : "no fsync (synchronous=NORMAL)";
        const double one = submit_rate(io, store, "one", std::min<long>(n / 10, 2000), 1);
        const auto s0 = store.stats();
        const double many = submit_rate(io, store, "a", n, 256);
        const auto s1 = store.stats();
        std::printf("%s\n  submit, 1 in flight:    %9.0f /s\n", mode, one);
        std::printf("  submit, 256 in flight:  %9.0f /s  (%.1f operations per transaction)\n", many,
                    double(s1.operations - s0.operations) /
                        double(std::max<std::uint64_t>(s1.transactions - s0.transactions, 1)));
        const double csa = claim_start_ack_rate(io, store, n + std::min<long>(n / 10, 2000), 256);
        std::printf("  claim+start+ack by hand, batches of 256: %9.0f tasks/s\n", csa);
        submit_rate(io, store, "b", n, 256);
        const double wr = worker_rate(io, store, n);
        std::printf("  dq::worker end to end:  %9.0f tasks/s\n", wr);
    }
    std::printf("  file: %.1f MB after %ld finished tasks\n",
                double(std::filesystem::file_size(path)) / 1e6,
                2 * n + std::min<long>(n / 10, 2000));
    for (const char* suffix : {"", "-wal", "-shm"}) {
        std::filesystem::remove(path.string() + suffix);
    }
}

} // namespace

int main(int argc, char** argv) {
    const std::filesystem::path dir =
        argc > 1 ? std::filesystem::path(argv[1]) : std::filesystem::temp_directory_path();
    const long n = argc > 2 ? std::stol(argv[2]) : 20000;
    run(dir, n, true);
    run(dir, n, false);
    return 0;
}
