//
// server/api/src/server.cpp
//
// The HTTP side of the API: accepting, reading requests within the limits, answering, and
// shutting down gracefully. One io_context per thread ("shard"), each with its own store
// (its own Redis connection, or its own view of the one SQLite database) completing there;
// every connection lives on one shard, so nothing of a shard needs a lock.
//
#include <timewheeld/api/server.hpp>
#include <timewheeld/service/store.hpp>

// GCC 12 at -O1 sees Asio's coroutine frames, allocated with aligned_alloc and released with
// the frame's own operator delete (which calls free), as a mismatch: a false positive.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
#endif

#include "auth.hpp"
#include "routes.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/string.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/empty_body.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/write.hpp>

#include <sys/resource.h>

#include <algorithm>
#include <atomic>
#include <csignal>
#include <fstream>
#include <optional>
#include <set>
#include <thread>
#include <vector>

namespace timewheeld::api {

namespace detail {

namespace net = boost::asio;
namespace beast = boost::beast;
using tcp = net::ip::tcp;

namespace {

// At most one log line per period for an event that may repeat as fast as the loop turns;
// the next line says how many were left out.
class log_limit {
public:
    bool allow(std::chrono::steady_clock::time_point now) {
        if (now < next_) {
            ++suppressed_;
            return false;
        }
        next_ = now + std::chrono::seconds(10);
        return true;
    }
    std::uint64_t take_suppressed() noexcept { return std::exchange(suppressed_, 0); }

private:
    std::chrono::steady_clock::time_point next_{};
    std::uint64_t suppressed_ = 0;
};

} // namespace

class server_impl {
public:
    // A connection as the shutdown sees it: idle ones are closed, busy ones finish.
    // At the connection limit, the connection idle the longest makes room for a new one.
    struct connection {
        beast::tcp_stream* stream;
        bool idle = true;
        std::chrono::steady_clock::time_point idle_since = std::chrono::steady_clock::now();
    };

    struct shard {
        net::io_context io{1};
        std::optional<net::executor_work_guard<net::io_context::executor_type>> work;
        service::store_handle store;
        std::unique_ptr<timewheel::dq::queue> queue;
        std::unique_ptr<api_context> ctx;
        std::set<connection*> connections;
        bool stopping = false;
        bool finished = false;
        bool hook_running = false; // shard_hooks::stop has not called done yet
    };

    server_impl(const service::settings& s, service::metrics_registry& m, service::logger& l)
        : cfg_(s)
        , metrics_(m)
        , log_(l) {
        cfg_.max_connections = connection_limit(cfg_);
        // Read once: a Redis URL parsed once, a SQLite file opened once and shared.
        service::store_source source(
            cfg_.store, {.operation_timeout = cfg_.store_timeout, .client_name = "timewheeld-api"});
        for (std::size_t i = 0; i < cfg_.threads; ++i) {
            auto sh = std::make_unique<shard>();
            sh->work.emplace(sh->io.get_executor());
            sh->store = source.open(sh->io.get_executor());
            sh->queue = std::make_unique<timewheel::dq::queue>(*sh->store.store);
            sh->ctx = std::make_unique<api_context>(api_context{
                *sh->queue, metrics_, cfg_, nullptr, log_, gauges_, &own_stats_, &tokens_});
            shards_.push_back(std::move(sh));
        }
        acceptor_.emplace(shards_[0]->io);
        const tcp::endpoint ep(net::ip::make_address(cfg_.bind), cfg_.port);
        acceptor_->open(ep.protocol());
        acceptor_->set_option(tcp::acceptor::reuse_address(true));
        acceptor_->bind(ep);
        acceptor_->listen(net::socket_base::max_listen_connections);
        port_ = acceptor_->local_endpoint().port();
        shutdown_timer_.emplace(shards_[0]->io);
        accept_timer_.emplace(shards_[0]->io);
    }

    // After a shutdown that timed out, stores still open may hold operations that complete
    // on any shard's io_context (a shared SQLite database finishes its queue when its last
    // store closes): they close while every io_context still exists.
    ~server_impl() {
        // From here on, coroutines destroyed unfinished (with a store's pending operation or
        // with their io_context) must not touch the shards, whose members are going.
        tearing_down_ = true;
        for (auto& sh : shards_) {
            if (!sh->finished && sh->store.close) {
                sh->store.close();
            }
        }
    }

    std::uint16_t port() const noexcept { return port_; }

