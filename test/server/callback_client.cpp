// The callback client over real HTTP on 127.0.0.1, against the recording sink
// (support/sink.hpp): every verdict, Retry-After, the headers and the signature, keep-alive
// reuse, the concurrency cap, the rate limit and the 429 back-off, both timeouts,
// cancellation and close(), the SSRF rules (refused before any connection), and client::call()
// inside a coroutine with its deadline on the timing wheel.
#include <timewheeld/callback/client.hpp>

#include <timewheeld/callback/signature.hpp>

#define BOOST_TEST_MODULE server_callback_client
#include <boost/test/unit_test.hpp>

#include <test/server/support/signature_check.hpp>
#include <test/server/support/sink.hpp>
#include <test/support/watchdog.hpp>

#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <optional>

namespace net = boost::asio;
using namespace timewheeld::callback;
using boost::system::error_code;
using timewheel::test::recorded_request;
using timewheel::test::reply;
using timewheel::test::sink;
namespace ts = timewheel::test;

namespace {

client_options loopback_options() {
    client_options o;
    o.policy.allow_loopback = true;
    o.total_timeout = std::chrono::seconds(20);
    return o;
}

call_request request_to(const std::string& url, std::string task = "task-1",
                        std::uint32_t attempt = 1) {
    call_request r;
    r.spec.url = url;
    r.task_id = std::move(task);
    r.attempt = attempt;
    return r;
}

struct answer {
    error_code ec;
    call_result result;
};

// One call, run to its end on `io`.
answer call(net::io_context& io, client& c, call_request r) {
    std::optional<answer> out;
    c.async_call(std::move(r), [&](error_code ec, call_result res) { out = answer{ec, res}; });
    io.restart();
    timewheel::test::run(io);
    BOOST_REQUIRE(out);
    return *out;
}

// Runs `io` until `done()` holds (polling every 2 ms), for tests that act mid-call. A poll
// already queued when it returns finds `alive` false and touches nothing else.
template <class Pred>
void run_until(net::io_context& io, Pred done) {
    auto alive = std::make_shared<bool>(true);
    auto timer = std::make_shared<net::steady_timer>(io);
    std::function<void()> poll = [&, alive, timer] {
        if (done())
            return;
        timer->expires_after(std::chrono::milliseconds(2));
        timer->async_wait([&poll, alive](error_code ec) {
            if (*alive && !ec)
                poll();
        });
    };
    poll();
    io.restart();
    auto limit = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (!done() && std::chrono::steady_clock::now() < limit && io.run_one() > 0) {
    }
    *alive = false;
    timer->cancel();
    BOOST_REQUIRE_MESSAGE(done(), "the condition awaited did not come within 30 s");
}

reply status(unsigned s, std::vector<std::pair<std::string, std::string>> headers = {}) {
    reply r;
    r.status = s;
    r.headers = std::move(headers);
    return r;
}

} // namespace

BOOST_AUTO_TEST_CASE(verdict_of_every_status) {
    sink s;
    net::io_context io;
    client c(io.get_executor(), loopback_options());
    struct row {
        unsigned status;
        verdict expected;
    };
    for (auto [st, expected] :
         {row{200, verdict::success}, row{201, verdict::success}, row{204, verdict::success},
          row{202, verdict::accepted}, row{408, verdict::retry}, row{429, verdict::retry},
          row{500, verdict::retry}, row{502, verdict::retry}, row{503, verdict::retry},
          row{599, verdict::retry}, row{400, verdict::fail}, row{401, verdict::fail},
          row{404, verdict::fail}, row{410, verdict::fail}, row{422, verdict::fail}}) {
        s.respond([st = st](const recorded_request&) { return status(st); });
        // A fresh origin each time: 429 makes the client back off its origin.
        client fresh(io.get_executor(), loopback_options());
        auto a = call(io, fresh, request_to(s.url()));
        BOOST_TEST(a.result.status == st);
        BOOST_TEST((a.result.verdict == expected), "status " << st);
        BOOST_TEST(!a.ec, "status " << st << ": " << a.ec.message());
        BOOST_TEST(a.result.error.empty() ==
                       (expected == verdict::success || expected == verdict::accepted),
                   "status " << st);
        BOOST_TEST(a.result.latency.count() > 0);
    }
    BOOST_TEST(s.requests().size() == 15u);
}

