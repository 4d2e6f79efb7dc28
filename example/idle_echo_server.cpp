//
// example/idle_echo_server.cpp
//
// A TCP echo server on 127.0.0.1 that closes connections after a period without traffic.
//
// Each connection embeds a timewheel::idle_reaper: started when the connection is accepted,
// touched on every read and write (one clock read and one store, no allocation, no handler),
// and closing the socket once the connection has been silent for --idle-timeout. The server
// logs connections opened, reaped and closed by their peer, prints statistics every
// --stats-interval and when it gets SIGINT or SIGTERM, then closes everything and exits.
//
//   idle_echo_server [--port N] [--idle-timeout D] [--tick D] [--stats-interval D]
//                    [--duration D] [--self-test] [--clients N] [--quiet]
//
// Durations take a unit (500ms, 30s, 2m; 250us); a bare number is milliseconds.
//   --port 0            an ephemeral port (the default); the chosen one is printed
//   --idle-timeout 30s  how long a connection may stay silent
//   --tick 1ms          the tick of the io_context's wheel_service
//   --stats-interval 5s statistics on a timer (0: only at exit)
//   --duration D        exit by itself after D (as if it got SIGTERM)
//   --self-test         also run --clients clients in-process (half of them go quiet, half
//                       keep talking), check that exactly the quiet ones are reaped, never
//                       before the timeout, and exit with 0 if so. Defaults to
//                       --idle-timeout 500ms --stats-interval 250ms --clients 20.
//   --quiet             no line per connection
//
// Try it:
//   ./idle_echo_server --idle-timeout 5s
//   nc 127.0.0.1 <port>        # type something, then wait five seconds
//   ./idle_echo_server --self-test
//

#include <timewheel/callback_timer.hpp>
#include <timewheel/idle_reaper.hpp>
#include <timewheel/wheel_service.hpp>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/write.hpp>

#include <array>
#include <chrono>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <exception>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>

