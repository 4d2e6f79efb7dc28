//
// test/server/support/sink.hpp
//
// The receiving end of callbacks, for the tests: a real HTTP/1.1 server on Beast, on
// 127.0.0.1 and a port of its own (bound to 0), plain or TLS, on a thread of its own. It
// records every request and answers as the test says: any status and headers (Retry-After,
// Location), after a delay, or not at all (hang), or by resetting the connection. It counts
// the connections it accepted and the requests it held at once.
//
//     timewheel::test::sink s;
//     s.respond([](const recorded_request&) { return reply{.status = 503}; });
//     ... call s.url("/hook") ...
//     BOOST_TEST(s.requests().size() == 1);
//

#ifndef TIMEWHEEL_TEST_SERVER_SUPPORT_SINK_HPP
#define TIMEWHEEL_TEST_SERVER_SUPPORT_SINK_HPP

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

namespace timewheel::test {

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
    explicit sink(std::shared_ptr<boost::asio::ssl::context> tls = nullptr);
    ~sink();
    sink(const sink&) = delete;
    sink& operator=(const sink&) = delete;

    unsigned short port() const { return port_; }
    std::string url(std::string_view path = "/hook") const;
    void respond(std::function<reply(const recorded_request&)> f);
    std::vector<recorded_request> requests() const;
    std::size_t connections() const { return connections_.load(); }
    std::size_t max_concurrent() const { return max_concurrent_.load(); }

private:
    using tcp = boost::asio::ip::tcp;

    boost::asio::awaitable<void> accept_loop();
    boost::asio::awaitable<void> session(tcp::socket s, std::uint64_t id);
    // (sink.cpp: over a plain socket, or a TLS stream on it)
    template <class Stream>
    boost::asio::awaitable<void> serve(Stream& stream, tcp::socket& s, std::uint64_t id);

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

} // namespace timewheel::test

#endif // TIMEWHEEL_TEST_SERVER_SUPPORT_SINK_HPP
