//
// bench/server/server_bench.cpp
//
// timewheeld end to end, over 127.0.0.1: the load generator that submits tasks through the
// API and the callback sink that receives them, in one program, against a timewheeld that
// scripts/bench-server.sh starts (with a store of its own per run). One run, one case, one
// JSON line on stdout:
//
//   submit     POST /v1/tasks requests per second: --conns keep-alive connections, one
//              request in flight each (not pipelined), --n requests; tasks due in a day, one
//              a millisecond (no callback runs). Latency p50/p99 of a request.
//   callbacks  callbacks per second: --n tasks submitted first (--conns connections), due
//              uniformly over --window-ms starting at D, a moment far enough ahead for every
//              submit to be acknowledged before it (--submit-rate, the submit case's figure,
//              says how far); the figure is n / (last callback received - D). A submit
//              acknowledged after D voids the figure (submit_late: true).
//   lateness   a steady --rate tasks/s for --n tasks: task i due at D + i/rate, submitted
//              --lead-ms before its due time; lateness = arrival at the sink - due time,
//              p50/p99/max.
//
// The sink answers 200 at once, keep-alive, on one thread of its own: a hand-written
// HTTP/1.1 reader (request line and headers up to the blank line, Content-Length body),
// every answer of one read written in one write, so that it costs less than what it
// measures. The callback's body is its due time in milliseconds since the epoch (the
// store's clock is the system clock of this machine, like the sink's), so lateness is read
// off each request. Timewheel-Attempt above 1 counts as a retry.
//
// CPU: --pids name:pid,... are sampled from /proc at the start and the end of the measured
// window (utime + stime, 10 ms ticks), and so are the sink's and the generator's threads
// (their CPU clocks); each is reported as percent of one core over the window.
//
//   timewheeld_bench callbacks --api-port P --n 100000 --window-ms 1000 --submit-rate 8000
//                    --store redis --pids timewheeld:123,redis-server:456
//

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/connect.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/message.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/string_body.hpp>

#include <pthread.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <charconv>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <exception>
#include <fstream>
#include <functional>
#include <map>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

namespace {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = net::ip::tcp;
using steady = std::chrono::steady_clock;

// --- Clocks -------------------------------------------------------------------------------

std::int64_t now_us() {
    return std::chrono::duration_cast<std::chrono::microseconds>(
               std::chrono::system_clock::now().time_since_epoch())
        .count();
}

std::int64_t now_ms() {
    return now_us() / 1000;
}

// The steady time at which the system clock reads `ms`: pacing and sleeping use steady
// time, due times the system's.
steady::time_point steady_at_ms(std::int64_t ms) {
    return steady::now() + std::chrono::microseconds(ms * 1000 - now_us());
}

void sleep_until_ms(std::int64_t ms) {
    std::this_thread::sleep_until(steady_at_ms(ms));
}

// "2026-11-26T04:05:06.789Z"
std::string rfc3339(std::int64_t ms) {
    const std::time_t s = static_cast<std::time_t>(ms / 1000);
    std::tm tm{};
    ::gmtime_r(&s, &tm);
    char buf[40];
    const auto n = std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &tm);
    std::snprintf(buf + n, sizeof buf - n, ".%03dZ", static_cast<int>(ms % 1000));
    return buf;
}

std::string fixed(double v, int digits);

// --- CPU of processes and threads ----------------------------------------------------------

// utime + stime of a process, in seconds (0 when it is gone).
double process_cpu(int pid) {
    std::ifstream f("/proc/" + std::to_string(pid) + "/stat");
    std::string line;
    if (!std::getline(f, line)) {
        return 0;
    }
    // Fields after the command name, which is in parentheses and may hold spaces.
    std::istringstream rest(line.substr(line.rfind(')') + 2));
    std::string field;
    double ticks = 0;
    for (int i = 3; i <= 15 && rest >> field; ++i) {
        if (i == 14 || i == 15) {
            ticks += std::stod(field);
        }
    }
    return ticks / static_cast<double>(::sysconf(_SC_CLK_TCK));
}

