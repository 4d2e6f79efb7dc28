//
// bench/dq/store_ceiling.cpp
//
// What dq::redis_store costs Redis, measured on a running redis-server (nothing else on it:
// the tool FLUSHALLs it):
//
//   memory   N delayed tasks (generated ids, P-byte payloads, due over the next hour):
//            INFO memory used_memory before and after, divided by N.
//   submit   the same submits: tasks per second of wall time (one client, `--inflight`
//            submits outstanding), and tasks per second of the scripts' own time (INFO
//            commandstats, fcall + evalsha + eval usec: what a Redis core could do if the client
//            were free). The scripts' ceiling is the figure to compare layouts by.
//   cycle    M tasks due now, then claim (batch B) -> start -> acknowledge(success) loops
//            until all are done, `--inflight` loops at once: tasks per second of wall time
//            and of the scripts' own time (claim + start + ack).
//
// Usage: store_ceiling --port N [--tasks 1000000] [--cycle-tasks 200000] [--payload 100]
//                      [--shards 64] [--buckets 1024] [--batch 256] [--inflight 8]
//                      [--phases 1] [--start-due 0]
// (--tasks 0 skips the memory and submit measures, --phases 0 the per-phase profile, --cycle 0
// stops after the cycle's submits: the difference of two runs is the cycle's own cost; --keep 1
// stops after the memory measure and leaves its tasks in Redis, to inspect.)
// Output: one line per measure, "name value unit".
//

#include <timewheel/dq/redis_store.hpp>

#include <timewheel/redis/connection.hpp>

#include <boost/asio/io_context.hpp>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

namespace dq = timewheel::dq;
namespace redis = timewheel::redis;
using clock_type = std::chrono::steady_clock;
using boost::system::error_code;

namespace {

struct options {
    redis::config cfg;
    std::size_t tasks = 1000000;
    std::size_t cycle_tasks = 200000;
    std::size_t payload = 100;
    std::size_t shards = 64;
    std::size_t buckets = 1024;
    std::size_t batch = 256;
    std::size_t inflight = 8;
    bool memory = true; // the memory and submit measures (--tasks 0: skipped)
    bool phases = true;
    bool start_due = false; // --start-due 1: claims start due tasks (no start calls)
    bool cycle = true;
    bool keep = false; // --keep 1: stop after the memory measure, its tasks left in Redis      //
                       // --cycle 0: the cycle's tasks are submitted, not run (its baseline)
};

options parse(int argc, char** argv) {
    options o;
    o.cfg.health_check_interval = std::chrono::milliseconds(0);
    bool port = false;
    for (int i = 1; i + 1 < argc; i += 2) {
        const std::string k = argv[i];
        const auto v = std::stoull(argv[i + 1]);
        if (k == "--port") {
            o.cfg.port = static_cast<std::uint16_t>(v);
            port = true;
        } else if (k == "--tasks") {
            o.tasks = v;
        } else if (k == "--cycle-tasks") {
            o.cycle_tasks = v;
        } else if (k == "--payload") {
            o.payload = v;
        } else if (k == "--shards") {
            o.shards = v;
        } else if (k == "--buckets") {
            o.buckets = v;
        } else if (k == "--batch") {
            o.batch = v;
        } else if (k == "--inflight") {
            o.inflight = v;
        } else if (k == "--start-due") {
            o.start_due = v != 0;
        } else if (k == "--keep") {
            o.keep = v != 0;
        } else if (k == "--cycle") {
            o.cycle = v != 0;
        } else if (k == "--phases") {
            o.phases = v != 0;
        } else {
            throw std::invalid_argument("unknown option " + k);
        }
    }
    o.memory = o.tasks > 0;
    if (!port) {
        throw std::invalid_argument("usage: store_ceiling --port N [options]; see the source");
    }
    return o;
}

class admin {
public:
    admin(boost::asio::io_context& io, const redis::config& cfg)
        : io_(io)
        , conn_(io, cfg) {}

