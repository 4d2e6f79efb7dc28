//
// test/server/hostile_clients.cpp
//
// timewheeld against hostile API clients, black-box: a real process on a SQLite store, raw
// bytes on real sockets. Each case is an attack seen or suspected (issue 25): a target
// spelt so that the token check misses it, floods the parser's limits do not cover (chunk
// extensions, trailers, pipelined requests never read), slow and idle connections, the file
// descriptors running out, hostile ids, numbers and times, a web page writing across sites,
// the shutdown timing out under a busy connection, a log whose reader is gone. Each ends
// with a clear 4xx or a bounded failure, memory bounded, and the service answering after.
//
#define BOOST_TEST_MODULE server_hostile_clients
#include <boost/test/unit_test.hpp>

#include <test/server/support/service_node.hpp>

#include <boost/asio/write.hpp>

#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <csignal>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

namespace ts = timewheel::test;
using verb = boost::beast::http::verb;
using namespace std::chrono_literals;

namespace {

// A field of /proc/<pid>/status in kB ("VmHWM": the peak resident memory).
long proc_status_kb(pid_t pid, const std::string& field) {
    std::ifstream in("/proc/" + std::to_string(pid) + "/status");
    std::string line;
    while (std::getline(in, line)) {
        if (line.starts_with(field + ":")) {
            return std::stol(line.substr(field.size() + 1));
        }
    }
    BOOST_FAIL("no " << field << " in /proc/" << pid << "/status");
    return -1;
}

std::size_t open_descriptors(pid_t pid) {
    std::size_t n = 0;
    for ([[maybe_unused]] const auto& e :
         std::filesystem::directory_iterator("/proc/" + std::to_string(pid) + "/fd")) {
        ++n;
    }
    return n;
}

// A timewheeld without a worker on a SQLite file of its own.
struct node {
    explicit node(std::vector<std::string> args = {}, std::vector<std::string> env = {})
        : dir("timewheeld-hostile") {
        args.push_back("--no-worker");
        svc.emplace(ts::service_node::options{
            .store = ts::sqlite_store_url(dir), .args = std::move(args), .env = std::move(env)});
    }
    ts::api_reply request(ts::api_request r) {
        ts::api_connection c(svc->port());
        return c.exchange(r);
    }
    bool healthy() { return svc->get("/healthz").status == 200u; }
    pid_t pid() { return svc->process().pid(); }

