//
// bench/redis/redis_bench.cpp
//
// redis::connection against a running redis-server, measured the way redis-benchmark
// measures itself, so that scripts/bench-redis.sh can put both side by side from one run:
//
//   set/batch/<P>   one connection; P SETs issued together, then wait for all P replies,
//                   repeat (what `redis-benchmark -t set -c 1 -P <P>` does). Like for like.
//   set/window/<P>  one connection; P requests always in flight: each completion issues the
//                   next one (how an asynchronous program pipelines).
//   rtt             one SET at a time: round-trip latency (avg, p50, p99) and requests/s.
//
// Key and value are redis-benchmark's defaults: "key:__rand_int__" and "xxx". Allocations
// per request are counted with a replaced global operator new (default recycling allocator,
// no allocator of the benchmark's own). Output: one CSV line per case:
//   name,requests,seconds,requests_per_second,avg_ms,p50_ms,p99_ms,allocs_per_request
//
// Usage: redis_bench --port N [--host 127.0.0.1 | --socket PATH] [--requests N]
//                    [--depths 1,16,256] [--rtt-requests N] [--cases batch,window,rtt]
// (scripts/bench-redis.sh runs one case at a time, alternating with redis-benchmark.)
//

#include <timewheel/redis/connection.hpp>

#include <test/support/allocation_counter.hpp>

#include <boost/asio/io_context.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

namespace net = boost::asio;
namespace redis = timewheel::redis;
using clock_type = std::chrono::steady_clock;

namespace {

struct options {
    redis::config cfg;
    std::size_t requests = 200000;
    std::size_t rtt_requests = 50000;
    std::vector<std::size_t> depths = {1, 16, 256};
    std::string cases = "batch,window,rtt";
};

options parse(int argc, char** argv) {
    options o;
    o.cfg.health_check_interval = std::chrono::milliseconds(0);
    for (int i = 1; i + 1 < argc; i += 2) {
        const std::string k = argv[i];
        const std::string v = argv[i + 1];
        if (k == "--port") {
            o.cfg.port = static_cast<std::uint16_t>(std::stoi(v));
        } else if (k == "--host") {
            o.cfg.host = v;
        } else if (k == "--socket") {
            o.cfg.unix_socket = v;
        } else if (k == "--requests") {
            o.requests = std::stoul(v);
        } else if (k == "--rtt-requests") {
            o.rtt_requests = std::stoul(v);
        } else if (k == "--cases") {
            o.cases = v;
        } else if (k == "--depths") {
            o.depths.clear();
            for (std::size_t pos = 0; pos < v.size();) {
                auto end = v.find(',', pos);
                o.depths.push_back(std::stoul(v.substr(pos, end - pos)));
                pos = end == std::string::npos ? v.size() : end + 1;
            }
        } else {
            std::fprintf(stderr, "unknown option %s\n", k.c_str());
            std::exit(2);
        }
    }
    return o;
}

void report(const char* name, std::size_t depth, std::size_t n, double seconds, double avg_ms,
            double p50_ms, double p99_ms, double allocs) {
    const std::string label = depth ? std::string(name) + "/" + std::to_string(depth) : name;
    std::printf("%s,%zu,%.4f,%.0f,%.4f,%.4f,%.4f,%.3f\n", label.c_str(), n, seconds,
                static_cast<double>(n) / seconds, avg_ms, p50_ms, p99_ms, allocs);
    std::fflush(stdout);
}

struct bench {
    net::io_context io{1};
    redis::connection conn;
    std::vector<redis::request> reqs;
    std::vector<redis::response> resps;
    std::size_t failures = 0;

    explicit bench(const redis::config& cfg)
        : conn(io, cfg) {}

    void slots(std::size_t depth) {
        while (reqs.size() < depth) {
            reqs.emplace_back().push("SET", "key:__rand_int__", "xxx");
            resps.emplace_back();
        }
    }

    void warm() {
        slots(1);
        bool done = false;
        conn.async_exec(reqs[0], resps[0], [&](auto ec, std::size_t) {
            failures += ec ? 1 : 0;
            done = true;
        });
        while (!done) {
            io.run_one();
        }
    }