double thread_cpu(clockid_t id) {
    timespec ts{};
    ::clock_gettime(id, &ts);
    return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

clockid_t cpu_clock_of(std::thread& t) {
    clockid_t id{};
    ::pthread_getcpuclockid(t.native_handle(), &id);
    return id;
}

clockid_t cpu_clock_of_this_thread() {
    clockid_t id{};
    ::pthread_getcpuclockid(::pthread_self(), &id);
    return id;
}

// CPU time of named processes and threads between start() and stop(), as percent of one
// core over the wall time between them.
class cpu_meter {
public:
    void add_process(std::string name, int pid) { procs_.push_back({std::move(name), pid, 0}); }
    void add_thread(std::string name, clockid_t id) {
        threads_.push_back({std::move(name), id, 0});
    }

    void start() {
        t0_ = steady::now();
        for (auto& p : procs_) {
            p.start = process_cpu(p.pid);
        }
        for (auto& t : threads_) {
            t.start = thread_cpu(t.id);
        }
    }

    // "cpu_percent": {"timewheeld": 93.1, ...}, "cpu_us_per_task": {"timewheeld": 41.2, ...}:
    // percent of one core over the window, and CPU microseconds per task of the `tasks`
    // (which on a loaded machine is the steadier figure).
    std::string stop_json(std::size_t tasks) const {
        const double wall = std::chrono::duration<double>(steady::now() - t0_).count();
        std::string out = "{";
        std::string per_task = "{";
        auto add = [&](const std::string& name, double cpu) {
            if (out.size() > 1) {
                out += ", ";
                per_task += ", ";
            }
            out += "\"" + name + "\": " + fixed(wall > 0 ? 100 * cpu / wall : 0.0, 1);
            per_task += "\"" + name +
                        "\": " + fixed(tasks > 0 ? 1e6 * cpu / static_cast<double>(tasks) : 0.0, 1);
        };
        for (const auto& p : procs_) {
            add(p.name, process_cpu(p.pid) - p.start);
        }
        for (const auto& t : threads_) {
            add(t.name, thread_cpu(t.id) - t.start);
        }
        return "\"cpu_percent\": " + out + "}, \"cpu_us_per_task\": " + per_task + "}";
    }

private:
    struct proc {
        std::string name;
        int pid;
        double start;
    };
    struct thread {
        std::string name;
        clockid_t id;
        double start;
    };
    std::vector<proc> procs_;
    std::vector<thread> threads_;
    steady::time_point t0_;
};

// --- Statistics ----------------------------------------------------------------------------

// The q-quantile (0..1) of `v`, sorted in place; 0 when empty.
double quantile(std::vector<std::int64_t>& v, double q) {
    if (v.empty()) {
        return 0;
    }
    std::sort(v.begin(), v.end());
    const auto i =
        std::min(v.size() - 1, static_cast<std::size_t>(q * static_cast<double>(v.size())));
    return static_cast<double>(v[i]);
}

// `s` as the inside of a JSON string.
std::string json_escape(std::string_view s) {
    std::string out;
    for (const char c : s) {
        if (c == '"' || c == '\\') {
            out += '\\';
            out += c;
        } else if (static_cast<unsigned char>(c) >= 0x20) {
            out += c;
        }
    }
    return out;
}

std::string fixed(double v, int digits) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.*f", digits, v);
    return buf;
}

// --- The sink ------------------------------------------------------------------------------

bool iequals_prefix(std::string_view s, std::string_view prefix) {
    if (s.size() < prefix.size()) {
        return false;
    }
    for (std::size_t i = 0; i < prefix.size(); ++i) {
        if (std::tolower(static_cast<unsigned char>(s[i])) != prefix[i]) {
            return false;
        }
    }
    return true;
}

// The value of header `name` (lower case, with its colon) in a header block, or nothing.
std::optional<std::string_view> header_value(std::string_view block, std::string_view name) {
    std::size_t pos = block.find("\r\n");
    while (pos != std::string_view::npos && pos + 2 < block.size()) {
        const auto line_start = pos + 2;
        const auto line_end = block.find("\r\n", line_start);
        const auto line =
            block.substr(line_start, line_end == std::string_view::npos ? std::string_view::npos
                                                                        : line_end - line_start);
        if (iequals_prefix(line, name)) {
            auto v = line.substr(name.size());
            while (!v.empty() && v.front() == ' ') {
                v.remove_prefix(1);
            }
            return v;
        }
        pos = line_end;
    }
    return std::nullopt;
}

std::int64_t to_int(std::string_view s, std::int64_t otherwise) {
    std::int64_t v = 0;
    auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    return ec == std::errc() ? v : otherwise;
}

class sink {
public:
    // Records up to `capacity` latenesses; counts every request.
    explicit sink(std::size_t capacity)
        : acceptor_(io_, tcp::endpoint(net::ip::make_address("127.0.0.1"), 0)) {
        lateness_us_.reserve(capacity);
        net::co_spawn(io_, accept(), net::detached);
        thread_ = std::thread([this] { io_.run(); });
    }

