//
// test/server/support/sink.hpp
//
// The receiving end of callbacks, for the tests: a real HTTP/1.1 server on Beast, on
// 127.0.0.1 and a port of its own (bound to 0), plain or TLS, on a thread of its own. It
// records every request and answers as the test says: any status and headers (Retry-After,
// Location), after a delay, or not at all (hang), or by resetting the connection. It counts
// the connections it accepted and the requests it held at once.
//
//     timewheeld::test_support::sink s;
//     s.respond([](const recorded_request&) { return reply{.status = 503}; });
//     ... call s.url("/hook") ...
//     BOOST_TEST(s.requests().size() == 1);
//

#ifndef TIMEWHEELD_TEST_SUPPORT_SINK_HPP
#define TIMEWHEELD_TEST_SUPPORT_SINK_HPP

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/ssl/stream.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/beast/http/write.hpp>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace timewheeld::test_support {

struct recorded_request {
    std::string method;
    std::string target;
    std::vector<std::pair<std::string, std::string>> headers;
    std::string body;
    std::uint64_t connection = 0; ///< which accepted connection (from 1) it came on

    /// The value of header `name` (case-insensitive), or nothing.
    std::optional<std::string> header(std::string_view name) const {
        for (const auto& [n, v] : headers)
            if (n.size() == name.size() &&
                std::equal(n.begin(), n.end(), name.begin(), [](char a, char b) {
                    return std::tolower(static_cast<unsigned char>(a)) ==
                           std::tolower(static_cast<unsigned char>(b));
                }))
                return v;
        return std::nullopt;
    }
};

struct reply {
    enum class action { answer, reset, hang };
    unsigned status = 200;
    std::vector<std::pair<std::string, std::string>> headers;
    std::string body;
    std::chrono::milliseconds delay{0};
    action act = action::answer;
    /// Hold the answer until this many requests are held at once (or 10 s have passed), so
    /// that a test of the concurrency cap does not depend on timing.
    std::size_t wait_for_concurrent = 0;
    /// Close the connection right after this answer, although it says keep-alive (as a
    /// server whose idle timeout ran out does): the client's pooled connection goes stale.
    bool close_after = false;
};

class sink {
public:
    /// Plain HTTP, or TLS with `tls` (a server context holding the certificate).
    explicit sink(std::shared_ptr<boost::asio::ssl::context> tls = nullptr)
        : tls_(std::move(tls))
        , acceptor_(io_, {boost::asio::ip::make_address("127.0.0.1"), 0}) {
        port_ = acceptor_.local_endpoint().port();
        boost::asio::co_spawn(io_, accept_loop(), boost::asio::detached);
        thread_ = std::thread([this] { io_.run(); });
    }
    ~sink() {
        boost::asio::post(io_, [this] {
            boost::system::error_code ec;
            acceptor_.close(ec);
            stopping_ = true;
            for (auto* t : hanging_)
                t->cancel();
            for (auto* s : sockets_)
                s->close(ec);
        });
        thread_.join();
    }
    sink(const sink&) = delete;
    sink& operator=(const sink&) = delete;

    unsigned short port() const { return port_; }
    std::string url(std::string_view path = "/hook") const {
        return std::string(tls_ ? "https" : "http") + "://127.0.0.1:" + std::to_string(port_) +
               std::string(path);
    }
    void respond(std::function<reply(const recorded_request&)> f) {
        std::lock_guard lock(mutex_);
        respond_ = std::move(f);
    }
    std::vector<recorded_request> requests() const {
        std::lock_guard lock(mutex_);
        return requests_;
    }
    std::size_t connections() const { return connections_.load(); }
    std::size_t max_concurrent() const { return max_concurrent_.load(); }

private:
    using tcp = boost::asio::ip::tcp;

    boost::asio::awaitable<void> accept_loop() {
        for (;;) {
            boost::system::error_code ec;
            tcp::socket s(io_);
            co_await acceptor_.async_accept(
                s, boost::asio::redirect_error(boost::asio::use_awaitable, ec));
            if (ec)
                co_return;
            auto id = ++connections_;
            boost::asio::co_spawn(io_, session(std::move(s), id), boost::asio::detached);
        }
    }

    boost::asio::awaitable<void> session(tcp::socket s, std::uint64_t id) {
        sockets_.insert(&s);
        if (tls_) {
            boost::asio::ssl::stream<tcp::socket&> stream(s, *tls_);
            boost::system::error_code ec;
            co_await stream.async_handshake(
                boost::asio::ssl::stream_base::server,
                boost::asio::redirect_error(boost::asio::use_awaitable, ec));
            if (!ec)
                co_await serve(stream, s, id);
        } else {
            co_await serve(s, s, id);
        }
        sockets_.erase(&s);
    }

    template <class Stream>
    boost::asio::awaitable<void> serve(Stream& stream, tcp::socket& s, std::uint64_t id) {
        namespace http = boost::beast::http;
        using boost::asio::redirect_error;
        using boost::asio::use_awaitable;
        boost::beast::flat_buffer buffer;
        for (;;) {
            boost::system::error_code ec;
            http::request<http::string_body> req;
            co_await http::async_read(stream, buffer, req, redirect_error(use_awaitable, ec));
            if (ec || stopping_)
                co_return;
            recorded_request r;
            r.method = std::string(req.method_string());
            r.target = std::string(req.target());
            for (const auto& f : req)
                r.headers.emplace_back(std::string(f.name_string()), std::string(f.value()));
            r.body = req.body();
            r.connection = id;
            reply rep;
            {
                std::lock_guard lock(mutex_);
                requests_.push_back(r);
                if (respond_)
                    rep = respond_(r);
            }
            auto now = ++concurrent_;
            auto seen = max_concurrent_.load();
            while (now > seen && !max_concurrent_.compare_exchange_weak(seen, now)) {
            }
            struct leave {
                std::atomic<std::size_t>& n;
                ~leave() { --n; }
            } leave_{concurrent_};

            boost::asio::steady_timer timer(io_);
            auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
            while (rep.wait_for_concurrent > 0 && concurrent_ < rep.wait_for_concurrent &&
                   std::chrono::steady_clock::now() < until && !stopping_) {
                timer.expires_after(std::chrono::milliseconds(2));
                co_await timer.async_wait(redirect_error(use_awaitable, ec));
            }
            if (rep.act == reply::action::hang) {
                timer.expires_at(std::chrono::steady_clock::time_point::max());
                hanging_.insert(&timer);
                co_await timer.async_wait(redirect_error(use_awaitable, ec));
                hanging_.erase(&timer);
                co_return;
            }
            if (rep.delay.count() > 0) {
                timer.expires_after(rep.delay);
                co_await timer.async_wait(redirect_error(use_awaitable, ec));
            }
            if (rep.act == reply::action::reset) {
                // SO_LINGER with a zero timeout: close() sends RST instead of FIN.
                s.set_option(tcp::socket::linger(true, 0), ec);
                s.close(ec);
                co_return;
            }
            http::response<http::string_body> res{static_cast<http::status>(rep.status), 11};
            for (const auto& [n, v] : rep.headers)
                res.insert(n, v);
            res.body() = rep.body;
            res.keep_alive(req.keep_alive());
            res.prepare_payload();
            co_await http::async_write(stream, res, redirect_error(use_awaitable, ec));
            if (ec || !req.keep_alive() || rep.close_after)
                co_return;
        }
    }

    std::shared_ptr<boost::asio::ssl::context> tls_;
    boost::asio::io_context io_;
    tcp::acceptor acceptor_;
    unsigned short port_ = 0;
    std::thread thread_;
    mutable std::mutex mutex_;
    std::function<reply(const recorded_request&)> respond_;
    std::vector<recorded_request> requests_;
    std::atomic<std::size_t> connections_{0};
    std::atomic<std::size_t> concurrent_{0};
    std::atomic<std::size_t> max_concurrent_{0};
    // Touched on the sink's thread only.
    bool stopping_ = false;
    std::set<boost::asio::steady_timer*> hanging_;
    std::set<tcp::socket*> sockets_;
};

} // namespace timewheeld::test_support

#endif
