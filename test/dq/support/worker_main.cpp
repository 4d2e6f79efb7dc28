//
// test/dq/support/worker_main.cpp
//
// dq_test_worker: the worker process of the fault tests. A dq::worker on a redis_store at
// 127.0.0.1:<port>, whose handler logs each run to its run log (support/run_log.hpp): a
// "start" line as soon as it is called, a "time" line with the store's clock (Redis TIME,
// on a connection of its own) read right after, then it waits --handler-ms, writes an "end"
// line and reports its outcome. On SIGTERM it stops gracefully and writes its counters
// ("name value" lines: the worker's acks ok and stale, its runs, and its clock's skew
// against Redis TIME at start-up), then exits 0.
//
// Usage: dq_test_worker --print-clocks
//        dq_test_worker --port P --queue NAME --shards S --name W --log FILE
//          --counters FILE [--handler-ms N] [--lease-ms N] [--horizon-ms N]
//          [--concurrency N] [--outcome payload|success]
//
// With --outcome payload (the default) the payload says what to answer: "retry" (the
// policy's backoff), "retry-after:<ms>", "failure" (permanent), anything else success; the
// error of a failed attempt n is "boom <n>".
//

#include <timewheel/dq/redis_store.hpp>
#include <timewheel/dq/worker.hpp>
#include <timewheel/redis/connection.hpp>

#include <test/dq/support/run_log.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <string>
#include <string_view>

namespace dq = timewheel::dq;
namespace net = boost::asio;
namespace redis = timewheel::redis;
using timewheel::test::run_log_writer;

namespace {

struct settings {
    std::uint16_t port = 0;
    std::string queue;
    std::uint32_t shards = 8;
    std::string name;
    std::string log;
    std::string counters;
    std::chrono::milliseconds handler_time{0};
    std::chrono::milliseconds lease{30000};
    std::chrono::milliseconds horizon{200};
    std::size_t concurrency = 16;
    std::string outcome = "payload";
};

settings parse(int argc, char** argv) {
    std::map<std::string, std::string> a;
    for (int i = 1; i + 1 < argc; i += 2) {
        a[argv[i]] = argv[i + 1];
    }
    auto need = [&](const char* k) {
        auto it = a.find(k);
        if (it == a.end()) {
            std::cerr << "dq_test_worker: " << k << " is required\n";
            std::exit(2);
        }
        return it->second;
    };
    auto num = [&](const char* k, long dflt) {
        auto it = a.find(k);
        return it == a.end() ? dflt : std::stol(it->second);
    };
    settings s;
    s.port = static_cast<std::uint16_t>(std::stoul(need("--port")));
    s.queue = need("--queue");
    s.shards = static_cast<std::uint32_t>(num("--shards", 8));
    s.name = need("--name");
    s.log = need("--log");
    s.counters = need("--counters");
    s.handler_time = std::chrono::milliseconds(num("--handler-ms", 0));
    s.lease = std::chrono::milliseconds(num("--lease-ms", 30000));
    s.horizon = std::chrono::milliseconds(num("--horizon-ms", 200));
    s.concurrency = static_cast<std::size_t>(num("--concurrency", 16));
    if (auto it = a.find("--outcome"); it != a.end()) {
        s.outcome = it->second;
    }
    return s;
}

/// What the handler answers for a payload (see the file's comment).
dq::outcome outcome_for(const settings& s, const dq::claimed_task& t) {
    if (s.outcome == "success") {
        return dq::outcome::success();
    }
    const std::string error = "boom " + std::to_string(t.attempt);
    if (t.payload == "retry") {
        return dq::outcome::retry(error);
    }
    if (t.payload.starts_with("retry-after:")) {
        return dq::outcome::retry(error, dq::duration(std::stol(t.payload.substr(12))));
    }
    if (t.payload == "failure") {
        return dq::outcome::failure(error);
    }
    return dq::outcome::success();
}

std::int64_t time_reply_ms(const redis::response& r) {
    const auto sec = std::stoll(std::string(r[0][0].as_string()));
    const auto usec = std::stoll(std::string(r[0][1].as_string()));
    return sec * 1000 + usec / 1000;
}

/// --print-clocks: this process's clocks as it sees them (under libfaketime, both are
/// shifted), and how long a 200 ms sleep lasts on steady_clock.
int print_clocks() {
    using namespace std::chrono;
    const auto sys = duration_cast<milliseconds>(system_clock::now().time_since_epoch());
    const auto t0 = steady_clock::now();
    net::io_context io;
    net::steady_timer timer(io, milliseconds(200));
    timer.async_wait([](boost::system::error_code) {});
    io.run();
    const auto slept = duration_cast<milliseconds>(steady_clock::now() - t0);
    std::cout << "system_ms " << sys.count() << '\n'
              << "steady_ms " << duration_cast<milliseconds>(t0.time_since_epoch()).count() << '\n'
              << "timer_200ms_took_ms " << slept.count() << '\n';
    return 0;
}

} // namespace

