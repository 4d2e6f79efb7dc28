//
// test/server/hostile_receivers.cpp
//
// Receivers that answer a callback with hostile bytes, against the timewheeld binary with
// its worker on a SQLite file: raw TCP acceptors on 127.0.0.1 that read the request and
// write what each case chooses. Each case checks that the task ends in a sensible state
// with a clear last_error, that the service still answers /healthz, and, for the floods,
// that the service's peak resident memory (VmHWM) stayed within 64 MiB of its resident
// memory before, while the receiver sent up to 256 MiB:
//
//   - endless header lines;                       -> retry, "header limit"
//   - a chunked answer with an endless chunk extension; -> retry, the answer was broken
//   - a 256 MiB body;                             -> the status decides (200: finished)
//   - an answer dripped a line at a time;         -> the call's timeout ends it
//   - Retry-After in year 9999, or 10^20 seconds; -> retried about 68 years later, not at once
//   - 100 Continue, then 200;                     -> finished (interim answers skipped)
//   - a 3xx whose Location is invalid UTF-8, and a long error of multi-byte characters:
//     GET /v1/tasks/{id} is strict JSON, valid UTF-8, and names the redirect.
//
// Also the API side of the callback: secret_headers reach the receiver and never the API.
//
#define BOOST_TEST_MODULE server_hostile_receivers
#include <boost/test/unit_test.hpp>

#include <test/server/support/service_node.hpp>
#include <test/server/support/sink.hpp>

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/read_until.hpp>
#include <boost/asio/streambuf.hpp>
#include <boost/asio/write.hpp>
#include <boost/json/parse.hpp>

#include <sys/socket.h>

#include <atomic>
#include <chrono>
#include <fstream>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace ts = timewheel::test;
namespace cs = timewheel::test;
namespace net = boost::asio;
using tcp = net::ip::tcp;
using namespace std::chrono_literals;

namespace {

constexpr std::size_t mib = 1024 * 1024;
constexpr std::size_t flood_bytes = 256 * mib;

// A receiver on 127.0.0.1 that reads each request's head (and its Content-Length body),
// then hands the socket to `answer`, which writes whatever it likes (a blocking socket: a
// write fails once the service closes the connection). One thread per connection.
class raw_receiver {
public:
    using script = std::function<void(tcp::socket&, const std::string& head)>;

    explicit raw_receiver(script answer)
        : answer_(std::move(answer))
        , acceptor_(io_, tcp::endpoint(net::ip::make_address("127.0.0.1"), 0)) {
        accept_thread_ = std::thread([this] { accept_loop(); });
    }
    ~raw_receiver() {
        stopping_ = true;
        boost::system::error_code ec;
        // A blocking accept() is woken by shutdown() of the listening socket, not by close().
        ::shutdown(acceptor_.native_handle(), SHUT_RDWR);
        {
            std::lock_guard lock(mutex_);
            for (auto& s : sockets_) {
                s->shutdown(tcp::socket::shutdown_both, ec);
            }
        }
        accept_thread_.join();
        for (auto& t : threads_) {
            t.join();
        }
        acceptor_.close(ec);
    }
    raw_receiver(const raw_receiver&) = delete;
    raw_receiver& operator=(const raw_receiver&) = delete;

    std::string url(const std::string& path = "/hook") const {
        return "http://127.0.0.1:" + std::to_string(acceptor_.local_endpoint().port()) + path;
    }
    /// Requests read so far.
    std::size_t requests() const { return requests_.load(); }
    /// Bytes the scripts wrote so far (what `send` counted).
    std::size_t sent() const { return sent_.load(); }

