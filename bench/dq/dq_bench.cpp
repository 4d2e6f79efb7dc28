//
// bench/dq/dq_bench.cpp
//
// timewheel::dq measured the way bench/bullmq/bench.js measures BullMQ, against the same
// redis-server in the same run (scripts/bench-dq.sh runs both, FLUSHALL between them). Prints
// one JSON object per line, in the same schema as bench.js.
//
//   throughput  N tasks submitted first (dq::queue, 1024 submits in flight), due spread evenly
//               over --window-ms that starts after the submit is expected to end (the submit
//               rate is calibrated first on a scratch queue, then FLUSHALL); then --workers
//               worker processes (this program, `worker` mode: one io_context, one
//               redis_store, one dq::worker, a no-op handler). Tasks per second =
//               N / (last ack - max(first due, workers ready)); an ack is counted when the
//               store's acknowledge completed with `ok` (a decorator of dq::store in the
//               worker, so the figure does not depend on how the worker reports). With
//               --memory: Redis `used_memory` before and after the submit, divided by N.
//               Redis' own CPU time (INFO cpu) and script time (INFO commandstats) over the
//               drain, per task: where the time goes.
//   lateness    N tasks due one per 1000/--rate ms, all submitted ahead; one worker process;
//               lateness = handler start - due, both on this machine's wall clock
//               (system_clock; Redis TIME reads the same CLOCK_REALTIME, so this is the
//               store's clock too).
//   ceiling     the store's scripts alone, no worker and no wheel: N tasks due now, then
//               claim (batch --batch) -> start -> acknowledge in a loop, --depth loops in
//               flight; tasks per second, and Redis' time per task in each script (three
//               phases over N more tasks, CONFIG RESETSTAT + INFO commandstats around each).
//
// Allocations per task are counted in the worker after warm-up (the first 10% of the acks)
// with test/support's replaced operator new: everything the worker process allocates (the
// Redis connection, the store, the worker, the wheel), divided by the tasks acknowledged.
//
// Usage: dq_bench throughput|lateness|ceiling --port P [--n N] [--workers W] [--window-ms MS]
//                 [--payload BYTES] [--rate R] [--memory] [--queue NAME] [--batch B]
//                 [--depth D] [--concurrency C] [--lead-ms MS]
//

#include <timewheel/dq/queue.hpp>
#include <timewheel/redis/connection.hpp>

#if __has_include(<timewheel/dq/redis_store.hpp>)
#include <timewheel/dq/redis_store.hpp>
#define TIMEWHEEL_DQ_BENCH_HAS_STORE 1
#endif
#if __has_include(<timewheel/dq/worker.hpp>)
#include <timewheel/dq/worker.hpp>
#define TIMEWHEEL_DQ_BENCH_HAS_WORKER 1
#endif

#include <test/dq/support/forwarding_store.hpp>
#include <test/support/allocation_counter.hpp>

#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cinttypes>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include <poll.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

extern char** environ;

namespace net = boost::asio;
namespace dq = timewheel::dq;
namespace redis = timewheel::redis;
using boost::system::error_code;
using namespace std::chrono_literals;

namespace {

// --- Options ---------------------------------------------------------------------------------

struct options {
    std::string mode;
    std::uint16_t port = 6379;
    std::size_t n = 100000;
    std::size_t workers = 1;
    std::int64_t window_ms = 1000;
    std::size_t payload = 100;
    double rate = 1000;
    bool memory = false;
    std::string queue = "bench";
    std::size_t batch = 256;
    std::size_t depth = 4;
    std::size_t concurrency = 1024;
    std::int64_t lead_ms = 0;
    bool keep_lateness = false; // worker mode: report every lateness sample
};

options parse(int argc, char** argv) {
    if (argc < 2) {
        std::fprintf(stderr, "usage: dq_bench throughput|lateness|ceiling --port P [...]\n");
        std::exit(2);
    }
    options o;
    o.mode = argv[1];
    for (int i = 2; i < argc; ++i) {
        const std::string k = argv[i];
        const auto v = [&]() -> std::string {
            if (i + 1 >= argc) {
                std::fprintf(stderr, "%s needs a value\n", k.c_str());
                std::exit(2);
            }
            return argv[++i];
        };
        if (k == "--port") {
            o.port = static_cast<std::uint16_t>(std::stoi(v()));
        } else if (k == "--n") {
            o.n = std::stoul(v());
        } else if (k == "--workers") {
            o.workers = std::stoul(v());
        } else if (k == "--window-ms") {
            o.window_ms = std::stoll(v());
        } else if (k == "--payload") {
            o.payload = std::stoul(v());
        } else if (k == "--rate") {
            o.rate = std::stod(v());
        } else if (k == "--memory") {
            o.memory = true;
        } else if (k == "--queue") {
            o.queue = v();
        } else if (k == "--batch") {
            o.batch = std::stoul(v());
        } else if (k == "--depth") {
            o.depth = std::stoul(v());
        } else if (k == "--concurrency") {
            o.concurrency = std::stoul(v());
        } else if (k == "--lead-ms") {
            o.lead_ms = std::stoll(v());
        } else if (k == "--keep-lateness") {
            o.keep_lateness = true;
        } else {
            std::fprintf(stderr, "unknown option %s\n", k.c_str());
            std::exit(2);
        }
    }
    return o;
}

// Wall clock in milliseconds, fractional: the clock Redis TIME reads on this machine.
double wall_ms() {
    return std::chrono::duration<double, std::milli>(
               std::chrono::system_clock::now().time_since_epoch())
        .count();
}

[[maybe_unused]] std::int64_t wall_ms_int() {
    return std::chrono::duration_cast<std::chrono::milliseconds>(
               std::chrono::system_clock::now().time_since_epoch())
        .count();
}

[[noreturn]] void fail(const std::string& what) {
    std::fprintf(stderr, "dq_bench: %s\n", what.c_str());
    std::exit(1);
}

void check(const error_code& ec, const char* what) {
    if (ec) {
        fail(std::string(what) + ": " + ec.message());
    }
}

// Runs `io` until `done` is true.
void run_until(net::io_context& io, const bool& done) {
    while (!done) {
        if (io.stopped()) {
            io.restart();
        }
        io.run_one();
    }
}

// --- A plain Redis connection for FLUSHALL, INFO and CONFIG RESETSTAT -----------------------

struct admin {
    net::io_context& io;
    redis::connection conn;

