//
// bench/loopback_idle.cpp
//
// What an idle timeout costs a request/response server, end to end, over 127.0.0.1: one
// io_context run by one thread serves --connections connections (10,000 by default); a
// load generator in a child process keeps one request in flight on each of them. Every read
// on the server pushes the connection's idle timeout back (30 s, so that none expires), in
// one of three ways:
//
//   none          no idle timeout at all: the baseline;
//   steady_timer  a boost::asio::steady_timer per connection: on every read,
//                 expires_after(timeout) (which aborts the pending wait: its handler runs
//                 with operation_aborted) and a new async_wait() whose handler closes the
//                 socket when the timeout passes;
//   idle_reaper   a timewheel::idle_reaper<> per connection, started once, touch() on every
//                 read.
//
// Built as its own program, loopback_idle_bench (not part of timewheel_bench), run by
// `bash scripts/bench.sh --loopback-idle [options]`:
//
//   loopback_idle_bench [--connections N] [--seconds S] [--warmup S] [--rounds R]
//                       [--timeout S] [--request-bytes B] [--variants LIST]
//
//   --connections 10000   connections (limited by RLIMIT_NOFILE: the soft limit is raised to
//                         the hard one; the client ends live in the child process)
//   --seconds 5           measured window per variant and round
//   --warmup 1            unmeasured seconds before each window
//   --rounds 1            repeat the variants in turn R times (none, steady_timer,
//                         idle_reaper, none, ...); with R > 1 the summary gives medians
//   --timeout 30          the idle timeout, in seconds
//   --request-bytes 64    the size of a request (the response echoes it)
//   --variants none,steady_timer,idle_reaper
//
// Per variant and round, the server thread reports, over the window:
//   requests/s        responses completed (written) per second of wall time;
//   CPU us/request    the server thread's CPU time (getrusage RUSAGE_THREAD, user + system)
//                     per request: the system calls of the reads and writes included;
//   expired           idle timeouts that fired (must be 0).
// The summary gives each variant's throughput and CPU time per request relative to `none`.
// The whole run is bounded: (warmup + seconds + set-up) per variant and round, about 8 s
// each with the defaults; it stops by itself.
//
// Method notes. Each variant and round gets fresh connections and a fresh client (fork), so
// no variant inherits another's state. The client is a plain epoll loop (level-triggered,
// up to 256 events per epoll_wait), non-blocking sockets, TCP_NODELAY on both ends; it
// sends the next request on a connection as soon as the whole response has arrived. Both
// processes are CPU-bound: on a 2-core machine they take one core each, so other processes
// on the machine change the figures; the ratios between variants of one run, taken close
// together in time, are what to read.
//

#include <timewheel/idle_reaper.hpp>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/write.hpp>

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

namespace net = boost::asio;
namespace tw = timewheel;
using tcp = net::ip::tcp;
using clock_type = std::chrono::steady_clock;
using boost::system::error_code;

constexpr std::size_t max_request_bytes = 4096;

struct options {
    std::size_t connections = 10'000;
    double seconds = 5;
    double warmup = 1;
    int rounds = 1;
    double timeout = 30;
    std::size_t request_bytes = 64;
    std::vector<std::string> variants{"none", "steady_timer", "idle_reaper"};
};

[[noreturn]] void usage(const std::string& why) {
    std::fprintf(stderr,
                 "loopback_idle_bench: %s\n"
                 "usage: loopback_idle_bench [--connections N] [--seconds S] [--warmup S]\n"
                 "       [--rounds R] [--timeout S] [--request-bytes B]\n"
                 "       [--variants none,steady_timer,idle_reaper]\n",
                 why.c_str());
    std::exit(2);
}