    /// Writes `bytes` to `s`, counting them; false once the peer is gone.
    bool send(tcp::socket& s, std::string_view bytes) {
        boost::system::error_code ec;
        net::write(s, net::buffer(bytes.data(), bytes.size()), ec);
        if (ec) {
            return false;
        }
        sent_ += bytes.size();
        return true;
    }
    /// Writes `prefix`, then `filler` over and over until `total` bytes or the peer leaves.
    void flood(tcp::socket& s, std::string_view prefix, std::string_view filler,
               std::size_t total = flood_bytes) {
        if (!send(s, prefix)) {
            return;
        }
        std::string block;
        while (block.size() < 64 * 1024) {
            block += filler;
        }
        for (std::size_t n = 0; n < total && !stopping_; n += block.size()) {
            if (!send(s, block)) {
                return;
            }
        }
    }

private:
    void accept_loop() {
        while (!stopping_) {
            auto s = std::make_shared<tcp::socket>(io_);
            boost::system::error_code ec;
            acceptor_.accept(*s, ec);
            if (ec) {
                return;
            }
            std::lock_guard lock(mutex_);
            sockets_.push_back(s);
            threads_.emplace_back([this, s] { serve(*s); });
        }
    }
    void serve(tcp::socket& s) {
        boost::system::error_code ec;
        net::streambuf in;
        for (;;) {
            const auto n = net::read_until(s, in, "\r\n\r\n", ec);
            if (ec) {
                return;
            }
            std::string head(net::buffers_begin(in.data()), net::buffers_begin(in.data()) + n);
            in.consume(n);
            std::size_t length = 0;
            if (const auto at = head.find("Content-Length: "); at != std::string::npos) {
                length = std::stoul(head.substr(at + 16));
            }
            if (in.size() < length) {
                net::read(s, in, net::transfer_exactly(length - in.size()), ec);
                if (ec) {
                    return;
                }
            }
            in.consume(length);
            ++requests_;
            answer_(s, head);
            if (stopping_) {
                return;
            }
        }
    }

    script answer_;
    net::io_context io_;
    tcp::acceptor acceptor_;
    std::atomic<bool> stopping_{false};
    std::atomic<std::size_t> requests_{0};
    std::atomic<std::size_t> sent_{0};
    std::mutex mutex_;
    std::vector<std::shared_ptr<tcp::socket>> sockets_;
    std::vector<std::thread> threads_;
    std::thread accept_thread_;
};

// A line of /proc/<pid>/status in bytes: "VmRSS" (resident now) or "VmHWM" (the peak of
// resident memory so far: a buffer freed before the test looks still counts).
std::size_t memory_bytes(pid_t pid, std::string_view what) {
    std::ifstream in("/proc/" + std::to_string(pid) + "/status");
    std::string line;
    while (std::getline(in, line)) {
        if (line.starts_with(std::string(what) + ":")) {
            return std::stoul(line.substr(what.size() + 1)) * 1024;
        }
    }
    BOOST_FAIL("no " << what << " for " << pid);
    return 0;
}
std::size_t resident_bytes(pid_t pid) {
    return memory_bytes(pid, "VmRSS");
}
std::size_t peak_bytes(pid_t pid) {
    return memory_bytes(pid, "VmHWM");
}

// Strict UTF-8 (Unicode Table 3-7), written here independently of the service's.
bool valid_utf8(std::string_view s) {
    std::size_t i = 0;
    while (i < s.size()) {
        const auto b = [&](std::size_t k) { return static_cast<unsigned char>(s[i + k]); };
        std::size_t n = 0;
        unsigned lo = 0x80, hi = 0xbf;
        if (b(0) < 0x80) {
            n = 1;
        } else if (b(0) >= 0xc2 && b(0) <= 0xdf) {
            n = 2;
        } else if (b(0) >= 0xe0 && b(0) <= 0xef) {
            n = 3;
            lo = b(0) == 0xe0 ? 0xa0 : 0x80;
            hi = b(0) == 0xed ? 0x9f : 0xbf;
        } else if (b(0) >= 0xf0 && b(0) <= 0xf4) {
            n = 4;
            lo = b(0) == 0xf0 ? 0x90 : 0x80;
            hi = b(0) == 0xf4 ? 0x8f : 0xbf;
        } else {
            return false;
        }
        if (i + n > s.size()) {
            return false;
        }
        for (std::size_t k = 1; k < n; ++k) {
            const unsigned lo_k = k == 1 ? lo : 0x80, hi_k = k == 1 ? hi : 0xbf;
            if (b(k) < lo_k || b(k) > hi_k) {
                return false;
            }
        }
        i += n;
    }
    return true;
}

// A node with its worker on a SQLite file of its own; callbacks time out after `timeout`.
struct node_fixture {
    explicit node_fixture(std::vector<std::string> args = {})
        : dir("timewheeld-hostile")
        , node({.store = ts::sqlite_store_url(dir), .args = with_defaults(std::move(args))}) {}

