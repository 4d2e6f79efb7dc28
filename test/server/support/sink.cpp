//
// test/server/support/sink.cpp
//
// sink (sink.hpp): the accept loop and the sessions, on the sink's own thread.
//
#include <test/server/support/sink.hpp>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/ssl/stream.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/beast/http/write.hpp>

namespace timewheel::test {

sink::sink(std::shared_ptr<boost::asio::ssl::context> tls)
    : tls_(std::move(tls))
    , acceptor_(io_, {boost::asio::ip::make_address("127.0.0.1"), 0}) {
    port_ = acceptor_.local_endpoint().port();
    boost::asio::co_spawn(io_, accept_loop(), boost::asio::detached);
    thread_ = std::thread([this] { io_.run(); });
}

sink::~sink() {
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

std::string sink::url(std::string_view path) const {
    return std::string(tls_ ? "https" : "http") + "://127.0.0.1:" + std::to_string(port_) +
           std::string(path);
}

void sink::respond(std::function<reply(const recorded_request&)> f) {
    std::lock_guard lock(mutex_);
    respond_ = std::move(f);
}

std::vector<recorded_request> sink::requests() const {
    std::lock_guard lock(mutex_);
    return requests_;
}

boost::asio::awaitable<void> sink::accept_loop() {
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

template <class Stream>
boost::asio::awaitable<void> sink::serve(Stream& stream, tcp::socket& s, std::uint64_t id) {
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

boost::asio::awaitable<void> sink::session(tcp::socket s, std::uint64_t id) {
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

} // namespace timewheel::test
