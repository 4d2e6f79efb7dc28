//
// test/idle_reaper_sockets.cpp
//
// idle_reaper on real TCP connections over 127.0.0.1: an echo server on its own thread and
// io_context (its wheel belongs to that thread), and thousands of clients on the test's
// thread, driven by plain steady_timers so that the oracle does not depend on the wheel.
//
// Clients take one of these roles, at random (the seed is printed; TIMEWHEEL_SEED sets it):
// - quiet: send one message, then nothing. The server must close the connection no earlier
//   than the timeout after that message was sent, and within timeout + slack + a margin.
// - active_then_quiet: send a few messages, then nothing: reaped like the quiet ones, after a
//   deadline that was pushed back (lazily) several times.
// - active_close / active_half_close: send every 150-300 ms (timeout 1 s) until the test
//   ends the activity, then close, or shut down their sending side and read the rest of the
//   echo until the server closes. The server must never close them while active.
// - late: connect once the first reaping has happened, send one message, check its echo and
//   close: the server accepts and serves new connections while it reaps.
// Afterwards the server's count of open connections must be 0, its wheel empty, and its
// io_context must run out of work by itself (nothing leaked); ASan checks the rest.
//
// The same clients run against three servers: callbacks on a tcp::socket (5,000 clients),
// a coroutine per connection, and callbacks on a boost::beast::tcp_stream (fewer clients).
//

#define BOOST_TEST_MODULE idle_reaper_sockets
#include <timewheel/idle_reaper.hpp>

#include <boost/test/unit_test.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/tcp_stream.hpp>

#include <sys/resource.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <future>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <test/support/seed.hpp>

namespace {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace tw = timewheel;
using namespace std::chrono_literals;
using clock_type = std::chrono::steady_clock;
using tcp = net::ip::tcp;
using boost::system::error_code;

// The timeout leaves the active clients 700 ms of room against a busy machine (2 cores shared
// with a sanitizer build of 6,000 connections): a server that has not yet read a byte that
// sits in its socket cannot know of it, nor can a client late to send its next message.
constexpr clock_type::duration timeout = 1s;
constexpr clock_type::duration slack = tw::idle_reaper<>::default_slack(timeout);
// Generous: catches "never reaped" or "reaped a period late", not speed.
constexpr clock_type::duration margin = 3s;
// How long the active clients keep talking once everyone is connected.
constexpr clock_type::duration activity = 2 * timeout;

std::uint32_t test_seed() {
    static const auto seed = static_cast<std::uint32_t>(
        timewheel::test::seed_from_environment("idle_reaper_sockets", 20240606));
    return seed;
}

// Raises the soft limit on open descriptors to the hard limit; returns the new limit.
rlim_t raise_fd_limit() {
    rlimit limit{};
    BOOST_REQUIRE(getrlimit(RLIMIT_NOFILE, &limit) == 0);
    if (limit.rlim_cur < limit.rlim_max) {
        limit.rlim_cur = limit.rlim_max;
        BOOST_REQUIRE(setrlimit(RLIMIT_NOFILE, &limit) == 0);
    }
    return limit.rlim_cur;
}

// --- The server ----------------------------------------------------------------------------

// Counters of the server; touched on the server's thread only, read after it has stopped.
struct server_stats {
    std::size_t accepted = 0;
    std::size_t open = 0;
    std::size_t reaped = 0;
    std::size_t peer_closed = 0; // eof or reset: the client left first
    std::size_t other_errors = 0;
    std::size_t reaped_early = 0;        // reaped less than the timeout after the last touch
    clock_type::duration longest_idle{}; // the longest silence seen at a reaping
    clock_type::duration worst_lag{};    // the latest a 20 ms steady_timer ran: how busy it was
    std::uint64_t bytes_in = 0;
    std::uint64_t bytes_out = 0;
    std::string first_error;
};

bool peer_left(const error_code& ec) {
    return ec == net::error::eof || ec == net::error::connection_reset ||
           ec == net::error::broken_pipe;
}

tcp::socket& lowest(tcp::socket& s) {
    return s;
}
tcp::socket& lowest(beast::tcp_stream& s) {
    return s.socket();
}

// One connection of the callback servers: read, echo, touch on each read and write.
template <typename Stream>
class session : public std::enable_shared_from_this<session<Stream>> {
public:
    session(tcp::socket socket, server_stats& stats)
        : stream_(std::move(socket))
        , idle_(stream_, timeout)
        , stats_(stats) {
        ++stats_.open;
    }