BOOST_AUTO_TEST_CASE(retry_after_both_forms) {
    sink s;
    net::io_context io;
    client_options o = loopback_options();
    o.backoff_after_429 = std::chrono::milliseconds(0);
    client c(io.get_executor(), o);
    s.respond([](const recorded_request&) { return status(503, {{"Retry-After", "7"}}); });
    auto a = call(io, c, request_to(s.url()));
    BOOST_TEST((a.result.verdict == verdict::retry));
    BOOST_REQUIRE(a.result.retry_after);
    BOOST_TEST(a.result.retry_after->count() == 7);

    // An HTTP-date an hour ahead (a few seconds of slack for a slow run).
    auto later = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now() +
                                                      std::chrono::hours(1));
    char date[64];
    std::tm tm{};
    gmtime_r(&later, &tm);
    std::strftime(date, sizeof date, "%a, %d %b %Y %H:%M:%S GMT", &tm);
    s.respond([&](const recorded_request&) { return status(429, {{"Retry-After", date}}); });
    a = call(io, c, request_to(s.url()));
    BOOST_TEST((a.result.verdict == verdict::retry));
    BOOST_REQUIRE(a.result.retry_after);
    BOOST_TEST(a.result.retry_after->count() <= 3600);
    BOOST_TEST(a.result.retry_after->count() >= 3500);

    s.respond([](const recorded_request&) { return status(500); });
    a = call(io, c, request_to(s.url()));
    BOOST_TEST(!a.result.retry_after);
}

BOOST_AUTO_TEST_CASE(headers_body_and_signature) {
    sink s;
    net::io_context io;
    client_options o = loopback_options();
    o.signing_secrets = {"shared-secret"};
    client c(io.get_executor(), o);
    auto r = request_to(s.url("/hook?x=1"), "task-42", 3);
    r.spec.method = "PUT";
    r.spec.body = R"({"hello":"world"})";
    r.spec.headers = {{"Content-Type", "application/json"}, {"X-Custom", "yes"}};
    auto a = call(io, c, r);
    BOOST_TEST((a.result.verdict == verdict::success));
    auto got = s.requests();
    BOOST_REQUIRE(got.size() == 1u);
    const auto& q = got[0];
    BOOST_TEST(q.method == "PUT");
    BOOST_TEST(q.target == "/hook?x=1");
    BOOST_TEST(q.body == r.spec.body);
    BOOST_TEST(q.header("Idempotency-Key").value_or("") == "task-42");
    BOOST_TEST(q.header("Timewheel-Attempt").value_or("") == "3");
    BOOST_TEST(q.header("Content-Type").value_or("") == "application/json");
    BOOST_TEST(q.header("X-Custom").value_or("") == "yes");
    BOOST_TEST(q.header("Host").value_or("") == "127.0.0.1:" + std::to_string(s.port()));
    auto sig = q.header("Timewheel-Signature");
    BOOST_REQUIRE(sig);
    const auto now = std::chrono::system_clock::now();
    const signed_request signed_for{"PUT", r.spec.url, "task-42", 3, q.body};
    BOOST_TEST(verify_signature(*sig, "shared-secret", signed_for, now));
    BOOST_TEST(!verify_signature(*sig, "wrong-secret", signed_for, now));
    BOOST_TEST(ts::signature_matches(q, "shared-secret", r.spec.url));
    // v2 only by default: no v1 entry a replayed body could be checked against.
    BOOST_TEST(sig->find("v1=") == std::string::npos, *sig);

    // No secret, no signature.
    client plain(io.get_executor(), loopback_options());
    call(io, plain, request_to(s.url()));
    BOOST_TEST(!s.requests().back().header("Timewheel-Signature"));
}

