//
// test/dq/support/fake_redis.hpp
//
// A fake Redis on 127.0.0.1 (ephemeral port), on the test's io_context, for what a real one
// never sends: it answers the store's setup sanely and its script calls with whatever the
// test chose, byte for byte (a reply of the wrong type or shape, an announced length that
// never arrives, garbage), optionally closing the connection after it.
//
// "The script call" is EVALSHA, EVAL, FCALL or FCALL_RO; SCRIPT LOAD and FUNCTION LOAD
// succeed; WAIT answers `wait`, and CLUSTER SLOTS (with `cluster`) names the fake as the
// one master of every slot. A call with one key is the queue's config check (answered 1, as
// config.lua does); any other is the operation under test. So the fake does not depend on how the
// store calls its scripts (by SHA1 or as Redis 7 functions), only on a config call taking one key
// and a shard script more.
//
#ifndef TIMEWHEEL_TEST_DQ_SUPPORT_FAKE_REDIS_HPP
#define TIMEWHEEL_TEST_DQ_SUPPORT_FAKE_REDIS_HPP

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/write.hpp>

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace timewheel::test {

class fake_redis {
public:
    /// What the fake writes for a script call: `bytes` as they are, then the connection is
    /// closed when `close` (a reply cut short, garbage), or nothing at all when `silent`.
    struct answer {
        std::string bytes;
        bool close = false;
        bool silent = false;
    };

    explicit fake_redis(boost::asio::io_context& io)
        : acceptor_(io, {boost::asio::ip::make_address("127.0.0.1"), 0}) {
        accept();
    }

    std::uint16_t port() const { return acceptor_.local_endpoint().port(); }

    /// Closes every connection (after a silence, the client's next requests would be paired
    /// with the replies of the ones it gave up on: only a new connection starts clean).
    void drop_connections() {
        for (auto& w : sessions_) {
            if (auto s = w.lock()) {
                s->closing = true;
                boost::system::error_code ignored;
                s->socket.shutdown(boost::asio::ip::tcp::socket::shutdown_both, ignored);
                s->socket.close(ignored);
            }
        }
        sessions_.clear();
    }

    /// The answers to the next script calls (but the config check), in order; then `script`
    /// answers every one.
    std::deque<answer> queued;
    answer script;
    /// WAIT's reply (a store with wait_replicas follows its writes by WAIT).
    answer wait{":1\r\n"};
    int waits = 0;
    /// Answer CLUSTER SLOTS as the one master of every slot (for a Cluster store).
    bool cluster = false;
    /// TIME's reply (a claim with no shard to visit asks only TIME).
    answer time{"*2\r\n$10\r\n1700000000\r\n$6\r\n000000\r\n"};
    /// Script calls answered so far (config checks excluded), and connections accepted.
    int script_calls = 0;
    int connections = 0;

private:
    struct session {
        explicit session(boost::asio::ip::tcp::socket s)
            : socket(std::move(s)) {}
        boost::asio::ip::tcp::socket socket;
        std::string in;
        std::array<char, 16384> buf{};
        bool closing = false;
    };

    void accept() {
        acceptor_.async_accept(
            [this](boost::system::error_code ec, boost::asio::ip::tcp::socket s) {
                if (ec) {
                    return;
                }
                ++connections;
                auto sp = std::make_shared<session>(std::move(s));
                sessions_.push_back(sp);
                read(std::move(sp));
                accept();
            });
    }

    void read(std::shared_ptr<session> s) {
        auto& sock = s->socket;
        auto b = boost::asio::buffer(s->buf);
        sock.async_read_some(b, [this, s = std::move(s)](boost::system::error_code ec,
                                                         std::size_t n) mutable {
            if (ec || s->closing) {
                return;
            }
            s->in.append(s->buf.data(), n);
            std::string out;
            bool close = false;
            while (!close) {
                auto cmd = parse(s->in);
                if (!cmd) {
                    break;
                }
                const auto a = respond(*cmd);
                if (!a.silent) {
                    out += a.bytes;
                }
                close = a.close;
            }
            auto data = std::make_shared<std::string>(std::move(out));
            s->closing = close;
            boost::asio::async_write(
                s->socket, boost::asio::buffer(*data),
                [this, s, data, close](boost::system::error_code e, std::size_t) mutable {
                    if (e || close) {
                        boost::system::error_code ignored;
                        s->socket.shutdown(boost::asio::ip::tcp::socket::shutdown_both, ignored);
                        s->socket.close(ignored);
                        return;
                    }
                    read(std::move(s));
                });
        });
    }

    // One command (an array of bulk strings, as clients send them) off the front of `in`.
    static std::optional<std::vector<std::string>> parse(std::string& in) {
        std::size_t pos = 0;
        const auto number = [&](char lead) -> std::optional<std::int64_t> {
            const auto eol = in.find("\r\n", pos);
            if (eol == std::string::npos || in[pos] != lead) {
                return std::nullopt;
            }
            std::int64_t v = 0;
            std::from_chars(in.data() + pos + 1, in.data() + eol, v);
            pos = eol + 2;
            return v;
        };
        if (in.empty()) {
            return std::nullopt;
        }
        const auto n = number('*');
        if (!n) {
            return std::nullopt;
        }
        std::vector<std::string> cmd;
        for (std::int64_t i = 0; i < *n; ++i) {
            if (pos >= in.size()) {
                return std::nullopt;
            }
            const auto len = number('$');
            if (!len || in.size() < pos + static_cast<std::size_t>(*len) + 2) {
                return std::nullopt;
            }
            cmd.emplace_back(in, pos, static_cast<std::size_t>(*len));
            pos += static_cast<std::size_t>(*len) + 2;
        }
        in.erase(0, pos);
        return cmd;
    }

    answer respond(std::vector<std::string>& cmd) {
        std::string name = cmd.empty() ? std::string() : cmd[0];
        std::transform(name.begin(), name.end(), name.begin(),
                       [](unsigned char c) { return static_cast<char>(std::toupper(c)); });
        if (name == "EVALSHA" || name == "EVAL" || name == "FCALL" || name == "FCALL_RO") {
            if (cmd.size() > 2 && cmd[2] == "1") {
                return {":1\r\n"};
            }
            ++script_calls;
            if (!queued.empty()) {
                auto a = std::move(queued.front());
                queued.pop_front();
                return a;
            }
            return script;
        }
        if (name == "PING") {
            return {"+PONG\r\n"};
        }
        if (name == "TIME") {
            return time;
        }
        if (name == "WAIT") {
            ++waits;
            return wait;
        }
        if (name == "CLUSTER" && cluster) {
            const auto port = std::to_string(acceptor_.local_endpoint().port());
            return {"*1\r\n*3\r\n:0\r\n:16383\r\n*2\r\n$9\r\n127.0.0.1\r\n:" + port + "\r\n"};
        }
        if (name == "ROLE") {
            return {"*3\r\n$6\r\nmaster\r\n:0\r\n*0\r\n"};
        }
        if (name == "SCRIPT") {
            return {"$40\r\n" + std::string(40, '0') + "\r\n"};
        }
        if (name == "FUNCTION") {
            return {"$2\r\ndq\r\n"};
        }
        return {"+OK\r\n"};
    }

    boost::asio::ip::tcp::acceptor acceptor_;
    std::vector<std::weak_ptr<session>> sessions_;
};

} // namespace timewheel::test

#endif // TIMEWHEEL_TEST_DQ_SUPPORT_FAKE_REDIS_HPP