    ~sink() { stop(); }

    void stop() {
        io_.stop();
        if (thread_.joinable()) {
            thread_.join();
        }
    }

    unsigned short port() const { return acceptor_.local_endpoint().port(); }
    clockid_t cpu_clock() { return cpu_clock_of(thread_); }
    std::uint64_t received() const { return received_.load(std::memory_order_acquire); }
    std::uint64_t retries() const { return retries_.load(); }
    std::uint64_t connections() const { return connections_.load(); }
    std::int64_t first_arrival_us() const { return first_us_.load(); }
    std::int64_t last_arrival_us() const { return last_us_.load(); }

    // Stops the sink (its CPU clock with it) and gives what it recorded.
    std::vector<std::int64_t> stop_and_take_lateness_us() {
        stop();
        return std::move(lateness_us_);
    }

private:
    net::awaitable<void> accept() {
        for (;;) {
            auto socket = co_await acceptor_.async_accept(net::use_awaitable);
            socket.set_option(tcp::no_delay(true));
            connections_.fetch_add(1);
            net::co_spawn(io_, serve(std::move(socket)), net::detached);
        }
    }

    net::awaitable<void> serve(tcp::socket socket) {
        static constexpr std::string_view ok = "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n";
        std::string in;
        std::string out;
        std::size_t used = 0;
        char chunk[16384];
        try {
            for (;;) {
                const auto n =
                    co_await socket.async_read_some(net::buffer(chunk), net::use_awaitable);
                const auto arrived = now_us();
                in.append(chunk, n);
                out.clear();
                // Every whole request in the buffer: a client may pipeline.
                for (;;) {
                    const std::string_view rest = std::string_view(in).substr(used);
                    const auto end = rest.find("\r\n\r\n");
                    if (end == std::string_view::npos) {
                        break;
                    }
                    const auto block = rest.substr(0, end + 2);
                    const auto length = header_value(block, "content-length:");
                    const auto body_len = length ? to_int(*length, 0) : 0;
                    if (rest.size() < end + 4 + static_cast<std::size_t>(body_len)) {
                        break;
                    }
                    record(arrived, rest.substr(end + 4, static_cast<std::size_t>(body_len)),
                           header_value(block, "timewheel-attempt:"));
                    used += end + 4 + static_cast<std::size_t>(body_len);
                    out += ok;
                }
                in.erase(0, used);
                used = 0;
                if (!out.empty()) {
                    co_await net::async_write(socket, net::buffer(out), net::use_awaitable);
                }
            }
        } catch (const std::exception&) {
            // The peer closed: timewheeld stopping, or an idle connection dropped.
        }
    }

    void record(std::int64_t arrived, std::string_view body,
                std::optional<std::string_view> attempt) {
        const auto due_ms = to_int(body, -1);
        if (due_ms >= 0 && lateness_us_.size() < lateness_us_.capacity()) {
            lateness_us_.push_back(arrived - due_ms * 1000);
        }
        if (attempt && to_int(*attempt, 1) > 1) {
            retries_.fetch_add(1);
        }
        if (first_us_.load() == 0) {
            first_us_.store(arrived);
        }
        last_us_.store(arrived);
        received_.fetch_add(1, std::memory_order_release);
    }

    net::io_context io_{1};
    tcp::acceptor acceptor_;
    std::thread thread_;
    std::vector<std::int64_t> lateness_us_; // the sink's thread only
    std::atomic<std::uint64_t> received_{0};
    std::atomic<std::uint64_t> retries_{0};
    std::atomic<std::uint64_t> connections_{0};
    std::atomic<std::int64_t> first_us_{0};
    std::atomic<std::int64_t> last_us_{0};
};

// --- The load generator --------------------------------------------------------------------

// What to submit: task i is due at due_ms(i) and, when paced, sent at send_at(i).
struct submit_plan {
    std::size_t n = 0;
    std::size_t conns = 32;
    unsigned short api_port = 0;
    unsigned short sink_port = 9; // the submit case: never called
    std::function<std::int64_t(std::size_t)> due_ms;
    std::function<std::optional<steady::time_point>(std::size_t)> send_at;
};

struct submit_report {
    double seconds = 0;
    std::size_t ok = 0;
    std::size_t errors = 0;
    std::string first_error;
    std::vector<std::int64_t> latency_us;
    std::int64_t last_ack_ms = 0;
};