options parse(int argc, char** argv) {
    options o;
    for (int i = 1; i < argc; ++i) {
        const std::string arg = argv[i];
        if (i + 1 >= argc) {
            usage("missing value after " + arg);
        }
        const std::string value = argv[++i];
        try {
            if (arg == "--connections") {
                o.connections = std::stoul(value);
            } else if (arg == "--seconds") {
                o.seconds = std::stod(value);
            } else if (arg == "--warmup") {
                o.warmup = std::stod(value);
            } else if (arg == "--rounds") {
                o.rounds = std::stoi(value);
            } else if (arg == "--timeout") {
                o.timeout = std::stod(value);
            } else if (arg == "--request-bytes") {
                o.request_bytes = std::stoul(value);
            } else if (arg == "--variants") {
                o.variants.clear();
                std::size_t start = 0;
                while (start <= value.size()) {
                    const std::size_t comma = std::min(value.find(',', start), value.size());
                    o.variants.push_back(value.substr(start, comma - start));
                    start = comma + 1;
                }
            } else {
                usage("unknown option " + arg);
            }
        } catch (const std::invalid_argument&) {
            usage("bad value for " + arg + ": " + value);
        } catch (const std::out_of_range&) {
            usage("value out of range for " + arg + ": " + value);
        }
    }
    if (o.connections == 0 || o.seconds <= 0 || o.warmup < 0 || o.rounds < 1 || o.timeout <= 0 ||
        o.request_bytes == 0 || o.request_bytes > max_request_bytes) {
        usage("a value is out of range (request-bytes: 1-4096; the others positive)");
    }
    for (const std::string& v : o.variants) {
        if (v != "none" && v != "steady_timer" && v != "idle_reaper") {
            usage("unknown variant " + v);
        }
    }
    return o;
}

std::size_t raise_descriptor_limit() {
    rlimit limit{};
    getrlimit(RLIMIT_NOFILE, &limit);
    limit.rlim_cur = limit.rlim_max;
    setrlimit(RLIMIT_NOFILE, &limit);
    getrlimit(RLIMIT_NOFILE, &limit);
    return limit.rlim_cur;
}

double thread_cpu_seconds() {
    rusage ru{};
    getrusage(RUSAGE_THREAD, &ru);
    const auto seconds = [](const timeval& tv) {
        return static_cast<double>(tv.tv_sec) + static_cast<double>(tv.tv_usec) * 1e-6;
    };
    return seconds(ru.ru_utime) + seconds(ru.ru_stime);
}

void set_nodelay(int fd) {
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

// --- The load generator (child process) ----------------------------------------------------

// Connects `count` sockets to the server, reports on `ready`, waits for a byte on `control`,
// then keeps one request in flight per connection until `control` reaches its end.
[[noreturn]] void run_client(unsigned short port, std::size_t count, std::size_t request_bytes,
                             int ready, int control) {
    sockaddr_in server{};
    server.sin_family = AF_INET;
    server.sin_port = htons(port);
    server.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    std::vector<int> fds;
    fds.reserve(count);
    char status = 'y';
    for (std::size_t i = 0; i < count; ++i) {
        const int fd = socket(AF_INET, SOCK_STREAM, 0);
        if (fd < 0 || connect(fd, reinterpret_cast<const sockaddr*>(&server), sizeof server) != 0) {
            status = 'n';
            break;
        }
        set_nodelay(fd);
        fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
        fds.push_back(fd);
    }
    if (write(ready, &status, 1) != 1 || status != 'y') {
        _exit(1);
    }
    char go = 0;
    if (read(control, &go, 1) != 1) {
        _exit(0); // the server gave up
    }
    const int ep = epoll_create1(0);
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.fd = control;
    epoll_ctl(ep, EPOLL_CTL_ADD, control, &ev);
    int max_fd = control;
    for (int fd : fds) {
        max_fd = std::max(max_fd, fd);
    }
    std::vector<std::uint32_t> received(static_cast<std::size_t>(max_fd) + 1, 0);
    std::array<char, max_request_bytes> request{};
    std::fill(request.begin(), request.end(), 'r');
    std::array<char, 65536> sink{};
    for (int fd : fds) {
        ev.events = EPOLLIN;
        ev.data.fd = fd;
        epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev);
        if (send(fd, request.data(), request_bytes, MSG_NOSIGNAL) !=
            static_cast<ssize_t>(request_bytes)) {
            _exit(1); // a fresh socket's buffer takes 64 bytes: never here
        }
    }
    std::array<epoll_event, 256> events{};
    for (;;) {
        const int n = epoll_wait(ep, events.data(), static_cast<int>(events.size()), -1);
        if (n < 0) {
            if (errno == EINTR) {
                continue;
            }
            _exit(1);
        }
        for (int i = 0; i < n; ++i) {
            const int fd = events[static_cast<std::size_t>(i)].data.fd;
            if (fd == control) {
                _exit(0); // end of the pipe: the server is done; the kernel closes the rest
            }
            const ssize_t got = recv(fd, sink.data(), sink.size(), 0);
            if (got <= 0) {
                if (got < 0 && (errno == EAGAIN || errno == EINTR)) {
                    continue;
                }
                epoll_ctl(ep, EPOLL_CTL_DEL, fd, nullptr); // closed by the server
                continue;
            }
            std::uint32_t& have = received[static_cast<std::size_t>(fd)];
            have += static_cast<std::uint32_t>(got);
            if (have >= request_bytes) {
                have -= static_cast<std::uint32_t>(request_bytes);
                send(fd, request.data(), request_bytes, MSG_NOSIGNAL);
            }
        }
    }
}