    ~session() { --stats_.open; }

    void start() {
        idle_.start();
        last_touch_ = clock_type::now();
        read();
    }

private:
    void touch() {
        last_touch_ = clock_type::now();
        idle_.touch();
    }

    void read() {
        stream_.async_read_some(net::buffer(data_),
                                [self = this->shared_from_this()](error_code ec, std::size_t n) {
                                    if (ec) {
                                        self->finish(ec);
                                        return;
                                    }
                                    self->stats_.bytes_in += n;
                                    self->touch();
                                    self->write(n);
                                });
    }

    void write(std::size_t n) {
        net::async_write(stream_, net::buffer(data_, n),
                         [self = this->shared_from_this()](error_code ec, std::size_t written) {
                             if (ec) {
                                 self->finish(ec);
                                 return;
                             }
                             self->stats_.bytes_out += written;
                             self->touch();
                             self->read();
                         });
    }

    void finish(const error_code& ec) {
        if (idle_.reaped()) {
            ++stats_.reaped;
            const auto idle = clock_type::now() - last_touch_;
            stats_.reaped_early += idle < timeout;
            stats_.longest_idle = std::max(stats_.longest_idle, idle);
            return;
        }
        idle_.cancel();
        if (peer_left(ec)) {
            ++stats_.peer_closed;
        } else {
            ++stats_.other_errors;
            if (stats_.first_error.empty()) {
                stats_.first_error = ec.message();
            }
        }
        error_code ignored;
        lowest(stream_).close(ignored);
    }

    Stream stream_;
    tw::idle_reaper<> idle_; // after stream_, which it closes
    server_stats& stats_;
    clock_type::time_point last_touch_{};
    std::array<char, 1024> data_{};
};

enum class server_kind { callbacks, coroutines, beast_stream };

const char* name_of(server_kind kind) {
    switch (kind) {
    case server_kind::callbacks:
        return "callbacks on tcp::socket";
    case server_kind::coroutines:
        return "a coroutine per connection";
    case server_kind::beast_stream:
        return "callbacks on beast::tcp_stream";
    }
    return "?";
}

// GCC 12 pairs Asio's awaitable frame allocator (aligned_alloc) with its operator delete once
// coroutines are inlined into each other and warns; the pairing is Asio's own and correct.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"

// The coroutine flavour of the same session: the reaper lives in the coroutine frame.
net::awaitable<void> coroutine_session(tcp::socket socket, server_stats& stats) {
    ++stats.open;
    struct closing {
        server_stats& stats;
        ~closing() { --stats.open; }
    } guard{stats};
    tw::idle_reaper idle(socket, timeout);
    idle.start();
    clock_type::time_point last_touch = clock_type::now();
    std::array<char, 1024> data{};
    error_code ec;
    for (;;) {
        std::size_t n = 0;
        std::tie(ec, n) =
            co_await socket.async_read_some(net::buffer(data), net::as_tuple(net::use_awaitable));
        if (ec) {
            break;
        }
        stats.bytes_in += n;
        last_touch = clock_type::now();
        idle.touch();
        std::tie(ec, n) = co_await net::async_write(socket, net::buffer(data, n),
                                                    net::as_tuple(net::use_awaitable));
        if (ec) {
            break;
        }
        stats.bytes_out += n;
        last_touch = clock_type::now();
        idle.touch();
    }
    if (idle.reaped()) {
        ++stats.reaped;
        const auto idle = clock_type::now() - last_touch;
        stats.reaped_early += idle < timeout;
        stats.longest_idle = std::max(stats.longest_idle, idle);
    } else if (peer_left(ec)) {
        ++stats.peer_closed;
    } else {
        ++stats.other_errors;
        if (stats.first_error.empty()) {
            stats.first_error = ec.message();
        }
    }
    // ~idle_reaper cancels; ~socket closes.
}

// An echo server on 127.0.0.1, on its own thread and io_context.
class echo_server {
public:
    explicit echo_server(server_kind kind)
        : kind_(kind)
        , acceptor_(io_, tcp::endpoint(net::ip::address_v4::loopback(), 0)) {
        acceptor_.listen(net::socket_base::max_listen_connections);
        if (kind_ == server_kind::coroutines) {
            net::co_spawn(io_, listen(), net::detached);
        } else {
            accept();
        }
        watch_lag();
        thread_ = std::thread([this] {
            io_.run();
            done_.set_value();
        });
    }