    admin(net::io_context& ctx, std::uint16_t port)
        : io(ctx)
        , conn(ctx, [&] {
            redis::config c;
            c.port = port;
            c.health_check_interval = 0ms;
            return c;
        }()) {}

    // Sends one command and returns its reply as a string (or an integer as text).
    template <typename... Args>
    std::string call(const char* cmd, const Args&... args) {
        redis::request req;
        req.push(cmd, args...);
        redis::response resp;
        bool done = false;
        error_code err;
        conn.async_exec(req, resp, [&](error_code ec, std::size_t) {
            err = ec;
            done = true;
        });
        run_until(io, done);
        check(err, cmd);
        const auto r = resp.at(0);
        r.throw_if_error();
        if (r.type() == redis::reply_type::integer) {
            return std::to_string(r.as_integer());
        }
        return std::string(r.as_string());
    }

    // A field of INFO <section> as a number.
    double info(const char* section, const std::string& field) {
        const std::string text = call("INFO", section);
        const auto at = text.find("\n" + field + ":");
        if (at == std::string::npos) {
            return 0;
        }
        return std::strtod(text.c_str() + at + field.size() + 2, nullptr);
    }

    // INFO commandstats: command -> {calls, usec}.
    std::map<std::string, std::pair<double, double>> commandstats() {
        std::map<std::string, std::pair<double, double>> out;
        std::istringstream in(call("INFO", "commandstats"));
        std::string line;
        while (std::getline(in, line)) {
            if (line.rfind("cmdstat_", 0) != 0) {
                continue;
            }
            const auto colon = line.find(':');
            const std::string name = line.substr(8, colon - 8);
            double calls = 0;
            double usec = 0;
            std::sscanf(line.c_str() + colon + 1, "calls=%lf,usec=%lf", &calls, &usec);
            out[name] = {calls, usec};
        }
        return out;
    }

    double cpu_seconds() { return info("cpu", "used_cpu_sys") + info("cpu", "used_cpu_user"); }
};

// What Redis spent between two snapshots: CPU seconds, and commandstats.
struct redis_cost {
    double cpu_s = 0;
    double script_usec = 0; // EVALSHA + EVAL + FCALL
    double all_usec = 0;
    double script_calls = 0;
    std::string top; // the three commands with the most usec, "name:usec/calls"
};

struct redis_probe {
    admin& a;
    double cpu0 = 0;

    explicit redis_probe(admin& adm)
        : a(adm) {
        a.call("CONFIG", "RESETSTAT");
        cpu0 = a.cpu_seconds();
    }

