//
// server/service/src/settings.cpp
//
#include <timewheeld/service/settings.hpp>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdlib>
#include <stdexcept>
#include <vector>

namespace timewheeld::service {

namespace {

struct option {
    std::string_view flag;       // without "--"
    std::string_view value_name; // empty: a switch, given alone (or as --flag=true/false)
    std::string_view help;
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

const std::vector<option>& options() {
    static const std::vector<option> table = {
        {"bind", "ADDR", "address to listen on (default 127.0.0.1; 0.0.0.0 exposes the API)",
         [](settings& s, std::string_view v) { s.bind = v; }},
        {"port", "N", "port to listen on, 0 for any free one (default 8080)",
         number(&settings::port, 0, 65535, "--port")},
        {"port-file", "PATH", "write the bound port to PATH once listening",
         [](settings& s, std::string_view v) { s.port_file = v; }},
        {"store", "URL",
         "where tasks live: sqlite:PATH, the embedded store for one node (a relative PATH "
         "is from the working directory), or redis://[user:password@]host[:port][/queue] "
         "for several nodes (default sqlite:timewheeld.db)",
         [](settings& s, std::string_view v) { s.store = v; }},
        {"token", "SECRET",
         "require 'Authorization: Bearer SECRET' on /v1/* and /metrics (prefer the variable: "
         "a flag shows in ps)",
         [](settings& s, std::string_view v) { s.token = v; }},
        {"threads", "N",
         "threads, each with its own io_context (and Redis connection; SQLite's one file "
         "is shared) (default 1)",
         number(&settings::threads, 1, 256, "--threads")},
        {"max-body-bytes", "N", "largest request body, 413 beyond (default 1048576)",
         number(&settings::max_body_bytes, 0, 64LL * 1024 * 1024, "--max-body-bytes")},
        {"max-header-count", "N", "most header fields in a request, 431 beyond (default 64)",
         number(&settings::max_header_count, 1, 10000, "--max-header-count")},
        {"max-header-bytes", "N", "largest header block, 431 beyond (default 16384)",
         number(&settings::max_header_bytes, 256, 1024 * 1024, "--max-header-bytes")},
        {"max-url-bytes", "N", "longest request target, 414 beyond (default 4096)",
         number(&settings::max_url_bytes, 16, 1024 * 1024, "--max-url-bytes")},
        {"max-connections", "N",
         "connections open at once; at the limit the one idle the longest is closed "
         "(default 0: half the file descriptor limit, at most 10000)",
         number(&settings::max_connections, 0, 1000000, "--max-connections")},
        {"allowed-hosts", "LIST",
         "comma-separated names the Host header may carry besides IP addresses and "
         "localhost, 421 otherwise (DNS rebinding); '*' for any (default: none)",
         list(&settings::allowed_hosts, "--allowed-hosts", true)},
        {"allowed-origins", "LIST",
         "comma-separated origins (https://ops.example.com) that may send requests that "
         "change state, besides the service's own; 403 otherwise (default: none)",
         list(&settings::allowed_origins, "--allowed-origins", false)},
        {"max-callback-url-bytes", "N", "longest callback.url (default 2048)",
         [](settings& s, std::string_view v) {
             s.validation.callback.max_url_length =
                 static_cast<std::size_t>(integer("--max-callback-url-bytes", v, 16, 65536));
         }},
        {"max-callback-headers", "N",
         "most entries in callback.headers and callback.secret_headers together (default 32)",
         [](settings& s, std::string_view v) {
             s.validation.callback.max_headers =
                 static_cast<std::size_t>(integer("--max-callback-headers", v, 0, 1000));
         }},
        {"idle-timeout-ms", "MS", "close keep-alive connections idle this long (default 60000)",
         millis(&settings::idle_timeout, "--idle-timeout-ms")},
        {"request-timeout-ms", "MS", "time to read a request and write its answer (default 30000)",
         millis(&settings::request_timeout, "--request-timeout-ms")},
        {"store-timeout-ms", "MS", "time for one store operation, 503 beyond (default 5000)",
         millis(&settings::store_timeout, "--store-timeout-ms")},
        {"shutdown-timeout-ms", "MS",
         "after SIGTERM/SIGINT, wait this long for in-flight requests (default 10000)",
         millis(&settings::shutdown_timeout, "--shutdown-timeout-ms")},
        {"log-level", "LEVEL",
         "error, warn, info (default: start and stop only) or debug (one line per request)",
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
        {"no-worker", "", "serve the API only: run no callbacks on this node",
         [](settings& s, std::string_view v) { s.worker = !truth("--no-worker", v); }},
        {"worker-concurrency", "N", "callbacks in flight at once, per thread (default 64)",
         number(&settings::worker_concurrency, 1, 100000, "--worker-concurrency")},
        {"callback-allow-loopback", "",
         "let callbacks reach loopback addresses (127/8, ::1); refused by default (SSRF)",
         boolean(&settings::callback_allow_loopback, "--callback-allow-loopback")},
        {"callback-allow-private", "",
         "let callbacks reach private addresses (10/8, 172.16/12, 192.168/16, fc00::/7)",
         boolean(&settings::callback_allow_private, "--callback-allow-private")},
        {"callback-allow-hosts", "LIST",
         "comma-separated host names callbacks may reach ('*.example.com' for subdomains); "
         "default: any host whose address is allowed",
         list(&settings::callback_allow_hosts, "--callback-allow-hosts", true)},
        {"signing-secret", "SECRETS",
         "sign every callback (Timewheel-Signature, v2: method, URL, Idempotency-Key, attempt, "
         "time and body) with HMAC-SHA256; comma-separated or repeated for several at once "
         "(one v2 entry each, to rotate a secret without downtime); prefer the variable",
         [](settings& s, std::string_view v) {
             for (auto& secret : split_list("--signing-secret", v)) {
                 s.signing_secrets.push_back(std::move(secret));
             }
         },
         [](settings& s) { s.signing_secrets.clear(); }},
        {"signing-secret-for", "HOST=SECRETS",
         "sign callbacks to HOST (exact, case-insensitive) with its own secrets instead; "
         "repeat for more hosts, ';' between hosts in the variable "
         "(a.example=s1;b.example=s2,s3)",
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
        {"signing-send-v1", "",
         "also send the old v1 signature entries (body only), while receivers move to v2",
         boolean(&settings::signing_send_v1, "--signing-send-v1")},
        {"callback-timeout-ms", "MS",
         "a callback's whole call when its task gives no timeout_ms (default 10000)",
         millis(&settings::callback_timeout, "--callback-timeout-ms")},
        {"max-per-host", "N", "callbacks in flight to one host, per thread (default 8)",
         number(&settings::max_per_host, 1, 100000, "--max-per-host")},
        {"result-deadline-ms", "MS",
         "after a callback answered 202, wait this long for POST /v1/tasks/{id}/result, then "
         "retry (default 300000)",
         millis(&settings::result_deadline, "--result-deadline-ms")},
        {"max-awaiting-results", "N",
         "attempts waiting for their result after a 202 without holding one of the "
         "--worker-concurrency slots, per thread; beyond, they hold one (default 10000)",
         number(&settings::max_awaiting_results, 0, 10000000, "--max-awaiting-results")},
        {"lease-ms", "MS",
         "a claimed or running task's lease: after a crash, its tasks run again (here or on "
         "another node) this long after (default 30000, or 3 x --callback-timeout-ms)",
         millis(&settings::lease, "--lease-ms")},
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
        if (found->reset && std::find(reset.begin(), reset.end(), found) == reset.end()) {
            found->reset(r.settings);
            reset.push_back(found);
        }
        found->set(r.settings, *value);
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
        out += left + "\n      " + std::string(o.help) + "\n      env " + env_name(o.flag) + "\n";
    }
    out += "  --help\n      this text\n";
    return out;
}

} // namespace timewheeld::service
