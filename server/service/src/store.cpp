//
// server/service/src/store.cpp
//
// A store URL to a dq::store: the scheme picks the store, redis:// and redis+cluster:// URLs
// are parsed here once (their hosts resolved at start), and an SQLite file is opened once and
// shared by the threads.
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

// The Redis client connects to an address literal; a name is resolved once, at start.
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

// One `host[:port]` of a Redis URL (a bracketed IPv6 literal allowed), its host resolved.
std::pair<std::string, std::uint16_t> parse_endpoint(std::string_view authority,
                                                     std::string_view scheme) {
    std::string_view host = authority;
    std::uint16_t port = 6379;
    if (const auto colon = authority.rfind(':');
        colon != std::string_view::npos && authority.find(']', colon) == std::string_view::npos) {
        const auto digits = authority.substr(colon + 1);
        unsigned p = 0;
        auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), p);
        if (digits.empty() || ec != std::errc() || end != digits.data() + digits.size() || p == 0 ||
            p > 65535) {
            throw std::invalid_argument("--store: malformed port '" + std::string(digits) + "'");
        }
        port = static_cast<std::uint16_t>(p);
        host = authority.substr(0, colon);
    }
    if (host.starts_with('[') && host.ends_with(']')) {
        host = host.substr(1, host.size() - 2);
    }
    if (host.empty()) {
        throw std::invalid_argument("--store: " + std::string(scheme) + " needs a host");
    }
    return {resolve(std::string(host)), port};
}

// What follows `redis://` or `redis+cluster://`: `[user:password@]hosts[/queue]`, where a
// cluster's hosts are seeds separated by commas.
redis_location parse_redis(std::string_view rest, const store_options& opt, bool cluster) {
    const std::string_view scheme = cluster ? "redis+cluster://" : "redis://";
    timewheel::redis::config cfg;
    std::string queue_name = "timewheeld";
    const auto slash = rest.find('/');
    std::string_view authority = rest.substr(0, slash);
    if (slash != std::string_view::npos) {
        const auto queue = rest.substr(slash + 1);
        if (!queue.empty()) {
            if (queue.find_first_of("{}/") != std::string_view::npos) {
                throw std::invalid_argument("--store: the queue name must not contain {, } or /");
            }
            queue_name = queue;
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
    cfg.request_timeout = opt.operation_timeout;
    cfg.client_name = opt.client_name;
    if (!cluster) {
        std::tie(cfg.host, cfg.port) = parse_endpoint(authority, scheme);
        return {std::move(cfg), std::move(queue_name), std::nullopt};
    }
    // Seeds: any one that answers gives the slot map, which names every master.
    std::vector<std::pair<std::string, std::uint16_t>> seeds;
    for (std::size_t from = 0;;) {
        const auto comma = authority.find(',', from);
        const auto one = authority.substr(from, comma - from);
        if (one.empty()) {
            throw std::invalid_argument(
                authority.empty() ? "--store: redis+cluster:// needs at least one seed host:port"
                                  : "--store: an empty seed in '" + std::string(authority) + "'");
        }
        seeds.push_back(parse_endpoint(one, scheme));
        if (comma == std::string_view::npos) {
            break;
        }
        from = comma + 1;
    }
    std::tie(cfg.host, cfg.port) = seeds.front();
    timewheel::redis::cluster_config ccfg;
    ccfg.node = cfg;
    ccfg.seeds.assign(seeds.begin() + 1, seeds.end());
    return {std::move(cfg), std::move(queue_name), std::move(ccfg)};
}

} // namespace

std::optional<redis_location> redis_location_of(std::string_view url, const store_options& opt) {
    if (url.starts_with("redis://")) {
        return parse_redis(url.substr(8), opt, false);
    }
    if (url.starts_with("redis+cluster://")) {
        return parse_redis(url.substr(16), opt, true);
    }
    return std::nullopt;
}

std::string check_store(std::string_view url) {
    if (auto where = redis_location_of(url)) {
        return "redis " + where->config.host + ":" + std::to_string(where->config.port) +
               ", queue " + where->queue + " (not contacted)";
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
    if ((impl_->redis = redis_location_of(url, opt))) {
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
                                "redis+cluster://host:port[,host:port...][/queue] or sqlite:PATH)");
}

store_source::~store_source() = default;

store_handle store_source::open(const timewheel::dq::store::executor_type& ex) {
    if (impl_->redis) {
        timewheel::dq::redis_store_options qopt;
        qopt.name = impl_->redis->queue;
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