// What a v2 signature binds: a signature made for one URL, task, attempt or method does not
// verify for another (an API client cannot have the service sign a body for one receiver
// and replay it to another, or as another task).
BOOST_AUTO_TEST_CASE(a_signature_is_for_one_url_task_and_attempt) {
    sink s;
    net::io_context io;
    client_options o = loopback_options();
    o.signing_secrets = {"k"};
    client c(io.get_executor(), o);
    auto r = request_to(s.url("/a"), "task-1", 2);
    r.spec.body = "same body";
    call(io, c, r);
    const auto q = s.requests().back();
    const auto sig = q.header("Timewheel-Signature").value_or("");
    const auto now = std::chrono::system_clock::now();
    BOOST_TEST(verify_signature(sig, "k", {"POST", s.url("/a"), "task-1", 2, "same body"}, now));
    BOOST_TEST(!verify_signature(sig, "k", {"POST", s.url("/b"), "task-1", 2, "same body"}, now));
    BOOST_TEST(!verify_signature(sig, "k", {"POST", s.url("/a"), "task-2", 2, "same body"}, now));
    BOOST_TEST(!verify_signature(sig, "k", {"POST", s.url("/a"), "task-1", 3, "same body"}, now));
    BOOST_TEST(!verify_signature(sig, "k", {"PUT", s.url("/a"), "task-1", 2, "same body"}, now));
    BOOST_TEST(!verify_signature(sig, "k", {"POST", s.url("/a"), "task-1", 2, "other"}, now));
    BOOST_TEST(!ts::signature_matches(q, "k", s.url("/b")));
}

// Rotation: with two secrets, a receiver holding either verifies; with the v1 switch, the
// v1 entries come too (one per secret), over "<t>.<body>".
BOOST_AUTO_TEST_CASE(two_secrets_both_verify_and_v1_on_request) {
    sink s;
    net::io_context io;
    client_options o = loopback_options();
    o.signing_secrets = {"new-secret", "old-secret"};
    client c(io.get_executor(), o);
    auto r = request_to(s.url(), "rot-1", 1);
    r.spec.body = "x";
    call(io, c, r);
    auto q = s.requests().back();
    auto parts = ts::split_signature(q.header("Timewheel-Signature").value_or(""));
    BOOST_REQUIRE(parts);
    BOOST_TEST(parts->v2.size() == 2u);
    BOOST_TEST(parts->v1.empty());
    BOOST_TEST(ts::signature_matches(q, "new-secret", s.url()));
    BOOST_TEST(ts::signature_matches(q, "old-secret", s.url()));
    BOOST_TEST(!ts::signature_matches(q, "third-secret", s.url()));

    o.signature_v1 = true;
    client legacy(io.get_executor(), o);
    call(io, legacy, r);
    q = s.requests().back();
    parts = ts::split_signature(q.header("Timewheel-Signature").value_or(""));
    BOOST_REQUIRE(parts);
    BOOST_TEST(parts->v2.size() == 2u);
    BOOST_REQUIRE(parts->v1.size() == 2u);
    BOOST_TEST(parts->v1[1] == ts::hmac_sha256_hex("old-secret", parts->t + ".x"));
    BOOST_TEST(ts::signature_matches(q, "new-secret", s.url()));
}

// A destination host with secrets of its own is signed with those, and only those; other
// hosts keep the default secrets.
BOOST_AUTO_TEST_CASE(a_host_has_its_own_secret) {
    sink s;
    net::io_context io;
    client_options o = loopback_options();
    o.signing_secrets = {"default-secret"};
    o.host_signing_secrets["localhost"] = {"localhost-secret"};
    client c(io.get_executor(), o);
    const std::string by_name = "http://localhost:" + std::to_string(s.port()) + "/hook";
    auto a = call(io, c, request_to(by_name, "h-1"));
    BOOST_TEST_REQUIRE(s.requests().size() == 1u, a.result.error);
    auto q = s.requests().back();
    BOOST_TEST(ts::signature_matches(q, "localhost-secret", by_name));
    BOOST_TEST(!ts::signature_matches(q, "default-secret", by_name));
    call(io, c, request_to(s.url(), "h-2"));
    q = s.requests().back();
    BOOST_TEST(ts::signature_matches(q, "default-secret", s.url()));
    BOOST_TEST(!ts::signature_matches(q, "localhost-secret", s.url()));
}

