//
// example/dq_worker.cpp
//
// Runs the tasks of a durable queue on Redis at their due time, and stops gracefully.
//
// The worker claims the tasks due within the next 200 ms, holds them in the io_context's
// timing wheel until their due time (on Redis's clock), starts each tick's tasks with one
// call, and runs the handler below for each. The handler reports how the run ended; here
// it succeeds, except for payloads that ask to fail ("fail" somewhere in them: retried by
// the task's policy, then a dead letter). SIGINT or SIGTERM (or --exit-after N runs) stops
// it: no more claims, prefetched tasks given back to the queue, running ones waited for.
// Kill it with -9 instead, and nothing is lost: its leases run out and another worker
// runs the tasks.
//
//   dq_worker [--host 127.0.0.1] [--port 6379 | --socket PATH] [--queue demo]
//             [--name worker-1] [--concurrency 16] [--exit-after N] [--quiet]
//
// Try it (with a local redis-server), in two terminals:
//   ./dq_worker --name a            ./dq_worker --name b
//   ./dq_producer --count 1000 --spread-ms 10000
//

#include <timewheel/dq/redis_store.hpp>
#include <timewheel/dq/worker.hpp>

#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

namespace dq = timewheel::dq;
namespace net = boost::asio;

namespace {

struct settings {
    timewheel::redis::config redis;
    std::string queue = "demo";
    std::string name = "worker-1";
    std::size_t concurrency = 16;
    long exit_after = 0; // 0: until a signal
    bool quiet = false;
};

settings parse(int argc, char** argv) {
    settings s;
    for (int i = 1; i < argc; ++i) {
        const std::string_view a = argv[i];
        auto value = [&]() -> std::string {
            if (i + 1 >= argc) {
                std::fprintf(stderr, "dq_worker: %s needs a value\n", argv[i]);
                std::exit(2);
            }
            return argv[++i];
        };
        if (a == "--host") {
            s.redis.host = value();
        } else if (a == "--port") {
            s.redis.port = static_cast<std::uint16_t>(std::stoi(value()));
        } else if (a == "--socket") {
            s.redis.unix_socket = value();
        } else if (a == "--queue") {
            s.queue = value();
        } else if (a == "--name") {
            s.name = value();
        } else if (a == "--concurrency") {
            s.concurrency = std::stoul(value());
        } else if (a == "--exit-after") {
            s.exit_after = std::stol(value());
        } else if (a == "--quiet") {
            s.quiet = true;
        } else {
            std::fprintf(stderr, "usage: dq_worker [--host H] [--port P | --socket PATH] "
                                 "[--queue Q] [--name W] [--concurrency N] [--exit-after N] "
                                 "[--quiet]\n");
            std::exit(2);
        }
    }
    // Operations fail (and are retried by the worker) when Redis does not answer in time.
    s.redis.request_timeout = std::chrono::seconds(2);
    return s;
}

} // namespace

int main(int argc, char** argv) {
    const settings s = parse(argc, argv);
    net::io_context io;
    dq::redis_store_options queue_options;
    queue_options.name = s.queue;
    dq::redis_store store(io.get_executor(), s.redis, queue_options);

    dq::worker_options options;
    options.claim.worker = s.name;
    options.concurrency = s.concurrency;
    options.on_error = [](std::string_view what, boost::system::error_code ec) {
        std::fprintf(stderr, "dq_worker: %.*s failed (%s); retrying\n",
                     static_cast<int>(what.size()), what.data(), ec.message().c_str());
    };

    long runs = 0;
    long early = 0; // by the worker's estimate of Redis's clock; the store forbids it anyway
    bool stopping = false;
    dq::worker* self = nullptr;
    net::signal_set* signals_ptr = nullptr;
    auto stop = [&] {
        if (stopping) {
            return;
        }
        stopping = true;
        self->async_stop(std::chrono::steady_clock::now() + std::chrono::seconds(10),
                         [&](boost::system::error_code ec) {
                             const auto& st = self->stats();
                             std::printf("stopped (%s): ran %ld tasks, %ld early; "
                                         "%llu succeeded, %llu retried, %llu failed, "
                                         "%llu released\n",
                                         ec ? ec.message().c_str() : "all done", runs, early,
                                         static_cast<unsigned long long>(st.succeeded),
                                         static_cast<unsigned long long>(st.retried),
                                         static_cast<unsigned long long>(st.failed),
                                         static_cast<unsigned long long>(st.released));
                             signals_ptr->cancel();
                             store.close();
                         });
    };

    // The handler: a plain function whose return value is the report.
    dq::worker w(store, options, [&](const dq::job& j) -> dq::outcome {
        ++runs;
        const auto lateness = self->store_now() - j.due();
        // The worker's estimate of Redis's clock is uncertain by half the round trip of its
        // sample and the millisecond of Redis's TIME; the store, which started the run, never
        // does so before the due time by its own clock. Early means earlier than that.
        const auto uncertainty =
            std::chrono::ceil<dq::duration>(self->clock_rtt() / 2) + dq::duration(1);
        early += lateness < -uncertainty;
        if (!s.quiet) {
            std::printf("%s attempt %u, %lld ms after due: %s\n", j.id().c_str(), j.attempt(),
                        static_cast<long long>(lateness.count()), j.payload().c_str());
        }
        if (s.exit_after > 0 && runs >= s.exit_after) {
            net::post(io, stop);
        }
        if (j.payload().find("fail") != std::string::npos) {
            return dq::outcome::retry("the payload asked to fail");
        }
        return dq::outcome::success();
    });
    self = &w;

    net::signal_set signals(io, SIGINT, SIGTERM);
    signals_ptr = &signals;
    signals.async_wait([&](boost::system::error_code ec, int) {
        if (!ec) {
            stop();
        }
    });
    w.start();
    std::printf("worker '%s' on queue '%s' (concurrency %zu)\n", s.name.c_str(), s.queue.c_str(),
                s.concurrency);
    std::fflush(stdout);

    // Runs until the stop has completed and closed the store: nothing is left to wait for.
    io.run();
    return early == 0 ? 0 : 1;
}
