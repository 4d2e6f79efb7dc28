//
// server/service/src/store.cpp
//
// A store URL to a dq::store: the scheme picks the store, Redis URLs are parsed here once (a
// host name, of a server, a Sentinel or a cluster's seed, is kept as a name: the client
// resolves it on every connect, so that a DNS failover is followed), and an SQLite file is
// opened once and shared by the threads.
//
#include <timewheeld/service/store.hpp>

#include <timewheel/dq/redis_store.hpp>
#ifdef TIMEWHEELD_HAVE_SQLITE
#include <timewheel/dq/sqlite_store.hpp>
#endif

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/address.hpp>
#include <boost/asio/ip/tcp.hpp>

#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstring>
#include <fstream>
#include <optional>
#include <stdexcept>
#include <tuple>
#include <utility>
#include <vector>

namespace timewheeld::service {

namespace {

enum class redis_kind { standalone, sentinel, cluster };

// The address of `host` now (an address literal as it is).
std::string resolve(const std::string& host) {
    boost::system::error_code ec;
    boost::asio::ip::make_address(host, ec);
    if (!ec) {
        return host;
    }
    boost::asio::io_context io;
    boost::asio::ip::tcp::resolver resolver(io);
    const auto results = resolver.resolve(host, "", ec);
    if (ec || results.empty()) {
        throw std::invalid_argument("--store: cannot resolve '" + host +
                                    "': " + (ec ? ec.message() : "no address"));
    }
    return results.begin()->endpoint().address().to_string();
}

std::uint16_t parse_port(std::string_view port) {
    unsigned p = 0;
    auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), p);
    if (port.empty() || ec != std::errc() || end != port.data() + port.size() || p == 0 ||
        p > 65535) {
        throw std::invalid_argument("--store: malformed port '" + std::string(port) + "'");
    }
    return static_cast<std::uint16_t>(p);
}

// host[:port] or [v6]:port; the port defaults to `port`.
timewheel::redis::host_port parse_host_port(std::string_view authority, std::uint16_t port,
                                            std::string_view scheme) {
    std::string_view host = authority;
    if (const auto colon = authority.rfind(':');
        colon != std::string_view::npos && authority.find(']', colon) == std::string_view::npos) {
        port = parse_port(authority.substr(colon + 1));
        host = authority.substr(0, colon);
    }
    if (host.starts_with('[') && host.ends_with(']')) {
        host = host.substr(1, host.size() - 2);
    }
    if (host.empty()) {
        throw std::invalid_argument("--store: " + std::string(scheme) + " needs a host");
    }
    return {std::string(host), port};
}

long long query_number(std::string_view name, std::string_view v, long long lo, long long hi) {
    long long n = 0;
    auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
    if (v.empty() || ec != std::errc() || end != v.data() + v.size() || n < lo || n > hi) {
        throw std::invalid_argument("--store: ?" + std::string(name) + "= must be a number from " +
                                    std::to_string(lo) + " to " + std::to_string(hi) + ", got '" +
                                    std::string(v) + "'");
    }
    return n;
}