BOOST_AUTO_TEST_CASE(keep_alive_reuses_one_connection) {
    sink s;
    net::io_context io;
    client c(io.get_executor(), loopback_options());
    for (int i = 0; i < 5; ++i)
        BOOST_TEST((call(io, c, request_to(s.url())).result.verdict == verdict::success));
    BOOST_TEST(s.connections() == 1u);
    BOOST_TEST(c.stats().connects == 1u);
    BOOST_TEST(c.stats().reuses == 4u);
    for (const auto& q : s.requests())
        BOOST_TEST(q.connection == 1u);
}

BOOST_AUTO_TEST_CASE(a_pooled_connection_the_host_closed_is_replaced) {
    sink s;
    net::io_context io;
    client c(io.get_executor(), loopback_options());
    s.respond([](const recorded_request&) {
        reply r;
        r.close_after = true;
        return r;
    });
    for (int i = 0; i < 3; ++i) {
        auto a = call(io, c, request_to(s.url()));
        BOOST_TEST((a.result.verdict == verdict::success), a.result.error);
    }
    // Each call found the pooled connection closed and sent its request on a fresh one.
    BOOST_TEST(s.requests().size() == 3u);
    BOOST_TEST(s.connections() == 3u);
    BOOST_TEST(c.stats().connects == 3u);
}

BOOST_AUTO_TEST_CASE(concurrency_cap_per_host_holds) {
    sink s;
    net::io_context io;
    client_options o = loopback_options();
    o.max_connections_per_host = 2;
    client c(io.get_executor(), o);
    // Each answer waits until two requests are held at once: a third would be seen.
    s.respond([](const recorded_request&) {
        reply r;
        r.wait_for_concurrent = 2;
        r.delay = std::chrono::milliseconds(20);
        return r;
    });
    int done = 0;
    for (int i = 0; i < 8; ++i)
        c.async_call(request_to(s.url(), "t" + std::to_string(i)),
                     [&](error_code ec, call_result r) {
                         BOOST_TEST(!ec);
                         BOOST_TEST((r.verdict == verdict::success));
                         ++done;
                     });
    timewheel::test::run(io);
    BOOST_TEST(done == 8);
    BOOST_TEST(s.requests().size() == 8u);
    BOOST_TEST(s.max_concurrent() == 2u);
    BOOST_TEST(s.connections() <= 2u);
}

BOOST_AUTO_TEST_CASE(reset_and_refused_connections_retry) {
    sink s;
    net::io_context io;
    client c(io.get_executor(), loopback_options());
    s.respond([](const recorded_request&) {
        reply r;
        r.act = reply::action::reset;
        return r;
    });
    auto a = call(io, c, request_to(s.url()));
    BOOST_TEST(a.ec);
    BOOST_TEST(a.result.status == 0u);
    BOOST_TEST((a.result.verdict == verdict::retry));
    BOOST_TEST(!a.result.error.empty());

    // A port nobody listens on: the one of an acceptor just closed.
    unsigned short port;
    {
        net::ip::tcp::acceptor acc(io, {net::ip::make_address("127.0.0.1"), 0});
        port = acc.local_endpoint().port();
    }
    a = call(io, c, request_to("http://127.0.0.1:" + std::to_string(port) + "/"));
    BOOST_TEST((a.ec == net::error::connection_refused));
    BOOST_TEST((a.result.verdict == verdict::retry));
}

