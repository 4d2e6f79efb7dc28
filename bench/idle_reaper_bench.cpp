//
// bench/idle_reaper_bench.cpp
//
// The cost of refreshing a connection's idle deadline on each read: timewheel::idle_reaper
// against a boost::asio::steady_timer re-armed per read.
//
//   idle_reaper/touch/1000000        1M simulated connections (the timer part only)
//   steady_timer/touch/1000000
//   lazy_steady_timer/touch/1000000  (for reference, see below)
//   idle_reaper/socket_touch/10000   10k connection objects that own live loopback sockets
//   steady_timer/socket_touch/10000
//   no_timer/hot_touch/N             N = 10000, 1000000: a touch right after a read, the
//   idle_reaper/hot_touch/N          connection in cache, time advancing; the timer's
//   wheel_timer/hot_touch/N          incremental cost over the no_timer loop (see
//   steady_timer/hot_touch/N         "hot_touch" below)
//   idle_reaper/idle_1m/1000000      1M idle connections: bytes per connection and wakeups
//   steady_timer/idle_1m/1000000     per second (see "idle_1m" below)
//
// One touch, for each implementation, is what a server does after a read:
//   idle_reaper        reaper.touch(): one steady_clock read, a store into the reaper and a
//                      lazy move of its wheel entry (a compare and a store into the entry).
//   steady_timer       timer.expires_after(timeout), which aborts the pending wait, then
//                      timer.async_wait(handler); the aborted handler runs on the next turn
//                      of the io_context (it is part of the cost).
//   lazy_steady_timer  the known workaround for steady_timer: store the time of the last
//                      read and let the pending wait, when it fires, re-arm for the rest of
//                      the period. A touch is one clock read and one store, like the reaper's;
//                      it is listed so that the steady_timer ratio is not mistaken for the
//                      only alternative. The reaper's other gains (80-96 bytes per connection,
//                      no operation allocated per wait, O(1) expiry) remain.
//
// Method. Every connection is armed with a 30 s timeout outside the timed region (nothing
// expires during the run). Touches visit the connections in a random order (a fixed random
// permutation, walked cyclically), 128 per handler: each benchmark iteration posts one
// handler that touches 128 connections and runs io_context::poll(), so that the touches run
// inside the io_context, as in a server, with Asio's recycling allocator active for
// steady_timer's operations, and poll() also runs the handlers of the waits that the batch
// aborted (steady_timer). 128 is the number of events Asio's epoll reactor takes per
// epoll_wait. The counters:
//   ns_per_op   wall time of the iterations divided by the touches (the time per touch);
//   bytes       memory per connection for its idle deadline: sizeof the timer part (for the
//               reaper: 80 with touch's empty action, 96 with the default close_stream), plus for
//               steady_timer the pending wait operation (sizeof the wait_handler Asio
//               allocates) and its 16-byte entry in the timer queue's heap; malloc's own
//               overhead is not counted;
//   connections the number of live connections (socket_touch: see below).
//
// socket_touch: the connection objects own real sockets of 10k live TCP connections over
// 127.0.0.1, registered with the io_context's epoll reactor (so that poll() also pays its
// epoll_wait over them). The client ends of the connections live in a child process (fork),
// because both ends in one process need about 20k descriptors and the hard limit here is
// 20000; the soft limit is raised to the hard one. If fewer fit, the counter `connections`
// says how many were used (the name keeps 10000).
//
// hot_touch: what a server pays, with the connection in cache. The touch/* benchmarks above
// visit 1M connections in random order, so each touch pays a cache miss on the connection,
// and the ordered clock read of the touch waits it out: they measure memory as much as
// timers. A server touches a connection right after reading into it, when it is in cache.
// Here each of N connection objects (256 bytes: a counter and the timer part in the first
// 192 bytes, a 64-byte read buffer; the same stride for every implementation) lives in
// memory in an order unrelated to the order it is armed in or visited in (bench/support/
// workload.hpp: three independent permutations). One touch is
//   1. the simulated read: load one word of each of the object's other cache lines (the
//      handler reading the connection's state), write 64 bytes into its buffer (the values
//      depend on those loads), add to its byte counter, then `mfence`: the write has landed
//      in L1 before the timer operation, as a read's system call would have ensured, and
//      the next connection's loads cannot run ahead (a `lock or`, what g++ makes of
//      std::atomic_thread_fence(seq_cst), lets them on AMD Zen);
//   2. the timer operation, on that connection:
//        no_timer       nothing (the baseline loop);
//        idle_reaper    touch() (idle_reaper<counting action>, started once);
//        wheel_timer    reschedule_after(timeout) of a pending async_wait (slack timeout/8,
//                       as the reaper's), lazily moved;
//        steady_timer   expires_after(timeout), which aborts the pending wait, plus a new
//                       async_wait(); the aborted handler runs in the poll() that follows.
// The touches run 128 per posted handler, each handler followed by io_context::poll(), which
// also runs the wheel when an entry is due (re-filing the touched ones lazily, once per
// timeout per connection) and steady_timer's aborted handlers: all inside the timed window.
// Every other batch is the baseline: the same simulated reads of the next 128 connections,
// without the timer operation. The baseline thus runs on the same objects, interleaved with
// the timed batches within microseconds, so that load, clock frequency and cache state are
// the same for both; a no_timer loop measured in a separate window drifted by more than the
// reaper's whole cost. Time advances for real: the idle timeout is 2 s at 10k and 10 s at 1M
// connections, the set is armed, warmed up untimed for half a timeout, then timed for one
// whole timeout, so that the window holds one period's re-filing of every connection whatever
// its phase. Nothing may expire (counter `expired`: 0); `touches_per_timeout` says how many
// times each connection was touched per timeout, which sets the share of the re-filing per
// touch (a server touched once a second with a 30 s timeout has 30).
// Counters (per timed touch, over the timed window):
//   ns_per_touch, cpu_ns_per_touch     the window's wall time per timed touch (its batch and
//                                      its share of the time outside the batches); the CPU
//                                      time of the thread per timed touch (baseline included);
//   batch_ns_per_touch                 wall time of the timed batches (the reads and the timer
//                                      operations); baseline_batch_ns_per_read the baseline
//                                      batches' (the reads alone);
//   poll_ns_per_touch                  the rest of the window (post(), poll(): the wheel's runs,
//                                      steady_timer's aborted handlers) per timed touch;
//   no_timer_poll_ns                   a post() and a poll() with nothing to do, per poll(),
//                                      from the no_timer run in this process (measured by
//                                      no_timer/hot_touch/N when it ran before; otherwise on
//                                      the spot); no_timer's own incremental_ns is the noise
//                                      floor of the method (about 0);
//   incremental_ns                     the timer's incremental cost per touch: the sum of
//   incremental_batch_ns               batch_ns_per_touch - baseline_batch_ns_per_read, and
//   incremental_poll_ns                poll_ns_per_touch less no_timer_poll_ns per poll;
//   incremental_cpu_ns (_batch, _poll) the same in CPU time of the thread (no_timer_poll_cpu_ns
//                                      per poll subtracted): the figure to read on a loaded
//                                      machine, where a preempted thread loses its core mostly
//                                      at a system call's return, inside poll(), so that the
//                                      wall time outside the batches grows with the load;
//   poll_ns_per_timeout                incremental_poll_ns times touches_per_timeout: poll()'s
//                                      extra work per connection and per timeout (for the
//                                      wheel, its re-filing), so that the cost per touch can be
//                                      recomputed for another number of touches per timeout:
//                                      incremental_batch_ns + poll_ns_per_timeout / touches;
//   allocs_per_touch, expired, touches_per_timeout, timeout_s.
//
// idle_1m: 1,000,000 idle connections whose last activity is uniform over the past 30 s:
// their deadlines are uniform over the next 30 s (about 33,000 due per second), and nothing
// touches them. idle_reaper<> (its action the size of close_stream: 96 bytes) with the
// remaining time as its timeout and the 3.75 s slack of a 30 s timeout; steady_timer with
// expires_after(remaining) and an async_wait. The io_context runs for 3 s of real time
// (another thread stops it). Counters:
//   bytes            the timer part of a connection: sizeof(idle_reaper<>), or
//                    sizeof(steady_timer) + its wait operation + its 16-byte heap entry;
//   heap_bytes       glibc's mallinfo2() growth per connection while the 1M are created and
//                    armed (the objects themselves, the operations with malloc's headers, the
//                    timer queue's heap);
//   wakeups_per_s    wheel_service::wakeups() per second (idle_reaper only);
//   switches_per_s   voluntary context switches of the thread (getrusage RUSAGE_THREAD): each
//                    is one block in epoll_wait and one wakeup, for either implementation;
//   fired_per_s      actions or handlers run (the reaper's slack delays some past the window);
//   cpu_percent      CPU time of the thread as a share of the window.
//