    redis_cost take(std::size_t top_n = 3) {
        redis_cost c;
        c.cpu_s = a.cpu_seconds() - cpu0;
        std::vector<std::pair<double, std::string>> by_usec;
        for (const auto& [name, cu] : a.commandstats()) {
            if (name == "info" || name == "config") {
                continue;
            }
            c.all_usec += cu.second;
            if (name == "evalsha" || name == "eval" || name == "fcall" || name == "evalsha_ro") {
                c.script_usec += cu.second;
                c.script_calls += cu.first;
            }
            by_usec.emplace_back(cu.second, name + ":" + std::to_string(std::llround(cu.second)) +
                                                "us/" + std::to_string(std::llround(cu.first)));
        }
        std::sort(by_usec.rbegin(), by_usec.rend());
        for (std::size_t i = 0; i < by_usec.size() && i < top_n; ++i) {
            c.top += (i ? " " : "") + by_usec[i].second;
        }
        return c;
    }
};

// --- The store ------------------------------------------------------------------------------

#ifdef TIMEWHEEL_DQ_BENCH_HAS_STORE
// The one place that knows how a redis_store is made.
std::unique_ptr<dq::redis_store> make_store(net::io_context& io, const options& o,
                                            const std::string& queue) {
    redis::config cfg;
    cfg.port = o.port;
    cfg.health_check_interval = 0ms;
    dq::redis_store_options so;
    so.name = queue;
    return std::make_unique<dq::redis_store>(io.get_executor(), cfg, so);
}
#endif

// Counts what a worker's store calls cost: acks that came back `ok` (the throughput's end),
// and the calls and their batch sizes. Forwards everything else.
class counting_store final : public timewheel::test::forwarding_store {
public:
    explicit counting_store(dq::store& inner)
        : forwarding_store(inner) {}

    std::size_t acked = 0;
    double last_ack_ms = 0;
    std::size_t claims = 0, claimed = 0, starts = 0, started = 0, ack_calls = 0;
    std::function<void()> on_ack; // after each acknowledge completion

private:
    void do_claim(const dq::claim_options& opt,
                  handler<void(error_code, dq::claim_result)> h) override {
        ++claims;
        inner().claim(opt, [this, h = std::move(h)](error_code ec, dq::claim_result r) mutable {
            claimed += r.tasks.size();
            std::move(h)(ec, std::move(r));
        });
    }
    void do_start(std::vector<dq::lease_ref> leases,
                  handler<void(error_code, std::vector<dq::start_result>)> h) override {
        ++starts;
        started += leases.size();
        inner().start(std::move(leases), std::move(h));
    }
    void do_acknowledge(std::vector<dq::ack> acks,
                        handler<void(error_code, std::vector<dq::ack_result>)> h) override {
        ++ack_calls;
        inner().acknowledge(
            std::move(acks),
            [this, h = std::move(h)](error_code ec, std::vector<dq::ack_result> r) mutable {
                if (!ec) {
                    acked += static_cast<std::size_t>(
                        std::count(r.begin(), r.end(), dq::ack_result::ok));
                    last_ack_ms = wall_ms();
                }
                std::move(h)(ec, std::move(r));
                if (on_ack) {
                    on_ack();
                }
            });
    }
};

#ifdef TIMEWHEEL_DQ_BENCH_HAS_STORE

// Submits tasks [0, n) of queue `q`, due at due(i), `window` in flight. Returns seconds.
double submit_all(net::io_context& io, dq::queue& q, std::size_t n,
                  const std::function<std::int64_t(std::size_t)>& due, std::size_t payload_bytes,
                  const std::string& prefix = "t") {
    const std::string payload(payload_bytes, 'x');
    const std::size_t window = 1024;
    std::size_t next = 0;
    std::size_t done = 0;
    std::size_t not_created = 0;
    error_code first_error;
    std::function<void()> issue = [&] {
        const std::size_t i = next++;
        dq::task t;
        t.id = prefix + std::to_string(i);
        t.due = dq::time_point(dq::duration(due(i)));
        t.payload = payload;
        q.async_submit(std::move(t), [&](error_code ec, dq::submit_result r, std::string) {
            ++done;
            if (ec && !first_error) {
                first_error = ec;
            }
            not_created += r != dq::submit_result::created;
            if (next < n) {
                issue();
            }
        });
    };
    const double t0 = wall_ms();
    for (std::size_t k = 0; k < std::min(window, n); ++k) {
        issue();
    }
    bool all = n == 0;
    while (!all) {
        io.run_one();
        all = done == n;
    }
    check(first_error, "submit");
    if (not_created) {
        fail(std::to_string(not_created) + " submits did not create their task");
    }
    return (wall_ms() - t0) / 1000;
}

// How many submits per second this run can expect (on a scratch queue, then FLUSHALL).
double calibrate(net::io_context& io, admin& a, const options& o) {
    // Two rounds, the first one to warm up (script loading); the rate of the second.
    const std::size_t n = std::clamp<std::size_t>(o.n / 20, 5000, 20000);
    double rate = 0;
    for (int round = 0; round < 2; ++round) {
        auto store = make_store(io, o, o.queue + "-calibrate");
        dq::queue q(*store);
        const std::int64_t far = wall_ms_int() + 3600000;
        const auto at = [&](std::size_t) { return far; };
        rate = static_cast<double>(n) / submit_all(io, q, n, at, o.payload);
        store.reset();
        a.call("FLUSHALL");
    }
    return rate;
}

// --- Worker processes -------------------------------------------------------------------------

struct child {
    pid_t pid = -1;
    int out = -1;
    std::string buffer;
    double ready_ms = 0;
    std::size_t acked = 0;
    bool final = false;
    std::size_t final_acked = 0;
    double first_start_ms = 0, last_ack_ms = 0, allocs_per_task = 0;
    std::string counters;
    std::vector<double> lateness;
};

child spawn_worker(const options& o, bool keep_lateness) {
    int fds[2];
    if (pipe(fds) != 0) {
        fail("pipe");
    }
    std::vector<std::string> args = {"dq_bench",      "worker",
                                     "--port",        std::to_string(o.port),
                                     "--queue",       o.queue,
                                     "--batch",       std::to_string(o.batch),
                                     "--concurrency", std::to_string(o.concurrency),
                                     "--n",           std::to_string(o.n)};
    if (keep_lateness) {
        args.push_back("--keep-lateness");
    }
    std::vector<char*> argv;
    for (auto& s : args) {
        argv.push_back(s.data());
    }
    argv.push_back(nullptr);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, fds[1], STDOUT_FILENO);
    posix_spawn_file_actions_addclose(&actions, fds[0]);
    posix_spawn_file_actions_addclose(&actions, fds[1]);
    child c;
    if (posix_spawn(&c.pid, "/proc/self/exe", &actions, nullptr, argv.data(), environ) != 0) {
        fail("posix_spawn");
    }
    posix_spawn_file_actions_destroy(&actions);
    close(fds[1]);
    c.out = fds[0];
    return c;
}