std::string submit_request(const submit_plan& plan, std::size_t i) {
    const auto due = plan.due_ms(i);
    std::string body =
        "{\"due_at\":\"" + rfc3339(due) +
        "\",\"callback\":{\"url\":\"http://127.0.0.1:" + std::to_string(plan.sink_port) +
        "/hook\",\"body\":\"" + std::to_string(due) + "\"}}";
    std::string req = "POST /v1/tasks HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                      "Content-Type: application/json\r\nContent-Length: " +
                      std::to_string(body.size()) + "\r\n\r\n";
    return req + body;
}

net::awaitable<void> submitter(const submit_plan& plan, std::atomic<std::size_t>& next,
                               submit_report& report) {
    auto ex = co_await net::this_coro::executor;
    tcp::socket socket(ex);
    const tcp::endpoint ep(net::ip::make_address("127.0.0.1"), plan.api_port);
    co_await socket.async_connect(ep, net::use_awaitable);
    socket.set_option(tcp::no_delay(true));
    beast::flat_buffer buffer;
    net::steady_timer pace(ex);
    for (;;) {
        const auto i = next.fetch_add(1);
        if (i >= plan.n) {
            break;
        }
        if (auto at = plan.send_at(i)) {
            pace.expires_at(*at);
            co_await pace.async_wait(net::use_awaitable);
        }
        const std::string req = submit_request(plan, i);
        const auto t0 = steady::now();
        co_await net::async_write(socket, net::buffer(req), net::use_awaitable);
        http::response<http::string_body> res;
        co_await http::async_read(socket, buffer, res, net::use_awaitable);
        report.latency_us.push_back(
            std::chrono::duration_cast<std::chrono::microseconds>(steady::now() - t0).count());
        if (res.result_int() == 201 || res.result_int() == 200) {
            ++report.ok;
        } else {
            if (report.errors++ == 0) {
                report.first_error = std::to_string(res.result_int()) + " " + res.body();
            }
        }
    }
    report.last_ack_ms = std::max(report.last_ack_ms, now_ms());
}

submit_report submit_all(const submit_plan& plan) {
    net::io_context io(1);
    std::atomic<std::size_t> next{0};
    submit_report report;
    report.latency_us.reserve(plan.n);
    const auto t0 = steady::now();
    for (std::size_t c = 0; c < plan.conns; ++c) {
        net::co_spawn(io, submitter(plan, next, report), [&](std::exception_ptr e) {
            if (e) {
                try {
                    std::rethrow_exception(e);
                } catch (const std::exception& x) {
                    if (report.errors++ == 0) {
                        report.first_error = std::string("connection: ") + x.what();
                    }
                }
            }
        });
    }
    io.run();
    report.seconds = std::chrono::duration<double>(steady::now() - t0).count();
    return report;
}

// --- Command line --------------------------------------------------------------------------

struct args {
    std::string mode;
    std::map<std::string, std::string> kv;

    std::string str(const std::string& k, std::string def = "") const {
        const auto it = kv.find(k);
        return it == kv.end() ? def : it->second;
    }
    std::int64_t num(const std::string& k, std::int64_t def) const {
        const auto it = kv.find(k);
        if (it == kv.end()) {
            return def;
        }
        const auto v = to_int(it->second, -1);
        if (v < 0) {
            throw std::invalid_argument("--" + k + ": not a non-negative integer: " + it->second);
        }
        return v;
    }
};

args parse(int argc, char** argv) {
    if (argc < 2) {
        throw std::invalid_argument("usage: timewheeld_bench submit|callbacks|lateness --api-port "
                                    "P [--n N] [--conns C] [--store NAME] [--pids name:pid,...] "
                                    "[--window-ms W --submit-rate R] [--rate R --lead-ms L]");
    }
    args a;
    a.mode = argv[1];
    for (int i = 2; i < argc; ++i) {
        std::string k = argv[i];
        if (!k.starts_with("--") || i + 1 >= argc) {
            throw std::invalid_argument("expected --name value, got " + k);
        }
        a.kv[k.substr(2)] = argv[++i];
    }
    if (a.num("api-port", 0) == 0) {
        throw std::invalid_argument("--api-port is required");
    }
    return a;
}

void add_pids(cpu_meter& m, const std::string& list) {
    std::string_view rest = list;
    while (!rest.empty()) {
        const auto comma = rest.find(',');
        const auto item = rest.substr(0, comma);
        rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
        const auto colon = item.find(':');
        if (colon == std::string_view::npos) {
            throw std::invalid_argument("--pids: expected name:pid, got " + std::string(item));
        }
        m.add_process(std::string(item.substr(0, colon)),
                      static_cast<int>(to_int(item.substr(colon + 1), 0)));
    }
}