// redis://[user:password@]host[:port][/queue][?options],
// redis+sentinel://[user:password@]host[:port][,host[:port]...][/queue]?master=NAME[&options]
// (Sentinel port 26379 by default; user:password are the master's) and
// redis+cluster://[user:password@]host[:port][,host[:port]...][/queue] (seeds). Options:
// wait=N and wait_timeout_ms=T (durability), shards=N (a new queue's shard count),
// sentinel_user and sentinel_password (Sentinel).
redis_location parse_redis(std::string_view rest, redis_kind kind, const store_options& opt) {
    const bool sentinel = kind == redis_kind::sentinel;
    const std::string_view scheme = sentinel                      ? "redis+sentinel://"
                                    : kind == redis_kind::cluster ? "redis+cluster://"
                                                                  : "redis://";
    redis_location where;
    auto& cfg = where.config;
    where.queue = "timewheeld";
    std::string_view query;
    if (const auto q = rest.find('?'); q != std::string_view::npos) {
        query = rest.substr(q + 1);
        rest = rest.substr(0, q);
    }
    const auto slash = rest.find('/');
    std::string_view authority = rest.substr(0, slash);
    if (slash != std::string_view::npos) {
        const auto queue = rest.substr(slash + 1);
        if (!queue.empty()) {
            if (queue.find_first_of("{}/") != std::string_view::npos) {
                throw std::invalid_argument("--store: the queue name must not contain {, } or /");
            }
            where.queue = queue;
        }
    }
    if (const auto at = authority.rfind('@'); at != std::string_view::npos) {
        const auto userinfo = authority.substr(0, at);
        authority = authority.substr(at + 1);
        if (const auto colon = userinfo.find(':'); colon != std::string_view::npos) {
            cfg.username = userinfo.substr(0, colon);
            cfg.password = userinfo.substr(colon + 1);
        } else {
            cfg.password = userinfo;
        }
    }
    while (!query.empty()) {
        const auto amp = query.find('&');
        const auto item = query.substr(0, amp);
        query = amp == std::string_view::npos ? std::string_view() : query.substr(amp + 1);
        const auto eq = item.find('=');
        const auto key = item.substr(0, eq);
        const auto value = eq == std::string_view::npos ? std::string_view() : item.substr(eq + 1);
        if (key == "wait") {
            where.wait_replicas = static_cast<std::size_t>(query_number(key, value, 0, 64));
        } else if (key == "wait_timeout_ms") {
            where.wait_timeout = std::chrono::milliseconds(query_number(key, value, 1, 60000));
        } else if (key == "shards") {
            where.shards = static_cast<std::size_t>(query_number(key, value, 1, 16384));
        } else if (sentinel && key == "master") {
            cfg.master_name = value;
        } else if (sentinel && key == "sentinel_user") {
            cfg.sentinel_username = value;
        } else if (sentinel && key == "sentinel_password") {
            cfg.sentinel_password = value;
        } else {
            throw std::invalid_argument(
                "--store: unknown option '" + std::string(key) + "' in " + std::string(scheme) +
                " (expected wait, wait_timeout_ms, shards" +
                (sentinel ? ", master, sentinel_user, sentinel_password)" : ")"));
        }
    }
    std::vector<std::pair<std::string, std::uint16_t>> seeds; // a cluster's
    if (sentinel) {
        if (cfg.master_name.empty()) {
            throw std::invalid_argument(
                "--store: redis+sentinel:// needs the master's name: ?master=NAME");
        }
        while (!authority.empty()) {
            const auto comma = authority.find(',');
            cfg.sentinels.push_back(
                parse_host_port(authority.substr(0, comma), 26379, "redis+sentinel://"));
            authority =
                comma == std::string_view::npos ? std::string_view() : authority.substr(comma + 1);
        }
        if (cfg.sentinels.empty()) {
            throw std::invalid_argument("--store: redis+sentinel:// needs a Sentinel address");
        }
    } else if (kind == redis_kind::cluster) {
        // Seeds: any one that answers gives the slot map, which names every master.
        for (std::size_t from = 0;;) {
            const auto comma = authority.find(',', from);
            const auto one = authority.substr(from, comma - from);
            if (one.empty()) {
                throw std::invalid_argument(
                    authority.empty()
                        ? "--store: redis+cluster:// needs at least one seed host:port"
                        : "--store: an empty seed in '" + std::string(authority) + "'");
            }
            auto hp = parse_host_port(one, 6379, scheme);
            seeds.emplace_back(std::move(hp.host), hp.port);
            if (comma == std::string_view::npos) {
                break;
            }
            from = comma + 1;
        }
        std::tie(cfg.host, cfg.port) = seeds.front();
    } else {
        auto hp = parse_host_port(authority, 6379, "redis://");
        cfg.host = std::move(hp.host);
        cfg.port = hp.port;
    }
    cfg.request_timeout = opt.operation_timeout;
    cfg.client_name = opt.client_name;
    if (kind == redis_kind::cluster) {
        timewheel::redis::cluster_config ccfg;
        ccfg.node = cfg;
        ccfg.seeds.assign(seeds.begin() + 1, seeds.end());
        where.cluster = std::move(ccfg);
    }
    return where;
}

std::optional<redis_location> parse_any_redis(std::string_view url, const store_options& opt) {
    if (url.starts_with("redis://")) {
        return parse_redis(url.substr(8), redis_kind::standalone, opt);
    }
    if (url.starts_with("redis+sentinel://")) {
        return parse_redis(url.substr(17), redis_kind::sentinel, opt);
    }
    if (url.starts_with("redis+cluster://")) {
        return parse_redis(url.substr(16), redis_kind::cluster, opt);
    }
    return std::nullopt;
}

} // namespace

std::optional<redis_location> redis_location_of(std::string_view url, const store_options& opt) {
    return parse_any_redis(url, opt);
}

