// https callbacks against a loopback TLS sink whose self-signed certificate is made at test
// time (support/sink_tls.hpp): trusted through client_options::ca_file it succeeds (and
// keeps its connection alive); with the system's trust store, or for another name, the
// client refuses it (error::tls_verify_failed, verdict fail) and sends no request.
#include <timewheeld/callback/client.hpp>

#define BOOST_TEST_MODULE server_callback_tls
#include <boost/test/unit_test.hpp>

#include <test/server/support/sink.hpp>
#include <test/server/support/sink_tls.hpp>
#include <test/support/watchdog.hpp>

#include <optional>

namespace net = boost::asio;
using namespace timewheeld::callback;
namespace ts = timewheel::test;
using boost::system::error_code;

namespace {

struct answer {
    error_code ec;
    call_result result;
};

answer call(net::io_context& io, client& c, const std::string& url) {
    std::optional<answer> out;
    call_request r;
    r.spec.url = url;
    r.spec.body = "{}";
    r.task_id = "tls-task";
    c.async_call(r, [&](error_code ec, call_result res) { out = answer{ec, res}; });
    io.restart();
    timewheel::test::run(io);
    BOOST_REQUIRE(out);
    return *out;
}

client_options loopback() {
    client_options o;
    o.policy.allow_loopback = true;
    return o;
}

} // namespace

BOOST_AUTO_TEST_CASE(trusted_self_signed_certificate) {
    auto cert = ts::make_self_signed("localhost");
    ts::sink s(ts::server_context(cert));
    ts::pem_file ca(cert.cert_pem);
    net::io_context io;
    auto o = loopback();
    o.ca_file = ca.path();
    client c(io.get_executor(), o);
    BOOST_TEST(s.url().starts_with("https://127.0.0.1:"));
    for (int i = 0; i < 3; ++i) {
        auto a = call(io, c, s.url());
        BOOST_TEST(!a.ec, a.ec.message() << " / " << a.result.error);
        BOOST_TEST((a.result.verdict == verdict::success));
    }
    // By name too (SNI and the name check): "localhost" is in the certificate.
    auto a = call(io, c, "https://localhost:" + std::to_string(s.port()) + "/hook");
    BOOST_TEST((a.result.verdict == verdict::success), a.result.error);
    auto got = s.requests();
    BOOST_REQUIRE(got.size() == 4u);
    BOOST_TEST(got[0].header("Idempotency-Key").value_or("") == "tls-task");
    BOOST_TEST(got[0].body == "{}");
    BOOST_TEST(c.stats().reuses >= 2u);
}

BOOST_AUTO_TEST_CASE(untrusted_certificate_refused) {
    auto cert = ts::make_self_signed("localhost");
    ts::sink s(ts::server_context(cert));
    net::io_context io;
    client c(io.get_executor(), loopback()); // the system's trust store
    auto a = call(io, c, s.url());
    BOOST_TEST((a.ec == error::tls_verify_failed), a.ec.message());
    BOOST_TEST((a.result.verdict == verdict::fail));
    BOOST_TEST(a.result.error.find("not trusted") != std::string::npos);
    BOOST_TEST(s.requests().empty());
}

BOOST_AUTO_TEST_CASE(certificate_for_another_name_refused) {
    // Trusted, but issued to another name and address: the name check must refuse it.
    auto other = ts::make_self_signed("other.example");
    ts::sink s(ts::server_context(other));
    ts::pem_file ca(other.cert_pem);
    net::io_context io;
    auto o = loopback();
    o.ca_file = ca.path();
    client c(io.get_executor(), o);
    auto a = call(io, c, "https://localhost:" + std::to_string(s.port()) + "/");
    BOOST_TEST((a.ec == error::tls_verify_failed), a.ec.message());
    BOOST_TEST(s.requests().empty());
}

BOOST_AUTO_TEST_CASE(verification_can_be_turned_off) {
    auto cert = ts::make_self_signed("localhost");
    ts::sink s(ts::server_context(cert));
    net::io_context io;
    auto o = loopback();
    o.verify_certificates = false;
    client c(io.get_executor(), o);
    auto a = call(io, c, s.url());
    BOOST_TEST((a.result.verdict == verdict::success), a.result.error);
}
