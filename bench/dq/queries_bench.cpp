//
// bench/dq/queries_bench.cpp
//
// What listing and counting cost at scale (docs/dq.md, "Listing and counting"): N delayed
// tasks (default 1,000,000, due at random over a day, 100-byte payloads, generated ids) on
// dq::redis_store (a redis-server the caller started on 127.0.0.1, FLUSHALLed here; Redis's
// used_memory per task before and after is printed) and on dq::sqlite_store (a file in the
// directory given, fsync off to load faster: reads do not depend on it); a few thousand dead
// and finished tasks beside them. Then the median and worst time of a page of 100: the first,
// one deep in (from a cursor half a day in), newest first, with an id prefix of one and of
// two characters, the first page of dead letters and of finished tasks; and of count_tasks.
//
//   queries_bench --port <redis port> [--tasks N] [--dir D] [--only redis|sqlite]
//

#include <timewheel/dq/redis_store.hpp>
#include <timewheel/dq/sqlite_store.hpp>
#include <timewheel/redis/connection.hpp>

#include <boost/asio/io_context.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

namespace dq = timewheel::dq;
namespace redis = timewheel::redis;
using boost::system::error_code;
using clk = std::chrono::steady_clock;
using namespace std::chrono_literals;

namespace {

template <typename Done>
void run_until(boost::asio::io_context& io, Done done) {
    io.restart();
    while (!done()) {
        io.run_one();
    }
}

void check(error_code ec, const char* what) {
    if (ec) {
        throw std::runtime_error(std::string(what) + ": " + ec.message());
    }
}

// Redis's used_memory, and FLUSHALL.
struct admin {
    boost::asio::io_context& io;
    redis::connection conn;

    admin(boost::asio::io_context& ctx, std::uint16_t port)
        : io(ctx)
        , conn(ctx, [&] {
            redis::config c;
            c.port = port;
            c.health_check_interval = 0ms;
            return c;
        }()) {}

    std::string call(const char* cmd, const char* arg = nullptr) {
        redis::request req;
        if (arg) {
            req.push(cmd, arg);
        } else {
            req.push(cmd);
        }
        redis::response resp;
        bool done = false;
        error_code err;
        conn.async_exec(req, resp, [&](error_code ec, std::size_t) {
            err = ec;
            done = true;
        });
        run_until(io, [&] { return done; });
        check(err, cmd);
        const auto r = resp.at(0);
        r.throw_if_error();
        return std::string(r.as_string());
    }