// Reads what the children wrote, for up to `ms`.
void pump(std::vector<child>& cs, int ms) {
    std::vector<pollfd> p;
    for (auto& c : cs) {
        p.push_back({c.out, POLLIN, 0});
    }
    if (::poll(p.data(), p.size(), ms) <= 0) {
        return;
    }
    for (std::size_t i = 0; i < cs.size(); ++i) {
        if (!(p[i].revents & (POLLIN | POLLHUP))) {
            continue;
        }
        char buf[65536];
        const ssize_t k = ::read(cs[i].out, buf, sizeof buf);
        if (k <= 0) {
            continue;
        }
        auto& c = cs[i];
        c.buffer.append(buf, static_cast<std::size_t>(k));
        std::size_t eol;
        while ((eol = c.buffer.find('\n')) != std::string::npos) {
            const std::string line = c.buffer.substr(0, eol);
            c.buffer.erase(0, eol + 1);
            std::istringstream in(line);
            std::string what;
            in >> what;
            if (what == "ready") {
                in >> c.ready_ms;
            } else if (what == "progress") {
                in >> c.acked;
            } else if (what == "late") {
                double v;
                while (in >> v) {
                    c.lateness.push_back(v);
                }
            } else if (what == "final") {
                in >> c.final_acked >> c.first_start_ms >> c.last_ack_ms >> c.allocs_per_task;
                std::getline(in, c.counters);
                c.final = true;
            }
        }
    }
}

template <typename Pred>
void wait_for(std::vector<child>& cs, Pred pred, const char* what, double timeout_ms) {
    const double end = wall_ms() + timeout_ms;
    while (!pred()) {
        if (wall_ms() > end) {
            for (auto& c : cs) {
                kill(c.pid, SIGKILL);
            }
            fail(std::string("timed out waiting for ") + what);
        }
        pump(cs, 5);
    }
}

void stop_workers(std::vector<child>& cs) {
    for (auto& c : cs) {
        kill(c.pid, SIGTERM);
    }
    wait_for(
        cs, [&] { return std::all_of(cs.begin(), cs.end(), [](auto& c) { return c.final; }); },
        "the workers to stop", 60000);
    for (auto& c : cs) {
        int status = 0;
        waitpid(c.pid, &status, 0);
        close(c.out);
    }
}

std::size_t total_acked(const std::vector<child>& cs) {
    std::size_t s = 0;
    for (auto& c : cs) {
        s += c.acked;
    }
    return s;
}

void print_cost(const redis_cost& c, std::size_t n, double seconds) {
    std::printf(",\"redis_cpu_us_per_task\":%.2f,\"redis_cpu_share\":%.2f,"
                "\"redis_script_us_per_task\":%.2f,\"redis_cmd_us_per_task\":%.2f,"
                "\"redis_script_calls\":%.0f,\"redis_top\":\"%s\"",
                c.cpu_s * 1e6 / static_cast<double>(n), c.cpu_s / seconds,
                c.script_usec / static_cast<double>(n), c.all_usec / static_cast<double>(n),
                c.script_calls, c.top.c_str());
}

// --- throughput ---------------------------------------------------------------------------