#include <timewheel/idle_reaper.hpp>
#include <timewheel/wheel_timer.hpp>

#include "support/op_clock.hpp"
#include "support/workload.hpp"

#include <benchmark/benchmark.h>
#include <boost/asio/detail/wait_handler.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>

#include <arpa/inet.h>
#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif
#include <netinet/in.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <iterator>
#include <map>
#include <memory>
#include <new>
#include <numeric>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace {

namespace net = boost::asio;
namespace tw = timewheel;
using clock_type = std::chrono::steady_clock;
using tcp = net::ip::tcp;

constexpr clock_type::duration timeout = std::chrono::seconds(30);
constexpr std::size_t batch = 128;

// A fixed random visiting order over n connections, the same for every implementation.
const std::vector<std::uint32_t>& order_of(std::size_t n) {
    static std::vector<std::uint32_t> order;
    if (order.size() != n) {
        order.resize(n);
        std::iota(order.begin(), order.end(), 0u);
        std::shuffle(order.begin(), order.end(), std::mt19937_64(20240607 + n));
    }
    return order;
}

// N objects built in place in one block: neither copyable nor movable types welcome.
template <typename T>
class block {
public:
    template <typename Make>
    block(std::size_t n, Make make)
        : storage_(static_cast<T*>(::operator new (n * sizeof(T), std::align_val_t{alignof(T)}))) {
        for (; size_ < n; ++size_) {
            make(storage_ + size_, size_);
        }
    }
    ~block() {
        while (size_ > 0) {
            storage_[--size_].~T();
        }
        ::operator delete (storage_, std::align_val_t{alignof(T)});
    }
    block(const block&) = delete;
    block& operator=(const block&) = delete;