    static std::vector<std::string> with_defaults(std::vector<std::string> args) {
        args.insert(args.begin(), {"--callback-timeout-ms", "20000"});
        return args;
    }

    /// Submits task `id` calling `url` now, with `attempts` attempts 50 ms apart.
    void submit(const std::string& id, const std::string& url, int attempts = 1) {
        const auto r =
            node.post("/v1/tasks", ts::task_json(id, url, 0,
                                                 R"({"attempts": )" + std::to_string(attempts) +
                                                     R"(, "base_ms": 50, "cap_ms": 50})"));
        BOOST_TEST_REQUIRE(r.status == 201u, r);
    }
    /// Waits for `id` to reach `state` (a generous bound), and returns the task's JSON.
    boost::json::object wait_for(const std::string& id, const std::string& state) {
        BOOST_TEST(ts::eventually([&] { return node.state(id) == state; }, 60s), node.log());
        return node.task(id);
    }
    /// /healthz answers 200.
    void check_healthy() {
        const auto r = node.get("/healthz");
        BOOST_TEST(r.status == 200u, r);
    }
    pid_t pid() { return node.process().pid(); }

    ts::temp_dir dir;
    ts::service_node node;
};

std::string last_error(const boost::json::object& task) {
    const auto& e = task.at("last_error");
    return e.is_string() ? std::string(e.as_string()) : std::string("(null)");
}

} // namespace

BOOST_AUTO_TEST_CASE(endless_header_lines) {
    node_fixture f;
    raw_receiver r([&](tcp::socket& s, const std::string&) {
        r.flood(s, "HTTP/1.1 200 OK\r\n",
                "X-Flood: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\r\n");
    });
    const auto before = resident_bytes(f.pid());
    f.submit("headers-1", r.url());
    const auto task = f.wait_for("headers-1", "dead");
    const auto after = peak_bytes(f.pid());
    BOOST_TEST(last_error(task).find("header") != std::string::npos, last_error(task));
    BOOST_TEST(after < before + 64 * mib, "grew from " << before << " to " << after);
    f.check_healthy();
}