int throughput(const options& o) {
    net::io_context io(1);
    admin a(io, o.port);
    a.call("FLUSHALL");
    const double rate = calibrate(io, a, o);
    const double before = a.info("memory", "used_memory");
    auto store = make_store(io, o, o.queue);
    dq::queue q(*store);
    const double expected_ms = static_cast<double>(o.n) / rate * 1000;
    const std::int64_t lead =
        o.lead_ms ? o.lead_ms : static_cast<std::int64_t>(expected_ms * 1.1 + 1000);
    const std::int64_t t0 = wall_ms_int();
    const std::int64_t first = t0 + lead;
    const auto due = [&](std::size_t i) {
        return first + static_cast<std::int64_t>(i) * o.window_ms / static_cast<std::int64_t>(o.n);
    };
    const double submit_s = submit_all(io, q, o.n, due, o.payload);
    const std::int64_t submit_end = wall_ms_int();
    const double after = a.info("memory", "used_memory");

    redis_probe probe(a);
    std::vector<child> cs;
    for (std::size_t w = 0; w < o.workers; ++w) {
        cs.push_back(spawn_worker(o, false));
    }
    wait_for(
        cs, [&] { return std::all_of(cs.begin(), cs.end(), [](auto& c) { return c.ready_ms; }); },
        "the workers to be ready", 30000);
    double ready = 0;
    for (auto& c : cs) {
        ready = std::max(ready, c.ready_ms);
    }
    wait_for(
        cs, [&] { return total_acked(cs) >= o.n; }, "every ack",
        static_cast<double>(lead) + 600000);
    const redis_cost cost = probe.take();
    stop_workers(cs);
    std::size_t acked = 0;
    double last_ack = 0, first_start = 1e300, allocs = 0;
    std::string counters;
    for (auto& c : cs) {
        acked += c.final_acked;
        last_ack = std::max(last_ack, c.last_ack_ms);
        first_start = std::min(first_start, c.first_start_ms);
        allocs += c.allocs_per_task / static_cast<double>(cs.size());
        counters += c.counters;
    }
    const double from = std::max(static_cast<double>(first), ready);
    const double seconds = (last_ack - from) / 1000;
    std::printf("{\"system\":\"timewheel\",\"case\":\"throughput\",\"n\":%zu,\"workers\":%zu,"
                "\"batch\":%zu,\"concurrency\":%zu,\"window_ms\":%" PRId64
                ",\"submit_s\":%.3f,\"submit_per_s\":%.0f,\"due_after_submit_ms\":%" PRId64
                ",\"workers_ready_after_due_ms\":%.1f,\"first_start_after_due_ms\":%.1f,"
                "\"seconds\":%.3f,\"tasks_per_s\":%.0f,\"acked\":%zu,\"allocs_per_task\":%.2f,"
                "\"worker_counters\":\"%s\"",
                o.n, o.workers, o.batch, o.concurrency, o.window_ms, submit_s,
                static_cast<double>(o.n) / submit_s, first - submit_end,
                ready - static_cast<double>(first), first_start - static_cast<double>(first),
                seconds, static_cast<double>(o.n) / seconds, acked, allocs, counters.c_str());
    print_cost(cost, o.n, seconds);
    if (o.memory) {
        std::printf(",\"used_memory_before\":%.0f,\"used_memory_after\":%.0f,"
                    "\"bytes_per_task\":%.1f",
                    before, after, (after - before) / static_cast<double>(o.n));
    }
    std::printf("}\n");
    return acked >= o.n ? 0 : 1;
}

// --- lateness -----------------------------------------------------------------------------

int lateness(const options& o) {
    net::io_context io(1);
    admin a(io, o.port);
    a.call("FLUSHALL");
    const double rate = calibrate(io, a, o);
    auto store = make_store(io, o, o.queue);
    dq::queue q(*store);
    const double interval = 1000.0 / o.rate;
    const std::int64_t t0 = wall_ms_int();
    // All submitted ahead of the first due time, with a margin.
    const double expected_ms = static_cast<double>(o.n) / rate * 1000;
    const std::int64_t first =
        t0 + (o.lead_ms ? o.lead_ms : static_cast<std::int64_t>(expected_ms * 1.5 + 2000));
    const auto due = [&](std::size_t i) {
        return first + static_cast<std::int64_t>(static_cast<double>(i) * interval);
    };
    submit_all(io, q, o.n, due, o.payload);
    const std::int64_t submit_end = wall_ms_int();
    redis_probe probe(a);
    std::vector<child> cs;
    cs.push_back(spawn_worker(o, true));
    wait_for(
        cs, [&] { return cs[0].ready_ms > 0; }, "the worker to be ready", 30000);
    wait_for(
        cs, [&] { return cs[0].acked >= o.n; }, "every ack",
        static_cast<double>(first - wall_ms_int()) + 600000);
    // Redis over the whole run (the wait before the first due time included).
    const double span_s = (wall_ms() - static_cast<double>(submit_end)) / 1000;
    const redis_cost cost = probe.take();
    stop_workers(cs);
    auto late = cs[0].lateness;
    if (late.empty()) {
        fail("no lateness samples");
    }
    std::sort(late.begin(), late.end());
    const auto pct = [&](double p) {
        return late[std::min(late.size() - 1,
                             static_cast<std::size_t>(static_cast<double>(late.size()) * p))];
    };
    const auto early = std::count_if(late.begin(), late.end(), [](double x) { return x < 0; });
    std::printf("{\"system\":\"timewheel\",\"case\":\"lateness\",\"n\":%zu,\"rate\":%.0f,"
                "\"due_after_submit_ms\":%" PRId64 ",\"samples\":%zu,\"min_ms\":%.3f,"
                "\"p50_ms\":%.3f,\"p99_ms\":%.3f,\"max_ms\":%.3f,\"early\":%td,"
                "\"allocs_per_task\":%.2f,\"worker_counters\":\"%s\",\"scripts_per_s\":%.0f",
                o.n, o.rate, first - submit_end, late.size(), late.front(), pct(0.5), pct(0.99),
                late.back(), early, cs[0].allocs_per_task, cs[0].counters.c_str(),
                cost.script_calls / span_s);
    print_cost(cost, o.n, span_s);
    std::printf("}\n");
    return 0;
}