    T& operator[](std::size_t i) { return storage_[i]; }
    std::size_t size() const { return size_; }

private:
    T* storage_;
    std::size_t size_ = 0;
};

// Runs touch(connection) in batches of 128 inside the io_context, in the random order, and
// reports ns_per_op.
template <typename Connections, typename Touch>
void touch_loop(benchmark::State& state, net::io_context& io, Connections& connections,
                Touch touch) {
    const std::vector<std::uint32_t>& order = order_of(connections.size());
    std::size_t next = 0;
    std::uint64_t touches = 0;
    io.poll(); // settle what the setup queued
    const auto started = clock_type::now();
    for (auto _ : state) {
        net::post(io, [&] {
            for (std::size_t i = 0; i < batch; ++i) {
                touch(connections[order[next]]);
                next = next + 1 == order.size() ? 0 : next + 1;
            }
        });
        io.poll();
        touches += batch;
    }
    const auto elapsed = clock_type::now() - started;
    state.SetItemsProcessed(static_cast<std::int64_t>(touches));
    state.counters["ns_per_op"] =
        std::chrono::duration<double, std::nano>(elapsed).count() / static_cast<double>(touches);
    state.counters["connections"] = static_cast<double>(connections.size());
}

// --- The timer parts -----------------------------------------------------------------------

struct no_action {
    void operator()() const noexcept {}
};

// steady_timer's handler: a server's "if aborted, return; else close the socket".
struct on_idle {
    std::uint64_t* expired;
    void operator()(const boost::system::error_code& ec) const {
        if (!ec) {
            ++*expired;
        }
    }
};

using steady_wait_op = net::detail::wait_handler<on_idle, net::any_io_executor>;
constexpr std::size_t heap_entry_bytes = 16; // timer_queue::heap_entry: time + pointer

constexpr double reaper_bytes = sizeof(tw::idle_reaper<>);
constexpr double steady_timer_bytes =
    sizeof(net::steady_timer) + sizeof(steady_wait_op) + heap_entry_bytes;

void steady_touch(net::steady_timer& timer, std::uint64_t* expired) {
    timer.expires_after(timeout); // aborts the pending wait: its handler is queued
    timer.async_wait(on_idle{expired});
}

// --- 1M simulated connections --------------------------------------------------------------

void idle_reaper_touch(benchmark::State& state, std::size_t n) {
    net::io_context io(1);
    block<tw::idle_reaper<no_action>> reapers(n, [&](auto* p, std::size_t) {
        new (p) tw::idle_reaper<no_action>(io, timeout, no_action{});
        p->start();
    });
    touch_loop(state, io, reapers, [](tw::idle_reaper<no_action>& r) { r.touch(); });
    state.counters["bytes"] = sizeof(tw::idle_reaper<no_action>);
}

void steady_timer_touch(benchmark::State& state, std::size_t n) {
    net::io_context io(1);
    std::uint64_t expired = 0;
    {
        block<net::steady_timer> timers(n, [&](auto* p, std::size_t) {
            new (p) net::steady_timer(io);
            steady_touch(*p, &expired);
        });
        touch_loop(state, io, timers, [&](net::steady_timer& t) { steady_touch(t, &expired); });
    }
    io.poll();
    state.counters["bytes"] = steady_timer_bytes;
}

// The lazy pattern: a touch stores the time; the wait, when it fires, re-arms for the rest.
struct lazy_connection {
    explicit lazy_connection(net::io_context& io)
        : timer(io) {}
    net::steady_timer timer;
    clock_type::time_point last_activity{};
};

void lazy_steady_timer_touch(benchmark::State& state, std::size_t n) {
    net::io_context io(1);
    std::uint64_t expired = 0;
    {
        block<lazy_connection> connections(n, [&](auto* p, std::size_t) {
            new (p) lazy_connection(io);
            p->last_activity = clock_type::now();
            p->timer.expires_at(p->last_activity + timeout);
            p->timer.async_wait(on_idle{&expired});
        });
        touch_loop(state, io, connections,
                   [](lazy_connection& c) { c.last_activity = clock_type::now(); });
    }
    io.poll();
    state.counters["bytes"] = sizeof(lazy_connection) + sizeof(steady_wait_op) + heap_entry_bytes;
}

// --- 10k live loopback connections ---------------------------------------------------------