std::string check_store(std::string_view url) {
    if (auto where = redis_location_of(url)) {
        const auto& cfg = where->config;
        std::string hosts;
        const auto add = [&](const std::string& host, std::uint16_t port) {
            // A name must resolve now (a typo would otherwise show only as 503s), though
            // the service resolves it again on every connect.
            const auto address = resolve(host);
            hosts += (hosts.empty() ? "" : ", ") + host + ":" + std::to_string(port) +
                     (address == host ? "" : " (" + address + ")");
        };
        std::string what = "redis ";
        if (!cfg.sentinels.empty()) {
            what = "redis master '" + cfg.master_name + "' of the Sentinels ";
            for (const auto& s : cfg.sentinels) {
                add(s.host, s.port);
            }
        } else if (where->cluster) {
            what = "redis cluster of the seeds ";
            add(cfg.host, cfg.port);
            for (const auto& [host, port] : where->cluster->seeds) {
                add(host, port);
            }
        } else {
            add(cfg.host, cfg.port);
        }
        return what + hosts + ", queue " + where->queue +
               (where->wait_replicas ? ", wait=" + std::to_string(where->wait_replicas) : "") +
               ", shards " + std::to_string(where->shards) + " (not contacted)";
    }
    store_source source(url); // the scheme and the file name, as a start checks them
    const std::string path(url.substr(7));
    const auto slash = path.rfind('/');
    const std::string dir = slash == std::string::npos ? "." : path.substr(0, slash + 1);
    auto fail = [&](const std::string& what) {
        throw std::invalid_argument("--store: '" + path + "' " + what);
    };
    // The journal (PATH-wal) and the store's lock (PATH-lock) are created next to it.
    if (::access(dir.c_str(), W_OK | X_OK) != 0) {
        fail("cannot be used: its directory " + dir + ": " + std::strerror(errno));
    }
    if (::access(path.c_str(), F_OK) != 0) {
        return "sqlite " + path + " (missing: created at start)";
    }
    if (::access(path.c_str(), R_OK | W_OK) != 0) {
        fail("cannot be read and written: " + std::string(std::strerror(errno)));
    }
    // SQLite's header, read without opening the database (which could change it).
    std::ifstream in(path, std::ios::binary);
    char header[16] = {};
    in.read(header, sizeof header);
    if (in.gcount() != 0 &&
        std::string_view(header, in.gcount()) != std::string_view("SQLite format 3\0", 16)) {
        fail("is not an SQLite database");
    }
    return "sqlite " + path + (in.gcount() == 0 ? " (empty)" : " (an SQLite database)");
}

struct store_source::impl {
    std::optional<redis_location> redis;
    std::string sqlite_path;
    std::chrono::milliseconds sqlite_timeout{0};
#ifdef TIMEWHEELD_HAVE_SQLITE
    // The first store opened; the others share its database (it is never used itself).
    std::unique_ptr<timewheel::dq::sqlite_store> sqlite_first;
#endif
};

store_source::store_source(std::string_view url, store_options opt)
    : impl_(std::make_unique<impl>()) {
    if ((impl_->redis = parse_any_redis(url, opt))) {
        return;
    }
    if (url.starts_with("sqlite:")) {
#ifdef TIMEWHEELD_HAVE_SQLITE
        impl_->sqlite_path = url.substr(7);
        impl_->sqlite_timeout = opt.operation_timeout;
        if (impl_->sqlite_path.empty()) {
            throw std::invalid_argument(
                "--store: sqlite: needs a file, as in sqlite:timewheeld.db");
        }
        return;
#else
        throw std::invalid_argument("--store: this timewheeld was built without SQLite "
                                    "(TIMEWHEEL_BUILD_DQ_SQLITE=OFF)");
#endif
    }
    throw std::invalid_argument("--store: unknown scheme in '" + std::string(url) +
                                "' (expected redis://host:port[/queue], "
                                "redis+sentinel://host:port[,...][/queue]?master=NAME, "
                                "redis+cluster://host:port[,host:port...][/queue] or "
                                "sqlite:PATH)");
}

store_source::~store_source() = default;

store_handle store_source::open(const timewheel::dq::store::executor_type& ex) {
    if (impl_->redis) {
        timewheel::dq::redis_store_options qopt;
        qopt.name = impl_->redis->queue;
        qopt.wait_replicas = impl_->redis->wait_replicas;
        qopt.wait_timeout = impl_->redis->wait_timeout;
        qopt.shards = impl_->redis->shards;
        auto s =
            impl_->redis->cluster
                ? std::make_unique<timewheel::dq::redis_store>(ex, *impl_->redis->cluster, qopt)
                : std::make_unique<timewheel::dq::redis_store>(ex, impl_->redis->config, qopt);
        auto* raw = s.get();
        return {std::move(s), [raw] { raw->close(); }};
    }
#ifdef TIMEWHEELD_HAVE_SQLITE
    using timewheel::dq::sqlite_store;
    if (!impl_->sqlite_first) {
        // dq::sqlite_store throws system_error for a file it cannot open: that is bad
        // settings too.
        try {
            impl_->sqlite_first = std::make_unique<sqlite_store>(
                ex, timewheel::dq::sqlite_store_options{
                        .path = impl_->sqlite_path, .operation_timeout = impl_->sqlite_timeout});
        } catch (const boost::system::system_error& e) {
            throw std::invalid_argument("--store: cannot open '" + impl_->sqlite_path +
                                        "': " + e.what());
        }
    }
    auto s = std::make_unique<sqlite_store>(ex, *impl_->sqlite_first);
    auto* raw = s.get();
    return {std::move(s), [raw] { raw->close(); }};
#else
    throw std::logic_error("store_source: no store");
#endif
}

store_handle make_store(std::string_view url, const timewheel::dq::store::executor_type& ex,
                        const store_options& opt) {
    return store_source(url, opt).open(ex);
}

} // namespace timewheeld::service