    // Runs one command and returns its reply as text (a string or an integer).
    std::string run(std::vector<std::string> words) {
        redis::request req;
        req.push_range(words.front(), std::vector<std::string>(words.begin() + 1, words.end()));
        redis::response resp;
        bool done = false;
        error_code ec;
        conn_.async_exec(req, resp, [&](error_code e, std::size_t) {
            ec = e;
            done = true;
        });
        while (!done) {
            io_.run_one();
        }
        if (ec) {
            throw std::runtime_error("admin command failed: " + ec.message());
        }
        auto r = resp[0];
        if (r.is_integer()) {
            return std::to_string(r.as_integer());
        }
        return std::string(r.as_string());
    }

    // A field of INFO <section> ("used_memory").
    long long info(const std::string& section, const std::string& field) {
        const auto text = run({"INFO", section});
        const auto at = text.find(field + ":");
        if (at == std::string::npos) {
            return 0;
        }
        return std::atoll(text.c_str() + at + field.size() + 1);
    }

    // CPU seconds of Redis's main thread so far (user + system): what the server really
    // spent, whatever else the machine runs.
    double cpu_main() {
        const auto text = run({"INFO", "cpu"});
        double total = 0;
        for (const std::string f : {"used_cpu_user_main_thread:", "used_cpu_sys_main_thread:"}) {
            const auto at = text.find(f);
            if (at != std::string::npos) {
                total += std::atof(text.c_str() + at + f.size());
            }
        }
        return total;
    }