    void set_result_sink(service::result_sink* sink) noexcept {
        for (auto& sh : shards_) {
            sh->ctx->sink = sink;
        }
    }

    void set_shard_hooks(shard_hooks hooks) { hooks_ = std::move(hooks); }

    void set_node_stats(const service::node_stats* stats) noexcept {
        for (auto& sh : shards_) {
            sh->ctx->stats = stats ? stats : &own_stats_;
        }
    }

    void run(bool handle_signals) {
        auto& io0 = shards_[0]->io;
        for (std::size_t i = 0; i < shards_.size(); ++i) {
            if (hooks_.start) {
                net::post(shards_[i]->io, [this, i] {
                    hooks_.start({shards_[i]->io, *shards_[i]->store.store, i});
                });
            }
        }
        tokens_.start(io0, handle_signals);
        if (handle_signals) {
            signals_.emplace(io0, SIGTERM, SIGINT);
            signals_->async_wait([this](boost::system::error_code ec, int sig) {
                if (!ec) {
                    log_.info("signal", {{"signal", sig == SIGTERM ? "SIGTERM" : "SIGINT"}});
                    begin_stop();
                }
            });
        }
        if (!cfg_.port_file.empty()) {
            // Written whole under another name, then renamed: a reader never sees half.
            const std::string tmp = cfg_.port_file + ".tmp";
            std::ofstream(tmp) << port_ << '\n';
            std::rename(tmp.c_str(), cfg_.port_file.c_str());
        }
        log_.info("listening", {{"address", cfg_.bind},
                                {"port", port_},
                                {"threads", cfg_.threads},
                                {"store", redact(cfg_.store)},
                                {"auth", !tokens_.enabled()         ? "none"
                                         : cfg_.tokens_file.empty() ? "bearer"
                                                                    : "tokens"}});
        accept();
        std::vector<std::thread> threads;
        for (std::size_t i = 1; i < shards_.size(); ++i) {
            threads.emplace_back([this, i] { shards_[i]->io.run(); });
        }
        io0.run();
        for (auto& t : threads) {
            t.join();
        }
        log_.info("stopped", {{"port", port_}});
    }

    // From any thread.
    void stop() {
        net::post(shards_[0]->io, [this] { begin_stop(); });
    }

private:
    // The connection limit: the one given, or half of the file descriptor limit (raised to
    // its hard maximum first) and at most 10000. Half leaves room for the callbacks' own
    // connections and the store's, so that a flood of clients cannot starve them.
    static std::size_t connection_limit(const service::settings& s) {
        rlimit lim{};
        if (::getrlimit(RLIMIT_NOFILE, &lim) == 0 && lim.rlim_cur < lim.rlim_max) {
            rlimit raised = lim;
            raised.rlim_cur = lim.rlim_max;
            if (::setrlimit(RLIMIT_NOFILE, &raised) == 0) {
                lim = raised;
            }
        }
        const std::size_t fds = lim.rlim_cur == RLIM_INFINITY
                                    ? std::size_t(1) << 20
                                    : static_cast<std::size_t>(lim.rlim_cur);
        const std::size_t room = fds > 64 ? fds - 64 : 0;
        if (s.max_connections == 0) {
            return std::clamp<std::size_t>(fds / 2, 1, 10000);
        }
        if (s.max_connections > room) {
            throw std::invalid_argument(
                "--max-connections: " + std::to_string(s.max_connections) +
                " connections need more file descriptors than the limit of " + std::to_string(fds) +
                " leaves (at most " + std::to_string(room) + "; raise ulimit -n)");
        }
        return s.max_connections;
    }

    static std::string redact(const std::string& url) {
        const auto scheme = url.find("://");
        const auto at = url.rfind('@');
        if (scheme == std::string::npos || at == std::string::npos || at < scheme) {
            return url;
        }
        return url.substr(0, scheme + 3) + "***" + url.substr(at);
    }