BOOST_AUTO_TEST_CASE(endless_chunk_extension) {
    node_fixture f;
    raw_receiver r([&](tcp::socket& s, const std::string&) {
        r.flood(s, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1;ext=", "a");
    });
    const auto before = resident_bytes(f.pid());
    f.submit("chunk-1", r.url());
    // A 200 whose body never parses is not a success: the answer was not whole.
    const auto task = f.wait_for("chunk-1", "dead");
    const auto after = peak_bytes(f.pid());
    BOOST_TEST(last_error(task).find("broken") != std::string::npos, last_error(task));
    BOOST_TEST(after < before + 64 * mib,
               "grew from " << before << " to " << after << " (receiver sent " << r.sent() << ")");
    f.check_healthy();
}

BOOST_AUTO_TEST_CASE(endless_trailers) {
    node_fixture f;
    raw_receiver r([&](tcp::socket& s, const std::string&) {
        r.flood(s, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1\r\na\r\n0\r\n",
                "X-Trailer: bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb\r\n");
    });
    const auto before = resident_bytes(f.pid());
    f.submit("trailer-1", r.url());
    const auto task = f.wait_for("trailer-1", "dead");
    const auto after = peak_bytes(f.pid());
    BOOST_TEST(last_error(task).find("broken") != std::string::npos, last_error(task));
    BOOST_TEST(after < before + 64 * mib, "grew from " << before << " to " << after);
    f.check_healthy();
}

// A receiver that drips its answer a line at a time, never finishing: the call's timeout
// ends it, whatever keeps arriving.
BOOST_AUTO_TEST_CASE(slow_drip) {
    node_fixture f({"--callback-timeout-ms", "1000"});
    raw_receiver r([&](tcp::socket& s, const std::string&) {
        if (!r.send(s, "HTTP/1.1 200 OK\r\n")) {
            return;
        }
        for (int i = 0; i < 600 && r.send(s, "X: y\r\n"); ++i) {
            std::this_thread::sleep_for(50ms);
        }
    });
    f.submit("drip-1", r.url());
    const auto task = f.wait_for("drip-1", "dead");
    BOOST_TEST(last_error(task).find("no answer within 1000 ms") != std::string::npos,
               last_error(task));
    f.check_healthy();
}

BOOST_AUTO_TEST_CASE(huge_body) {
    node_fixture f;
    raw_receiver r([&](tcp::socket& s, const std::string&) {
        r.flood(s, "HTTP/1.1 200 OK\r\nContent-Length: " + std::to_string(flood_bytes) + "\r\n\r\n",
                "z");
    });
    const auto before = resident_bytes(f.pid());
    f.submit("body-1", r.url());
    // The status is what the receiver meant; its body is not read past 64 KiB.
    const auto task = f.wait_for("body-1", "finished");
    const auto after = peak_bytes(f.pid());
    BOOST_TEST(task.at("attempts").as_int64() == 1);
    BOOST_TEST(after < before + 64 * mib, "grew from " << before << " to " << after);
    f.check_healthy();
}

// Retry-After far away: the retry waits (about 68 years, the clamp) instead of overflowing
// into "now". With two attempts, the first leaves the task delayed far in the future.
BOOST_AUTO_TEST_CASE(retry_after_year_9999_and_huge_seconds) {
    node_fixture f;
    for (const std::string value : {"Fri, 31 Dec 9999 23:59:59 GMT", "99999999999999999999"}) {
        BOOST_TEST_CONTEXT("Retry-After: " << value) {
            raw_receiver r([&](tcp::socket& s, const std::string&) {
                r.send(s, "HTTP/1.1 503 Service Unavailable\r\nRetry-After: " + value +
                              "\r\nContent-Length: 0\r\n\r\n");
            });
            const std::string id = value.size() > 20 ? "after-date" : "after-seconds";
            f.submit(id, r.url(), 2);
            BOOST_TEST_REQUIRE(ts::eventually([&] {
                const auto t = f.node.task(id);
                return t.at("attempts").as_int64() >= 1 && t.at("state").as_string() != "running";
            }));
            const auto task = f.node.task(id);
            BOOST_TEST(task.at("state").as_string() == "delayed", task);
            BOOST_TEST(task.at("attempts").as_int64() == 1, task);
            const auto due = ts::epoch_ms(task.at("due_at").as_string());
            // At least 60 years from now; at most 69 (2^31 s is 68 years and a bit).
            constexpr std::int64_t year_ms = 365LL * 24 * 3600 * 1000;
            BOOST_TEST(due > ts::now_ms() + 60 * year_ms, task);
            BOOST_TEST(due < ts::now_ms() + 69 * year_ms, task);
            BOOST_TEST(r.requests() == 1u);
            BOOST_TEST(last_error(task).find("503") != std::string::npos, last_error(task));
        }
    }
    f.check_healthy();
}

BOOST_AUTO_TEST_CASE(continue_then_ok) {
    node_fixture f;
    raw_receiver r([&](tcp::socket& s, const std::string&) {
        r.send(s, "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\n"
                  "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok");
    });
    f.submit("continue-1", r.url());
    const auto task = f.wait_for("continue-1", "finished");
    BOOST_TEST(task.at("attempts").as_int64() == 1, task);
    BOOST_TEST(r.requests() == 1u);
    f.check_healthy();
}

BOOST_AUTO_TEST_CASE(endless_interim_answers) {
    node_fixture f;
    raw_receiver r([&](tcp::socket& s, const std::string&) {
        r.flood(s, "", "HTTP/1.1 100 Continue\r\n\r\n", 64 * mib);
    });
    const auto before = resident_bytes(f.pid());
    f.submit("interim-1", r.url());
    const auto task = f.wait_for("interim-1", "dead");
    BOOST_TEST(last_error(task).find("interim") != std::string::npos, last_error(task));
    BOOST_TEST(peak_bytes(f.pid()) < before + 64 * mib);
    f.check_healthy();
}

// A redirect's Location quoted in the error, holding bytes that are not UTF-8, and one long
// enough that the error is cut: every answer of the API stays strict JSON in valid UTF-8.
BOOST_AUTO_TEST_CASE(invalid_utf8_in_errors) {
    node_fixture f;
    raw_receiver r([&](tcp::socket& s, const std::string& head) {
        // The path says how many 'a' to put before the 3-byte characters: the cuts then fall
        // at each position within a character.
        const auto path = head.substr(head.find(' ') + 1);
        const std::size_t pad = path.starts_with("/pad/") ? std::stoul(path.substr(5)) : 0;
        std::string location = "http://elsewhere.example/\xff\xfe\xc3(\xe2\x82";
        location += std::string(pad, 'a');
        for (int i = 0; i < 700; ++i) {
            location += "\xe2\x82\xac"; // €
        }
        r.send(s, "HTTP/1.1 302 Found\r\nLocation: " + location + "\r\nContent-Length: 0\r\n\r\n");
    });
    for (int pad = 0; pad < 3; ++pad) {
        const std::string id = "utf8-" + std::to_string(pad);
        f.submit(id, r.url("/pad/" + std::to_string(pad)));
        f.wait_for(id, "dead");
        const auto got = f.node.get("/v1/tasks/" + id);
        BOOST_TEST_REQUIRE(got.status == 200u, got);
        BOOST_TEST(valid_utf8(got.body), got.body);
        boost::system::error_code ec;
        const auto v = boost::json::parse(got.body, ec);
        BOOST_TEST_REQUIRE(!ec, ec.message());
        const auto error = last_error(v.as_object());
        BOOST_TEST(error.find("redirect") != std::string::npos, error);
        BOOST_TEST(error.find("\xef\xbf\xbd") != std::string::npos, error); // U+FFFD
        const auto& log = v.at("log").as_array();
        BOOST_TEST_REQUIRE(!log.empty());
        BOOST_TEST(valid_utf8(log.back().at("error").as_string()));
    }
    const auto dead = f.node.get("/v1/dead");
    BOOST_TEST_REQUIRE(dead.status == 200u, dead);
    BOOST_TEST(valid_utf8(dead.body));
    f.check_healthy();
}

// secret_headers go to the receiver like headers, but the API shows "***".
BOOST_AUTO_TEST_CASE(secret_headers_reach_the_receiver_only) {
    node_fixture f;
    cs::sink sink;
    const auto created = f.node.post(
        "/v1/tasks", R"({"id": "secret-1", "delay_ms": 0, "callback": {"url": )" +
                         ts::json_quote(sink.url()) +
                         R"(, "secret_headers": {"Authorization": "Bearer hunter2"}}})");
    BOOST_TEST_REQUIRE(created.status == 201u, created);
    const auto task = f.wait_for("secret-1", "finished");
    const auto requests = sink.requests();
    BOOST_TEST_REQUIRE(requests.size() == 1u);
    BOOST_TEST(requests[0].header("Authorization").value_or("") == "Bearer hunter2");
    BOOST_TEST(f.node.get("/v1/tasks/secret-1").body.find("hunter2") == std::string::npos);
    BOOST_TEST(task.at("callback").at("secret_headers").at("Authorization").as_string() == "***");
}