// --- The server ----------------------------------------------------------------------------

struct counters {
    std::uint64_t requests = 0;
    std::uint64_t expired = 0;
};

// The three ways to keep an idle timeout, each with start() and on_read().
struct no_timeout {
    no_timeout(tcp::socket&, clock_type::duration, counters&) {}
    void start() {}
    void on_read() {}
};

class steady_timeout {
public:
    steady_timeout(tcp::socket& socket, clock_type::duration timeout, counters& c)
        : socket_(socket)
        , timer_(socket.get_executor())
        , timeout_(timeout)
        , counters_(c) {}
    void start() { on_read(); }
    void on_read() {
        timer_.expires_after(timeout_); // aborts the pending wait: its handler runs
        timer_.async_wait([this](const error_code& ec) {
            if (!ec) {
                ++counters_.expired;
                error_code ignored;
                socket_.close(ignored);
            }
        });
    }

private:
    tcp::socket& socket_;
    net::steady_timer timer_;
    clock_type::duration timeout_;
    counters& counters_;
};

class reaper_timeout {
public:
    reaper_timeout(tcp::socket& socket, clock_type::duration timeout, counters& c)
        : reaper_(socket, timeout)
        , counters_(c) {}
    ~reaper_timeout() {
        if (reaper_.reaped()) {
            ++counters_.expired;
        }
    }
    void start() { reaper_.start(); }
    void on_read() { reaper_.touch(); }

private:
    tw::idle_reaper<> reaper_;
    counters& counters_;
};

template <typename Timeout>
class session {
public:
    session(tcp::socket socket, clock_type::duration timeout, std::size_t request_bytes,
            counters& c)
        : socket_(std::move(socket))
        , timeout_(socket_, timeout, c)
        , request_bytes_(request_bytes)
        , counters_(c) {}

    void start() {
        timeout_.start();
        read();
    }

private:
    void read() {
        socket_.async_read_some(net::buffer(buffer_.data(), buffer_.size()),
                                [this](const error_code& ec, std::size_t n) {
                                    if (ec) {
                                        return; // closed: the run is over, or reaped
                                    }
                                    timeout_.on_read();
                                    pending_ += n;
                                    respond();
                                });
    }