namespace {

namespace net = boost::asio;
namespace tw = timewheel;
using tcp = net::ip::tcp;
using clock_type = std::chrono::steady_clock;
using boost::system::error_code;
using namespace std::chrono_literals;

// --- Options -------------------------------------------------------------------------------

struct options {
    unsigned short port = 0;
    clock_type::duration idle_timeout = 30s;
    clock_type::duration tick = 1ms;
    clock_type::duration stats_interval = 5s;
    clock_type::duration duration = clock_type::duration::zero(); // zero: until a signal
    bool self_test = false;
    int clients = 20;
    bool quiet = false;
};

// "500ms", "30s", "2m", "1h", "250us", "100ns"; a bare number is milliseconds.
clock_type::duration parse_duration(const std::string& option, const std::string& text) {
    std::size_t used = 0;
    double value = 0;
    try {
        value = std::stod(text, &used);
    } catch (const std::exception&) {
        throw std::invalid_argument(option + ": not a duration: '" + text + "'");
    }
    const std::string_view unit = std::string_view(text).substr(used);
    double ns_per_unit = 0;
    if (unit.empty() || unit == "ms") {
        ns_per_unit = 1e6;
    } else if (unit == "s") {
        ns_per_unit = 1e9;
    } else if (unit == "m" || unit == "min") {
        ns_per_unit = 60e9;
    } else if (unit == "h") {
        ns_per_unit = 3600e9;
    } else if (unit == "us") {
        ns_per_unit = 1e3;
    } else if (unit == "ns") {
        ns_per_unit = 1;
    } else {
        throw std::invalid_argument(option + ": unknown unit '" + std::string(unit) +
                                    "' (use ns, us, ms, s, m or h)");
    }
    if (value < 0 || value * ns_per_unit > 1e18) {
        throw std::invalid_argument(option + ": out of range: '" + text + "'");
    }
    return std::chrono::duration_cast<clock_type::duration>(
        std::chrono::nanoseconds(static_cast<std::int64_t>(value * ns_per_unit)));
}

void usage(std::FILE* out) {
    std::fputs("usage: idle_echo_server [--port N] [--idle-timeout D] [--tick D]\n"
               "                        [--stats-interval D] [--duration D] [--self-test]\n"
               "                        [--clients N] [--quiet]\n"
               "durations: 500ms, 30s, 2m, 250us; a bare number is milliseconds\n",
               out);
}

options parse(int argc, char** argv) {
    options o;
    bool timeout_set = false;
    bool stats_set = false;
    for (int i = 1; i < argc; ++i) {
        const std::string arg = argv[i];
        const auto value = [&]() -> std::string {
            if (i + 1 >= argc) {
                throw std::invalid_argument(arg + ": missing value");
            }
            return argv[++i];
        };
        if (arg == "--port") {
            const std::string v = value();
            const long port = std::strtol(v.c_str(), nullptr, 10);
            if (port < 0 || port > 65535 ||
                v.find_first_not_of("0123456789") != std::string::npos) {
                throw std::invalid_argument("--port: not a port number: '" + v + "'");
            }
            o.port = static_cast<unsigned short>(port);
        } else if (arg == "--idle-timeout") {
            o.idle_timeout = parse_duration(arg, value());
            timeout_set = true;
            if (o.idle_timeout <= clock_type::duration::zero()) {
                throw std::invalid_argument("--idle-timeout: must be positive");
            }
        } else if (arg == "--tick") {
            o.tick = parse_duration(arg, value());
        } else if (arg == "--stats-interval") {
            o.stats_interval = parse_duration(arg, value());
            stats_set = true;
        } else if (arg == "--duration") {
            o.duration = parse_duration(arg, value());
        } else if (arg == "--self-test") {
            o.self_test = true;
        } else if (arg == "--clients") {
            const std::string v = value();
            o.clients = std::atoi(v.c_str());
            if (o.clients < 2 || o.clients > 10000) {
                throw std::invalid_argument("--clients: must be in [2, 10000], got '" + v + "'");
            }
        } else if (arg == "--quiet") {
            o.quiet = true;
        } else if (arg == "--help" || arg == "-h") {
            usage(stdout);
            std::exit(0);
        } else {
            throw std::invalid_argument("unknown option '" + arg + "'");
        }
    }
    if (o.self_test) {
        o.idle_timeout = timeout_set ? o.idle_timeout : 500ms;
        o.stats_interval = stats_set ? o.stats_interval : 250ms;
    }
    return o;
}

// --- The server ----------------------------------------------------------------------------

const clock_type::time_point program_start = clock_type::now();

double seconds(clock_type::duration d) {
    return std::chrono::duration<double>(d).count();
}

struct stats {
    std::uint64_t accepted = 0;
    std::uint64_t open = 0;
    std::uint64_t reaped = 0;
    std::uint64_t peer_closed = 0;
    std::uint64_t bytes_in = 0;
    std::uint64_t bytes_out = 0;
};

class server;

class session : public std::enable_shared_from_this<session> {
public:
    session(server& owner, std::uint64_t id, tcp::socket socket, clock_type::duration timeout);
    ~session();

    void start();
    void close(); // by the server, at shutdown

private:
    void read();
    void write(std::size_t n);
    void touch() {
        last_activity_ = clock_type::now();
        idle_.touch(); // O(1): the deadline moves later, nothing is relinked or allocated
    }
    void finish(const error_code& ec);

    server& server_;
    std::uint64_t id_;
    tcp::socket socket_;
    tw::idle_reaper<> idle_; // closes socket_ after the timeout without a touch()
    clock_type::time_point last_activity_{};
    std::array<char, 4096> data_{};
};

class server {
public:
    server(net::io_context& io, const options& o)
        : io_(io)
        , options_(o)
        , acceptor_(io, tcp::endpoint(net::ip::address_v4::loopback(), o.port))
        , signals_(io, SIGINT, SIGTERM)
        , stats_timer_(io, [this] { on_stats_timer(); })
        , duration_timer_(io, [this] {
            log("duration of %.3f s reached", seconds(options_.duration));
            stop();
        }) {
        acceptor_.listen(net::socket_base::max_listen_connections);
    }