// The server ends of `count` TCP connections over 127.0.0.1, accepted into `io`; the client
// ends are held by a child process until the fixture is destroyed.
class loopback_connections {
public:
    loopback_connections(net::io_context& io, std::size_t wanted) {
        rlimit limit{};
        getrlimit(RLIMIT_NOFILE, &limit);
        limit.rlim_cur = limit.rlim_max;
        setrlimit(RLIMIT_NOFILE, &limit);
        getrlimit(RLIMIT_NOFILE, &limit);
        const std::size_t fit = limit.rlim_cur > 128 ? limit.rlim_cur - 128 : 0;
        const std::size_t count = std::min(wanted, fit);

        tcp::acceptor acceptor(io, tcp::endpoint(net::ip::address_v4::loopback(), 0));
        acceptor.listen(net::socket_base::max_listen_connections);
        const unsigned short port = acceptor.local_endpoint().port();
        int ready[2];
        int quit[2];
        if (pipe(ready) != 0 || pipe(quit) != 0) {
            error_ = "pipe failed";
            return;
        }
        std::fflush(nullptr);
        child_ = fork();
        if (child_ < 0) {
            error_ = "fork failed";
            return;
        }
        if (child_ == 0) {
            close(ready[0]);
            close(quit[1]); // or the child would never see the end of the pipe
            run_child(port, count, ready[1], quit[0]); // never returns
        }
        close(ready[1]);
        close(quit[0]);
        ready_fd_ = ready[0];
        quit_fd_ = quit[1];

        sockets_.reserve(count);
        for (std::size_t i = 0; i < count; ++i) {
            pollfd pending{acceptor.native_handle(), POLLIN, 0};
            if (::poll(&pending, 1, 10'000) != 1) {
                error_ = "accept timed out after " + std::to_string(i) + " connections";
                return;
            }
            sockets_.push_back(acceptor.accept());
        }
        char status = 0;
        if (read(ready_fd_, &status, 1) != 1 || status != 'y') {
            error_ = "the child could not connect";
        }
    }

    ~loopback_connections() {
        sockets_.clear();
        if (quit_fd_ >= 0) {
            close(quit_fd_); // the child sees the end of the pipe and exits
        }
        if (ready_fd_ >= 0) {
            close(ready_fd_);
        }
        if (child_ > 0) {
            int status = 0;
            waitpid(child_, &status, 0);
        }
    }

    loopback_connections(const loopback_connections&) = delete;
    loopback_connections& operator=(const loopback_connections&) = delete;

    const std::string& error() const { return error_; }
    std::vector<tcp::socket>& sockets() { return sockets_; }

private:
    [[noreturn]] static void run_child(unsigned short port, std::size_t count, int ready,
                                       int quit) {
        sockaddr_in server{};
        server.sin_family = AF_INET;
        server.sin_port = htons(port);
        server.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        char status = 'y';
        for (std::size_t i = 0; i < count; ++i) {
            const int fd = socket(AF_INET, SOCK_STREAM, 0);
            if (fd < 0 ||
                connect(fd, reinterpret_cast<const sockaddr*>(&server), sizeof server) != 0) {
                status = 'n';
                break;
            }
        }
        if (write(ready, &status, 1) != 1) {
            _exit(1);
        }
        char byte = 0;
        while (read(quit, &byte, 1) > 0) {
        }
        _exit(0); // the kernel closes the client ends
    }

    pid_t child_ = -1;
    int ready_fd_ = -1;
    int quit_fd_ = -1;
    std::vector<tcp::socket> sockets_;
    std::string error_;
};

struct reaper_connection {
    explicit reaper_connection(tcp::socket s)
        : socket(std::move(s))
        , idle(socket, timeout) {}
    tcp::socket socket;
    tw::idle_reaper<> idle;
};

struct timer_connection {
    explicit timer_connection(tcp::socket s)
        : socket(std::move(s))
        , timer(socket.get_executor()) {}
    tcp::socket socket;
    net::steady_timer timer;
};

void idle_reaper_socket_touch(benchmark::State& state, std::size_t n) {
    net::io_context io(1);
    loopback_connections live(io, n);
    if (!live.error().empty()) {
        state.SkipWithError(live.error().c_str());
        return;
    }
    std::vector<tcp::socket>& sockets = live.sockets();
    {
        block<reaper_connection> connections(sockets.size(), [&](auto* p, std::size_t i) {
            new (p) reaper_connection(std::move(sockets[i]));
            p->idle.start();
        });
        touch_loop(state, io, connections, [](reaper_connection& c) { c.idle.touch(); });
    }
    state.counters["bytes"] = reaper_bytes;
}

void steady_timer_socket_touch(benchmark::State& state, std::size_t n) {
    net::io_context io(1);
    loopback_connections live(io, n);
    if (!live.error().empty()) {
        state.SkipWithError(live.error().c_str());
        return;
    }
    std::vector<tcp::socket>& sockets = live.sockets();
    std::uint64_t expired = 0;
    {
        block<timer_connection> connections(sockets.size(), [&](auto* p, std::size_t i) {
            new (p) timer_connection(std::move(sockets[i]));
            steady_touch(p->timer, &expired);
        });
        touch_loop(state, io, connections,
                   [&](timer_connection& c) { steady_touch(c.timer, &expired); });
    }
    io.poll();
    state.counters["bytes"] = steady_timer_bytes;
}

// --- hot_touch: the timer's incremental cost when the connection is in cache ---------------

// A connection object of 256 bytes: a counter and the timer part in the first 192 bytes
// (padded), then a 64-byte read buffer. The same stride for every implementation, so that
// the memory traffic of the loop around the timer is the same.
constexpr std::size_t hot_stride = 256;
constexpr std::size_t hot_header_bytes = 192;
constexpr std::size_t hot_request_bytes = 64;

// The idle timeout: long enough that the slowest implementation visits every connection
// several times per timeout on a loaded machine (nothing expires: the `expired` counter says
// so), short enough that the timed window of one timeout stays short.
clock_type::duration hot_timeout(std::size_t n) {
    return n > 100'000 ? std::chrono::seconds(10) : std::chrono::seconds(2);
}

struct no_timer {};

template <typename Timer>
struct alignas(64) hot_connection {
    template <typename... Args>
    explicit hot_connection(Args&&... args)
        : timer(std::forward<Args>(args)...) {}

