//
// timewheeld/api/settings.hpp
//
// Every setting of timewheeld, each a command-line flag and an environment variable
// (TIMEWHEELD_<NAME>, the flag's name in upper case with '_' for '-'); a flag wins over the
// variable. `--help` prints the table this file defines.
//
#ifndef TIMEWHEELD_API_SETTINGS_HPP
#define TIMEWHEELD_API_SETTINGS_HPP

#include <timewheeld/api/task_json.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

namespace timewheeld::api {

/// How much timewheeld logs: errors only, warnings, start and stop (the default), or one
/// line per request.
enum class log_level { error, warn, info, debug };

/// The settings of the service.
struct settings {
    std::string bind = "127.0.0.1"; ///< the address the API listens on
    std::uint16_t port = 8080;      ///< 0: any free port (see port_file and the log)
    std::string port_file;          ///< when set, the bound port is written there
    std::string store = "redis://127.0.0.1:6379/timewheeld"; ///< see make_store()
    std::string token;       ///< when set, /v1/* and /metrics need "Authorization: Bearer <token>"
    std::size_t threads = 1; ///< io_contexts, one thread each
    std::size_t max_body_bytes = 1024 * 1024; ///< a request body (413 beyond)
    std::size_t max_header_count = 64;        ///< header fields of a request (431 beyond)
    std::size_t max_header_bytes = 16 * 1024; ///< the header block, request line excluded (431)
    std::size_t max_url_bytes = 4096;         ///< the request target (414 beyond)
    std::chrono::milliseconds idle_timeout{60000};     ///< a keep-alive connection left idle
    std::chrono::milliseconds request_timeout{30000};  ///< reading one request, writing its answer
    std::chrono::milliseconds store_timeout{5000};     ///< one store operation
    std::chrono::milliseconds shutdown_timeout{10000}; ///< in-flight requests after SIGTERM
    api::log_level log_level = api::log_level::info;
    validation_limits validation; ///< callback URL length, header count...
};

/// What parse_settings() found.
struct parsed_settings {
    api::settings settings;
    bool help = false; ///< --help was given: print help_text() and exit 0
};

/// Reads the environment (through `getenv`, std::getenv by default), then the flags.
/** @throws std::invalid_argument naming the flag (or variable) and what is wrong with it. */
parsed_settings parse_settings(int argc, const char* const* argv,
                               const std::function<const char*(const char*)>& getenv = {});

/// The usage text: every flag, its variable, its default.
std::string help_text();

} // namespace timewheeld::api

#endif // TIMEWHEELD_API_SETTINGS_HPP