    void start() {
        std::printf("listening on 127.0.0.1:%u (idle timeout %.3f s, tick %.3f ms)\n",
                    static_cast<unsigned>(port()), seconds(options_.idle_timeout),
                    seconds(options_.tick) * 1e3);
        std::fflush(stdout);
        accept();
        signals_.async_wait([this](error_code ec, int signal) {
            if (!ec) {
                log("signal %d: shutting down", signal);
                stop();
            }
        });
        if (options_.stats_interval > clock_type::duration::zero()) {
            stats_timer_.expires_after(options_.stats_interval);
        }
        if (options_.duration > clock_type::duration::zero()) {
            duration_timer_.expires_after(options_.duration);
        }
    }

    // Stops accepting, closes every connection and the timers: run() then returns.
    void stop() {
        if (stopped_) {
            return;
        }
        stopped_ = true;
        error_code ignored;
        acceptor_.close(ignored);
        signals_.cancel(ignored);
        stats_timer_.cancel();
        duration_timer_.cancel();
        print_stats("final");
        auto sessions = std::move(sessions_);
        sessions_.clear();
        for (auto& [id, weak] : sessions) {
            if (auto s = weak.lock()) {
                s->close();
            }
        }
        if (on_stop) {
            on_stop();
        }
    }

    unsigned short port() const { return acceptor_.local_endpoint().port(); }
    const stats& counters() const { return stats_; }
    bool stopped() const { return stopped_; }

    template <typename... Args>
    void log(const char* format, Args... args) const {
        std::printf("[%9.3f] ", seconds(clock_type::now() - program_start));
        if constexpr (sizeof...(Args) == 0) {
            std::fputs(format, stdout); // a plain message, not a format
        } else {
            std::printf(format, args...);
        }
        std::printf("\n");
        std::fflush(stdout);
    }

    void connection_log(const char* format, auto... args) const {
        if (!options_.quiet) {
            log(format, args...);
        }
    }

    std::function<void()> on_stop; // the self-test's hook

private:
    friend class session;

    void accept() {
        acceptor_.async_accept([this](error_code ec, tcp::socket socket) {
            if (ec) {
                return; // closed by stop()
            }
            const std::uint64_t id = ++stats_.accepted;
            error_code ignored;
            const tcp::endpoint peer = socket.remote_endpoint(ignored);
            auto s = std::make_shared<session>(*this, id, std::move(socket), options_.idle_timeout);
            sessions_.emplace(id, s);
            connection_log("#%llu opened from %s:%u (open %llu)",
                           static_cast<unsigned long long>(id), peer.address().to_string().c_str(),
                           static_cast<unsigned>(peer.port()),
                           static_cast<unsigned long long>(stats_.open));
            s->start();
            accept();
        });
    }

    void on_stats_timer() {
        print_stats("stats");
        stats_timer_.expires_after(options_.stats_interval);
    }

    void print_stats(const char* what) const {
        log("%s: open %llu, accepted %llu, reaped %llu, closed by peer %llu, bytes in %llu "
            "out %llu, wheel entries %zu, wheel wakeups %llu",
            what, static_cast<unsigned long long>(stats_.open),
            static_cast<unsigned long long>(stats_.accepted),
            static_cast<unsigned long long>(stats_.reaped),
            static_cast<unsigned long long>(stats_.peer_closed),
            static_cast<unsigned long long>(stats_.bytes_in),
            static_cast<unsigned long long>(stats_.bytes_out),
            net::use_service<tw::wheel_service>(io_).size(),
            static_cast<unsigned long long>(net::use_service<tw::wheel_service>(io_).wakeups()));
    }

    using stats_callback = std::function<void()>;

