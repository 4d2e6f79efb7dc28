//
// server/main.cpp
//
// timewheeld: the delayed HTTP-callback service. Reads its settings from the flags and the
// environment (--help lists them), serves the API and runs the due tasks' callbacks (one
// dispatcher per thread, unless --no-worker) and the materialiser of schedules (on the
// first thread, next to the worker, unless --no-scheduler) until SIGTERM or SIGINT, and
// exits 0 once in-flight requests are answered and the callbacks have finished or been
// given back. Exit status 2 for bad settings, 1 for a failure at start (the address in use).
// Two other ways to run it, with the same flags and environment: `--check-config` checks
// them and the store and prints what a start would run with, and `timewheeld backup PATH`
// copies the embedded store while a timewheeld runs on it (service/backup.hpp).
//
#include <timewheeld/api/server.hpp>
#include <timewheeld/dispatch/dispatcher.hpp>
#include <timewheeld/service/backup.hpp>
#include <timewheeld/service/log.hpp>
#include <timewheeld/service/metrics.hpp>
#include <timewheeld/service/node_stats.hpp>
#include <timewheeld/service/settings.hpp>
#include <timewheeld/service/store.hpp>
#include <timewheeld/service/tokens.hpp>

#include <timewheel/dq/scheduler.hpp>

#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <exception>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace {

// The materialiser's settings; its store errors go to the log, at most one line a minute
// (it retries at every pass: a store down for an hour is one line a minute, not 3600).
timewheel::dq::scheduler_options scheduler_options_from(const timewheeld::service::settings& s,
                                                        timewheeld::service::logger& log) {
    timewheel::dq::scheduler_options o;
    o.window = s.schedule_window;
    o.period = s.schedule_period;
    o.grace = s.schedule_grace;
    auto next_log = std::make_shared<std::chrono::steady_clock::time_point>();
    o.on_error = [&log, next_log](std::string_view what, boost::system::error_code ec) {
        const auto now = std::chrono::steady_clock::now();
        if (now >= *next_log) {
            *next_log = now + std::chrono::minutes(1);
            log.warn("scheduler_error", {{"operation", what}, {"error", ec.message()}});
        }
    };
    return o;
}

// `timewheeld backup PATH [--force] [FLAGS]`: the flags (and environment) are the service's,
// so that the same environment file names the store.
int backup(int argc, char** argv) {
    namespace service = timewheeld::service;
    std::vector<const char*> rest{argv[0]};
    service::backup_options opt;
    for (int i = 3; i < argc; ++i) {
        if (std::string_view(argv[i]) == "--force") {
            opt.force = true;
        } else {
            rest.push_back(argv[i]);
        }
    }
    // PATH first: after it, a word is a flag's value (--store sqlite:x).
    const bool destination_given = argc > 2 && argv[2][0] != '-';
    const std::string destination = destination_given ? argv[2] : "";
    try {
        if (!destination_given) {
            throw std::invalid_argument("backup: needs the destination first, as in "
                                        "`timewheeld backup /var/backups/timewheeld.db`");
        }
        const auto parsed = service::parse_settings(static_cast<int>(rest.size()), rest.data());
        opt.busy_timeout = parsed.settings.store_timeout;
        const auto s = service::backup_store(parsed.settings.store, destination, opt);
        std::printf("timewheeld: backed up %s to %s (%lld tasks, %lld bytes)\n",
                    parsed.settings.store.c_str(), destination.c_str(),
                    static_cast<long long>(s.tasks), static_cast<long long>(s.bytes));
        return 0;
    } catch (const std::invalid_argument& e) {
        std::fprintf(stderr, "timewheeld: %s\n", e.what());
        return 2;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "timewheeld: %s\n", e.what());
        return 1;
    }
}

} // namespace