    ~echo_server() {
        if (thread_.joinable()) {
            io_.stop();
            thread_.join();
        }
    }

    tcp::endpoint endpoint() const { return acceptor_.local_endpoint(); }

    // Stops accepting, then waits (at most `limit`) for the io_context to run out of work by
    // itself: every session gone and no reaper armed. False if it did not.
    bool stop_and_wait(clock_type::duration limit) {
        net::post(io_, [this] {
            acceptor_.close();
            lag_timer_.cancel();
        });
        const bool finished = done_.get_future().wait_for(limit) == std::future_status::ready;
        if (!finished) {
            io_.stop();
        }
        thread_.join();
        return finished;
    }

    // Read after stop_and_wait().
    const server_stats& stats() const { return stats_; }
    std::size_t armed() const { return net::use_service<tw::wheel_service>(io_).size(); }

private:
    void accept() {
        acceptor_.async_accept([this](error_code ec, tcp::socket socket) {
            if (ec) {
                return; // closed by stop_and_wait()
            }
            ++stats_.accepted;
            if (kind_ == server_kind::beast_stream) {
                std::make_shared<session<beast::tcp_stream>>(std::move(socket), stats_)->start();
            } else {
                std::make_shared<session<tcp::socket>>(std::move(socket), stats_)->start();
            }
            accept();
        });
    }

    // Measures how late the server's thread runs a handler, until the acceptor closes.
    void watch_lag() {
        lag_timer_.expires_after(20ms);
        lag_timer_.async_wait([this](error_code ec) {
            if (ec || !acceptor_.is_open()) {
                return;
            }
            stats_.worst_lag = std::max(stats_.worst_lag, clock_type::now() - lag_timer_.expiry());
            watch_lag();
        });
    }

    net::awaitable<void> listen() {
        for (;;) {
            auto [ec, socket] = co_await acceptor_.async_accept(net::as_tuple(net::use_awaitable));
            if (ec) {
                co_return;
            }
            ++stats_.accepted;
            net::co_spawn(io_, coroutine_session(std::move(socket), stats_), net::detached);
        }
    }

    server_stats stats_; // outlives io_, whose destruction may destroy sessions
    server_kind kind_;
    mutable net::io_context io_{1};
    tcp::acceptor acceptor_;
    net::steady_timer lag_timer_{io_};
    std::promise<void> done_;
    std::thread thread_;
};

#pragma GCC diagnostic pop

// --- The clients ---------------------------------------------------------------------------

enum class role { quiet, active_then_quiet, active_close, active_half_close, late };

struct client {
    client(net::io_context& io, std::size_t id_, role r_)
        : id(id_)
        , r(r_)
        , socket(io)
        , timer(io) {}

    std::size_t id;
    role r;
    tcp::socket socket;
    net::steady_timer timer;
    std::array<char, 512> in{};
    std::string out;
    std::string received;  // late clients: the echo so far
    int messages_left = 0; // active_then_quiet: messages before going quiet
    clock_type::time_point last_send{};
    clock_type::time_point server_closed_at{};
    std::size_t sent = 0;
    std::size_t echoed = 0;
    bool own_close = false;
    bool half_closed = false;
    bool server_closed = false;
    bool went_quiet = false; // an active client that fell silent for a timeout, too busy
    bool done = false;
    std::string failure; // the first thing that went wrong, if anything
};

bool quiet_role(role r) {
    return r == role::quiet || r == role::active_then_quiet;
}
bool active_role(role r) {
    return r == role::active_close || r == role::active_half_close;
}

class client_fleet {
public:
    client_fleet(tcp::endpoint server, std::size_t count, std::size_t late_count,
                 std::uint32_t seed)
        : server_(server)
        , first_wave_(count)
        , late_count_(late_count)
        , random_(seed)
        , stop_activity_timer_(io_) {
        std::uniform_int_distribution<int> pick(0, 99);
        for (std::size_t i = 0; i < count; ++i) {
            const int p = pick(random_);
            const role r = p < 45   ? role::quiet
                           : p < 60 ? role::active_then_quiet
                           : p < 80 ? role::active_close
                                    : role::active_half_close;
            clients_.emplace_back(io_, i, r);
            clients_.back().messages_left = 2 + pick(random_) % 6;
        }
        wave_end_ = clients_.size();
    }