    net::io_context& io_;
    options options_;
    tcp::acceptor acceptor_;
    net::signal_set signals_;
    tw::callback_timer<stats_callback> stats_timer_;
    tw::callback_timer<stats_callback> duration_timer_;
    std::unordered_map<std::uint64_t, std::weak_ptr<session>> sessions_;
    stats stats_;
    bool stopped_ = false;
};

session::session(server& owner, std::uint64_t id, tcp::socket socket, clock_type::duration timeout)
    : server_(owner)
    , id_(id)
    , socket_(std::move(socket))
    , idle_(socket_, timeout) {
    ++server_.stats_.open;
}

session::~session() {
    --server_.stats_.open;
    server_.sessions_.erase(id_);
}

void session::start() {
    last_activity_ = clock_type::now();
    idle_.start();
    read();
}

void session::close() {
    idle_.cancel();
    error_code ignored;
    socket_.close(ignored);
}

void session::read() {
    socket_.async_read_some(net::buffer(data_),
                            [self = shared_from_this()](error_code ec, std::size_t n) {
                                if (ec) {
                                    self->finish(ec);
                                    return;
                                }
                                self->server_.stats_.bytes_in += n;
                                self->touch();
                                self->write(n);
                            });
}

void session::write(std::size_t n) {
    net::async_write(socket_, net::buffer(data_, n),
                     [self = shared_from_this()](error_code ec, std::size_t written) {
                         if (ec) {
                             self->finish(ec);
                             return;
                         }
                         self->server_.stats_.bytes_out += written;
                         self->touch();
                         self->read();
                     });
}

void session::finish(const error_code& ec) {
    const auto idle = clock_type::now() - last_activity_;
    if (idle_.reaped()) {
        ++server_.stats_.reaped;
        server_.connection_log("#%llu reaped after %.3f s idle (open %llu)",
                               static_cast<unsigned long long>(id_), seconds(idle),
                               static_cast<unsigned long long>(server_.stats_.open - 1));
        return;
    }
    if (server_.stopped()) {
        return; // closed by stop()
    }
    ++server_.stats_.peer_closed;
    server_.connection_log("#%llu closed by peer (%s) (open %llu)",
                           static_cast<unsigned long long>(id_), ec.message().c_str(),
                           static_cast<unsigned long long>(server_.stats_.open - 1));
    close();
}

// --- The self-test -------------------------------------------------------------------------
// In-process clients on the same io_context (one thread: the wheel belongs to it). Even ones
// send one line and go quiet; odd ones send a line every quarter of the timeout for three
// timeouts, then close. The quiet ones must be reaped, no earlier than the timeout after their
// line was sent; the talkative ones never.

class self_test {
public:
    self_test(net::io_context& io, server& srv, const options& o)
        : server_(srv)
        , options_(o)
        , finish_timer_(io) {
        for (int i = 0; i < o.clients; ++i) {
            clients_.emplace_back(io, i % 2 == 0);
        }
    }

    void start() {
        const tcp::endpoint endpoint(net::ip::address_v4::loopback(), server_.port());
        const auto talk_until = clock_type::now() + 3 * options_.idle_timeout;
        for (client& c : clients_) {
            c.socket.async_connect(endpoint, [this, &c, talk_until](error_code ec) {
                if (ec) {
                    fail(c, "connect: " + ec.message());
                    return;
                }
                read(c);
                send(c, talk_until);
            });
        }
    }

    // Called by the server when it stops.
    void stop() {
        finish_timer_.cancel();
        for (client& c : clients_) {
            c.timer.cancel();
            error_code ignored;
            c.socket.close(ignored);
        }
    }

    bool check() const {
        int reaped = 0;
        bool ok = failures_ == 0;
        for (const client& c : clients_) {
            if (c.quiet) {
                reaped += c.closed_by_server;
                if (!c.closed_by_server || c.closed_at - c.last_send < options_.idle_timeout) {
                    ok = false;
                }
            }
        }
        const auto& s = server_.counters();
        ok = ok && reaped == (options_.clients + 1) / 2 &&
             s.reaped == static_cast<std::uint64_t>(reaped) &&
             s.peer_closed == static_cast<std::uint64_t>(options_.clients / 2);
        std::printf("self-test: %d of %d quiet clients reaped, %d failures, server reaped %llu "
                    "and saw %llu closed by their peer: %s\n",
                    reaped, (options_.clients + 1) / 2, failures_,
                    static_cast<unsigned long long>(s.reaped),
                    static_cast<unsigned long long>(s.peer_closed), ok ? "passed" : "FAILED");
        return ok;
    }