    // Microseconds Redis spent in scripts since the last CONFIG RESETSTAT.
    long long script_usec() {
        const auto text = run({"INFO", "commandstats"});
        long long total = 0;
        for (const std::string cmd : {"cmdstat_fcall:", "cmdstat_evalsha:", "cmdstat_eval:"}) {
            const auto at = text.find(cmd);
            if (at == std::string::npos) {
                continue;
            }
            const auto u = text.find("usec=", at);
            total += std::atoll(text.c_str() + u + 5);
        }
        return total;
    }

private:
    boost::asio::io_context& io_;
    redis::connection conn_;
};

double seconds_since(clock_type::time_point t) {
    return std::chrono::duration<double>(clock_type::now() - t).count();
}

// Submits n tasks, `inflight` at a time; `due(i)` gives each one's due time.
void submit_all(boost::asio::io_context& io, dq::redis_store& store, const options& o,
                std::size_t n, const std::function<dq::due_time(std::size_t)>& due) {
    std::size_t issued = 0;
    std::size_t completed = 0;
    const std::string payload(o.payload, 'x');
    std::function<void()> issue = [&] {
        if (issued == n) {
            return;
        }
        dq::task t;
        t.due = due(issued++);
        t.payload = payload;
        store.submit(std::move(t), [&](error_code ec, dq::submit_result, std::string) {
            if (ec) {
                std::fprintf(stderr, "submit failed: %s\n", ec.message().c_str());
                std::exit(1);
            }
            ++completed;
            issue();
        });
    };
    for (std::size_t i = 0; i < o.inflight * 64 && i < n; ++i) {
        issue();
    }
    while (completed < n) {
        io.run_one();
    }
}

// Keeps a wake-up wait open, as dq::worker does: with it the store trusts its cache of each
// shard's next due time and claims only from shards with something due.
void listen(dq::redis_store& store) {
    store.wait_wakeup([&store](error_code ec, dq::time_point) {
        if (!ec) {
            listen(store);
        }
    });
}

// claim -> start -> ack loops until `n` tasks are acknowledged.
void cycle_all(boost::asio::io_context& io, dq::redis_store& store, const options& o,
               std::size_t n) {
    std::size_t acked = 0;
    std::size_t idle_loops = 0;
    std::size_t active = o.inflight;
    std::function<void()> loop = [&] {
        if (acked >= n) {
            --active;
            return;
        }
        dq::claim_options c;
        c.batch = o.batch;
        c.horizon = dq::duration(0);
        c.worker = "bench";
        c.start_due = o.start_due ? o.batch : 0;
        store.claim(c, [&](error_code ec, dq::claim_result r) {
            if (ec) {
                std::fprintf(stderr, "claim failed: %s\n", ec.message().c_str());
                std::exit(1);
            }
            if (r.tasks.empty()) {
                ++idle_loops;
                loop();
                return;
            }
            auto leases = std::make_shared<std::vector<dq::lease_ref>>();
            auto running = std::make_shared<std::vector<dq::lease_ref>>();
            for (auto& t : r.tasks) {
                (t.running ? running : leases)->push_back({std::move(t.id), std::move(t.token)});
            }
            store.start(
                *leases, [&, leases, running](error_code ec2, std::vector<dq::start_result>) {
                    leases->insert(leases->end(), running->begin(), running->end());
                    if (ec2) {
                        std::fprintf(stderr, "start failed: %s\n", ec2.message().c_str());
                        std::exit(1);
                    }
                    std::vector<dq::ack> acks;
                    for (auto& l : *leases) {
                        acks.push_back({std::move(l), dq::outcome::success(), {}, {}});
                    }
                    store.acknowledge(
                        std::move(acks), [&](error_code ec3, std::vector<dq::ack_result> res) {
                            if (ec3) {
                                std::fprintf(stderr, "ack failed: %s\n", ec3.message().c_str());
                                std::exit(1);
                            }
                            for (auto a : res) {
                                acked += a == dq::ack_result::ok ? 1 : 0;
                            }
                            loop();
                        });
                });
        });
    };
    for (std::size_t i = 0; i < o.inflight; ++i) {
        loop();
    }
    while (active > 0) {
        io.run_one();
    }
}

// One batch at a time: claim, start, acknowledge, with INFO commandstats read after each
// step, so that each script's microseconds per task are known (slow: for the profile only).
void phases(boost::asio::io_context& io, dq::redis_store& store, admin& a, const options& o,
            std::size_t n) {
    auto wait = [&](bool& done) {
        while (!done) {
            io.run_one();
        }
    };
    long long usec[3] = {0, 0, 0};
    double cpu[3] = {0, 0, 0};
    std::size_t total = 0;
    a.run({"CONFIG", "RESETSTAT"});
    long long mark = 0;
    double cpu_mark = a.cpu_main();
    // The scripts' own time (wall time inside Redis: inflated when the machine is loaded)
    // and Redis's main-thread CPU (steadier on a loaded machine; includes the INFO calls).
    auto step = [&](int i) {
        const long long now = a.script_usec();
        const double c = a.cpu_main();
        usec[i] += now - mark;
        cpu[i] += c - cpu_mark;
        mark = a.script_usec();
        cpu_mark = a.cpu_main();
    };
    while (total < n) {
        std::vector<dq::lease_ref> leases;
        std::vector<dq::lease_ref> running;
        bool done = false;
        dq::claim_options c;
        c.batch = o.batch;
        c.horizon = dq::duration(0);
        c.worker = "bench";
        c.start_due = o.start_due ? o.batch : 0;
        store.claim(c, [&](error_code ec, dq::claim_result r) {
            if (ec || r.tasks.empty()) {
                std::fprintf(stderr, "claim: %s\n", ec ? ec.message().c_str() : "empty");
                std::exit(1);
            }
            for (auto& t : r.tasks) {
                (t.running ? running : leases).push_back({std::move(t.id), std::move(t.token)});
            }
            done = true;
        });
        wait(done);
        step(0);
        done = false;
        if (!leases.empty()) {
            store.start(leases, [&](error_code, std::vector<dq::start_result>) { done = true; });
            wait(done);
        }
        step(1);
        leases.insert(leases.end(), running.begin(), running.end());
        done = false;
        std::vector<dq::ack> acks;
        for (auto& l : leases) {
            acks.push_back({l, dq::outcome::success(), {}, {}});
        }
        store.acknowledge(acks, [&](error_code, std::vector<dq::ack_result>) { done = true; });
        wait(done);
        step(2);
        total += leases.size();
    }
    const char* names[3] = {"claim", "start", "ack"};
    for (int i = 0; i < 3; ++i) {
        std::printf("phase_%s %.2f us/task (%.2f us/task of Redis main-thread CPU)\n", names[i],
                    double(usec[i]) / double(total), cpu[i] * 1e6 / double(total));
    }
}

} // namespace