    // P at once, wait for all, repeat: redis-benchmark's pipelining.
    double batch(std::size_t depth, std::size_t n) {
        slots(depth);
        std::size_t done = 0;
        const auto start = clock_type::now();
        for (std::size_t issued = 0; issued < n;) {
            const std::size_t k = std::min(depth, n - issued);
            const std::size_t target = done + k;
            for (std::size_t s = 0; s < k; ++s) {
                conn.async_exec(reqs[s], resps[s], [&](auto ec, std::size_t) {
                    failures += ec ? 1 : 0;
                    ++done;
                });
            }
            issued += k;
            while (done < target) {
                io.run_one();
            }
        }
        return std::chrono::duration<double>(clock_type::now() - start).count();
    }

    // P always in flight.
    double window(std::size_t depth, std::size_t n) {
        slots(depth);
        std::size_t done = 0;
        std::size_t issued = 0;
        std::function<void(std::size_t)> issue = [&](std::size_t s) {
            ++issued;
            conn.async_exec(reqs[s], resps[s], [&, s](auto ec, std::size_t) {
                failures += ec ? 1 : 0;
                ++done;
                if (issued < n) {
                    issue(s);
                }
            });
        };
        const auto start = clock_type::now();
        for (std::size_t s = 0; s < std::min(depth, n); ++s) {
            issue(s);
        }
        while (done < n) {
            io.run_one();
        }
        return std::chrono::duration<double>(clock_type::now() - start).count();
    }

    void rtt(std::size_t n, bool print) {
        slots(1);
        std::vector<double> ms;
        ms.reserve(n);
        const auto before = timewheel::test::allocations_so_far();
        const auto start = clock_type::now();
        for (std::size_t i = 0; i < n; ++i) {
            bool done = false;
            const auto t0 = clock_type::now();
            conn.async_exec(reqs[0], resps[0], [&](auto ec, std::size_t) {
                failures += ec ? 1 : 0;
                done = true;
            });
            while (!done) {
                io.run_one();
            }
            ms.push_back(std::chrono::duration<double, std::milli>(clock_type::now() - t0).count());
        }
        const double seconds = std::chrono::duration<double>(clock_type::now() - start).count();
        const auto allocs = timewheel::test::allocations_so_far() - before;
        double sum = 0;
        for (double m : ms) {
            sum += m;
        }
        std::sort(ms.begin(), ms.end());
        if (!print) {
            return;
        }
        report("rtt", 0, n, seconds, sum / static_cast<double>(n), ms[n / 2], ms[n * 99 / 100],
               static_cast<double>(allocs) / static_cast<double>(n) + 0.0);
    }
};

} // namespace

int main(int argc, char** argv) {
    const options o = parse(argc, argv);
    bench b(o.cfg);
    b.warm();
    std::printf("name,requests,seconds,requests_per_second,avg_ms,p50_ms,p99_ms,"
                "allocs_per_request\n");
    const auto has = [&](const char* c) { return o.cases.find(c) != std::string::npos; };
    for (std::size_t depth : o.depths) {
        if (!has("batch")) {
            break;
        }
        b.batch(depth, std::min<std::size_t>(o.requests, 20000)); // warm this depth
        const auto before = timewheel::test::allocations_so_far();
        const double s = b.batch(depth, o.requests);
        const auto allocs = timewheel::test::allocations_so_far() - before;
        report("set/batch", depth, o.requests, s, 0, 0, 0,
               static_cast<double>(allocs) / static_cast<double>(o.requests));
    }
    for (std::size_t depth : o.depths) {
        if (!has("window")) {
            break;
        }
        b.window(depth, std::min<std::size_t>(o.requests, 20000));
        const auto before = timewheel::test::allocations_so_far();
        const double s = b.window(depth, o.requests);
        const auto allocs = timewheel::test::allocations_so_far() - before;
        report("set/window", depth, o.requests, s, 0, 0, 0,
               static_cast<double>(allocs) / static_cast<double>(o.requests));
    }
    if (has("rtt")) {
        b.rtt(std::min<std::size_t>(o.rtt_requests, 2000), false); // warm
        b.rtt(o.rtt_requests, true);
    }
    if (b.failures) {
        std::fprintf(stderr, "%zu requests failed\n", b.failures);
        return 1;
    }
}