    void accept() {
        auto& target = *shards_[next_++ % shards_.size()];
        acceptor_->async_accept(target.io, [this, &target](boost::system::error_code ec,
                                                           tcp::socket socket) {
            if (ec == net::error::operation_aborted || !acceptor_->is_open()) {
                return;
            }
            if (!ec) {
                accept_backoff_ = {};
                net::co_spawn(target.io, session(target, std::move(socket)), net::detached);
                accept();
                return;
            }
            // Out of file descriptors or memory, the pending connection stays queued and
            // the next accept fails at once: retrying without a pause would spin (and log)
            // as fast as the loop turns. Other failures (a client gone before its accept)
            // concern one connection only.
            const bool exhausted = ec == net::error::no_descriptors ||
                                   ec == std::errc::too_many_files_open_in_system ||
                                   ec == net::error::no_buffer_space || ec == net::error::no_memory;
            if (accept_log_.allow(std::chrono::steady_clock::now())) {
                log_.warn("accept_failed",
                          {{"error", ec.message()}, {"suppressed", accept_log_.take_suppressed()}});
            }
            if (!exhausted) {
                accept();
                return;
            }
            accept_backoff_ = std::clamp(accept_backoff_ * 2, std::chrono::milliseconds(10),
                                         std::chrono::milliseconds(1000));
            accept_timer_->expires_after(accept_backoff_);
            accept_timer_->async_wait([this](boost::system::error_code wec) {
                if (!wec && acceptor_->is_open()) {
                    accept();
                }
            });
        });
    }

    // On the shard's thread, as a connection starts: true when it may stay. At the limit,
    // the connection idle the longest (waiting for a request) is closed to make room; when
    // every connection is busy, the new one is refused.
    bool make_room(shard& sh) {
        const std::size_t per_shard =
            std::max<std::size_t>(1, (cfg_.max_connections + shards_.size() - 1) / shards_.size());
        if (sh.connections.size() < per_shard) {
            return true;
        }
        connection* oldest = nullptr;
        for (auto* c : sh.connections) {
            if (c->idle && (!oldest || c->idle_since < oldest->idle_since)) {
                oldest = c;
            }
        }
        if (oldest) {
            boost::system::error_code ignored;
            oldest->stream->socket().close(ignored);
            oldest->idle = false; // closing: not a candidate again
            return true;
        }
        return false;
    }

    // On shard 0.
    void begin_stop() {
        if (stopping_) {
            return;
        }
        stopping_ = true;
        log_.info("stopping", {{"timeout_ms", cfg_.shutdown_timeout.count()}});
        boost::system::error_code ignored;
        acceptor_->close(ignored);
        accept_timer_->cancel();
        if (signals_) {
            signals_->cancel(ignored);
        }
        tokens_.stop();
        shutdown_timer_->expires_after(cfg_.shutdown_timeout);
        shutdown_timer_->async_wait([this](boost::system::error_code ec) {
            if (!ec) {
                log_.warn("shutdown_timeout", {{"timeout_ms", cfg_.shutdown_timeout.count()}});
                for (auto& sh : shards_) {
                    sh->io.stop();
                }
            }
        });
        for (std::size_t i = 0; i < shards_.size(); ++i) {
            net::post(shards_[i]->io, [this, i, s = shards_[i].get()] {
                s->stopping = true;
                for (auto* c : s->connections) {
                    if (c->idle) {
                        c->stream->socket().close();
                    }
                }
                if (hooks_.stop) {
                    s->hook_running = true;
                    hooks_.stop({s->io, *s->store.store, i}, [this, s] {
                        net::post(s->io, [this, s] {
                            s->hook_running = false;
                            maybe_finish(*s);
                        });
                    });
                }
                maybe_finish(*s);
            });
        }
    }

    // On the shard's thread: once stopping and without connections, it closes its store
    // and lets its io_context run out.
    void maybe_finish(shard& s) {
        if (!s.stopping || s.finished || s.hook_running || !s.connections.empty()) {
            return;
        }
        s.finished = true;
        s.store.close();
        s.work.reset();
        if (++finished_ == shards_.size()) {
            net::post(shards_[0]->io, [this] { shutdown_timer_->cancel(); });
        }
    }

    net::awaitable<void> write(beast::tcp_stream& stream, response& res, bool keep_alive,
                               std::string_view route) {
        res.keep_alive(keep_alive);
        res.set(http::field::server, "timewheeld");
        res.prepare_payload();
        metrics_.request(route, res.result_int());
        co_await http::async_write(stream, res, use_tuple);
    }

    // After an answer that ends the connection early (a limit): shut down sending, then read
    // and drop what the client still sends for a moment, so that it reads the answer
    // instead of a reset.
    response body_too_large() const {
        return error_response(http::status::payload_too_large, "body_too_large",
                              "the body is larger than " + std::to_string(cfg_.max_body_bytes) +
                                  " bytes");
    }

