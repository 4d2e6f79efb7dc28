//
// timewheeld/service/settings.hpp
//
// Every setting of timewheeld, each a command-line flag and an environment variable
// (TIMEWHEELD_<NAME>, the flag's name in upper case with '_' for '-'); a flag wins over the
// variable. `--help` prints the table (settings.cpp), and docs/server.md shows it
// (flags_markdown()).
//
#ifndef TIMEWHEELD_SERVICE_SETTINGS_HPP
#define TIMEWHEELD_SERVICE_SETTINGS_HPP

#include <timewheeld/service/task_json.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace timewheeld::service {

/// How much timewheeld logs: errors only, warnings, start and stop (the default), or one
/// line per request.
enum class log_level { error, warn, info, debug };

/// The settings of the service.
struct settings {
    std::string bind = "127.0.0.1"; ///< the address the API listens on
    std::uint16_t port = 8080;      ///< 0: any free port (see port_file and the log)
    std::string port_file;          ///< when set, the bound port is written there
    /// See store_source: the embedded default, a file in the working directory.
    std::string store = "sqlite:timewheeld.db";
    std::string token;       ///< when set, /v1/* and /metrics need "Authorization: Bearer <token>"
    std::string tokens_file; ///< tokens with scopes (tokens.hpp), re-read on SIGHUP and change
    std::size_t threads = 1; ///< io_contexts, one thread each
    std::size_t max_body_bytes = 1024 * 1024; ///< a request body (413 beyond)
    std::size_t max_header_count = 64;        ///< header fields of a request (431 beyond)
    std::size_t max_header_bytes = 16 * 1024; ///< the header block, request line excluded (431)
    std::size_t max_url_bytes = 4096;         ///< the request target (414 beyond)
    /// Connections open at once; 0: half the file descriptor limit, at most 10000. At the
    /// limit a new connection closes the one idle the longest, or is refused when none is.
    std::size_t max_connections = 0;
    /// Host names a request's Host header may name besides IP literals and "localhost"
    /// (421 otherwise: a defence against DNS rebinding); "*" allows any.
    std::vector<std::string> allowed_hosts;
    /// Origins ("https://ops.example.com") that may send requests that change state, besides
    /// the service's own (403 otherwise: a defence against cross-site requests).
    std::vector<std::string> allowed_origins;
    std::chrono::milliseconds idle_timeout{60000};     ///< a keep-alive connection left idle
    std::chrono::milliseconds request_timeout{30000};  ///< reading one request, writing its answer
    std::chrono::milliseconds store_timeout{5000};     ///< one store operation
    std::chrono::milliseconds shutdown_timeout{10000}; ///< in-flight requests after SIGTERM
    /// The longest /metrics shows the task counts it read from the store (by state, due now,
    /// the oldest due age) before it reads them again; 0: at every scrape.
    std::chrono::milliseconds metrics_store_interval{5000};
    service::log_level log_level = service::log_level::info;
    validation_limits validation; ///< the callback's limits (the worker's too), id length...

    // The worker side (server/dispatch/): the callbacks of due tasks.
    bool worker = true;                   ///< false (--no-worker): the API alone
    std::size_t worker_concurrency = 64;  ///< callbacks in flight per thread
    bool callback_allow_loopback = false; ///< SSRF: callbacks may reach 127/8 and ::1
    bool callback_allow_private = false;  ///< SSRF: ... and 10/8, 172.16/12, 192.168/16, fc00::/7
    std::vector<std::string> callback_allow_hosts; ///< when not empty, only these hosts
    /// When not empty, callbacks carry Timewheel-Signature, one v2 entry per secret (two
    /// while one is rotated).
    std::vector<std::string> signing_secrets;
    /// Destination hosts (lower-case) with secrets of their own, used instead of
    /// signing_secrets for callbacks to them.
    std::map<std::string, std::vector<std::string>, std::less<>> signing_secrets_for;
    bool signing_send_v1 = false; ///< also send the v1 entries (the body alone signed)
    std::chrono::milliseconds callback_timeout{10000}; ///< a callback without its own timeout_ms
    std::size_t max_per_host = 8; ///< callbacks in flight to one origin, per thread
    std::chrono::milliseconds result_deadline{300000}; ///< after a 202, wait this long for /result
    /// Attempts waiting for their result (after a 202) without holding a callback slot, per
    /// thread; beyond, a waiting attempt keeps its slot (as a callback in flight).
    std::size_t max_awaiting_results = 10000;
    /// How long a claimed or running task stays this node's without a renewal (renewed every
    /// third of it): after a crash, other nodes (or this one restarted) take its tasks back
    /// this long after. 0: 30 s, or 3 x callback_timeout when that is longer.
    std::chrono::milliseconds lease{0};

    // The materialiser of schedules (dq::scheduler), next to the worker.
    bool scheduler = true; ///< false (--no-scheduler): this node materialises no schedule
    /// Occurrences due within this much of the store's clock become tasks ahead of time.
    std::chrono::milliseconds schedule_window{5000};
    /// The time between two passes over the due schedules.
    std::chrono::milliseconds schedule_period{1000};
    /// An occurrence later than this when materialised was missed: its misfire policy decides.
    std::chrono::milliseconds schedule_grace{60000};

    /// Every field equal (the flag tables' defaults are checked against settings{} with it).
    friend bool operator==(const settings&, const settings&) = default;
};

/// What parse_settings() found.
struct parsed_settings {
    service::settings settings;
    bool help = false; ///< --help was given: print help_text() and exit 0
    /// --help-markdown (not listed by --help: for scripts/gen-server-flags.sh) was given:
    /// print flags_markdown() and exit 0
    bool help_markdown = false;
    /// --check-config was given: check the settings and the store, print them
    /// (describe_settings() and check_store()) and exit, without serving
    bool check_config = false;
    /// Where each setting given came from, by flag name (without "--"): its value as
    /// given (a repeated list flag's joined with ',') and "--flag" or the variable's name.
    struct origin {
        std::string value;
        std::string from;
    };
    std::map<std::string, origin, std::less<>> given;
};

/// Reads the environment (through `getenv`, std::getenv by default), then the flags.
/** @throws std::invalid_argument naming the flag (or variable) and what is wrong with it. */
parsed_settings parse_settings(int argc, const char* const* argv,
                               const std::function<const char*(const char*)>& getenv = {});

/// What `--check-config` prints: every setting, one a line, with the value it takes and
/// where that came from (a flag, a variable, the default); secrets masked (the token, the
/// signing secrets, a Redis password in the store URL).
std::string describe_settings(const parsed_settings& p);

/// The usage text: every flag, its variable, its default.
std::string help_text();

/// The same table as the Markdown tables of docs/server.md ("Settings": the API's flags,
/// then the worker's), each between the marker comments scripts/gen-server-flags.sh
/// replaces: the docs are generated from the flags, never written by hand.
std::string flags_markdown();

} // namespace timewheeld::service

#endif // TIMEWHEELD_SERVICE_SETTINGS_HPP