    // True once every client is done: the server can stop.
    bool all_done() const { return done_ == options_.clients; }

private:
    struct client {
        client(net::io_context& io, bool q)
            : socket(io)
            , timer(io)
            , quiet(q) {}
        tcp::socket socket;
        net::steady_timer timer;
        bool quiet;
        bool closed_by_server = false;
        bool own_close = false;
        clock_type::time_point last_send{};
        clock_type::time_point closed_at{};
        std::array<char, 256> in{};
        std::string out;
    };

    void send(client& c, clock_type::time_point talk_until) {
        c.out = c.quiet ? "a quiet client says hello\n" : "a talkative client says hello\n";
        c.last_send = clock_type::now();
        net::async_write(c.socket, net::buffer(c.out),
                         [this, &c, talk_until](error_code ec, std::size_t) {
                             if (ec || c.quiet) {
                                 return;
                             }
                             c.timer.expires_after(options_.idle_timeout / 4);
                             c.timer.async_wait([this, &c, talk_until](error_code ec2) {
                                 if (ec2 || c.closed_by_server) {
                                     return;
                                 }
                                 if (clock_type::now() >= talk_until) {
                                     c.own_close = true; // done talking: leave first
                                     error_code ignored;
                                     c.socket.close(ignored);
                                     return;
                                 }
                                 send(c, talk_until);
                             });
                         });
    }

    void read(client& c) {
        c.socket.async_read_some(net::buffer(c.in), [this, &c](error_code ec, std::size_t) {
            if (!ec) {
                read(c);
                return;
            }
            if (!c.own_close && !server_.stopped()) {
                c.closed_by_server = true;
                c.closed_at = clock_type::now();
                c.timer.cancel();
                if (!c.quiet) {
                    fail(c, "a talkative client was closed by the server");
                }
            }
            if (++done_ == options_.clients) {
                server_.log("self-test: every client is done");
                wait_for_server(200);
            }
        });
    }

    // Lets the server see the last clients leave (at most `tries` x 10 ms), then stops it.
    void wait_for_server(int tries) {
        if (server_.counters().open == 0 || tries == 0) {
            server_.stop();
            return;
        }
        finish_timer_.expires_after(10ms);
        finish_timer_.async_wait([this, tries](error_code ec) {
            if (!ec) {
                wait_for_server(tries - 1);
            }
        });
    }

    void fail(client& c, const std::string& what) {
        ++failures_;
        server_.log("self-test: %s", what.c_str());
        error_code ignored;
        c.socket.close(ignored);
    }

    server& server_;
    options options_;
    net::steady_timer finish_timer_;
    std::deque<client> clients_;
    int done_ = 0;
    int failures_ = 0;
};

} // namespace

int main(int argc, char** argv) {
    options o;
    try {
        o = parse(argc, argv);
    } catch (const std::invalid_argument& e) {
        std::fprintf(stderr, "idle_echo_server: %s\n", e.what());
        usage(stderr);
        return 2;
    }
    try {
        net::io_context io(1);
        tw::wheel_service_options wheel_options;
        wheel_options.tick = o.tick;
        net::use_service<tw::wheel_service>(io).configure(wheel_options); // before any timer

        server srv(io, o);
        std::unique_ptr<self_test> test;
        if (o.self_test) {
            test = std::make_unique<self_test>(io, srv, o);
            srv.on_stop = [&test] { test->stop(); };
        }
        srv.start();
        if (test) {
            test->start();
        }
        io.run();
        return test && !test->check() ? 1 : 0;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "idle_echo_server: %s\n", e.what());
        return 2;
    }
}