    // Runs everything to the end (bounded by `limit`); false if it did not finish in time.
    bool run(clock_type::duration limit) {
        for (std::size_t i = 0; i < in_flight_limit && next_ < wave_end_; ++i) {
            connect_next();
        }
        io_.run_for(limit);
        return std::all_of(clients_.begin(), clients_.end(),
                           [](const client& c) { return c.done; });
    }

    const std::deque<client>& clients() const { return clients_; }
    std::size_t late_started() const { return late_started_; }
    std::size_t late_served() const { return late_served_; }

private:
    static constexpr std::size_t in_flight_limit = 200;

    void connect_next() {
        client& c = clients_[next_++];
        c.socket.async_connect(server_, [this, &c](error_code ec) {
            if (next_ < wave_end_) {
                connect_next();
            }
            if (ec) {
                fail(c, "connect: " + ec.message());
                return;
            }
            on_connected(c);
        });
    }

    void on_connected(client& c) {
        if (c.r != role::late && ++connected_ == first_wave_) {
            // Everyone of the first wave is in: the active ones talk for `activity` more.
            stop_activity_timer_.expires_after(activity);
            stop_activity_timer_.async_wait([this](error_code) { stop_activity_ = true; });
        }
        read(c);
        send(c);
    }

    void send(client& c) {
        c.out = "message " + std::to_string(c.id) + " " + std::to_string(c.sent) + "\n";
        c.last_send = clock_type::now(); // the server cannot see it earlier than this
        c.sent += c.out.size();
        net::async_write(c.socket, net::buffer(c.out), [this, &c](error_code ec, std::size_t) {
            if (ec) {
                // The server closed first: the pending read reports it and judges.
                if (!c.own_close && !c.server_closed && !peer_left(ec)) {
                    fail(c, "write: " + ec.message());
                }
                return;
            }
            after_send(c);
        });
    }

    void after_send(client& c) {
        if (c.r == role::quiet || c.r == role::late || c.server_closed) {
            return;
        }
        if (c.r == role::active_then_quiet && --c.messages_left <= 0) {
            return; // goes quiet: the server must reap it
        }
        std::uniform_int_distribution<int> period(150, 300);
        c.timer.expires_after(std::chrono::milliseconds(period(random_)));
        c.timer.async_wait([this, &c](error_code ec) {
            if (ec || c.server_closed) {
                return;
            }
            if (stop_activity_ && active_role(c.r)) {
                finish_activity(c);
                return;
            }
            send(c);
        });
    }

    void finish_activity(client& c) {
        if (c.r == role::active_close) {
            c.own_close = true;
            error_code ignored;
            c.socket.close(ignored); // the pending read completes with operation_aborted
            return;
        }
        c.half_closed = true;
        error_code ec;
        c.socket.shutdown(tcp::socket::shutdown_send, ec);
        if (ec) {
            fail(c, "shutdown: " + ec.message());
        }
    }

    void read(client& c) {
        c.socket.async_read_some(net::buffer(c.in), [this, &c](error_code ec, std::size_t n) {
            if (!ec) {
                c.echoed += n;
                if (c.r == role::late) {
                    c.received.append(c.in.data(), n);
                    if (c.received == c.out) {
                        ++late_served_;
                        c.own_close = true;
                        c.socket.close(ec);
                        c.done = true;
                        return;
                    }
                }
                read(c);
                return;
            }
            on_read_error(c, ec);
        });
    }