// --- memory: Redis bytes per delayed task, and the submit rate -----------------------------

int memory(const options& o) {
    net::io_context io(1);
    admin a(io, o.port);
    a.call("FLUSHALL");
    const double before = a.info("memory", "used_memory");
    auto store = make_store(io, o, o.queue);
    dq::queue q(*store);
    const std::int64_t far = wall_ms_int() + 3600000;
    const double submit_s = submit_all(
        io, q, o.n, [&](std::size_t) { return far; }, o.payload);
    const double after = a.info("memory", "used_memory");
    std::printf("{\"system\":\"timewheel\",\"case\":\"memory\",\"n\":%zu,\"submit_s\":%.3f,"
                "\"submit_per_s\":%.0f,\"used_memory_before\":%.0f,\"used_memory_after\":%.0f,"
                "\"bytes_per_task\":%.1f}\n",
                o.n, submit_s, static_cast<double>(o.n) / submit_s, before, after,
                (after - before) / static_cast<double>(o.n));
    return 0;
}

// --- ceiling: the scripts alone -------------------------------------------------------------

struct script_loop {
    net::io_context& io;
    dq::store& s;
    const options& o;
    std::size_t acked = 0;
    std::size_t empty_claims = 0;
    error_code err;

    // claim -> start -> acknowledge, `o.depth` loops in flight, until `n` acks.
    void run(std::size_t n) {
        std::size_t active = 0;
        std::function<void()> loop = [&] {
            if (acked >= n || err) {
                --active;
                return;
            }
            dq::claim_options co;
            co.horizon = 0ms;
            co.batch = o.batch;
            co.lease = 600000ms;
            co.worker = "ceiling";
            s.claim(co, [&](error_code ec, dq::claim_result r) {
                if (ec) {
                    err = ec;
                    --active;
                    return;
                }
                if (r.tasks.empty()) {
                    ++empty_claims;
                    if (empty_claims > 100000) {
                        err = dq::error::not_found;
                        --active;
                        return;
                    }
                    return loop();
                }
                auto leases = std::make_shared<std::vector<dq::lease_ref>>();
                for (auto& t : r.tasks) {
                    leases->push_back({std::move(t.id), std::move(t.token)});
                }
                s.start(*leases, [&, leases](error_code ec2, std::vector<dq::start_result>) {
                    if (ec2) {
                        err = ec2;
                        --active;
                        return;
                    }
                    std::vector<dq::ack> acks;
                    const auto now = dq::time_point(dq::duration(wall_ms_int()));
                    for (auto& l : *leases) {
                        acks.push_back({std::move(l), dq::outcome::success(), now, now});
                    }
                    s.acknowledge(std::move(acks),
                                  [&](error_code ec3, std::vector<dq::ack_result> rs) {
                                      if (ec3) {
                                          err = ec3;
                                          --active;
                                          return;
                                      }
                                      acked += static_cast<std::size_t>(
                                          std::count(rs.begin(), rs.end(), dq::ack_result::ok));
                                      loop();
                                  });
                });
            });
        };
        for (std::size_t d = 0; d < o.depth; ++d) {
            ++active;
            loop();
        }
        while (active > 0) {
            io.run_one();
        }
        check(err, "claim/start/acknowledge");
    }
};