std::string common_json(const args& a, const char* kase) {
    return "{\"case\": \"" + std::string(kase) + "\", \"store\": \"" + a.str("store", "?") +
           "\", \"n\": " + std::to_string(a.num("n", 0));
}

std::string lateness_json(std::vector<std::int64_t> late_us) {
    const double max = late_us.empty()
                           ? 0
                           : static_cast<double>(*std::max_element(late_us.begin(), late_us.end()));
    return "\"lateness_p50_ms\": " + fixed(quantile(late_us, 0.50) / 1000, 3) +
           ", \"lateness_p99_ms\": " + fixed(quantile(late_us, 0.99) / 1000, 3) +
           ", \"lateness_max_ms\": " + fixed(max / 1000, 3) + ", \"early\": " +
           std::to_string(
               std::count_if(late_us.begin(), late_us.end(), [](auto v) { return v < 0; }));
}

// Waits until the sink has `n` callbacks or nothing arrived for `quiet_s` seconds.
void wait_for_callbacks(const sink& s, std::uint64_t n, int quiet_s) {
    auto last = s.received();
    auto last_change = steady::now();
    while (s.received() < n) {
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
        const auto r = s.received();
        if (r != last) {
            last = r;
            last_change = steady::now();
        } else if (steady::now() - last_change > std::chrono::seconds(quiet_s)) {
            break;
        }
    }
}

int run_submit(const args& a) {
    submit_plan plan;
    plan.n = static_cast<std::size_t>(a.num("n", 50000));
    plan.conns = static_cast<std::size_t>(a.num("conns", 32));
    plan.api_port = static_cast<unsigned short>(a.num("api-port", 0));
    // A day ahead, one task a millisecond: due times spread as a real load's are (all at
    // one millisecond is a worst case of its own for a store's time index).
    const auto due = now_ms() + 24LL * 3600 * 1000;
    plan.due_ms = [due](std::size_t i) { return due + static_cast<std::int64_t>(i); };
    plan.send_at = [](std::size_t) { return std::optional<steady::time_point>(); };
    cpu_meter cpu;
    add_pids(cpu, a.str("pids"));
    cpu.add_thread("generator", cpu_clock_of_this_thread());
    cpu.start();
    auto r = submit_all(plan);
    const auto cpu_json = cpu.stop_json(plan.n);
    std::printf("%s, \"conns\": %zu, \"pipelined\": false, \"seconds\": %.3f, \"ok\": %zu, "
                "\"errors\": %zu, \"first_error\": \"%s\", \"requests_per_s\": %.0f, "
                "\"latency_p50_ms\": %.3f, \"latency_p99_ms\": %.3f, %s}\n",
                common_json(a, "submit").c_str(), plan.conns, r.seconds, r.ok, r.errors,
                json_escape(r.first_error.substr(0, 200)).c_str(),
                static_cast<double>(r.ok) / r.seconds, quantile(r.latency_us, 0.5) / 1000,
                quantile(r.latency_us, 0.99) / 1000, cpu_json.c_str());
    return r.errors == 0 ? 0 : 1;
}