    void on_read_error(client& c, const error_code& ec) {
        if (c.own_close) {
            c.done = true; // our close aborted the read
            return;
        }
        if (ec != net::error::eof && ec != net::error::connection_reset) {
            fail(c, "read: " + ec.message());
            return;
        }
        // The server closed the connection.
        c.server_closed = true;
        c.server_closed_at = clock_type::now();
        c.timer.cancel();
        error_code ignored;
        c.socket.close(ignored);
        c.done = true;
        if (active_role(c.r) && !c.half_closed) {
            if (c.server_closed_at - c.last_send < timeout) {
                fail(c, "closed by the server " +
                            std::to_string((c.server_closed_at - c.last_send) / 1ms) +
                            " ms after its last message");
            } else {
                c.went_quiet = true; // this client was late to send: a legitimate reaping
            }
        } else if (c.r == role::late) {
            fail(c, "closed by the server before its echo");
        } else if (c.half_closed && c.echoed != c.sent) {
            fail(c, "half-closed: " + std::to_string(c.echoed) + " of " + std::to_string(c.sent) +
                        " bytes echoed");
        }
        if (quiet_role(c.r) && !late_wave_started_) {
            start_late_wave(); // the reaping has begun: new clients come in meanwhile
        }
    }

    void start_late_wave() {
        late_wave_started_ = true;
        for (std::size_t i = 0; i < late_count_; ++i) {
            clients_.emplace_back(io_, clients_.size(), role::late);
        }
        wave_end_ = clients_.size();
        late_started_ = late_count_;
        for (std::size_t i = 0; i < in_flight_limit && next_ < wave_end_; ++i) {
            connect_next();
        }
    }

    void fail(client& c, std::string what) {
        if (c.failure.empty()) {
            c.failure = std::move(what);
        }
        c.done = true;
        c.timer.cancel();
        error_code ignored;
        c.socket.close(ignored);
    }