    // Answers a refused request and closes the connection.
    net::awaitable<void> reject(beast::tcp_stream& stream, response& res) {
        co_await write(stream, res, false, "rejected");
        co_await linger_close(stream);
    }

    net::awaitable<void> linger_close(beast::tcp_stream& stream) {
        boost::system::error_code ec;
        stream.socket().shutdown(tcp::socket::shutdown_send, ec);
        stream.expires_after(std::chrono::seconds(2));
        std::vector<char> sink(64 * 1024);
        std::size_t total = 0;
        while (total < 16 * 1024 * 1024) {
            auto [rec, n] = co_await stream.async_read_some(net::buffer(sink), use_tuple);
            if (rec) {
                break;
            }
            total += n;
        }
        stream.socket().close(ec);
    }

    net::awaitable<void> session(shard& sh, tcp::socket socket) {
        beast::tcp_stream stream(std::move(socket));
        connection conn{&stream};
        struct leave {
            server_impl* self;
            shard& sh;
            connection* conn;
            ~leave() {
                if (!self->tearing_down_) {
                    sh.connections.erase(conn);
                    self->maybe_finish(sh);
                }
            }
        } on_leave{this, sh, &conn};
        if (sh.stopping) {
            co_return;
        }
        if (!make_room(sh)) {
            if (refuse_log_.allow(std::chrono::steady_clock::now())) {
                log_.warn("connection_refused",
                          {{"reason", "the connection limit is reached and none is idle"},
                           {"max_connections", cfg_.max_connections},
                           {"suppressed", refuse_log_.take_suppressed()}});
            }
            co_return;
        }
        sh.connections.insert(&conn);

        // The buffer holds a request's header whole, then passes the body through: its limit
        // bounds what the parser's own limits do not (a chunk's extensions, the trailer, the
        // requests a client pipelines without reading the answers).
        const std::size_t header_limit = cfg_.max_header_bytes + 2 * cfg_.max_url_bytes + 64;
        beast::flat_buffer buffer(header_limit + 16 * 1024);
        for (;;) {
            http::request_parser<http::string_body> parser;
            // The request line is in Beast's header limit: the URL gets its own room, and
            // its own answer (414) below.
            parser.header_limit(static_cast<std::uint32_t>(header_limit));
            parser.body_limit(cfg_.max_body_bytes);
            conn.idle = buffer.size() == 0;
            conn.idle_since = std::chrono::steady_clock::now();
            stream.expires_after(cfg_.idle_timeout);
            auto [ec, n] = co_await http::async_read_header(stream, buffer, parser, use_tuple);
            conn.idle = false;
            stream.expires_after(cfg_.request_timeout);
            // A request refused before its body is read: answered, then the connection is
            // closed (what follows on it cannot be trusted to be a request).
            std::optional<response> refused;
            if (ec == http::error::header_limit || ec == http::error::buffer_overflow) {
                // Too long a request line, or too many header bytes. Beast parses the
                // request line on its own first: without a target, the line was the problem.
                const auto target = parser.get().target();
                const bool url = target.empty() || target.size() > cfg_.max_url_bytes;
                refused = url ? error_response(http::status::uri_too_long, "uri_too_long",
                                               "the request target is too long")
                              : error_response(http::status::request_header_fields_too_large,
                                               "headers_too_large", "the header is too large");
            } else if (ec == http::error::body_limit) {
                refused = body_too_large();
            } else if (ec &&
                       ec.category() == make_error_code(http::error::end_of_stream).category() &&
                       ec != http::error::end_of_stream) {
                refused = error_response(http::status::bad_request, "bad_request",
                                         "malformed HTTP request: " + ec.message());
            } else if (ec) {
                break; // closed, idle too long, or closed by the shutdown
            } else if (const auto& req = parser.get(); req.target().size() > cfg_.max_url_bytes) {
                refused = error_response(http::status::uri_too_long, "uri_too_long",
                                         "the request target is longer than " +
                                             std::to_string(cfg_.max_url_bytes) + " bytes");
            } else if (static_cast<std::size_t>(std::distance(req.begin(), req.end())) >
                       cfg_.max_header_count) {
                refused = error_response(
                    http::status::request_header_fields_too_large, "too_many_headers",
                    "more than " + std::to_string(cfg_.max_header_count) + " header fields");
            } else if (n > cfg_.max_header_bytes + req.target().size() + 32) {
                refused = error_response(http::status::request_header_fields_too_large,
                                         "headers_too_large", "the header is too large");
            }
            if (refused) {
                co_await reject(stream, *refused);
                co_return;
            }
            const auto& req = parser.get();
            if (beast::iequals(req[http::field::expect], "100-continue") && !parser.is_done()) {
                http::response<http::empty_body> cont(http::status::continue_, req.version());
                auto [wec, wn] = co_await http::async_write(stream, cont, use_tuple);
                if (wec) {
                    break;
                }
            }
            if (!parser.is_done()) {
                auto [rec, rn] = co_await http::async_read(stream, buffer, parser, use_tuple);
                if (rec == http::error::body_limit) {
                    auto res = body_too_large();
                    co_await reject(stream, res);
                    co_return;
                }
                if (rec == http::error::buffer_overflow) {
                    auto res = error_response(http::status::bad_request, "bad_request",
                                              "a chunk header or the trailer is longer than " +
                                                  std::to_string(buffer.max_size()) + " bytes");
                    co_await reject(stream, res);
                    co_return;
                }
                if (rec &&
                    rec.category() == make_error_code(http::error::end_of_stream).category() &&
                    rec != http::error::end_of_stream && rec != http::error::partial_message) {
                    auto res = error_response(http::status::bad_request, "bad_request",
                                              "malformed HTTP body: " + rec.message());
                    co_await reject(stream, res);
                    co_return;
                }
                if (rec) {
                    break;
                }
            }
            const auto started = std::chrono::steady_clock::now();
            routed r{response(http::status::internal_server_error, 11), "error"};
            try {
                r = co_await handle(*sh.ctx, req);
            } catch (const std::exception& e) {
                log_.error("handler_failed",
                           {{"target", std::string_view(req.target())}, {"error", e.what()}});
                r = {error_response(http::status::internal_server_error, "internal",
                                    "internal error"),
                     "error"};
            }
            r.res.version(req.version());
            const bool keep = req.keep_alive() && !sh.stopping;
            if (req.method() == http::verb::head) {
                r.res.body().clear();
            }
            log_.debug("request", {{"method", std::string_view(req.method_string())},
                                   {"target", std::string_view(req.target())},
                                   {"status", r.res.result_int()},
                                   {"us", std::chrono::duration_cast<std::chrono::microseconds>(
                                              std::chrono::steady_clock::now() - started)
                                              .count()}});
            co_await write(stream, r.res, keep, r.route);
            if (!keep) {
                break;
            }
        }
        boost::system::error_code ignored;
        stream.socket().shutdown(tcp::socket::shutdown_send, ignored);
        stream.socket().close(ignored);
    }