int main(int argc, char** argv) {
    if (argc == 2 && std::string(argv[1]) == "--print-clocks") {
        return print_clocks();
    }
    const settings s = parse(argc, argv);
    net::io_context io;
    // Registered first: a SIGTERM that comes early waits here for the worker to exist.
    net::signal_set signals(io, SIGTERM, SIGINT);
    redis::config cfg;
    cfg.host = "127.0.0.1";
    cfg.port = s.port;
    cfg.reconnect_min_delay = std::chrono::milliseconds(20);
    cfg.reconnect_max_delay = std::chrono::milliseconds(200);

    run_log_writer log(s.log);
    redis::connection clock_conn(io, cfg); // Redis TIME for the run log
    dq::redis_store_options sopt;
    sopt.name = s.queue;
    sopt.shards = s.shards;
    dq::redis_store store(io.get_executor(), cfg, sopt);
    std::int64_t runs = 0;
    std::int64_t clock_skew_ms = 0;

    // The clock's skew at start-up: this process's system clock (faked or not) minus Redis
    // TIME, at the middle of the round trip.
    {
        redis::request req;
        req.push("TIME");
        redis::response resp;
        bool done = false;
        const auto before = std::chrono::system_clock::now();
        clock_conn.async_exec(req, resp, [&](boost::system::error_code ec, std::size_t) {
            if (!ec) {
                const auto after = std::chrono::system_clock::now();
                const auto local = std::chrono::duration_cast<std::chrono::milliseconds>(
                                       (before + (after - before) / 2).time_since_epoch())
                                       .count();
                clock_skew_ms = local - time_reply_ms(resp);
            }
            done = true;
        });
        while (!done && io.run_one()) {
        }
    }

    dq::worker_options wopt;
    wopt.claim.worker = s.name;
    wopt.claim.horizon = s.horizon;
    wopt.claim.lease = s.lease;
    wopt.concurrency = s.concurrency;
    wopt.on_error = [](std::string_view what, boost::system::error_code ec) {
        std::cerr << "dq_test_worker: " << what << ": " << ec.message() << '\n';
    };
    // Each run: a "start" line at once, Redis TIME, a "time" line, --handler-ms of waiting,
    // an "end" line, then the report. (A coroutine: the worker keeps the job alive across
    // its suspensions.)
    dq::worker worker(store, wopt, [&](const dq::job& j) -> net::awaitable<dq::outcome> {
        ++runs;
        const std::string key = j.id() + ' ' + std::to_string(j.attempt()) + ' ' + s.name;
        dq::outcome out = outcome_for(s, j.task());
        log.write("start " + key);
        redis::request req;
        req.push("TIME");
        redis::response resp;
        auto [ec, n] = co_await clock_conn.async_exec(req, resp, net::as_tuple(net::use_awaitable));
        if (!ec) {
            log.write("time " + key + ' ' + std::to_string(time_reply_ms(resp)));
        }
        net::steady_timer timer(io, s.handler_time);
        co_await timer.async_wait(net::as_tuple(net::use_awaitable));
        const char* names[] = {"success", "retry", "failure"};
        log.write("end " + key + ' ' + names[static_cast<int>(out.what)]);
        co_return out;
    });
    worker.start();

    // The counters are written when SIGTERM comes (so that a stop that goes wrong still
    // leaves them), and again once the worker has stopped.
    auto write_counters = [&] {
        const auto& st = worker.stats();
        std::ofstream c(s.counters, std::ios::trunc);
        c << "runs " << runs << '\n'
          << "claims " << st.claims << '\n'
          << "claimed " << st.claimed << '\n'
          << "started " << st.started << '\n'
          << "held " << st.held << '\n'
          << "acks_ok " << st.acked << '\n'
          << "acks_stale " << st.ack_stale << '\n'
          << "starts_stale " << st.stale << '\n'
          << "too_early " << st.too_early << '\n'
          << "store_errors " << st.store_errors << '\n'
          << "clock_skew_ms " << clock_skew_ms << '\n';
    };
    bool stopped = false;
    boost::system::error_code stop_error;
    signals.async_wait([&](boost::system::error_code, int) {
        write_counters();
        worker.async_stop(std::chrono::steady_clock::now() + std::chrono::seconds(10),
                          [&](boost::system::error_code ec) {
                              stop_error = ec;
                              stopped = true;
                              store.close();
                              clock_conn.close();
                          });
    });
    while (!stopped && io.run_one()) {
    }
    write_counters();
    if (stop_error) {
        std::cerr << "dq_test_worker: stop: " << stop_error.message() << '\n';
        return 1;
    }
    return 0;
}