    // Echoes each complete request; reads again when no whole request is left.
    void respond() {
        if (pending_ < request_bytes_) {
            read();
            return;
        }
        pending_ -= request_bytes_;
        net::async_write(socket_, net::buffer(buffer_.data(), request_bytes_),
                         [this](const error_code& ec, std::size_t) {
                             if (ec) {
                                 return;
                             }
                             ++counters_.requests;
                             respond();
                         });
    }

    tcp::socket socket_;
    Timeout timeout_;
    std::size_t request_bytes_;
    std::size_t pending_ = 0;
    counters& counters_;
    std::array<char, max_request_bytes> buffer_;
};

struct result {
    std::string variant;
    std::size_t connections = 0;
    double seconds = 0;
    std::uint64_t requests = 0;
    double cpu_seconds = 0;
    std::uint64_t expired = 0;
    double rate() const { return static_cast<double>(requests) / seconds; }
    double cpu_us_per_request() const {
        return requests == 0 ? 0.0 : cpu_seconds * 1e6 / static_cast<double>(requests);
    }
};

// Accepts the connections of a forked client, serves them with Timeout for the warm-up and
// the window, and reports the window.
template <typename Timeout>
result run_variant(const std::string& name, const options& o, std::size_t connections) {
    net::io_context io(1);
    tcp::acceptor acceptor(io, tcp::endpoint(net::ip::address_v4::loopback(), 0));
    acceptor.listen(net::socket_base::max_listen_connections);
    const unsigned short port = acceptor.local_endpoint().port();
    int ready[2];
    int control[2];
    if (pipe(ready) != 0 || pipe(control) != 0) {
        throw std::runtime_error("pipe failed");
    }
    std::fflush(nullptr);
    const pid_t child = fork();
    if (child < 0) {
        throw std::runtime_error("fork failed");
    }
    if (child == 0) {
        close(ready[0]);
        close(control[1]);
        close(acceptor.native_handle()); // not acceptor.close(): the epoll set is shared
        run_client(port, connections, o.request_bytes, ready[1], control[0]); // never returns
    }
    close(ready[1]);
    close(control[0]);
    struct child_guard {
        pid_t pid;
        int control;
        ~child_guard() {
            close(control); // the client sees the end of the pipe and exits
            int status = 0;
            waitpid(pid, &status, 0);
        }
    } guard{child, control[1]};

    counters c;
    const auto timeout =
        std::chrono::duration_cast<clock_type::duration>(std::chrono::duration<double>(o.timeout));
    std::vector<std::unique_ptr<session<Timeout>>> sessions;
    sessions.reserve(connections);
    for (std::size_t i = 0; i < connections; ++i) {
        pollfd pending{acceptor.native_handle(), POLLIN, 0};
        if (::poll(&pending, 1, 10'000) != 1) {
            close(ready[0]);
            throw std::runtime_error("accept timed out after " + std::to_string(i) +
                                     " connections");
        }
        tcp::socket socket = acceptor.accept();
        set_nodelay(socket.native_handle());
        sessions.push_back(
            std::make_unique<session<Timeout>>(std::move(socket), timeout, o.request_bytes, c));
    }
    char status = 0;
    const bool connected = read(ready[0], &status, 1) == 1 && status == 'y';
    close(ready[0]);
    if (!connected) {
        throw std::runtime_error("the client could not connect");
    }
    acceptor.close();
    for (auto& s : sessions) {
        s->start();
    }
    const char go = 'g';
    if (write(control[1], &go, 1) != 1) {
        throw std::runtime_error("could not start the client");
    }

    // The window's ends are marked by a steady_timer in every variant (two timers in all).
    result r;
    r.variant = name;
    r.connections = connections;
    std::uint64_t requests_at_start = 0;
    double cpu_at_start = 0;
    clock_type::time_point started{};
    net::steady_timer marker(io);
    marker.expires_after(
        std::chrono::duration_cast<clock_type::duration>(std::chrono::duration<double>(o.warmup)));
    marker.async_wait([&](const error_code&) {
        requests_at_start = c.requests;
        cpu_at_start = thread_cpu_seconds();
        started = clock_type::now();
        marker.expires_after(std::chrono::duration_cast<clock_type::duration>(
            std::chrono::duration<double>(o.seconds)));
        marker.async_wait([&](const error_code&) {
            r.cpu_seconds = thread_cpu_seconds() - cpu_at_start;
            r.seconds = std::chrono::duration<double>(clock_type::now() - started).count();
            r.requests = c.requests - requests_at_start;
            io.stop();
        });
    });
    io.run();
    sessions.clear(); // closes the sockets; the pending handlers are destroyed with io
    r.expired = c.expired;
    return r;
}

result run_named(const std::string& name, const options& o, std::size_t connections) {
    if (name == "none") {
        return run_variant<no_timeout>(name, o, connections);
    }
    if (name == "steady_timer") {
        return run_variant<steady_timeout>(name, o, connections);
    }
    return run_variant<reaper_timeout>(name, o, connections);
}

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    const std::size_t m = v.size() / 2;
    return v.size() % 2 == 1 ? v[m] : (v[m - 1] + v[m]) / 2;
}

} // namespace

