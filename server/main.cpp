//
// server/main.cpp
//
// timewheeld: the delayed HTTP-callback service. Reads its settings from the flags and the
// environment (--help lists them), serves the API until SIGTERM or SIGINT, and exits 0
// once in-flight requests are answered. Exit status 2 for bad settings, 1 for a failure
// at start (the address in use, say).
//
#include <timewheeld/api/log.hpp>
#include <timewheeld/api/metrics.hpp>
#include <timewheeld/api/server.hpp>
#include <timewheeld/api/settings.hpp>

#include <cstdio>
#include <exception>

int main(int argc, char** argv) {
    namespace api = timewheeld::api;
    api::parsed_settings parsed;
    try {
        parsed = api::parse_settings(argc, argv);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "timewheeld: %s\n", e.what());
        return 2;
    }
    if (parsed.help) {
        std::fputs(api::help_text().c_str(), stdout);
        return 0;
    }
    api::logger log(parsed.settings.log_level);
    try {
        api::metrics_registry metrics;
        api::server server(parsed.settings, metrics, log);
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