int main(int argc, char** argv) try {
    const options o = parse(argc, argv);
    boost::asio::io_context io;
    admin a(io, o.cfg);
    dq::redis_store_options so;
    so.name = "bench";
    so.shards = o.shards;
    so.buckets = o.buckets;

    a.run({"FLUSHALL"});
    std::printf("setup shards=%zu buckets=%zu payload=%zu batch=%zu inflight=%zu\n", o.shards,
                o.buckets, o.payload, o.batch, o.inflight);
    if (o.memory) {
        dq::redis_store store(io.get_executor(), o.cfg, so);
        // The config key and the scripts are loaded before the baseline.
        submit_all(io, store, o, 1, [](std::size_t) { return dq::duration(3600000); });
        const long long before = a.info("memory", "used_memory");
        a.run({"CONFIG", "RESETSTAT"});
        const double cpu0 = a.cpu_main();
        const auto t0 = clock_type::now();
        submit_all(io, store, o, o.tasks, [](std::size_t i) {
            return dq::due_time(dq::duration(3600000 + static_cast<std::int64_t>(i % 3600000)));
        });
        const double wall = seconds_since(t0);
        const long long usec = a.script_usec();
        const double cpu = a.cpu_main() - cpu0;
        const long long after = a.info("memory", "used_memory");
        std::printf("memory_per_delayed_task %.1f bytes (%zu tasks, %zu-byte payload)\n",
                    double(after - before) / double(o.tasks), o.tasks, o.payload);
        std::printf("submit_wall %.0f tasks/s\n", double(o.tasks) / wall);
        std::printf("submit_script_ceiling %.0f tasks/s (%.2f us/task in scripts)\n",
                    double(o.tasks) / (double(usec) / 1e6), double(usec) / double(o.tasks));
        std::printf("submit_cpu_ceiling %.0f tasks/s (%.2f us/task of Redis main-thread CPU)\n",
                    double(o.tasks) / cpu, cpu * 1e6 / double(o.tasks));
    }
    if (o.keep) {
        return 0; // left for MEMORY USAGE / OBJECT ENCODING by hand
    }
    a.run({"FLUSHALL"});
    {
        dq::redis_store store(io.get_executor(), o.cfg, so);
        submit_all(io, store, o, o.cycle_tasks, [](std::size_t) { return dq::duration(0); });
        listen(store);
        if (!o.cycle) {
            std::printf("cycle skipped\n");
            return 0;
        }
        a.run({"CONFIG", "RESETSTAT"});
        const double cpu0 = a.cpu_main();
        const auto t0 = clock_type::now();
        cycle_all(io, store, o, o.cycle_tasks);
        const double wall = seconds_since(t0);
        const long long usec = a.script_usec();
        const double cpu = a.cpu_main() - cpu0;
        std::printf("cycle_wall %.0f tasks/s (claim+start+ack, %zu tasks)\n",
                    double(o.cycle_tasks) / wall, o.cycle_tasks);
        std::printf("cycle_script_ceiling %.0f tasks/s (%.2f us/task in scripts)\n",
                    double(o.cycle_tasks) / (double(usec) / 1e6),
                    double(usec) / double(o.cycle_tasks));
        std::printf("cycle_cpu_ceiling %.0f tasks/s (%.2f us/task of Redis main-thread CPU)\n",
                    double(o.cycle_tasks) / cpu, cpu * 1e6 / double(o.cycle_tasks));
    }
    a.run({"FLUSHALL"});
    if (o.phases) {
        dq::redis_store store(io.get_executor(), o.cfg, so);
        submit_all(io, store, o, o.cycle_tasks, [](std::size_t) { return dq::duration(0); });
        listen(store);
        phases(io, store, a, o, o.cycle_tasks);
    }
    a.run({"FLUSHALL"});
    return 0;
} catch (const std::exception& e) {
    std::fprintf(stderr, "store_ceiling: %s\n", e.what());
    return 1;
}