int ceiling(const options& o) {
    net::io_context io(1);
    admin a(io, o.port);
    a.call("FLUSHALL");
    auto store = make_store(io, o, o.queue);
    dq::queue q(*store);
    const std::int64_t past = wall_ms_int() - 1000;
    submit_all(
        io, q, o.n, [&](std::size_t) { return past; }, o.payload);

    // The loop, as a worker would drive it with no wheel and no handler.
    redis_probe probe(a);
    script_loop l{io, *store, o, 0, 0, {}};
    const double t0 = wall_ms();
    l.run(o.n);
    const double seconds = (wall_ms() - t0) / 1000;
    const redis_cost cost = probe.take();
    std::printf("{\"system\":\"timewheel\",\"case\":\"ceiling\",\"n\":%zu,\"batch\":%zu,"
                "\"depth\":%zu,\"seconds\":%.3f,\"tasks_per_s\":%.0f,\"empty_claims\":%zu",
                o.n, o.batch, o.depth, seconds, static_cast<double>(l.acked) / seconds,
                l.empty_claims);
    print_cost(cost, o.n, seconds);

    // Each script on its own: claim everything, then start everything, then ack everything.
    a.call("FLUSHALL");
    auto store2 = make_store(io, o, o.queue + "-phases");
    dq::queue q2(*store2);
    submit_all(
        io, q2, o.n, [&](std::size_t) { return past; }, o.payload);
    std::vector<std::vector<dq::lease_ref>> batches;
    double claim_us = 0, start_us = 0, ack_us = 0;
    double claim_calls = 0, start_calls = 0, ack_calls = 0;
    double claim_cpu = 0, start_cpu = 0, ack_cpu = 0;
    std::string claim_top, start_top, ack_top;
    {
        redis_probe p(a);
        std::size_t got = 0;
        while (got < o.n) {
            bool done = false;
            dq::claim_options co;
            co.horizon = 0ms;
            co.batch = o.batch;
            co.lease = 600000ms;
            co.worker = "ceiling";
            store2->claim(co, [&](error_code ec, dq::claim_result r) {
                check(ec, "claim");
                auto& b = batches.emplace_back();
                for (auto& t : r.tasks) {
                    b.push_back({std::move(t.id), std::move(t.token)});
                }
                got += r.tasks.size();
                if (r.tasks.empty()) {
                    fail("claim found nothing with tasks left");
                }
                done = true;
            });
            run_until(io, done);
        }
        const auto c = p.take(12);
        claim_us = c.script_usec;
        claim_calls = c.script_calls;
        claim_cpu = c.cpu_s;
        claim_top = c.top;
    }
    {
        redis_probe p(a);
        for (auto& b : batches) {
            bool done = false;
            store2->start(b, [&](error_code ec, std::vector<dq::start_result>) {
                check(ec, "start");
                done = true;
            });
            run_until(io, done);
        }
        const auto c = p.take(12);
        start_us = c.script_usec;
        start_calls = c.script_calls;
        start_cpu = c.cpu_s;
        start_top = c.top;
    }
    {
        redis_probe p(a);
        const auto now = dq::time_point(dq::duration(wall_ms_int()));
        for (auto& b : batches) {
            std::vector<dq::ack> acks;
            for (auto& l2 : b) {
                acks.push_back({l2, dq::outcome::success(), now, now});
            }
            bool done = false;
            store2->acknowledge(std::move(acks), [&](error_code ec, std::vector<dq::ack_result>) {
                check(ec, "acknowledge");
                done = true;
            });
            run_until(io, done);
        }
        const auto c = p.take(12);
        ack_us = c.script_usec;
        ack_calls = c.script_calls;
        ack_cpu = c.cpu_s;
        ack_top = c.top;
    }
    // A claim that finds nothing: the fixed cost of the scripts, per call.
    double empty_us = 0, empty_cpu = 0, empty_calls = 0;
    {
        redis_probe p(a);
        for (int i = 0; i < 200; ++i) {
            bool done = false;
            dq::claim_options co;
            co.horizon = 0ms;
            co.batch = o.batch;
            co.worker = "ceiling";
            store2->claim(co, [&](error_code ec, dq::claim_result) {
                check(ec, "claim");
                done = true;
            });
            run_until(io, done);
        }
        const auto c = p.take();
        empty_us = c.script_usec;
        empty_cpu = c.cpu_s;
        empty_calls = c.script_calls;
    }
    std::printf(",\"empty_claim_script_us\":%.2f,\"empty_claim_cpu_us_per_script\":%.2f,"
                "\"empty_claim_scripts_per_claim\":%.1f",
                empty_us / empty_calls, empty_cpu * 1e6 / empty_calls, empty_calls / 200);
    const double n = static_cast<double>(o.n);
    std::printf(",\"claim_us_per_task\":%.2f,\"start_us_per_task\":%.2f,"
                "\"ack_us_per_task\":%.2f,\"scripts_us_per_task\":%.2f,"
                "\"scripts_ceiling_per_s\":%.0f,\"claim_scripts\":%.0f,\"start_scripts\":%.0f,"
                "\"ack_scripts\":%.0f,\"claim_batches\":%zu,\"claim_cpu_us_per_task\":%.2f,"
                "\"start_cpu_us_per_task\":%.2f,\"ack_cpu_us_per_task\":%.2f,\"claim_top\":\"%s\","
                "\"start_top\":\"%s\",\"ack_top\":\"%s\"}\n",
                claim_us / n, start_us / n, ack_us / n, (claim_us + start_us + ack_us) / n,
                n * 1e6 / (claim_us + start_us + ack_us), claim_calls, start_calls, ack_calls,
                batches.size(), claim_cpu * 1e6 / n, start_cpu * 1e6 / n, ack_cpu * 1e6 / n,
                claim_top.c_str(), start_top.c_str(), ack_top.c_str());
    return 0;
}