    ts::temp_dir dir;
    std::optional<ts::service_node> svc;
};

// A task body whose callback nobody runs (the node has no worker).
std::string task(const std::string& id, const std::string& due = R"("delay_ms": 600000)") {
    return R"({"id": )" + ts::json_quote(id) + ", " + due +
           R"(, "callback": {"url": "http://127.0.0.1:9/never"}})";
}

// Writes `bytes` again and again on `c` until `total` bytes are sent or the server stops
// taking them (it answered and closed). Returns what was sent. Writes time out after 30 s.
std::size_t flood(ts::api_connection& c, const std::string& bytes, std::size_t total) {
    timeval tv{30, 0};
    ::setsockopt(c.socket().native_handle(), SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    std::size_t sent = 0;
    while (sent < total) {
        boost::system::error_code ec;
        sent += boost::asio::write(c.socket(), boost::asio::buffer(bytes), ec);
        if (ec) {
            break;
        }
    }
    return sent;
}

// The port a timewheeld started with "--port 0 --port-file DIR/port" listens on.
std::uint16_t port_of(ts::child_process& p, const std::filesystem::path& dir) {
    for (int i = 0; i < 3000; ++i) {
        std::ifstream in(dir / "port");
        unsigned v = 0;
        if (in >> v && v != 0) {
            return static_cast<std::uint16_t>(v);
        }
        if (!p.running()) {
            BOOST_FAIL("timewheeld exited at start");
        }
        std::this_thread::sleep_for(10ms);
    }
    BOOST_FAIL("timewheeld did not listen within 30 s");
    return 0;
}

} // namespace

BOOST_AUTO_TEST_SUITE(hostile_clients)

// Reproducer 1 of issue 25: a target without its leading '/' was routed as if it had one,
// and the token was never checked.
BOOST_AUTO_TEST_CASE(no_spelling_of_a_target_skips_the_token) {
    node n({}, {"TIMEWHEELD_TOKEN=s3cret"});
    const std::pair<std::string, verb> refused[] = {
        {"Xv1/dead", verb::get},  {"Xv1/tasks", verb::post},
        {"*", verb::get},         {"http://127.0.0.1/v1/dead", verb::get},
        {"v1/dead", verb::get},   {"//v1/dead", verb::get},
        {"/v1//dead", verb::get}, {"/v1/../v1/dead", verb::get},
        {"/V1/dead", verb::get},  {"/v1", verb::get},
        {"/", verb::get},         {"/metrics", verb::get}};
    for (const auto& [target, method] : refused) {
        const auto r = n.request({method, target, method == verb::post ? task("sneaky") : ""});
        BOOST_TEST((r.status == 400u || r.status == 401u), target << " -> " << r);
        BOOST_TEST(r.json().is_object(), target);
    }
    const std::vector<std::pair<std::string, std::string>> token = {
        {"Authorization", "Bearer s3cret"}};
    BOOST_TEST(n.request({verb::get, "/v1/tasks/sneaky", "", token}).status == 404u);
    BOOST_TEST(n.request({verb::get, "/v1/dead", "", token}).status == 200u);
    BOOST_TEST(n.request({verb::get, "Xv1/dead", "", token}).status == 400u);
    BOOST_TEST(n.request({verb::get, "/healthz"}).status == 200u);
    BOOST_TEST(n.request({verb::get, "/readyz"}).status == 200u);
}

// Sends `head`, then `filler` again and again (up to `total` bytes) on a connection to a
// new node; checks that the node stopped taking them before the end, grew by less than
// 64 MiB, and answered others meanwhile.
namespace {
void check_flood_is_cut_short(const std::string& head, char filler, std::size_t total) {
    node n;
    const long before = proc_status_kb(n.pid(), "VmHWM");
    ts::api_connection c(n.svc->port());
    boost::asio::write(c.socket(), boost::asio::buffer(head));
    const std::size_t sent = flood(c, std::string(1 << 20, filler), total);
    BOOST_TEST(n.healthy());
    const long grown_kb = proc_status_kb(n.pid(), "VmHWM") - before;
    BOOST_TEST(grown_kb < 64 * 1024, "grew by " << grown_kb << " kB after " << sent << " bytes");
    BOOST_TEST(sent < total, "all " << total << " bytes were taken");
}
} // namespace

// Reproducer 2 of issue 25: a chunk extension that never ends grew the process by what
// was sent. Now the connection's buffer bounds it: of 2 GiB offered, the service takes a
// few MiB, answers 400 and closes, growing by less than 64 MiB and answering others.
BOOST_AUTO_TEST_CASE(an_endless_chunk_extension_costs_bounded_memory) {
    check_flood_is_cut_short("POST /v1/tasks HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                             "Content-Type: application/json\r\n"
                             "Transfer-Encoding: chunked\r\n\r\n1;",
                             'x', std::size_t(2) << 30);
}

BOOST_AUTO_TEST_CASE(an_endless_trailer_costs_bounded_memory) {
    check_flood_is_cut_short("POST /v1/tasks HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                             "Content-Type: application/json\r\n"
                             "Transfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\nX-Trailer: ",
                             'y', std::size_t(512) << 20);
}

// A client that pipelines requests and never reads the answers: the service writes until
// the socket is full, then gives up at the request timeout; its memory stays bounded.
BOOST_AUTO_TEST_CASE(pipelined_requests_never_read_cost_bounded_memory) {
    node n({"--request-timeout-ms", "1000"});
    const long before = proc_status_kb(n.pid(), "VmHWM");
    ts::api_connection c(n.svc->port());
    std::string batch;
    for (int i = 0; i < 1000; ++i) {
        batch +=
            "GET /v1/tasks/nothing-" + std::to_string(i) + " HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n";
    }
    const std::size_t sent = flood(c, batch, std::size_t(256) << 20);
    const long grown_kb = proc_status_kb(n.pid(), "VmHWM") - before;
    // Under AddressSanitizer freed memory waits in its quarantine (256 MiB by default), so
    // the peak follows the allocations made (one answer per request), not what is kept:
    // the bound is checked by the other builds.
#if !defined(TIMEWHEEL_SANITIZED)
    BOOST_TEST(grown_kb < 64 * 1024, "grew by " << grown_kb << " kB after " << sent << " bytes");
#else
    (void)grown_kb;
    (void)sent;
#endif
    BOOST_TEST(n.healthy());
}

// Headers sent a byte at a time never hold a connection past the idle timeout.
BOOST_AUTO_TEST_CASE(slow_headers_end_at_the_idle_timeout) {
    node n({"--idle-timeout-ms", "500"});
    ts::api_connection c(n.svc->port());
    boost::asio::write(c.socket(), boost::asio::buffer(std::string("GET /healthz HTTP/1.1\r\n")));
    bool closed = false;
    for (int i = 0; i < 200 && !closed; ++i) { // 200 x 50 ms: 20 times the timeout
        boost::system::error_code ec;
        boost::asio::write(c.socket(), boost::asio::buffer(std::string("X")), ec);
        closed = static_cast<bool>(ec);
        std::this_thread::sleep_for(50ms);
    }
    BOOST_TEST(closed, "a header dripping for 10 s kept its connection");
    BOOST_TEST(n.healthy());
}

// Thousands of idle connections: the limit holds the descriptors, and a new client still
// gets in (the connection idle the longest makes room).
BOOST_AUTO_TEST_CASE(idle_connections_cannot_lock_clients_out) {
    node n({"--max-connections", "100"});
    std::vector<std::unique_ptr<ts::api_connection>> idle;
    for (int i = 0; i < 2000; ++i) {
        idle.push_back(std::make_unique<ts::api_connection>(n.svc->port()));
    }
    BOOST_TEST(n.healthy());
    BOOST_TEST(ts::eventually([&] { return open_descriptors(n.pid()) < 100 + 40; }, 10s),
               open_descriptors(n.pid()) << " descriptors open with a limit of 100 connections");
    idle.clear();
    BOOST_TEST(n.healthy());
}

// With few file descriptors, a flood of connections neither spins the accept loop nor
// floods the log, and the service keeps answering.
BOOST_AUTO_TEST_CASE(running_out_of_descriptors_neither_spins_nor_floods_the_log) {
    ts::temp_dir dir("timewheeld-hostile");
    // The shell lowers the limit (soft and hard), then becomes timewheeld.
    ts::child_process p(
        {.argv = {"/bin/sh", "-c", "ulimit -n 64 && exec \"$0\" \"$@\"", TIMEWHEELD_BINARY,
                  "--store", ts::sqlite_store_url(dir), "--no-worker", "--log-level", "warn",
                  "--port", "0", "--port-file", (dir.path() / "port").string()},
         .output = dir.path() / "log"});
    const auto real_port = port_of(p, dir.path());
    std::vector<std::unique_ptr<ts::api_connection>> conns;
    for (int i = 0; i < 200; ++i) {
        conns.push_back(std::make_unique<ts::api_connection>(real_port));
    }
    std::this_thread::sleep_for(2s);
    ts::api_connection fresh(real_port);
    const auto r = fresh.exchange({verb::get, "/healthz"});
    BOOST_TEST(r.status == 200u, r);
    conns.clear();
    const auto log = p.output();
    std::size_t lines = 0;
    for (std::size_t at = 0; (at = log.find("accept_failed", at)) != std::string::npos; ++at) {
        ++lines;
    }
    BOOST_TEST(lines < 10u, lines << " accept_failed lines:\n" << log.substr(0, 2000));
}

// The descriptors run out under a running service (its limit lowered after it chose its
// connection limit): accepting pauses instead of spinning, logs a line now and then, and
// resumes once descriptors are free again. Not under clang's sanitizers: UBSan checks the
// object of a virtual call by probing its memory through a pipe (sanitizer_common's
// IsAccessibleMemoryRange), which fails with every descriptor taken and reports a false
// "invalid vptr". The g++ pass runs it.
#if !(defined(__clang__) && defined(TIMEWHEEL_SANITIZED))
BOOST_AUTO_TEST_CASE(accepting_pauses_while_descriptors_are_exhausted) {
    node n({"--log-level", "warn"});
    const std::string pid = std::to_string(n.pid());
    const std::string lower = "prlimit --pid " + pid +
                              " --nofile=" + std::to_string(open_descriptors(n.pid()) + 4) +
                              ":4096";
    BOOST_TEST_REQUIRE(std::system(lower.c_str()) == 0, lower);
    std::vector<std::unique_ptr<ts::api_connection>> conns;
    for (int i = 0; i < 50; ++i) {
        conns.push_back(std::make_unique<ts::api_connection>(n.svc->port()));
    }
    std::this_thread::sleep_for(2s);
    const std::string raise = "prlimit --pid " + pid + " --nofile=4096:4096";
    BOOST_TEST_REQUIRE(std::system(raise.c_str()) == 0, raise);
    // The connections queued meanwhile are accepted now, and a new one is served.
    BOOST_TEST(n.healthy());
    conns.clear();
    BOOST_TEST(n.healthy());
    const auto log = n.svc->log();
    std::size_t lines = 0;
    for (std::size_t at = 0; (at = log.find("accept_failed", at)) != std::string::npos; ++at) {
        ++lines;
    }
    BOOST_TEST(lines >= 1u, "the descriptors never ran out:\n" << log);
    BOOST_TEST(lines < 5u, lines << " accept_failed lines:\n" << log.substr(0, 2000));
}
#endif

// Ids with encoded bytes: control characters are refused, a '/' stays inside its segment,
// and Location carries the id percent-encoded.
BOOST_AUTO_TEST_CASE(ids_with_encoded_bytes) {
    node n;
    const auto created = n.svc->post("/v1/tasks", task("a/../b c?#%"));
    BOOST_TEST_REQUIRE(created.status == 201u, created);
    const std::string location(created.headers["Location"]);
    BOOST_TEST(location == "/v1/tasks/a%2F..%2Fb%20c%3F%23%25");
    const auto read = n.svc->get(location);
    BOOST_TEST_REQUIRE(read.status == 200u, read);
    BOOST_TEST(read.json().at("id").as_string() == "a/../b c?#%");
    for (const std::string id : {"%00", "x%0d%0aSet-Cookie:%20a", "%zz", "%"}) {
        const auto r = n.svc->get("/v1/tasks/" + id);
        BOOST_TEST(r.status == 400u, id << " -> " << r);
        BOOST_TEST(r.error_field() == "id", id);
    }
    BOOST_TEST(n.svc->get("/v1/tasks/..%2Fdead").status == 404u);
    BOOST_TEST(n.svc->post("/v1/tasks", task(std::string("nul\0id", 6))).status == 400u);
}

// Numbers JSON can write but the API cannot take: 400 naming the field, nothing stored.
BOOST_AUTO_TEST_CASE(numbers_out_of_range) {
    node n;
    const std::pair<std::string, std::string> cases[] = {
        {R"("delay_ms": 1e400)", "delay_ms"},
        {R"("delay_ms": 18446744073709551616)", "delay_ms"},
        {R"("delay_ms": 9223372036854775808)", "delay_ms"},
        {R"("delay_ms": -1)", "delay_ms"},
        {R"("delay_ms": 1.5)", "delay_ms"},
        {R"("delay_ms": 1e3)", "delay_ms"},
        {R"("delay_ms": "1000")", "delay_ms"},
        {R"("delay_ms": 1000, "retry": {"attempts": 4294967297})", "retry.attempts"},
        {R"("delay_ms": 1000, "retry": {"attempts": 0})", "retry.attempts"},
        {R"("delay_ms": 1000, "retry": {"base_ms": -0.0})", "retry.base_ms"},
    };
    int i = 0;
    for (const auto& [due, field] : cases) {
        const std::string id = "n-" + std::to_string(i++);
        const auto r = n.svc->post("/v1/tasks", task(id, due));
        BOOST_TEST(r.status == 400u, due << " -> " << r);
        BOOST_TEST(r.error_field() == field, due << " -> " << r);
        BOOST_TEST(n.svc->get("/v1/tasks/" + id).status == 404u, due);
    }
    // -0 is an integer zero: due now.
    BOOST_TEST(n.svc->post("/v1/tasks", task("zero", R"("delay_ms": -0)")).status == 201u);
}

BOOST_AUTO_TEST_CASE(rfc3339_edge_cases) {
    node n;
    const std::pair<std::string, unsigned> cases[] = {
        {"2030-06-30T23:59:60Z", 201u},      // a leap second, taken as :59
        {"2030-01-01t00:00:00z", 201u},      // RFC 3339 allows lower case
        {"9999-12-31T23:59:59.999Z", 201u},  // the last instant the stores keep
        {"9999-12-31T23:59:59-00:01", 400u}, // past it by the offset
        {"10000-01-01T00:00:00Z", 400u},     // five-digit year
        {"2030-01-01T00:00:00+24:00", 400u}, // offset out of range
        {"2030-01-01T24:00:00Z", 400u},      // no 24:00
        {"2030-02-30T00:00:00Z", 400u},      // no such day
        {"2030-01-01T00:00:00", 400u},       // no offset
        {"2030-01-01T00:00:00.Z", 400u},     // a fraction without digits
        {"1969-12-31T23:59:59Z", 400u},      // before the epoch
        {"2030-01-01T00:00:00Z ", 400u},     // trailing space
    };
    int i = 0;
    for (const auto& [when, status] : cases) {
        const std::string id = "t-" + std::to_string(i++);
        const auto r = n.svc->post("/v1/tasks", task(id, R"("due_at": )" + ts::json_quote(when)));
        BOOST_TEST(r.status == status, when << " -> " << r);
        if (status == 400u) {
            BOOST_TEST(r.error_field() == "due_at", when);
        }
    }
}

// JSON that could hurt the parser or the answers: deep nesting, lone surrogates, invalid
// UTF-8. Each is a 400 on the body; the service answers after.
BOOST_AUTO_TEST_CASE(hostile_json) {
    node n;
    const std::string cases[] = {
        std::string(100000, '['),
        std::string(100000, '[') + std::string(100000, ']'),
        R"({"id": "s", "delay_ms": 1, "callback": {"url": "http://127.0.0.1:9/", "body": "\ud800"}})",
        R"({"id": "s", "delay_ms": 1, "callback": {"url": "http://127.0.0.1:9/", "body": "\udc00x"}})",
        "{\"id\": \"s\xff\xfe\", \"delay_ms\": 1, \"callback\": {\"url\": "
        "\"http://127.0.0.1:9/\"}}",
        "{\"id\": \"s\xc0\xaf\", \"delay_ms\": 1, \"callback\": {\"url\": "
        "\"http://127.0.0.1:9/\"}}",
    };
    for (const auto& body : cases) {
        const auto r = n.svc->post("/v1/tasks", body);
        BOOST_TEST(r.status == 400u, body.substr(0, 80) << " -> " << r);
        BOOST_TEST(r.json().is_object());
    }
    BOOST_TEST(n.svc->get("/v1/tasks/s").status == 404u);
    BOOST_TEST(n.healthy());
}

// Reproducer 5 of issue 25: with no token, any web page could make the user's browser
// submit tasks (a text/plain POST needs no preflight), and DNS rebinding reached the API
// by name.
BOOST_AUTO_TEST_CASE(cross_site_writes_are_refused) {
    node n;
    const auto port = std::to_string(n.svc->port());
    using headers = std::vector<std::pair<std::string, std::string>>;
    struct attempt {
        verb method;
        std::string target;
        headers h;
        unsigned status;
        std::string code;
    };
    const attempt attempts[] = {
        {verb::post, "/v1/tasks", {{"Content-Type", "text/plain"}}, 415u, "unsupported_media_type"},
        {verb::post,
         "/v1/tasks",
         {{"Content-Type", "text/plain"}, {"Origin", "http://evil.example"}},
         403u,
         "forbidden_origin"},
        {verb::post, "/v1/tasks", {{"Origin", "http://evil.example"}}, 403u, "forbidden_origin"},
        {verb::post, "/v1/tasks", {{"Origin", "null"}}, 403u, "forbidden_origin"},
        {verb::post,
         "/v1/tasks",
         {{"Origin", "http://127.0.0.1:" + port + ".evil.example"}},
         403u,
         "forbidden_origin"},
        {verb::post, "/v1/tasks", {{"Sec-Fetch-Site", "cross-site"}}, 403u, "forbidden_origin"},
        {verb::post,
         "/v1/tasks",
         {{"Content-Type", "application/x-www-form-urlencoded"}},
         415u,
         "unsupported_media_type"},
        {verb::post, "/v1/tasks", {{"Host", "evil.example:" + port}}, 421u, "unknown_host"},
        {verb::post, "/v1/tasks", {{"Host", "127.0.0.1.evil.example"}}, 421u, "unknown_host"},
        {verb::get, "/v1/tasks/x-0", {{"Host", "rebound.example"}}, 421u, "unknown_host"},
    };
    int i = 0;
    for (const auto& a : attempts) {
        const std::string id = "x-" + std::to_string(i++);
        const auto r = n.request({a.method, a.target, a.method == verb::post ? task(id) : "", a.h});
        BOOST_TEST(r.status == a.status, a.target << " " << id << " -> " << r);
        BOOST_TEST(r.error_code() == a.code, id);
        BOOST_TEST(n.svc->get("/v1/tasks/" + id).status == 404u, id << " was created");
    }
    // What the service's own pages and plain clients send is accepted.
    BOOST_TEST(n.request({verb::post,
                          "/v1/tasks",
                          task("own"),
                          {{"Host", "127.0.0.1:" + port}, {"Origin", "http://127.0.0.1:" + port}}})
                   .status == 201u);
    BOOST_TEST(n.request({verb::post,
                          "/v1/tasks",
                          task("named"),
                          {{"Host", "localhost:" + port}, {"Sec-Fetch-Site", "same-origin"}}})
                   .status == 201u);
    BOOST_TEST(n.request({verb::delete_, "/v1/tasks/own", "", {{"Origin", "http://evil.example"}}})
                   .status == 403u);
    BOOST_TEST(n.svc->get("/v1/tasks/own").json().at("state").as_string() == "delayed");
}

// A request without Host: HTTP/1.1 requires one (400); an HTTP/1.0 client may omit it.
BOOST_AUTO_TEST_CASE(a_request_without_host) {
    node n;
    for (const auto& [version, status] :
         {std::pair<std::string, unsigned>{"HTTP/1.1", 400u}, {"HTTP/1.0", 200u}}) {
        ts::api_connection c(n.svc->port());
        const std::string head = "GET /healthz " + version + "\r\n\r\n";
        boost::asio::write(c.socket(), boost::asio::buffer(head));
        const auto r = c.receive();
        BOOST_TEST(r.status == status, version << " -> " << r);
        if (status == 400u) {
            BOOST_TEST(r.error_code() == "missing_host");
        }
    }
}

BOOST_AUTO_TEST_CASE(allowed_hosts_and_origins_are_settings) {
    node n({"--allowed-hosts", "api.example", "--allowed-origins", "https://ops.example"});
    BOOST_TEST(n.request({verb::post,
                          "/v1/tasks",
                          task("a"),
                          {{"Host", "API.example"}, {"Origin", "https://ops.example"}}})
                   .status == 201u);
    BOOST_TEST(n.request({verb::get, "/v1/tasks/a", "", {{"Host", "other.example"}}}).status ==
               421u);
}

// When the shutdown timeout fires with a request still being read, the process exits 0
// (under AddressSanitizer: without touching what it has destroyed).
BOOST_AUTO_TEST_CASE(a_shutdown_that_times_out_under_a_busy_connection_exits_cleanly) {
    node n({"--shutdown-timeout-ms", "300"});
    ts::api_connection busy(n.svc->port());
    boost::asio::write(busy.socket(), boost::asio::buffer(std::string(
                                          "POST /v1/tasks HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                                          "Content-Type: application/json\r\n"
                                          "Content-Length: 100\r\n\r\n{\"id\":")));
    BOOST_TEST(n.healthy()); // the busy request's header has been read by now
    n.svc->process().terminate();
    BOOST_TEST_REQUIRE(n.svc->process().wait(60s));
    BOOST_TEST(n.svc->process().exit_status() == 0, n.svc->log());
}

// A log whose reader is gone: writing it must not kill the process (SIGPIPE).
BOOST_AUTO_TEST_CASE(a_closed_log_pipe_does_not_kill_the_process) {
    ts::temp_dir dir("timewheeld-hostile");
    const auto fifo = dir.path() / "log.fifo";
    BOOST_TEST_REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
    const int reader = ::open(fifo.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    BOOST_TEST_REQUIRE(reader >= 0);
    // SIGPIPE as a new process gets it from a shell, not ignored as this test runner has it
    // (an ignored signal stays ignored across exec).
    ts::child_process p(
        {.argv = {"/usr/bin/env", "--default-signal=PIPE", TIMEWHEELD_BINARY, "--store",
                  ts::sqlite_store_url(dir), "--no-worker", "--log-level", "debug", "--port", "0",
                  "--port-file", (dir.path() / "port").string()},
         .output = fifo});
    const auto port = port_of(p, dir.path());
    ::close(reader); // every log line from now on is written to a pipe nobody reads
    for (int i = 0; i < 5; ++i) {
        ts::api_connection c(port);
        BOOST_TEST(c.exchange({verb::get, "/healthz"}).status == 200u);
    }
    BOOST_TEST(p.running());
}

BOOST_AUTO_TEST_SUITE_END()
