//
// server/main.cpp
//
// timewheeld: the delayed HTTP-callback service. Reads its settings from the flags and the
// environment (--help lists them), serves the API and runs the due tasks' callbacks (one
// dispatcher per thread, unless --no-worker) until SIGTERM or SIGINT, and exits 0 once
// in-flight requests are answered and the callbacks have finished or been given back. Exit status 2
// for bad settings, 1 for a failure at start (the address in use, say).
//
#include <timewheeld/api/server.hpp>
#include <timewheeld/dispatch/dispatcher.hpp>
#include <timewheeld/service/log.hpp>
#include <timewheeld/service/metrics.hpp>
#include <timewheeld/service/settings.hpp>
#include <timewheeld/service/store.hpp>

#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <exception>
#include <memory>
#include <string>
#include <vector>

int main(int argc, char** argv) {
    namespace api = timewheeld::api;
    namespace service = timewheeld::service;
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
    // A write to a closed pipe (the log's reader gone, say) fails with EPIPE like any other
    // write error, instead of killing the process with SIGPIPE.
    std::signal(SIGPIPE, SIG_IGN);
    service::logger log(parsed.settings.log_level);
    try {
        service::metrics_registry metrics;
        api::server server(parsed.settings, metrics, log);
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
            router.forward_over_redis(std::move(where->config), std::move(where->queue));
            server.set_result_sink(&router);
        }
        std::vector<std::unique_ptr<dispatch::dispatcher>> dispatchers(parsed.settings.threads);
        if (parsed.settings.worker) {
            const auto opt = dispatch::options_from(parsed.settings);
            server.set_result_sink(&router);
            const auto stop_within = parsed.settings.shutdown_timeout * 3 / 4;
            server.set_shard_hooks(
                {.start =
                     [&, opt](const api::shard_view& v) {
                         // The execution log names the process and the thread that ran it.
                         auto o = opt;
                         o.worker_name = "timewheeld-" + std::to_string(::getpid()) + "-" +
                                         std::to_string(v.index);
                         dispatchers[v.index] = std::make_unique<dispatch::dispatcher>(
                             v.io, v.store, o, service_metrics, router);
                         dispatchers[v.index]->start();
                     },
                 .stop =
                     [&, stop_within](const api::shard_view& v, std::function<void()> done) {
                         auto& d = dispatchers[v.index];
                         if (!d) {
                             done();
                             return;
                         }
                         d->stop(std::chrono::steady_clock::now() + stop_within,
                                 [&log, done = std::move(done)](boost::system::error_code ec) {
                                     if (ec) {
                                         log.warn("worker_stop", {{"error", ec.message()}});
                                     }
                                     done();
                                 });
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