    double used_memory() {
        const std::string text = call("INFO", "memory");
        const auto at = text.find("\nused_memory:");
        return at == std::string::npos ? 0 : std::strtod(text.c_str() + at + 13, nullptr);
    }
};

// Submits n tasks, 2,000 in flight.
void load(boost::asio::io_context& io, dq::store& s, long n, std::function<dq::task(long)> make) {
    long sent = 0, done = 0;
    std::function<void()> one = [&] {
        s.submit(make(sent++), [&](error_code ec, dq::submit_result, std::string) {
            check(ec, "submit");
            ++done;
            if (sent < n) {
                one();
            }
        });
    };
    for (long i = 0; i < std::min(n, 2000L); ++i) {
        one();
    }
    run_until(io, [&] { return done == n; });
}

// Claims what is due and acknowledges it: `ok` finished, else dead.
void finish_due(boost::asio::io_context& io, dq::store& s, long n, bool ok) {
    long left = n;
    while (left > 0) {
        dq::claim_options o;
        o.worker = "bench";
        // A whole batch: Redis spreads it over the shards, and a small one may reach none.
        o.batch = 1000;
        o.horizon = 0ms;
        std::optional<dq::claim_result> got;
        s.claim(o, [&](error_code ec, dq::claim_result r) {
            check(ec, "claim");
            got = std::move(r);
        });
        run_until(io, [&] { return got.has_value(); });
        if (got->tasks.empty()) {
            continue;
        }
        std::vector<dq::ack> acks;
        for (auto& t : got->tasks) {
            acks.push_back({{t.id, t.token},
                            ok ? dq::outcome::success() : dq::outcome::failure("gone"),
                            {},
                            {}});
        }
        left -= static_cast<long>(acks.size());
        bool acked = false;
        s.acknowledge(std::move(acks), [&](error_code ec, std::vector<dq::ack_result>) {
            check(ec, "acknowledge");
            acked = true;
        });
        run_until(io, [&] { return acked; });
    }
}

// Median and worst of `reps` runs of `fn`, in ms.
void timed(const char* what, int reps, const std::function<std::size_t()>& fn) {
    std::vector<double> t;
    std::size_t n = 0;
    for (int i = 0; i < reps; ++i) {
        const auto t0 = clk::now();
        n = fn();
        t.push_back(std::chrono::duration<double, std::milli>(clk::now() - t0).count());
    }
    std::sort(t.begin(), t.end());
    std::printf("  %-44s %8.2f ms median %8.2f ms worst  (%zu entries)\n", what, t[t.size() / 2],
                t.back(), n);
}

void measure(boost::asio::io_context& io, dq::store& s, dq::time_point base) {
    auto list = [&](dq::task_query q) {
        std::optional<dq::task_page> page;
        s.list_tasks(std::move(q), [&](error_code ec, dq::task_page p) {
            check(ec, "list_tasks");
            page = std::move(p);
        });
        run_until(io, [&] { return page.has_value(); });
        return std::move(*page);
    };
    dq::task_query deep;
    deep.after = base + 12h;
    deep.cursor = list(deep).cursor; // a cursor half a day in
    deep.after.reset();
    const int reps = 15;
    timed("delayed, first page of 100", reps, [&] { return list({}).entries.size(); });
    timed("delayed, a page deep in (cursor)", reps, [&] { return list(deep).entries.size(); });
    timed("delayed, newest first", reps, [&] {
        dq::task_query q;
        q.descending = true;
        return list(q).entries.size();
    });
    for (const char* prefix : {"A", "Ab"}) {
        const std::string what = std::string("delayed, id_prefix \"") + prefix + "\"";
        timed(what.c_str(), reps, [&] {
            dq::task_query q;
            q.id_prefix = prefix;
            return list(q).entries.size();
        });
    }
    timed("dead, newest first", reps, [&] {
        dq::task_query q;
        q.state = dq::task_state::dead;
        q.descending = true;
        return list(q).entries.size();
    });
    timed("finished, newest first", reps, [&] {
        dq::task_query q;
        q.state = dq::task_state::finished;
        q.descending = true;
        return list(q).entries.size();
    });
    dq::task_counts last;
    timed("count_tasks", reps, [&] {
        std::optional<dq::task_counts> c;
        s.count_tasks([&](error_code ec, dq::task_counts r) {
            check(ec, "count_tasks");
            c = r;
        });
        run_until(io, [&] { return c.has_value(); });
        last = *c;
        return static_cast<std::size_t>(c->delayed);
    });
    std::printf("  counts: delayed %llu, prefetched %llu, running %llu, finished %llu, dead %llu, "
                "cancelled %llu, due now %llu\n",
                static_cast<unsigned long long>(last.delayed),
                static_cast<unsigned long long>(last.prefetched),
                static_cast<unsigned long long>(last.running),
                static_cast<unsigned long long>(last.finished),
                static_cast<unsigned long long>(last.dead),
                static_cast<unsigned long long>(last.cancelled),
                static_cast<unsigned long long>(last.due_now));
}

dq::time_point now_of(boost::asio::io_context& io, dq::store& s) {
    std::optional<dq::time_point> t;
    s.now([&](error_code ec, dq::time_point v) {
        check(ec, "now");
        t = v;
    });
    run_until(io, [&] { return t.has_value(); });
    return *t;
}

// The delayed tasks (due over a day from base + 1 min), then dead and finished ones.
void populate(boost::asio::io_context& io, dq::store& s, long n, dq::time_point base,
              const std::function<void()>& after_delayed) {
    std::mt19937_64 rng(42);
    const std::string payload(100, 'p');
    const auto t0 = clk::now();
    load(io, s, n, [&](long) {
        dq::task t;
        t.due = base + 1min + dq::duration(rng() % 86400000);
        t.payload = payload;
        return t;
    });
    std::printf("  loaded %ld delayed tasks in %.1f s\n", n,
                std::chrono::duration<double>(clk::now() - t0).count());
    after_delayed();
    for (bool ok : {false, true}) {
        load(io, s, 5000, [&](long) {
            dq::task t;
            t.due = base - 1min;
            t.payload = payload;
            return t;
        });
        finish_due(io, s, 5000, ok);
    }
}

} // namespace

int main(int argc, char** argv) {
    std::uint16_t port = 0;
    long n = 1000000;
    std::filesystem::path dir = std::filesystem::temp_directory_path();
    std::string only;
    for (int i = 1; i + 1 < argc; i += 2) {
        const std::string a = argv[i];
        if (a == "--port") {
            port = static_cast<std::uint16_t>(std::atoi(argv[i + 1]));
        } else if (a == "--tasks") {
            n = std::atol(argv[i + 1]);
        } else if (a == "--dir") {
            dir = argv[i + 1];
        } else if (a == "--only") {
            only = argv[i + 1];
        }
    }
    try {
        boost::asio::io_context io;
        if (only != "sqlite") {
            if (port == 0) {
                throw std::runtime_error("--port <redis port> is required");
            }
            admin a(io, port);
            a.call("FLUSHALL");
            redis::config cfg;
            cfg.port = port;
            cfg.health_check_interval = 0ms;
            dq::redis_store_options ro;
            ro.name = "bench";
            dq::redis_store store(io.get_executor(), cfg, ro);
            std::printf("dq::redis_store, 64 shards, %ld tasks\n", n);
            const auto base = now_of(io, store);
            const double before = a.used_memory();
            populate(io, store, n, base, [&] {
                std::printf("  Redis used_memory per delayed task: %.1f bytes\n",
                            (a.used_memory() - before) / static_cast<double>(n));
            });
            measure(io, store, base);
            store.close();
            a.call("FLUSHALL");
        }
        if (only != "redis") {
            const auto path = dir / "queries_bench.db";
            std::filesystem::remove(path);
            std::filesystem::remove(path.string() + "-wal");
            {
                dq::sqlite_store_options o;
                o.path = path.string();
                o.fsync = false;
                dq::sqlite_store store(io.get_executor(), o);
                std::printf("dq::sqlite_store, %ld tasks\n", n);
                const auto base = now_of(io, store);
                populate(io, store, n, base, [] {});
                measure(io, store, base);
            }
            std::filesystem::remove(path);
            std::filesystem::remove(path.string() + "-wal");
        }
    } catch (const std::exception& e) {
        std::fprintf(stderr, "queries_bench: %s\n", e.what());
        return 1;
    }
    return 0;
}