    net::io_context io_{1};
    tcp::endpoint server_;
    std::size_t first_wave_;
    std::size_t late_count_;
    std::mt19937 random_;
    std::deque<client> clients_;
    net::steady_timer stop_activity_timer_;
    std::size_t next_ = 0;
    std::size_t wave_end_ = 0;
    std::size_t connected_ = 0;
    std::size_t late_served_ = 0;
    std::size_t late_started_ = 0;
    bool stop_activity_ = false;
    bool late_wave_started_ = false;
};

// Runs `count` clients (plus `late` late ones) against a server of `kind` and checks every
// rule of the contract.
void run_scenario(server_kind kind, std::size_t count, std::size_t late) {
    const rlim_t fds = raise_fd_limit();
    BOOST_REQUIRE_MESSAGE(fds >= 2 * (count + late) + 256,
                          "this test needs " << 2 * (count + late) + 256
                                             << " descriptors; the hard limit is " << fds);
    const std::uint32_t seed = test_seed() + static_cast<std::uint32_t>(kind);
    BOOST_TEST_MESSAGE(name_of(kind)
                       << ": " << count << " clients + " << late << " late, seed " << seed);

    echo_server server(kind);
    client_fleet fleet(server.endpoint(), count, late, seed);
    const auto started = clock_type::now();
    const bool finished = fleet.run(60s);
    const auto clients_done = clock_type::now();
    BOOST_TEST(finished, "every client finished within 60 s");
    const bool server_drained = server.stop_and_wait(20s);
    BOOST_TEST(server_drained, "the server's io_context ran out of work by itself");

    std::size_t quiet = 0;
    std::size_t active = 0;
    std::size_t early = 0;
    std::size_t late_reaps = 0;
    std::size_t not_reaped = 0;
    std::size_t failures = 0;
    std::size_t late_clients = 0;
    std::uint64_t sent = 0;
    clock_type::duration shortest = clock_type::duration::max();
    clock_type::duration longest = clock_type::duration::zero();
    for (const client& c : fleet.clients()) {
        sent += c.sent;
        if (!c.failure.empty()) {
            if (++failures <= 10) {
                BOOST_ERROR("client " << c.id << " (seed " << seed << "): " << c.failure);
            }
            continue;
        }
        if (quiet_role(c.r) || c.went_quiet) {
            ++quiet;
            late_clients += c.went_quiet;
            if (!c.server_closed) {
                ++not_reaped;
                continue;
            }
            const auto idle = c.server_closed_at - c.last_send;
            shortest = std::min(shortest, idle);
            longest = std::max(longest, idle);
            early += idle < timeout;
            late_reaps += idle > timeout + slack + margin;
        } else if (active_role(c.r)) {
            ++active;
        }
    }
    const auto ms = [](clock_type::duration d) {
        return std::chrono::duration_cast<std::chrono::milliseconds>(d).count();
    };
    const server_stats& s = server.stats();
    BOOST_TEST_MESSAGE(
        "  " << quiet << " quiet (" << late_clients << " of them active ones late to send) and "
             << active << " active clients, " << fleet.late_started()
             << " late; quiet ones reaped after " << ms(shortest) << "-" << ms(longest)
             << " ms of silence (on the server: at most " << ms(s.longest_idle)
             << " ms; its worst lag " << ms(s.worst_lag) << " ms); " << s.bytes_in
             << " bytes echoed; " << ms(clients_done - started) << " ms");
    BOOST_TEST(failures == 0u);
    // Active clients too late to send (the machine too busy) were rightly reaped; if many
    // were, "no active one is closed" was hardly tested: fail rather than pass vacuously.
    BOOST_TEST(late_clients * 10 <= active + late_clients,
               late_clients << " active clients were late to send: the machine is overloaded");
    BOOST_TEST(not_reaped == 0u);
    BOOST_TEST(early == 0u, early << " quiet clients were closed before the timeout");
    BOOST_TEST(late_reaps == 0u);
    BOOST_TEST(fleet.late_started() == late);
    BOOST_TEST(fleet.late_served() == late);

    // The server's side of the story.
    BOOST_TEST(s.accepted == count + late);
    BOOST_TEST(s.reaped == quiet);
    BOOST_TEST(s.reaped_early == 0u);
    BOOST_TEST(s.peer_closed == active + late);
    BOOST_TEST(s.other_errors == 0u, "first: " << s.first_error);
    BOOST_TEST(s.open == 0u);
    BOOST_TEST(server.armed() == 0u);
    BOOST_TEST(s.bytes_in <= sent);
    BOOST_TEST(s.bytes_out <= s.bytes_in);
    BOOST_TEST(s.bytes_in > 0u);
}

} // namespace

BOOST_AUTO_TEST_CASE(five_thousand_connections_with_callbacks_on_sockets) {
    run_scenario(server_kind::callbacks, 5000, 500);
}

BOOST_AUTO_TEST_CASE(coroutine_connections) {
    run_scenario(server_kind::coroutines, 1000, 100);
}

BOOST_AUTO_TEST_CASE(beast_tcp_stream_connections) {
    run_scenario(server_kind::beast_stream, 1000, 100);
}

// The io_context goes away with connections still open and reapers armed: sessions are
// destroyed without their actions running, and nothing leaks (ASan).
BOOST_AUTO_TEST_CASE(server_shutdown_with_armed_reapers) {
    for (const server_kind kind : {server_kind::callbacks, server_kind::coroutines}) {
        auto server = std::make_unique<echo_server>(kind);
        net::io_context io;
        std::vector<tcp::socket> sockets;
        for (int i = 0; i < 50; ++i) {
            sockets.emplace_back(io);
            sockets.back().connect(server->endpoint());
            net::write(sockets.back(), net::buffer("hello\n", 6));
        }
        std::array<char, 6> echo{};
        for (tcp::socket& s : sockets) {
            net::read(s, net::buffer(echo)); // every session is running
        }
        server.reset(); // stops the io_context, joins, destroys it
        // The server's descriptors are closed: every client sees the end of the stream.
        std::size_t ended = 0;
        for (tcp::socket& s : sockets) {
            error_code ec;
            s.read_some(net::buffer(echo), ec);
            ended += ec == net::error::eof || ec == net::error::connection_reset;
        }
        BOOST_TEST(ended == sockets.size());
    }
}