    std::uint64_t bytes_read = 0;
    Timer timer;
    std::array<unsigned char, hot_header_bytes - sizeof(std::uint64_t) - sizeof(Timer)> padding{};
    std::array<unsigned char, hot_request_bytes> buffer{};
};

// What a read handler does before it refreshes the idle timeout: the data lands in the
// buffer, the handler updates the connection's counters and reads its state (one word of
// each of the object's cache lines). The stored value depends on every load, and the fence
// waits until the store has reached the cache: from then on the connection is in L1, as
// after a real read (whose system call writes the buffer), and the ordered clock read of the
// timer operation that follows does not wait out the miss.
template <typename Timer>
inline void simulate_read(hot_connection<Timer>& c, std::uint64_t seq) {
    static_assert(sizeof(hot_connection<Timer>) == hot_stride);
    std::uint64_t state = 0;
    const auto* bytes = reinterpret_cast<const unsigned char*>(&c);
    for (std::size_t line = 64; line < hot_header_bytes; line += 64) {
        std::uint64_t word;
        std::memcpy(&word, bytes + line, sizeof word);
        state += word;
    }
    std::uint64_t request[hot_request_bytes / 8];
    for (std::size_t i = 0; i < std::size(request); ++i) {
        request[i] = seq + i + (state & 1);
    }
    std::memcpy(c.buffer.data(), request, sizeof request);
    c.bytes_read += hot_request_bytes;
#if defined(__x86_64__) || defined(__i386__)
    // Not std::atomic_thread_fence(seq_cst): g++ makes that a `lock or` to the stack, which
    // lets the next connection's loads run ahead of it on AMD Zen, so that the misses of the
    // no_timer loop overlap while the timers' ordered clock reads would still wait them out.
    // mfence keeps later loads behind the store, as the read's system call does.
    _mm_mfence();
#else
    std::atomic_thread_fence(std::memory_order_seq_cst);
#endif
}

struct hot_result {
    double wall_ns = 0;            // per timed touch (a touch with the timer operation)
    double cpu_ns = 0;             // per timed touch, CPU time of this thread
    std::uint64_t touches = 0;     // timed touches
    std::uint64_t allocations = 0; // during the whole window
    double batch_ns = 0;           // per timed touch: its batch's wall time
    double baseline_batch_ns = 0;  // per read of the interleaved baseline batches
    double poll_ns = 0;            // per timed touch: the window's time outside the batches
    std::uint64_t polls = 0;       // poll() calls in the window
    double poll_overhead_ns = 0;   // per poll(): the window's time outside the batches / polls
    // The same in CPU time of the thread, which a loaded machine does not inflate: a thread
    // that is preempted loses its core mostly at a system call's return, that is in poll(),
    // so that the wall time outside the batches grows with the load, not with the timer.
    double batch_cpu_ns = 0;
    double baseline_batch_cpu_ns = 0;
    double poll_cpu_ns = 0;
    double poll_overhead_cpu_ns = 0;
};

double thread_cpu_seconds() {
    timespec ts{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

// Touches connections in the visit order, `batch` per posted handler followed by a poll()
// (which runs the wheel when a slot is due, and steady_timer's aborted handlers), for
// `window` of real time. Every other batch is the baseline: the same simulated reads on the
// next connections of the same objects, without the timer operation. Interleaving them makes
// the baseline see the same machine (load, frequency, cache) as the timed batches within
// microseconds; a baseline measured in another run, as before, drifted by more than the
// reaper's whole cost, and once came out slower than the timed loop.
template <typename Connection, typename Touch>
hot_result hot_window(net::io_context& io, const std::vector<Connection*>& order, std::size_t& next,
                      std::uint64_t& seq, clock_type::duration window, Touch touch) {
    const std::uint64_t allocations = timewheel_bench::allocations();
    clock_type::duration timed_batches{}, baseline_batches{};
    double timed_cpu = 0, baseline_cpu = 0; // seconds
    std::uint64_t timed = 0, baseline = 0, polls = 0;
    bool with_timer = true;
    const double cpu_start = thread_cpu_seconds();
    const auto start = clock_type::now();
    const auto end = start + window;
    auto now = start;
    while (now < end) {
        net::post(io, [&] {
            const double batch_cpu_start = thread_cpu_seconds();
            const auto batch_start = clock_type::now();
            for (std::size_t i = 0; i < batch; ++i) {
                Connection& c = *order[next];
                next = next + 1 == order.size() ? 0 : next + 1;
                simulate_read(c, ++seq);
                if (with_timer) {
                    touch(c);
                }
            }
            const auto spent = clock_type::now() - batch_start;
            (with_timer ? timed_batches : baseline_batches) += spent;
            (with_timer ? timed_cpu : baseline_cpu) += thread_cpu_seconds() - batch_cpu_start;
            (with_timer ? timed : baseline) += batch;
            with_timer = !with_timer;
        });
        io.poll();
        ++polls;
        now = clock_type::now();
    }
    const auto per = [](clock_type::duration d, std::uint64_t count) {
        return std::chrono::duration<double, std::nano>(d).count() /
               static_cast<double>(std::max<std::uint64_t>(count, 1));
    };
    const auto outside = (now - start) - timed_batches - baseline_batches;
    hot_result r;
    r.touches = timed;
    r.allocations = timewheel_bench::allocations() - allocations;
    r.batch_ns = per(timed_batches, timed);
    r.baseline_batch_ns = per(baseline_batches, baseline);
    r.poll_ns = per(outside, timed);
    r.polls = polls;
    r.poll_overhead_ns = per(outside, polls);
    r.wall_ns = r.batch_ns + r.poll_ns;
    const double cpu = thread_cpu_seconds() - cpu_start;
    const auto per_cpu = [](double seconds, std::uint64_t count) {
        return seconds * 1e9 / static_cast<double>(std::max<std::uint64_t>(count, 1));
    };
    r.batch_cpu_ns = per_cpu(timed_cpu, timed);
    r.baseline_batch_cpu_ns = per_cpu(baseline_cpu, baseline);
    r.poll_cpu_ns = per_cpu(cpu - timed_cpu - baseline_cpu, timed);
    r.poll_overhead_cpu_ns = per_cpu(cpu - timed_cpu - baseline_cpu, polls);
    r.cpu_ns = r.batch_cpu_ns + r.poll_cpu_ns;
    return r;
}

// The no_timer loop's figures per N, from this process: its time outside the batches per
// poll() is the cost of a post() and a poll() that find nothing to do, which the timer
// benchmarks subtract from theirs.
std::map<std::size_t, hot_result>& hot_baselines() {
    static std::map<std::size_t, hot_result> baselines;
    return baselines;
}

// Arms every connection (in the arm order), warms up for half a timeout (untimed), then
// times a window of one timeout: with the connections touched in a cycle much shorter than
// the timeout, every entry comes due about once per timeout, so the window holds one
// period's re-filing of every connection whatever its phase.
template <typename Timer, typename Make, typename Arm, typename Touch>
hot_result hot_run(std::size_t n, Make make, Arm arm, Touch touch, net::io_context& io) {
    // Without outstanding work (no_timer), a poll() would stop the io_context, and the later
    // ones would leave the batches queued.
    auto guard = net::make_work_guard(io);
    // A server's io_context always has its reactor running (its sockets are registered), so
    // every poll() pays an epoll_wait. Without a pending wait, no_timer's would not: this
    // idle timer starts the reactor for every implementation alike.
    net::steady_timer reactor(io, std::chrono::hours(1));
    reactor.async_wait([](boost::system::error_code) {});
    const timewheel_bench::workload& w = timewheel_bench::get_workload(n);
    timewheel_bench::scattered<hot_connection<Timer>> connections(w, make);
    for (std::size_t i = 0; i < n; ++i) {
        arm(*connections.by_arm()[i]); // the live set, in the arm order
    }
    std::size_t next = 0;
    std::uint64_t seq = 0;
    io.poll();
    hot_window(io, connections.by_visit(), next, seq, hot_timeout(n) / 2, touch);
    return hot_window(io, connections.by_visit(), next, seq, hot_timeout(n), touch);
}

hot_result no_timer_run(std::size_t n) {
    net::io_context io(1);
    return hot_run<no_timer>(
        n, [] { return hot_connection<no_timer>(); }, [](hot_connection<no_timer>&) {},
        [](hot_connection<no_timer>&) {}, io);
}

void report_hot(benchmark::State& state, std::size_t n, const hot_result& r,
                std::uint64_t expired) {
    auto& baselines = hot_baselines();
    if (baselines.find(n) == baselines.end()) {
        baselines[n] = no_timer_run(n); // filtered out: measure it now, in this process
    }
    const hot_result& base = baselines[n];
    // The timer's part of a batch: the timed batches against the baseline batches that ran
    // between them. Its part of poll(): the time outside the batches less what a poll()
    // costs with no timer (per poll, from the no_timer run; a few ns per touch in all).
    const double incremental_batch = r.batch_ns - r.baseline_batch_ns;
    const double incremental_poll =
        r.poll_ns - base.poll_overhead_ns * static_cast<double>(r.polls) /
                        static_cast<double>(std::max<std::uint64_t>(r.touches, 1));
    const double incremental_batch_cpu = r.batch_cpu_ns - r.baseline_batch_cpu_ns;
    const double incremental_poll_cpu =
        r.poll_cpu_ns - base.poll_overhead_cpu_ns * static_cast<double>(r.polls) /
                            static_cast<double>(std::max<std::uint64_t>(r.touches, 1));
    state.SetItemsProcessed(static_cast<std::int64_t>(r.touches));
    state.counters["ns_per_touch"] = r.wall_ns;
    state.counters["batch_ns_per_touch"] = r.batch_ns;
    state.counters["baseline_batch_ns_per_read"] = r.baseline_batch_ns;
    state.counters["poll_ns_per_touch"] = r.poll_ns;
    state.counters["cpu_ns_per_touch"] = r.cpu_ns;
    state.counters["no_timer_poll_ns"] = base.poll_overhead_ns;
    state.counters["incremental_ns"] = incremental_batch + incremental_poll;
    state.counters["incremental_batch_ns"] = incremental_batch;
    state.counters["incremental_poll_ns"] = incremental_poll;
    state.counters["incremental_cpu_ns"] = incremental_batch_cpu + incremental_poll_cpu;
    state.counters["incremental_batch_cpu_ns"] = incremental_batch_cpu;
    state.counters["incremental_poll_cpu_ns"] = incremental_poll_cpu;
    state.counters["no_timer_poll_cpu_ns"] = base.poll_overhead_cpu_ns;
    // poll()'s extra work per connection and per timeout: for the wheel, its re-filing.
    state.counters["poll_ns_per_timeout"] =
        incremental_poll * static_cast<double>(r.touches) / static_cast<double>(n);
    state.counters["touches_per_timeout"] = static_cast<double>(r.touches) / static_cast<double>(n);
    state.counters["expired"] = static_cast<double>(expired);
    state.counters["timeout_s"] = std::chrono::duration<double>(hot_timeout(n)).count();
    state.counters["allocs_per_touch"] =
        static_cast<double>(r.allocations) / static_cast<double>(r.touches);
    state.counters["connections"] = static_cast<double>(n);
}

void no_timer_hot_touch(benchmark::State& state, std::size_t n) {
    for (auto _ : state) {
        const hot_result r = no_timer_run(n);
        hot_baselines()[n] = r;
        report_hot(state, n, r, 0);
    }
}

struct counting_action {
    std::uint64_t* expired;
    void operator()() const noexcept { ++*expired; }
};

void idle_reaper_hot_touch(benchmark::State& state, std::size_t n) {
    using reaper = tw::idle_reaper<counting_action>;
    for (auto _ : state) {
        net::io_context io(1);
        std::uint64_t expired = 0;
        const hot_result r = hot_run<reaper>(
            n,
            [&] { return hot_connection<reaper>(io, hot_timeout(n), counting_action{&expired}); },
            [](hot_connection<reaper>& c) { c.timer.start(); },
            [](hot_connection<reaper>& c) { c.timer.touch(); }, io);
        report_hot(state, n, r, expired);
    }
}

void wheel_timer_hot_touch(benchmark::State& state, std::size_t n) {
    for (auto _ : state) {
        net::io_context io(1);
        std::uint64_t expired = 0;
        const hot_result r = hot_run<tw::wheel_timer>(
            n, [&] { return hot_connection<tw::wheel_timer>(io); },
            [&](hot_connection<tw::wheel_timer>& c) {
                c.timer.slack(tw::idle_reaper<>::default_slack(hot_timeout(n)));
                c.timer.expires_after(hot_timeout(n));
                c.timer.async_wait(on_idle{&expired});
            },
            [n](hot_connection<tw::wheel_timer>& c) { c.timer.reschedule_after(hot_timeout(n)); },
            io);
        report_hot(state, n, r, expired);
    }
}

void steady_timer_hot_touch(benchmark::State& state, std::size_t n) {
    for (auto _ : state) {
        net::io_context io(1);
        std::uint64_t expired = 0;
        const hot_result r = hot_run<net::steady_timer>(
            n, [&] { return hot_connection<net::steady_timer>(io); },
            [&](hot_connection<net::steady_timer>& c) {
                c.timer.expires_after(hot_timeout(n));
                c.timer.async_wait(on_idle{&expired});
            },
            [&](hot_connection<net::steady_timer>& c) {
                c.timer.expires_after(hot_timeout(n)); // aborts the pending wait
                c.timer.async_wait(on_idle{&expired});
            },
            io);
        report_hot(state, n, r, expired);
        io.poll(); // the aborted handlers of the connections destroyed above
    }
}

// --- idle_1m: memory and wakeups of 1M idle connections ------------------------------------

// 1,000,000 connections that have gone quiet at different times: the last activity of each
// is uniform over the past 30 s, so its idle deadline is uniform over the next 30 s (about
// 33,000 come due per second), and no connection is touched during the window. The idle
// timeout is 30 s; a reaper is given the remaining time as its timeout and the slack of a
// 30 s timeout (3.75 s), which is the state its wheel entry would be in.

constexpr std::chrono::milliseconds idle_window{3000};
constexpr std::chrono::seconds idle_timeout{30};

// As large as close_stream (two pointers), so that sizeof(idle_reaper<idle_close>) is what a
// server's idle_reaper<> costs.
struct idle_close {
    std::uint64_t* fired;
    void* stream;
    void operator()() const noexcept { ++*fired; }
};
static_assert(sizeof(tw::idle_reaper<idle_close>) == sizeof(tw::idle_reaper<>));

std::size_t heap_in_use() {
#if defined(__GLIBC__)
    const struct mallinfo2 info = mallinfo2();
    return info.uordblks + info.hblkhd;
#else
    return 0;
#endif
}

struct idle_usage {
    double seconds = 0;
    double cpu_seconds = 0;
    long switches = 0;
};

idle_usage idle_usage_now() {
    rusage ru{};
    getrusage(RUSAGE_THREAD, &ru);
    const auto seconds = [](const timeval& tv) {
        return static_cast<double>(tv.tv_sec) + static_cast<double>(tv.tv_usec) * 1e-6;
    };
    return {0, seconds(ru.ru_utime) + seconds(ru.ru_stime), ru.ru_nvcsw};
}

// Runs io on this thread for idle_window of real time (another thread calls stop()), as
// report_bench.cpp's wakeup windows do, and returns what this thread did.
idle_usage run_idle_window(net::io_context& io) {
    auto guard = net::make_work_guard(io);
    const auto start = clock_type::now();
    std::thread stopper([&io] {
        std::this_thread::sleep_for(idle_window);
        io.stop();
    });
    const idle_usage before = idle_usage_now();
    io.run();
    const idle_usage after = idle_usage_now();
    stopper.join();
    idle_usage r;
    r.seconds = std::chrono::duration<double>(clock_type::now() - start).count();
    r.cpu_seconds = after.cpu_seconds - before.cpu_seconds;
    r.switches = after.switches - before.switches;
    io.restart();
    return r;
}

std::vector<clock_type::duration> idle_remaining(std::size_t n) {
    std::mt19937_64 rng(20261123);
    std::uniform_int_distribution<std::int64_t> us(1, 30'000'000);
    std::vector<clock_type::duration> remaining(n);
    for (auto& r : remaining) {
        r = std::chrono::microseconds(us(rng));
    }
    return remaining;
}

void report_idle(benchmark::State& state, const idle_usage& u, std::uint64_t fired, double bytes,
                 double heap_bytes, std::size_t n) {
    state.counters["bytes"] = bytes;
    state.counters["heap_bytes"] = heap_bytes;
    state.counters["switches_per_s"] = static_cast<double>(u.switches) / u.seconds;
    state.counters["fired_per_s"] = static_cast<double>(fired) / u.seconds;
    state.counters["cpu_percent"] = 100.0 * u.cpu_seconds / u.seconds;
    state.counters["connections"] = static_cast<double>(n);
}

void idle_reaper_idle_1m(benchmark::State& state, std::size_t n) {
    const std::vector<clock_type::duration> remaining = idle_remaining(n);
    for (auto _ : state) {
        net::io_context io(1);
        auto& service = net::use_service<tw::wheel_service>(io);
        std::uint64_t fired = 0;
        const std::size_t heap_before = heap_in_use();
        block<tw::idle_reaper<idle_close>> reapers(n, [&](auto* p, std::size_t i) {
            new (p) tw::idle_reaper<idle_close>(io, remaining[i], idle_close{&fired, nullptr},
                                                tw::idle_reaper<>::default_slack(idle_timeout));
            p->start();
        });
        const double heap_bytes =
            static_cast<double>(heap_in_use() - heap_before) / static_cast<double>(n);
        const std::uint64_t wakeups = service.wakeups();
        const idle_usage u = run_idle_window(io);
        state.counters["wakeups_per_s"] =
            static_cast<double>(service.wakeups() - wakeups) / u.seconds;
        report_idle(state, u, fired, sizeof(tw::idle_reaper<>), heap_bytes, n);
    }
}

void steady_timer_idle_1m(benchmark::State& state, std::size_t n) {
    const std::vector<clock_type::duration> remaining = idle_remaining(n);
    for (auto _ : state) {
        net::io_context io(1);
        std::uint64_t fired = 0;
        const std::size_t heap_before = heap_in_use();
        block<net::steady_timer> timers(n, [&](auto* p, std::size_t i) {
            new (p) net::steady_timer(io, remaining[i]);
            p->async_wait(on_idle{&fired});
        });
        const double heap_bytes =
            static_cast<double>(heap_in_use() - heap_before) / static_cast<double>(n);
        const idle_usage u = run_idle_window(io);
        report_idle(state, u, fired, steady_timer_bytes, heap_bytes, n);
    }
}

// --- registration -------------------------------------------------------------------------

using bench_fn = void (*)(benchmark::State&, std::size_t);

[[maybe_unused]] const bool registered = [] {
    const struct {
        const char* name;
        bench_fn fn;
        std::size_t n;
    } cases[] = {
        {"idle_reaper/touch/1000000", idle_reaper_touch, 1'000'000},
        {"steady_timer/touch/1000000", steady_timer_touch, 1'000'000},
        {"lazy_steady_timer/touch/1000000", lazy_steady_timer_touch, 1'000'000},
        {"idle_reaper/socket_touch/10000", idle_reaper_socket_touch, 10'000},
        {"steady_timer/socket_touch/10000", steady_timer_socket_touch, 10'000},
        {"idle_reaper/idle_1m/1000000", idle_reaper_idle_1m, 1'000'000},
        {"steady_timer/idle_1m/1000000", steady_timer_idle_1m, 1'000'000},
        {"no_timer/hot_touch/10000", no_timer_hot_touch, 10'000},
        {"idle_reaper/hot_touch/10000", idle_reaper_hot_touch, 10'000},
        {"wheel_timer/hot_touch/10000", wheel_timer_hot_touch, 10'000},
        {"steady_timer/hot_touch/10000", steady_timer_hot_touch, 10'000},
        {"no_timer/hot_touch/1000000", no_timer_hot_touch, 1'000'000},
        {"idle_reaper/hot_touch/1000000", idle_reaper_hot_touch, 1'000'000},
        {"wheel_timer/hot_touch/1000000", wheel_timer_hot_touch, 1'000'000},
        {"steady_timer/hot_touch/1000000", steady_timer_hot_touch, 1'000'000},
    };
    for (const auto& c : cases) {
        const bench_fn fn = c.fn;
        const std::size_t n = c.n;
        benchmark::RegisterBenchmark(c.name, [fn, n](benchmark::State& state) {
            fn(state, n);
        })->Unit(benchmark::kNanosecond);
    }
    return true;
}();

} // namespace