BOOST_AUTO_TEST_CASE(total_timeout_against_a_sink_that_never_answers) {
    sink s;
    s.respond([](const recorded_request&) {
        reply r;
        r.act = reply::action::hang;
        return r;
    });
    net::io_context io;
    client_options o = loopback_options();
    o.total_timeout = std::chrono::milliseconds(300);
    client c(io.get_executor(), o);
    auto a = call(io, c, request_to(s.url()));
    BOOST_TEST((a.ec == error::timeout));
    BOOST_TEST((a.result.verdict == verdict::retry));
    BOOST_TEST(a.result.error.find("waiting for the answer") != std::string::npos);
    BOOST_TEST(s.requests().size() == 1u);

    // The callback's own timeout replaces the client's.
    client patient(io.get_executor(), loopback_options());
    auto r = request_to(s.url());
    r.spec.timeout = std::chrono::milliseconds(200);
    a = call(io, patient, r);
    BOOST_TEST((a.ec == error::timeout));
    BOOST_TEST(a.result.error.find("200 ms") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(connect_timeout_against_a_full_backlog) {
    // A listener that never accepts, with its backlog filled: the kernel drops further SYNs,
    // so a connection attempt hangs until the client's connect timeout.
    net::io_context io;
    net::ip::tcp::acceptor acc(io);
    acc.open(net::ip::tcp::v4());
    acc.bind({net::ip::make_address("127.0.0.1"), 0});
    acc.listen(0);
    // Plain non-blocking connect(2): Asio's synchronous connect would wait for each.
    std::vector<int> fillers;
    sockaddr_in to{};
    to.sin_family = AF_INET;
    to.sin_port = htons(acc.local_endpoint().port());
    to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    for (int i = 0; i < 4; ++i) {
        int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
        BOOST_REQUIRE(fd >= 0);
        ::connect(fd, reinterpret_cast<const sockaddr*>(&to), sizeof to); // in progress
        fillers.push_back(fd);
    }
    client_options o = loopback_options();
    o.connect_timeout = std::chrono::milliseconds(300);
    client c(io.get_executor(), o);
    auto a = call(
        io, c, request_to("http://127.0.0.1:" + std::to_string(acc.local_endpoint().port()) + "/"));
    BOOST_TEST((a.ec == error::connect_timeout), a.ec.message());
    BOOST_TEST((a.result.verdict == verdict::retry));
    BOOST_TEST(c.stats().connects == 1u);
    for (int fd : fillers)
        ::close(fd);
}

BOOST_AUTO_TEST_CASE(redirects_are_not_followed) {
    sink s;
    net::io_context io;
    client c(io.get_executor(), loopback_options());
    for (unsigned st : {301u, 302u, 303u, 307u, 308u}) {
        s.respond([&, st](const recorded_request&) {
            return status(st, {{"Location", s.url("/elsewhere")}});
        });
        auto a = call(io, c, request_to(s.url("/hook")));
        BOOST_TEST((a.ec == error::redirect_refused));
        BOOST_TEST((a.result.verdict == verdict::fail));
        BOOST_TEST(a.result.status == st);
        BOOST_TEST(a.result.error.find("/elsewhere") != std::string::npos);
    }
    for (const auto& q : s.requests())
        BOOST_TEST(q.target == "/hook");
    BOOST_TEST(s.requests().size() == 5u);
}

BOOST_AUTO_TEST_CASE(loopback_refused_by_default_allowed_when_configured) {
    sink s;
    net::io_context io;
    client strict(io.get_executor(), client_options{});
    auto a = call(io, strict, request_to(s.url()));
    BOOST_TEST((a.ec == error::address_refused));
    BOOST_TEST((a.result.verdict == verdict::fail));
    BOOST_TEST(a.result.error.find("127.0.0.1 (loopback)") != std::string::npos);
    BOOST_TEST(strict.stats().connects == 0u);
    BOOST_TEST(s.connections() == 0u);

    // The name, not only the literal: "localhost" resolves to loopback addresses.
    a = call(io, strict, request_to("http://localhost:" + std::to_string(s.port()) + "/"));
    BOOST_TEST((a.ec == error::address_refused));
    BOOST_TEST(s.connections() == 0u);

    client allowing(io.get_executor(), loopback_options());
    a = call(io, allowing, request_to(s.url()));
    BOOST_TEST((a.result.verdict == verdict::success));
    BOOST_TEST(s.connections() == 1u);
}

BOOST_AUTO_TEST_CASE(private_link_local_and_metadata_refused_before_any_connect) {
    net::io_context io;
    // Even with loopback allowed, these are refused; the counters prove that no connection
    // was attempted (and the error kind is the policy's, not a network error).
    client c(io.get_executor(), loopback_options());
    for (const char* u : {"http://169.254.169.254/latest/meta-data/", "http://10.0.0.1/",
                          "http://192.168.1.1:8080/", "http://172.16.5.4/", "http://100.64.0.1/",
                          "http://[fe80::1]/", "http://[fd00::1]/",
                          "http://[::ffff:169.254.169.254]/", "http://[::ffff:10.0.0.1]/",
                          "http://0.0.0.0/", "http://224.0.0.1/", "https://169.254.169.254/"}) {
        auto a = call(io, c, request_to(u));
        BOOST_TEST((a.ec == error::address_refused), u << ": " << a.ec.message());
        BOOST_TEST((a.result.verdict == verdict::fail), u);
        BOOST_TEST(a.result.error.find("nothing was sent") != std::string::npos, u);
    }
    BOOST_TEST(c.stats().connects == 0u);
    BOOST_TEST(c.stats().refused == 12u);
}

BOOST_AUTO_TEST_CASE(host_allow_list_and_bad_urls) {
    sink s;
    net::io_context io;
    client_options o = loopback_options();
    o.policy.allowed_hosts = {"localhost"};
    client c(io.get_executor(), o);
    auto a = call(io, c, request_to(s.url()));
    BOOST_TEST((a.ec == error::host_not_allowed));
    BOOST_TEST((a.result.verdict == verdict::fail));
    BOOST_TEST(a.result.error.find("127.0.0.1") != std::string::npos);
    a = call(io, c, request_to("http://localhost:" + std::to_string(s.port()) + "/"));
    BOOST_TEST((a.result.verdict == verdict::success), a.result.error);

    a = call(io, c, request_to("ftp://localhost/"));
    BOOST_TEST((a.ec == error::scheme_not_allowed));
    BOOST_TEST((a.result.verdict == verdict::fail));
    a = call(io, c, request_to("http://localhost/" + std::string(3000, 'a')));
    BOOST_TEST((a.ec == error::url_too_long));
    a = call(io, c, request_to("not a url"));
    BOOST_TEST((a.ec == error::bad_url));
    BOOST_TEST(c.stats().connects == 1u);
}

BOOST_AUTO_TEST_CASE(backs_off_a_host_that_answered_429) {
    sink s;
    net::io_context io;
    client c(io.get_executor(), loopback_options());
    s.respond([](const recorded_request&) { return status(429, {{"Retry-After", "30"}}); });
    auto a = call(io, c, request_to(s.url()));
    BOOST_TEST((a.result.verdict == verdict::retry));
    BOOST_TEST(a.result.status == 429u);
    // The next call to that origin ends at once, without a request.
    a = call(io, c, request_to(s.url()));
    BOOST_TEST((a.ec == error::host_backing_off));
    BOOST_TEST((a.result.verdict == verdict::retry));
    BOOST_REQUIRE(a.result.retry_after);
    BOOST_TEST(a.result.retry_after->count() <= 30);
    BOOST_TEST(a.result.retry_after->count() >= 1);
    BOOST_TEST(s.requests().size() == 1u);
}

BOOST_AUTO_TEST_CASE(rate_limit_per_host) {
    sink s;
    net::io_context io;
    client_options o = loopback_options();
    o.rate_limit_per_host = 0.5; // one call every two seconds
    o.total_timeout = std::chrono::milliseconds(500);
    client c(io.get_executor(), o);
    auto a = call(io, c, request_to(s.url()));
    BOOST_TEST((a.result.verdict == verdict::success));
    // The next turn is two seconds away, past this call's deadline.
    a = call(io, c, request_to(s.url()));
    BOOST_TEST((a.ec == error::rate_limited));
    BOOST_TEST((a.result.verdict == verdict::retry));
    BOOST_REQUIRE(a.result.retry_after);
    BOOST_TEST(a.result.retry_after->count() >= 1);
    BOOST_TEST(s.requests().size() == 1u);
}

BOOST_AUTO_TEST_CASE(per_operation_cancellation) {
    sink s;
    s.respond([](const recorded_request&) {
        reply r;
        r.act = reply::action::hang;
        return r;
    });
    net::io_context io;
    client c(io.get_executor(), loopback_options());
    net::cancellation_signal signal;
    std::optional<answer> out;
    c.async_call(request_to(s.url()),
                 net::bind_cancellation_slot(signal.slot(), [&](error_code ec, call_result r) {
                     out = answer{ec, r};
                 }));
    run_until(io, [&] { return s.requests().size() == 1u; });
    BOOST_TEST(!out);
    signal.emit(net::cancellation_type::terminal);
    io.restart();
    timewheel::test::run(io);
    BOOST_REQUIRE(out);
    BOOST_TEST((out->ec == net::error::operation_aborted));
    BOOST_TEST((out->result.verdict == verdict::retry));
}

BOOST_AUTO_TEST_CASE(close_and_destructor_with_calls_in_flight) {
    sink s;
    s.respond([](const recorded_request&) {
        reply r;
        r.act = reply::action::hang;
        return r;
    });
    net::io_context io;
    client_options o = loopback_options();
    o.max_connections_per_host = 1; // the second call waits for a slot
    auto c = std::make_unique<client>(io.get_executor(), o);
    std::vector<error_code> codes;
    for (int i = 0; i < 2; ++i)
        c->async_call(request_to(s.url()),
                      [&](error_code ec, call_result) { codes.push_back(ec); });
    run_until(io, [&] { return s.requests().size() == 1u; });
    c->close();
    io.restart();
    timewheel::test::run(io);
    BOOST_TEST(codes.size() == 2u);
    for (auto ec : codes)
        BOOST_TEST((ec == error::client_closed));
    // After close(), a new call ends at once.
    codes.clear();
    c->async_call(request_to(s.url()), [&](error_code ec, call_result) { codes.push_back(ec); });
    io.restart();
    timewheel::test::run(io);
    BOOST_TEST(codes.size() == 1u);
    BOOST_TEST((codes.at(0) == error::client_closed));

    // The destructor, with a call in flight: it completes, nothing dangles.
    auto d = std::make_unique<client>(io.get_executor(), loopback_options());
    codes.clear();
    d->async_call(request_to(s.url()), [&](error_code ec, call_result) { codes.push_back(ec); });
    // (the second call above ended while waiting for its slot: it sent nothing)
    run_until(io, [&] { return s.requests().size() == 2u; });
    d.reset();
    io.restart();
    timewheel::test::run(io);
    BOOST_TEST(codes.size() == 1u);
    BOOST_TEST((codes.at(0) == error::client_closed));
}

BOOST_AUTO_TEST_CASE(bad_headers_are_refused_before_anything_is_sent) {
    // parse_callback refuses them; a call_request made by hand must not split the request.
    sink s;
    net::io_context io;
    client c(io.get_executor(), loopback_options());
    auto r = request_to(s.url());
    r.spec.headers = {{"X-Ok", "yes"}, {"X-Split", "a\r\nX-Injected: 1"}};
    auto a = call(io, c, r);
    BOOST_TEST((a.result.verdict == verdict::fail));
    BOOST_TEST((a.ec == error::bad_header));
    BOOST_TEST(a.result.error.find("X-Split") != std::string::npos);
    r.spec.headers = {{"Bad Name", "x"}};
    BOOST_TEST((call(io, c, r).ec == error::bad_header));
    BOOST_TEST(s.requests().empty());
    BOOST_TEST(c.stats().connects == 0u);
}

BOOST_AUTO_TEST_CASE(content_length_as_the_method_wants_it) {
    // The request is written by hand: Content-Length as Beast's prepare_payload() sets it.
    sink s;
    net::io_context io;
    client c(io.get_executor(), loopback_options());
    auto r = request_to(s.url());
    r.spec.method = "GET";
    BOOST_TEST((call(io, c, r).result.verdict == verdict::success));
    r.spec.method = "POST";
    BOOST_TEST((call(io, c, r).result.verdict == verdict::success));
    r.spec.method = "DELETE";
    r.spec.body = "abc";
    BOOST_TEST((call(io, c, r).result.verdict == verdict::success));
    auto got = s.requests();
    BOOST_REQUIRE(got.size() == 3u);
    BOOST_TEST(!got[0].header("Content-Length"));
    BOOST_TEST(got[1].header("Content-Length").value_or("") == "0");
    BOOST_TEST(got[2].header("Content-Length").value_or("") == "3");
    BOOST_TEST(got[2].body == "abc");
    BOOST_TEST(got[2].method == "DELETE");
    BOOST_TEST(got[2].header("User-Agent").value_or("") == "timewheeld");
}

// client::call() runs the call inside the caller's coroutine (what the dispatcher does), with
// its deadline on the io_context's timing wheel: the same answers, the same timeout, the
// same close(), and a kept-alive connection reused.
BOOST_AUTO_TEST_CASE(a_call_inside_a_coroutine_with_its_deadline_on_the_wheel_behaves_alike) {
    sink s;
    net::io_context io;
    client_options o = loopback_options();
    o.deadline_on_wheel = true;
    o.total_timeout = std::chrono::milliseconds(300);
    client c(io.get_executor(), o);
    auto in_coroutine = [&](call_request r) {
        std::optional<answer> out;
        net::co_spawn(
            io,
            [&, r = std::move(r)]() mutable -> net::awaitable<void> {
                auto [ec, res] = co_await c.call(std::move(r));
                out = answer{ec, res};
            },
            net::detached);
        io.restart();
        timewheel::test::run(io);
        BOOST_REQUIRE(out);
        return *out;
    };
    s.respond([](const recorded_request&) { return status(503, {{"Retry-After", "7"}}); });
    auto a = in_coroutine(request_to(s.url()));
    BOOST_TEST(!a.ec);
    BOOST_TEST(a.result.status == 503u);
    BOOST_TEST((a.result.verdict == verdict::retry));
    BOOST_TEST((a.result.retry_after == std::chrono::seconds(7)));
    s.respond([](const recorded_request&) { return status(200); });
    a = in_coroutine(request_to(s.url()));
    BOOST_TEST((a.result.verdict == verdict::success));
    BOOST_TEST(c.stats().connects == 1u);
    BOOST_TEST(c.stats().reuses == 1u);

    // The deadline, from the wheel: no answer within 300 ms.
    s.respond([](const recorded_request&) {
        reply r;
        r.act = reply::action::hang;
        return r;
    });
    const auto started = std::chrono::steady_clock::now();
    a = in_coroutine(request_to(s.url()));
    BOOST_TEST((a.ec == error::timeout));
    BOOST_TEST((a.result.verdict == verdict::retry));
    BOOST_TEST(a.result.error.find("waiting for the answer") != std::string::npos);
    BOOST_TEST((std::chrono::steady_clock::now() - started >= std::chrono::milliseconds(300)));

    // close() ends a call in flight.
    std::optional<answer> out;
    net::co_spawn(
        io,
        [&]() -> net::awaitable<void> {
            auto [ec, res] = co_await c.call(request_to(s.url()));
            out = answer{ec, res};
        },
        net::detached);
    run_until(io, [&] { return s.requests().size() == 4u; });
    c.close();
    io.restart();
    timewheel::test::run(io);
    BOOST_REQUIRE(out);
    BOOST_TEST((out->ec == error::client_closed));
}