// --- worker mode (a child process) --------------------------------------------------------

int worker_main(const options& o) {
#ifdef TIMEWHEEL_DQ_BENCH_HAS_WORKER
    net::io_context io(1);
    auto store = make_store(io, o, o.queue);
    counting_store counted(*store);
    std::vector<double> late;
    if (o.keep_lateness) {
        late.reserve(o.n);
    }
    double first_start = 0;
    const std::size_t warm = o.n / 10;
    std::size_t allocs_at_warm = 0, acked_at_warm = 0;
    bool warmed = false;
    counted.on_ack = [&] {
        if (!warmed && counted.acked >= warm) {
            warmed = true;
            allocs_at_warm = timewheel::test::allocations_so_far();
            acked_at_warm = counted.acked;
        }
    };
    dq::worker_options wo;
    wo.claim.worker = "bench-" + std::to_string(getpid());
    wo.claim.batch = o.batch;
    wo.concurrency = o.concurrency;
    // A no-op handler: it returns its outcome, which the worker reports.
    dq::worker w(counted, wo, [&](const dq::job& j) -> dq::outcome {
        const double now = wall_ms();
        if (first_start == 0) {
            first_start = now;
        }
        if (o.keep_lateness) {
            late.push_back(now - static_cast<double>(j.due().time_since_epoch().count()));
        }
        return dq::outcome::success();
    });
    w.start();

    net::steady_timer progress(io);
    std::size_t reported = static_cast<std::size_t>(-1);
    std::function<void()> tick = [&] {
        if (counted.acked != reported) {
            reported = counted.acked;
            std::printf("progress %zu\n", reported);
            std::fflush(stdout);
        }
        progress.expires_after(20ms);
        progress.async_wait([&](error_code ec) {
            if (!ec) {
                tick();
            }
        });
    };
    std::printf("ready %.3f\n", wall_ms());
    std::fflush(stdout);
    tick();

    net::signal_set stop(io, SIGTERM, SIGINT);
    stop.async_wait([&](error_code, int) {
        progress.cancel();
        const auto allocs = timewheel::test::allocations_so_far();
        const double per_task = warmed && counted.acked > acked_at_warm
                                    ? static_cast<double>(allocs - allocs_at_warm) /
                                          static_cast<double>(counted.acked - acked_at_warm)
                                    : -1;
        // Every task the parent waited for is acknowledged: report and leave (nothing is
        // held that a graceful stop would have to give back or finish).
        {
            for (std::size_t i = 0; i < late.size(); i += 512) {
                std::printf("late");
                for (std::size_t j = i; j < std::min(late.size(), i + 512); ++j) {
                    std::printf(" %.3f", late[j]);
                }
                std::printf("\n");
            }
            const auto& st = w.stats();
            std::printf("final %zu %.3f %.3f %.3f claims=%zu/%zu starts=%zu/%zu acks=%zu/%zu "
                        "too_early=%llu stale=%llu max_running=%zu\n",
                        counted.acked, first_start, counted.last_ack_ms, per_task, counted.claims,
                        counted.claimed, counted.starts, counted.started, counted.ack_calls,
                        counted.acked, static_cast<unsigned long long>(st.too_early),
                        static_cast<unsigned long long>(st.stale), st.max_running);
            std::fflush(stdout);
            std::_Exit(0);
        }
    });
    io.run();
    return 0;
#else
    (void)o;
    std::printf("final 0 0 0 -1 no dq::worker in this build\n");
    std::fflush(stdout);
    return 2;
#endif
}

#endif // TIMEWHEEL_DQ_BENCH_HAS_STORE

} // namespace

int main(int argc, char** argv) {
    const options o = parse(argc, argv);
#ifdef TIMEWHEEL_DQ_BENCH_HAS_STORE
    try {
        if (o.mode == "throughput") {
            return throughput(o);
        }
        if (o.mode == "lateness") {
            return lateness(o);
        }
        if (o.mode == "memory") {
            return memory(o);
        }
        if (o.mode == "ceiling") {
            return ceiling(o);
        }
        if (o.mode == "worker") {
            return worker_main(o);
        }
    } catch (const std::exception& e) {
        fail(e.what());
    }
    std::fprintf(stderr, "unknown mode %s\n", o.mode.c_str());
    return 2;
#else
    std::fprintf(stderr, "dq_bench %s: this build has no dq::redis_store (branch dq-store)\n",
                 o.mode.c_str());
    return 2;
#endif
}
