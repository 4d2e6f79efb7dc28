//
// server/service/src/settings.cpp
//
// The one table of flags (options() below): parse_settings() reads the environment and the
// flags through it, help_text() prints it for --help and flags_markdown() for the tables of
// docs/server.md (scripts/gen-server-flags.sh), so that the three cannot disagree.
//
#include <timewheeld/service/settings.hpp>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdlib>
#include <iterator>
#include <stdexcept>
#include <vector>

namespace timewheeld::service {

namespace {

// One row of the table below, the one home of every flag: parse_settings() reads it,
// help_text() prints it for --help, flags_markdown() for the tables of docs/server.md.
struct option {
    std::string_view flag;          // without "--"
    std::string_view value_name;    // empty: a switch, given alone (or as --flag=true/false)
    std::string_view default_value; // as shown; empty: none
    std::string_view help;          // `backticks` mark code in the docs; --help drops them
    std::function<void(settings&, std::string_view)> set;
    /// For a list that each use of the flag adds to: empties it before the first flag, so
    /// that flags replace what the variable gave (a flag wins) rather than add to it.
    std::function<void(settings&)> reset = {};
};

std::int64_t integer(std::string_view name, std::string_view v, std::int64_t min,
                     std::int64_t max) {
    std::int64_t n = 0;
    auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
    if (v.empty() || ec != std::errc() || end != v.data() + v.size()) {
        throw std::invalid_argument(std::string(name) + ": not an integer: '" + std::string(v) +
                                    "'");
    }
    if (n < min || n > max) {
        throw std::invalid_argument(std::string(name) + ": must be in [" + std::to_string(min) +
                                    ", " + std::to_string(max) + "]");
    }
    return n;
}

template <typename T>
std::function<void(settings&, std::string_view)> number(T settings::*member, std::int64_t min,
                                                        std::int64_t max, std::string_view name) {
    return [=](settings& s, std::string_view v) {
        s.*member = static_cast<T>(integer(name, v, min, max));
    };
}

std::function<void(settings&, std::string_view)> millis(std::chrono::milliseconds settings::*member,
                                                        std::string_view name) {
    return [=](settings& s, std::string_view v) {
        s.*member = std::chrono::milliseconds(integer(name, v, 1, 24LL * 3600 * 1000));
    };
}

// A switch: "--flag" alone means true; the variable (or --flag=V) says 1/true/yes or
// 0/false/no.
bool truth(std::string_view name, std::string_view v) {
    if (v == "1" || v == "true" || v == "yes") {
        return true;
    }
    if (v == "0" || v == "false" || v == "no") {
        return false;
    }
    throw std::invalid_argument(std::string(name) + ": must be true or false, not '" +
                                std::string(v) + "'");
}

std::function<void(settings&, std::string_view)> boolean(bool settings::*member,
                                                         std::string_view name) {
    return [=](settings& s, std::string_view v) { s.*member = truth(name, v); };
}

// "a,b,c": each part must be non-empty.
std::vector<std::string> split_list(const std::string& name, std::string_view v) {
    std::vector<std::string> out;
    for (;;) {
        const auto comma = v.find(',');
        const auto part = v.substr(0, comma);
        if (part.empty()) {
            throw std::invalid_argument(name + ": an empty entry in the list");
        }
        out.emplace_back(part);
        if (comma == std::string_view::npos) {
            return out;
        }
        v = v.substr(comma + 1);
    }
}

// Host names are compared in lower case.
std::string lower_case(std::string_view s) {
    std::string out(s);
    for (auto& c : out) {
        c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    }
    return out;
}

// A comma-separated list (split_list), in lower case when it names hosts.
std::function<void(settings&, std::string_view)> list(std::vector<std::string> settings::*member,
                                                      std::string_view name, bool hosts) {
    return [=](settings& s, std::string_view v) {
        auto items = split_list(std::string(name), v);
        if (hosts) {
            for (auto& item : items) {
                item = lower_case(item);
            }
        }
        s.*member = std::move(items);
    };
}

// The table's second part, from this flag on, is the worker side's (server/dispatch/): the
// docs show it in a table of its own.
constexpr std::string_view first_worker_flag = "no-worker";

const std::vector<option>& options() {
    static const std::vector<option> table = {
        {"bind", "ADDR", "127.0.0.1",
         "the address to listen on; anything else (`0.0.0.0`) exposes the API",
         [](settings& s, std::string_view v) { s.bind = v; }},
        {"port", "N", "8080",
         "the port to listen on; 0 for any free one (see `--port-file` and the "
         "log)",
         number(&settings::port, 0, 65535, "--port")},
        {"port-file", "PATH", "", "write the bound port there once listening (for `--port 0`)",
         [](settings& s, std::string_view v) { s.port_file = v; }},
        {"store", "URL", "sqlite:timewheeld.db",
         "where tasks live: `sqlite:PATH`, the embedded store in one file for one "
         "node (a relative PATH is from the working directory; the file is created "
         "if missing), `redis://[user:password@]host[:port][/queue]` for "
         "several nodes (a host name is resolved on every connect), "
         "`redis+sentinel://host:port[,host:port...][/queue]?master=NAME` (the "
         "master asked from those Sentinels on every connect), or "
         "`redis+cluster://[user:password@]host[:port][,host[:port]...][/queue]` for a "
         "Redis Cluster (the hosts are seeds: one that answers is "
         "enough); every Redis URL takes `?wait=N[&wait_timeout_ms=T]` to answer "
         "writes only once N replicas have them (on a Cluster, replicas of each "
         "shard's master) and `?shards=N` for a new queue's shard count (64; "
         "docs/server.md, \"Operating with Redis\")",
         [](settings& s, std::string_view v) { s.store = v; }},
        {"token", "SECRET", "",
         "require `Authorization: Bearer SECRET` on every path but `/healthz` and "
         "`/readyz`, which stay open for probes, and the dashboard's files under "
         "`/ui/`, which hold no data (compared in constant time). "
         "Prefer `TIMEWHEELD_TOKEN`: a flag shows in `ps`",
         [](settings& s, std::string_view v) { s.token = v; }},
        {"tokens-file", "PATH", "",
         "tokens with a scope each (`read`, `write`, `admin`), one per line as `SCOPE "
         "sha256:HEX [NAME]` (docs/server.md, \"Tokens and scopes\"); re-read on SIGHUP "
         "and when it changes (a file that does not parse is refused and the tokens in "
         "force stay). `--token` is then one more token, of scope `admin`",
         [](settings& s, std::string_view v) { s.tokens_file = v; }},
        {"threads", "N", "1",
         "threads, each with its own io_context: with Redis each has its own "
         "connection; with SQLite they share the one file (one writer thread, one "
         "group commit for all), each thread's requests and callbacks completing "
         "on its own io_context",
         number(&settings::threads, 1, 256, "--threads")},
        {"max-body-bytes", "N", "1048576", "the largest request body, 413 beyond",
         number(&settings::max_body_bytes, 0, 64LL * 1024 * 1024, "--max-body-bytes")},
        {"max-header-count", "N", "64", "the most header fields in a request, 431 beyond",
         number(&settings::max_header_count, 1, 10000, "--max-header-count")},
        {"max-header-bytes", "N", "16384", "the largest header block, 431 beyond",
         number(&settings::max_header_bytes, 256, 1024 * 1024, "--max-header-bytes")},
        {"max-url-bytes", "N", "4096", "the longest request target, 414 beyond",
         number(&settings::max_url_bytes, 16, 1024 * 1024, "--max-url-bytes")},
        {"max-connections", "N", "0",
         "connections open at once; at the limit the connection idle the longest "
         "is closed to make room, or the new one is refused when none is idle. 0: "
         "half the file descriptor limit (raised to its hard maximum at start), at "
         "most 10000; a value the limit cannot hold stops the start (exit 2)",
         number(&settings::max_connections, 0, 1000000, "--max-connections")},
        {"allowed-hosts", "LIST", "",
         "comma-separated names the `Host` header may carry besides IP addresses "
         "and `localhost` (421 otherwise: DNS rebinding); `*` for any. Set it to "
         "the name clients use when the service is reached by name (behind a "
         "proxy, say)",
         list(&settings::allowed_hosts, "--allowed-hosts", true)},
        {"allowed-origins", "LIST", "",
         "comma-separated origins (`https://ops.example.com`) whose web pages may "
         "send requests that change state, besides the service's own (403 "
         "otherwise)",
         list(&settings::allowed_origins, "--allowed-origins", false)},
        {"max-callback-url-bytes", "N", "2048", "the longest `callback.url` (400 beyond)",
         [](settings& s, std::string_view v) {
             s.validation.callback.max_url_length =
                 static_cast<std::size_t>(integer("--max-callback-url-bytes", v, 16, 65536));
         }},
        {"max-callback-headers", "N", "32",
         "the most entries in `callback.headers` and `callback.secret_headers` "
         "together (400 beyond)",
         [](settings& s, std::string_view v) {
             s.validation.callback.max_headers =
                 static_cast<std::size_t>(integer("--max-callback-headers", v, 0, 1000));
         }},
        {"idle-timeout-ms", "MS", "60000",
         "an idle keep-alive connection is closed after this long",
         millis(&settings::idle_timeout, "--idle-timeout-ms")},
        {"request-timeout-ms", "MS", "30000", "the time to read a request and write its answer",
         millis(&settings::request_timeout, "--request-timeout-ms")},
        {"store-timeout-ms", "MS", "5000",
         "the time for one store operation (503 beyond), `/readyz` too. Redis: the "
         "request's timeout on its connection. SQLite: from the call to its "
         "completion, queue on the writer thread included (an operation that times "
         "out before the writer takes it is never run), and how long to wait at "
         "start for a lock another process holds on the file",
         millis(&settings::store_timeout, "--store-timeout-ms")},
        {"shutdown-timeout-ms", "MS", "10000",
         "after SIGTERM/SIGINT, how long to wait for the requests in flight",
         millis(&settings::shutdown_timeout, "--shutdown-timeout-ms")},
        {"metrics-store-interval-ms", "MS", "5000",
         "the longest `/metrics` shows the task counts it read from the store (by "
         "state, due now, the oldest due age) before reading them again, whatever "
         "the scrapes; 0: at every scrape",
         [](settings& s, std::string_view v) {
             s.metrics_store_interval = std::chrono::milliseconds(
                 integer("--metrics-store-interval-ms", v, 0, 3600LL * 1000));
         }},
        {"log-level", "LEVEL", "info",
         "`error`, `warn`, `info` (start and stop only) or `debug` (a line per "
         "request)",
         [](settings& s, std::string_view v) {
             if (v == "error") {
                 s.log_level = log_level::error;
             } else if (v == "warn") {
                 s.log_level = log_level::warn;
             } else if (v == "info") {
                 s.log_level = log_level::info;
             } else if (v == "debug") {
                 s.log_level = log_level::debug;
             } else {
                 throw std::invalid_argument("--log-level: must be error, warn, info or debug");
             }
         }},
        {"no-worker", "", "",
         "serve the API only: run no callbacks on this node (they run on other "
         "nodes)",
         [](settings& s, std::string_view v) { s.worker = !truth("--no-worker", v); }},
        {"worker-concurrency", "N", "64", "callbacks in flight at once, per thread",
         number(&settings::worker_concurrency, 1, 100000, "--worker-concurrency")},
        {"callback-allow-loopback", "", "off",
         "let callbacks reach loopback addresses (127/8, ::1); refused by default "
         "(SSRF)",
         boolean(&settings::callback_allow_loopback, "--callback-allow-loopback")},
        {"callback-allow-private", "", "off",
         "let callbacks reach private addresses (10/8, 172.16/12, 192.168/16, "
         "100.64/10, fc00::/7); refused by default (SSRF)",
         boolean(&settings::callback_allow_private, "--callback-allow-private")},
        {"callback-allow-hosts", "LIST", "",
         "comma-separated host names callbacks may reach (`*.example.com` for "
         "subdomains): only these; without it, any host whose address is allowed",
         list(&settings::callback_allow_hosts, "--callback-allow-hosts", true)},
        {"signing-secret", "SECRETS", "",
         "sign every callback (`Timewheel-Signature` v2: method, URL, "
         "Idempotency-Key, attempt, time and body) with HMAC-SHA256; "
         "comma-separated or repeated for several at once (one `v2` entry each, to "
         "rotate a secret without downtime); prefer `TIMEWHEELD_SIGNING_SECRET`",
         [](settings& s, std::string_view v) {
             for (auto& secret : split_list("--signing-secret", v)) {
                 s.signing_secrets.push_back(std::move(secret));
             }
         },
         [](settings& s) { s.signing_secrets.clear(); }},
        {"signing-secret-for", "HOST=SECRETS", "",
         "sign callbacks to `HOST` (exact, case-insensitive) with its own secrets "
         "instead; repeat for more hosts, `;` between hosts in the variable "
         "(`TIMEWHEELD_SIGNING_SECRET_FOR=a.example=s1;b.example=s2,s3`)",
         [](settings& s, std::string_view v) {
             while (!v.empty()) {
                 const auto semi = v.find(';');
                 const auto item = v.substr(0, semi);
                 v = semi == std::string_view::npos ? std::string_view() : v.substr(semi + 1);
                 const auto eq = item.find('=');
                 if (eq == std::string_view::npos || eq == 0) {
                     throw std::invalid_argument(
                         "--signing-secret-for: expected HOST=SECRET[,SECRET...], not '" +
                         std::string(item.substr(0, eq)) + "...'");
                 }
                 const std::string host = lower_case(item.substr(0, eq));
                 auto& secrets = s.signing_secrets_for[host];
                 for (auto& secret :
                      split_list("--signing-secret-for " + host, item.substr(eq + 1))) {
                     secrets.push_back(std::move(secret));
                 }
             }
         },
         [](settings& s) { s.signing_secrets_for.clear(); }},
        {"signing-send-v1", "", "off",
         "also send the old `v1` entries (the body alone signed), while receivers "
         "move to `v2`",
         boolean(&settings::signing_send_v1, "--signing-send-v1")},
        {"callback-timeout-ms", "MS", "10000",
         "a callback's whole call when its task gives no `timeout_ms`",
         millis(&settings::callback_timeout, "--callback-timeout-ms")},
        {"max-per-host", "N", "8", "callbacks in flight to one origin, per thread",
         number(&settings::max_per_host, 1, 100000, "--max-per-host")},
        {"result-deadline-ms", "MS", "300000",
         "after a callback answered 202, how long to wait for `POST "
         "/v1/tasks/{id}/result`; then the attempt is retried",
         millis(&settings::result_deadline, "--result-deadline-ms")},
        {"max-awaiting-results", "N", "10000",
         "attempts waiting for their result (after a 202) without holding a "
         "`--worker-concurrency` slot, per thread; beyond, a waiting attempt keeps "
         "its slot",
         number(&settings::max_awaiting_results, 0, 10000000, "--max-awaiting-results")},
        {"lease-ms", "MS", "",
         "a claimed or running task's lease (renewed every third of it): after a "
         "crash its tasks run again, on another node or this one restarted, this "
         "long after. Unset: 30000, or 3 x `--callback-timeout-ms` when that is "
         "longer",
         millis(&settings::lease, "--lease-ms")},
        {"no-scheduler", "", "",
         "materialise no schedules on this node (by default every node does, with a worker "
         "or not: the store makes each occurrence one task, whatever the number of nodes)",
         [](settings& s, std::string_view v) { s.scheduler = !truth("--no-scheduler", v); }},
        {"schedule-window-ms", "MS", "5000",
         "a schedule's occurrences become tasks this long before they are due (so that they "
         "fire to the millisecond); at least `--schedule-period-ms`",
         millis(&settings::schedule_window, "--schedule-window-ms")},
        {"schedule-period-ms", "MS", "1000",
         "the time between two passes over the schedules whose occurrences come due",
         millis(&settings::schedule_period, "--schedule-period-ms")},
        {"schedule-grace-ms", "MS", "60000",
         "an occurrence materialised later than this after its instant (no node ran) was "
         "missed: the schedule's `misfire` policy decides whether it runs",
         millis(&settings::schedule_grace, "--schedule-grace-ms")},
    };
    return table;
}

std::string env_name(std::string_view flag) {
    std::string name = "TIMEWHEELD_";
    for (char c : flag) {
        name += c == '-' ? '_' : static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    }
    return name;
}

} // namespace

parsed_settings parse_settings(int argc, const char* const* argv,
                               const std::function<const char*(const char*)>& getenv) {
    parsed_settings r;
    for (const auto& o : options()) {
        const std::string name = env_name(o.flag);
        const char* v = getenv ? getenv(name.c_str()) : std::getenv(name.c_str());
        if (v) {
            r.given[std::string(o.flag)] = {v, name};
            try {
                o.set(r.settings, v);
            } catch (const std::invalid_argument& e) {
                throw std::invalid_argument(name + " (" + e.what() + ")");
            }
        }
    }
    std::vector<const option*> reset; // the lists a flag has replaced already
    for (int i = 1; i < argc; ++i) {
        std::string_view a = argv[i];
        if (a == "--help" || a == "-h") {
            r.help = true;
            continue;
        }
        if (a == "--help-markdown") {
            r.help_markdown = true;
            continue;
        }
        if (a == "--check-config") {
            r.check_config = true;
            continue;
        }
        if (!a.starts_with("--")) {
            throw std::invalid_argument("unexpected argument '" + std::string(a) + "'");
        }
        a.remove_prefix(2);
        std::optional<std::string_view> value;
        if (const auto eq = a.find('='); eq != std::string_view::npos) {
            value = a.substr(eq + 1);
            a = a.substr(0, eq);
        }
        const option* found = nullptr;
        for (const auto& o : options()) {
            if (o.flag == a) {
                found = &o;
            }
        }
        if (!found) {
            throw std::invalid_argument("unknown flag --" + std::string(a) + " (see --help)");
        }
        if (!value && found->value_name.empty()) {
            value = "true";
        }
        if (!value) {
            if (i + 1 >= argc) {
                throw std::invalid_argument("--" + std::string(a) + " needs a value");
            }
            value = argv[++i];
        }
        auto& origin = r.given[std::string(found->flag)];
        if (found->reset && std::find(reset.begin(), reset.end(), found) == reset.end()) {
            found->reset(r.settings);
            reset.push_back(found);
            origin = {std::string(*value), "--" + std::string(found->flag)};
        } else if (found->reset) {
            origin.value += "," + std::string(*value);
        } else {
            origin = {std::string(*value), "--" + std::string(found->flag)};
        }
        found->set(r.settings, *value);
    }
    // A window shorter than a period would let occurrences come due before a pass made them.
    if (r.settings.schedule_window < r.settings.schedule_period) {
        throw std::invalid_argument(
            "--schedule-window-ms: must be at least --schedule-period-ms (" +
            std::to_string(r.settings.schedule_period.count()) + ")");
    }
    return r;
}

std::string help_text() {
    std::string out = "usage: timewheeld [FLAGS]\n\n"
                      "The delayed HTTP-callback service. Every flag may also be given as the\n"
                      "environment variable shown; a flag wins over its variable.\n\n";
    for (const auto& o : options()) {
        std::string left = "  --" + std::string(o.flag);
        if (!o.value_name.empty()) {
            left += " " + std::string(o.value_name);
        }
        std::string help;
        std::remove_copy(o.help.begin(), o.help.end(), std::back_inserter(help), '`');
        if (!o.default_value.empty()) {
            help += " (default " + std::string(o.default_value) + ")";
        }
        out += left + "\n      " + help + "\n      env " + env_name(o.flag) + "\n";
    }
    out += "  --check-config\n      check the settings and the store, print them (secrets masked) "
           "and\n"
           "      exit: 0 when a start would get past them, 2 naming what is wrong\n"
           "  --help\n      this text\n\n"
           "usage: timewheeld backup PATH [--force] [FLAGS]\n\n"
           "Copies the sqlite: store (--store, TIMEWHEELD_STORE) to the new file PATH while a\n"
           "timewheeld may be running on it; --force replaces an existing PATH.\n";
    return out;
}

std::string describe_settings(const parsed_settings& p) {
    // The settings whose values are secrets: shown as set or not, never their value.
    constexpr std::string_view secret[] = {"token", "signing-secret", "signing-secret-for"};
    std::string out;
    for (const auto& o : options()) {
        std::string value;
        std::string from = "default";
        if (const auto it = p.given.find(o.flag); it != p.given.end()) {
            value = it->second.value;
            from = it->second.from;
        } else {
            value = o.default_value.empty() ? "(unset)" : std::string(o.default_value);
        }
        if (from != "default" &&
            std::find(std::begin(secret), std::end(secret), o.flag) != std::end(secret)) {
            value = value.empty() ? "(empty)" : "****";
        }
        if (o.flag == "store" && value.starts_with("redis://")) {
            // redis://user:password@host: the password masked.
            const auto at = value.rfind('@');
            if (at != std::string::npos) {
                const auto colon = value.find(':', 8);
                const auto start = colon < at ? colon + 1 : 8;
                value.replace(start, at - start, "****");
            }
        }
        out += "--" + std::string(o.flag) + " = " + value + " (" + from + ")\n";
    }
    return out;
}

std::string flags_markdown() {
    std::string out;
    auto table = [&](std::string_view name, auto first, auto last) {
        out += "<!-- BEGIN flags:" + std::string(name) +
               " (generated from server/service/src/settings.cpp by "
               "scripts/gen-server-flags.sh: edit there) -->\n"
               "| flag | default | |\n|---|---|---|\n";
        for (auto o = first; o != last; ++o) {
            out += "| `--" + std::string(o->flag);
            if (!o->value_name.empty()) {
                out += " " + std::string(o->value_name);
            }
            out += "` | ";
            if (!o->default_value.empty()) {
                out += std::string(o->default_value) + " ";
            }
            out += "| " + std::string(o->help) + " |\n";
        }
        out += "<!-- END flags:" + std::string(name) + " -->\n";
    };
    const auto& all = options();
    const auto worker = std::find_if(all.begin(), all.end(),
                                     [](const option& o) { return o.flag == first_worker_flag; });
    table("api", all.begin(), worker);
    table("worker", worker, all.end());
    return out;
}

} // namespace timewheeld::service