    service::settings cfg_;
    shard_hooks hooks_;
    service::service_metrics metrics_;
    service::logger& log_;
    token_watch tokens_{cfg_, log_}; // after cfg_ and log_
    store_gauges_refresh gauges_;
    service::node_stats own_stats_{1}; // GET /v1/stats without set_node_stats(): all zero
    std::vector<std::unique_ptr<shard>> shards_;
    std::optional<tcp::acceptor> acceptor_;
    std::optional<net::signal_set> signals_;
    std::optional<net::steady_timer> shutdown_timer_;
    std::optional<net::steady_timer> accept_timer_; // the pause after running out of descriptors
    std::chrono::milliseconds accept_backoff_{0};
    log_limit accept_log_;
    log_limit refuse_log_;
    std::atomic<bool> tearing_down_{false};
    std::uint16_t port_ = 0;
    std::size_t next_ = 0;
    bool stopping_ = false;
    std::atomic<std::size_t> finished_{0};
};

} // namespace detail

server::server(const service::settings& s, service::metrics_registry& metrics, service::logger& log)
    : impl_(std::make_unique<detail::server_impl>(s, metrics, log)) {}

server::~server() = default;

std::uint16_t server::port() const noexcept {
    return impl_->port();
}

void server::set_result_sink(service::result_sink* sink) noexcept {
    impl_->set_result_sink(sink);
}

void server::set_node_stats(const service::node_stats* stats) noexcept {
    impl_->set_node_stats(stats);
}

void server::set_shard_hooks(shard_hooks hooks) {
    impl_->set_shard_hooks(std::move(hooks));
}

void server::run(bool handle_signals) {
    impl_->run(handle_signals);
}

void server::stop() {
    impl_->stop();
}

} // namespace timewheeld::api