int main(int argc, char** argv) {
    try {
        const options o = parse(argc, argv);
        const std::size_t limit = raise_descriptor_limit();
        const std::size_t fit = limit > 64 ? limit - 64 : 0;
        const std::size_t connections = std::min(o.connections, fit);
        if (connections < o.connections) {
            std::printf("RLIMIT_NOFILE is %zu: using %zu connections instead of %zu\n", limit,
                        connections, o.connections);
        }
        std::printf("loopback_idle_bench: %zu connections over 127.0.0.1, %zu-byte requests, "
                    "idle timeout %.0f s, %.1f s window after %.1f s warm-up, %d round(s)\n",
                    connections, o.request_bytes, o.timeout, o.seconds, o.warmup, o.rounds);
        std::printf("%-14s %5s %14s %16s %8s\n", "variant", "round", "requests/s", "CPU us/request",
                    "expired");
        std::vector<result> results;
        for (int round = 1; round <= o.rounds; ++round) {
            for (const std::string& v : o.variants) {
                const result r = run_named(v, o, connections);
                std::printf("%-14s %5d %14.0f %16.3f %8llu\n", r.variant.c_str(), round, r.rate(),
                            r.cpu_us_per_request(), static_cast<unsigned long long>(r.expired));
                std::fflush(stdout);
                results.push_back(r);
            }
        }
        std::printf("\nsummary (%s over %d round(s); relative to none)\n",
                    o.rounds > 1 ? "medians" : "one run", o.rounds);
        std::printf("%-14s %14s %16s %12s %14s\n", "variant", "requests/s", "CPU us/request",
                    "throughput", "CPU/request");
        double base_rate = 0;
        double base_cpu = 0;
        for (const std::string& v : o.variants) {
            std::vector<double> rates;
            std::vector<double> cpus;
            for (const result& r : results) {
                if (r.variant == v) {
                    rates.push_back(r.rate());
                    cpus.push_back(r.cpu_us_per_request());
                }
            }
            const double rate = median(rates);
            const double cpu = median(cpus);
            if (v == "none") {
                base_rate = rate;
                base_cpu = cpu;
            }
            if (base_rate > 0) {
                std::printf("%-14s %14.0f %16.3f %+11.1f%% %+13.1f%%\n", v.c_str(), rate, cpu,
                            100.0 * (rate / base_rate - 1.0), 100.0 * (cpu / base_cpu - 1.0));
            } else {
                std::printf("%-14s %14.0f %16.3f %12s %14s\n", v.c_str(), rate, cpu, "-", "-");
            }
        }
        return 0;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "loopback_idle_bench: %s\n", e.what());
        return 1;
    }
}