int main(int argc, char** argv) {
    namespace api = timewheeld::api;
    namespace service = timewheeld::service;
    if (argc > 1 && std::string_view(argv[1]) == "backup") {
        return backup(argc, argv);
    }
    service::parsed_settings parsed;
    try {
        parsed = service::parse_settings(argc, argv);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "timewheeld: %s\n", e.what());
        return 2;
    }
    if (parsed.help) {
        std::fputs(service::help_text().c_str(), stdout);
        return 0;
    }
    if (parsed.help_markdown) {
        std::fputs(service::flags_markdown().c_str(), stdout);
        return 0;
    }
    if (parsed.check_config) {
        // The settings parsed above as a start parses them; then the store, unchanged.
        std::fputs(service::describe_settings(parsed).c_str(), stdout);
        try {
            std::printf("store: %s\n", service::check_store(parsed.settings.store).c_str());
            if (!parsed.settings.tokens_file.empty()) {
                const auto tokens = service::token_set::read_file(parsed.settings.tokens_file);
                std::printf("tokens: %zu in %s\n", tokens.entries().size(),
                            parsed.settings.tokens_file.c_str());
            }
        } catch (const std::exception& e) {
            std::fprintf(stderr, "timewheeld: %s\n", e.what());
            return 2;
        }
        std::puts("timewheeld: the configuration is valid");
        return 0;
    }
    // A write to a closed pipe (the log's reader gone, say) fails with EPIPE like any other
    // write error, instead of killing the process with SIGPIPE.
    std::signal(SIGPIPE, SIG_IGN);
    service::logger log(parsed.settings.log_level);
    try {
        service::metrics_registry metrics;
        // This node's callback figures (GET /v1/stats): each thread's dispatcher records
        // into its shard, the API reads. Before the server: it outlives every user.
        service::node_stats node_stats(parsed.settings.threads);
        api::server server(parsed.settings, metrics, log);
        server.set_node_stats(&node_stats);
        // Declared after the server: destroyed first, while the io_contexts and stores
        // they run on still exist. Each is made, used and stopped on its own thread.
        namespace dispatch = timewheeld::dispatch;
        service::service_metrics service_metrics(metrics);
        dispatch::result_router router;
        // With Redis, a result reported here for an attempt another node holds goes there
        // (docs/server.md, "Report an asynchronous result"), with or without a worker here.
        if (auto where = service::redis_location_of(
                parsed.settings.store, {.operation_timeout = parsed.settings.store_timeout,
                                        .client_name = "timewheeld-results"})) {
            if (where->cluster) {
                router.forward_over_redis(std::move(*where->cluster), std::move(where->queue));
            } else {
                router.forward_over_redis(std::move(where->config), std::move(where->queue));
            }
            server.set_result_sink(&router);
        }
        std::vector<std::unique_ptr<dispatch::dispatcher>> dispatchers(parsed.settings.threads);
        // The materialiser of schedules, on the first thread's store only: one pass reads
        // every shard of the store, and the store makes each occurrence one task whatever
        // the number of nodes (or threads) that try. It runs on a node without a worker too
        // (an API-only node makes the tasks that the worker nodes run), unless
        // --no-scheduler.
        std::unique_ptr<timewheel::dq::scheduler> scheduler;
        bool scheduler_running = false;
        std::function<void()> after_scheduler; // the rest of the first thread's stop
        const bool worker = parsed.settings.worker;
        if (worker || parsed.settings.scheduler) {
            const auto opt = dispatch::options_from(parsed.settings);
            if (worker) {
                server.set_result_sink(&router);
            }
            const auto stop_within = parsed.settings.shutdown_timeout * 3 / 4;
            server.set_shard_hooks(
                {.start =
                     [&, opt, worker](const api::shard_view& v) {
                         if (worker) {
                             // The execution log names the process and the thread that ran it.
                             auto o = opt;
                             o.worker_name = "timewheeld-" + std::to_string(::getpid()) + "-" +
                                             std::to_string(v.index);
                             dispatchers[v.index] = std::make_unique<dispatch::dispatcher>(
                                 v.io, v.store, o, service_metrics, router, &node_stats, v.index);
                             dispatchers[v.index]->start();
                         }
                         if (v.index == 0 && parsed.settings.scheduler) {
                             scheduler = std::make_unique<timewheel::dq::scheduler>(
                                 v.store, scheduler_options_from(parsed.settings, log));
                             scheduler_running = true;
                             scheduler->async_run([&](boost::system::error_code) {
                                 // Only stop() ends a run (store errors are retried).
                                 scheduler_running = false;
                                 if (after_scheduler) {
                                     std::exchange(after_scheduler, {})();
                                 }
                             });
                         }
                     },
                 .stop =
                     [&, stop_within](const api::shard_view& v, std::function<void()> done) {
                         auto stop_worker = [&, index = v.index, done = std::move(done)] {
                             auto& d = dispatchers[index];
                             if (!d) {
                                 done();
                                 return;
                             }
                             d->stop(std::chrono::steady_clock::now() + stop_within,
                                     [&log, done](boost::system::error_code ec) {
                                         if (ec) {
                                             log.warn("worker_stop", {{"error", ec.message()}});
                                         }
                                         done();
                                     });
                         };
                         // The materialiser first: its store operation in flight completes
                         // before the store closes.
                         if (v.index == 0 && scheduler_running) {
                             after_scheduler = std::move(stop_worker);
                             scheduler->stop();
                             return;
                         }
                         stop_worker();
                     }});
        }
        server.run();
    } catch (const std::invalid_argument& e) {
        log.error("bad_settings", {{"error", e.what()}});
        return 2;
    } catch (const std::exception& e) {
        log.error("start_failed", {{"error", e.what()}});
        return 1;
    }
    return 0;
}