int run_callbacks(const args& a) {
    const auto n = static_cast<std::size_t>(a.num("n", 100000));
    const auto window = a.num("window-ms", 1000);
    // Far enough ahead for every submit to be acknowledged before the first due time.
    const auto rate_hint = std::max<std::int64_t>(a.num("submit-rate", 4000), 100);
    const auto margin = a.num("margin-ms", 1500 + static_cast<std::int64_t>(n) * 1250 / rate_hint);
    sink s(n);
    submit_plan plan;
    plan.n = n;
    plan.conns = static_cast<std::size_t>(a.num("conns", 32));
    plan.api_port = static_cast<unsigned short>(a.num("api-port", 0));
    plan.sink_port = s.port();
    const auto d = now_ms() + margin;
    plan.due_ms = [=](std::size_t i) {
        return d + static_cast<std::int64_t>(i) * window / static_cast<std::int64_t>(n);
    };
    plan.send_at = [](std::size_t) { return std::optional<steady::time_point>(); };
    const auto submitted = submit_all(plan);
    const bool late = submitted.last_ack_ms >= d;

    cpu_meter cpu;
    add_pids(cpu, a.str("pids"));
    cpu.add_thread("sink", s.cpu_clock());
    if (!late) {
        sleep_until_ms(d);
    }
    cpu.start();
    wait_for_callbacks(s, submitted.ok, static_cast<int>(a.num("quiet-s", 10)));
    const auto cpu_json = cpu.stop_json(static_cast<std::size_t>(s.received()));
    const double seconds = static_cast<double>(s.last_arrival_us() - d * 1000) / 1e6;
    const double from_first = static_cast<double>(s.last_arrival_us() - s.first_arrival_us()) / 1e6;
    const auto received = s.received();
    std::printf("%s, \"window_ms\": %lld, \"submitted\": %zu, \"submit_errors\": %zu, "
                "\"submit_per_s\": %.0f, \"submit_late\": %s, \"received\": %llu, "
                "\"retries\": %llu, \"sink_connections\": %llu, \"seconds\": %.3f, "
                "\"callbacks_per_s\": %.0f, \"from_first_callback_per_s\": %.0f, %s, "
                "%s}\n",
                common_json(a, "callbacks").c_str(), static_cast<long long>(window), submitted.ok,
                submitted.errors, static_cast<double>(submitted.ok) / submitted.seconds,
                late ? "true" : "false", static_cast<unsigned long long>(received),
                static_cast<unsigned long long>(s.retries()),
                static_cast<unsigned long long>(s.connections()), seconds,
                seconds > 0 ? static_cast<double>(received) / seconds : 0.0,
                from_first > 0 ? static_cast<double>(received) / from_first : 0.0,
                lateness_json(s.stop_and_take_lateness_us()).c_str(), cpu_json.c_str());
    if (submitted.errors != 0) {
        std::fprintf(stderr, "submit errors: %s\n", submitted.first_error.c_str());
    }
    return received >= n && !late ? 0 : 1;
}

int run_lateness(const args& a) {
    const auto n = static_cast<std::size_t>(a.num("n", 20000));
    const auto rate = std::max<std::int64_t>(a.num("rate", 1000), 1);
    const auto lead = a.num("lead-ms", 1000);
    sink s(n);
    submit_plan plan;
    plan.n = n;
    plan.conns = static_cast<std::size_t>(a.num("conns", 8));
    plan.api_port = static_cast<unsigned short>(a.num("api-port", 0));
    plan.sink_port = s.port();
    const auto d = now_ms() + lead + 500;
    plan.due_ms = [=](std::size_t i) { return d + static_cast<std::int64_t>(i) * 1000 / rate; };
    plan.send_at = [=](std::size_t i) {
        return std::optional<steady::time_point>(
            steady_at_ms(d + static_cast<std::int64_t>(i) * 1000 / rate - lead));
    };
    cpu_meter cpu;
    add_pids(cpu, a.str("pids"));
    cpu.add_thread("sink", s.cpu_clock());
    cpu.add_thread("generator", cpu_clock_of_this_thread());
    cpu.start();
    const auto submitted = submit_all(plan);
    wait_for_callbacks(s, submitted.ok, static_cast<int>(a.num("quiet-s", 10)));
    const auto cpu_json = cpu.stop_json(static_cast<std::size_t>(s.received()));
    const auto received = s.received();
    std::printf(
        "%s, \"rate\": %lld, \"lead_ms\": %lld, \"submitted\": %zu, "
        "\"submit_errors\": %zu, \"submit_p99_ms\": %.3f, \"received\": %llu, "
        "\"retries\": %llu, %s, %s}\n",
        common_json(a, "lateness").c_str(), static_cast<long long>(rate),
        static_cast<long long>(lead), submitted.ok, submitted.errors,
        [&] {
            auto l = submitted.latency_us;
            return quantile(l, 0.99) / 1000;
        }(),
        static_cast<unsigned long long>(received), static_cast<unsigned long long>(s.retries()),
        lateness_json(s.stop_and_take_lateness_us()).c_str(), cpu_json.c_str());
    return received >= n ? 0 : 1;
}

} // namespace

int main(int argc, char** argv) {
    try {
        const auto a = parse(argc, argv);
        if (a.mode == "submit") {
            return run_submit(a);
        }
        if (a.mode == "callbacks") {
            return run_callbacks(a);
        }
        if (a.mode == "lateness") {
            return run_lateness(a);
        }
        throw std::invalid_argument("unknown mode " + a.mode +
                                    " (expected submit, callbacks or lateness)");
    } catch (const std::exception& e) {
        std::fprintf(stderr, "timewheeld_bench: %s\n", e.what());
        return 2;
    }
}
