// The pieces of the callback client that need no network: the URL, the SSRF address
// classes and host allow-list, Retry-After in both forms, and the signature scheme as a
// receiver checks it (with OpenSSL's HMAC computed here, independently of the library).
#include <timewheeld/callback/address_policy.hpp>
#include <timewheeld/callback/error.hpp>
#include <timewheeld/callback/retry_after.hpp>
#include <timewheeld/callback/signature.hpp>
#include <timewheeld/callback/url.hpp>
#include <timewheeld/callback/utf8.hpp>

#include <openssl/evp.h>
#include <openssl/hmac.h>

#define BOOST_TEST_MODULE server_callback_policy
#include <boost/test/unit_test.hpp>

#include <cstdio>

using namespace timewheeld::callback;
using boost::asio::ip::make_address;

namespace {
url parsed(std::string_view text) {
    url u;
    boost::system::error_code ec;
    std::string why;
    BOOST_REQUIRE_MESSAGE(parse_url(text, 2048, u, ec, why), why);
    return u;
}
boost::system::error_code refusal(std::string_view text, std::string* why_out = nullptr,
                                  std::size_t max = 2048) {
    url u;
    boost::system::error_code ec;
    std::string why;
    BOOST_TEST(!parse_url(text, max, u, ec, why));
    BOOST_TEST(!why.empty());
    if (why_out)
        *why_out = why;
    return ec;
}
} // namespace

BOOST_AUTO_TEST_CASE(urls) {
    auto u = parsed("HTTP://Example.COM/a/b?c=d#frag");
    BOOST_TEST(!u.https);
    BOOST_TEST(u.host == "example.com");
    BOOST_TEST(u.port == 80);
    BOOST_TEST(u.target == "/a/b?c=d");
    BOOST_TEST(u.origin() == "http://example.com:80");
    BOOST_TEST(u.host_header() == "example.com");
    auto s = parsed("https://127.0.0.1:8443");
    BOOST_TEST(s.https);
    BOOST_TEST(s.port == 8443);
    BOOST_TEST(s.target == "/");
    BOOST_TEST(s.host_header() == "127.0.0.1:8443");
    auto v6 = parsed("http://[::1]:81/x");
    BOOST_TEST(v6.host == "::1");
    BOOST_TEST(v6.host_header() == "[::1]:81");
    BOOST_TEST(parsed("http://h?q=1").target == "/?q=1");
    auto bare_v6 = parsed("https://[fe80::1]/");
    BOOST_TEST(bare_v6.host == "fe80::1");
    BOOST_TEST(bare_v6.port == 443);
    BOOST_TEST((refusal("http://[::1]:/") == error::bad_url));

    std::string why;
    BOOST_TEST((refusal("gopher://h/", &why) == error::scheme_not_allowed));
    BOOST_TEST(why.find("gopher") != std::string::npos);
    BOOST_TEST((refusal("http://h/" + std::string(100, 'a'), &why, 50) == error::url_too_long));
    BOOST_TEST(why.find("limit of 50") != std::string::npos);
    BOOST_TEST((refusal("example.com/x") == error::bad_url));
    BOOST_TEST((refusal("http:///x") == error::bad_url));
    BOOST_TEST((refusal("http://a@b/") == error::bad_url));
    BOOST_TEST((refusal("http://h:0/") == error::bad_url));
    BOOST_TEST((refusal("http://h:x/") == error::bad_url));
    BOOST_TEST((refusal("http://h:/") == error::bad_url));
    BOOST_TEST((refusal("http://[::1/") == error::bad_url));
    BOOST_TEST((refusal("http://[nope]/") == error::bad_url));
    BOOST_TEST((refusal("http://h/a b") == error::bad_url));
    BOOST_TEST((refusal("http://h/a\r\nX: y") == error::bad_url));
    BOOST_TEST((refusal("http://h%2f/") == error::bad_url));
}

BOOST_AUTO_TEST_CASE(address_classes) {
    auto c = [](const char* a) { return classify(make_address(a)); };
    BOOST_TEST((c("127.0.0.1") == address_class::loopback));
    BOOST_TEST((c("127.255.0.9") == address_class::loopback));
    BOOST_TEST((c("::1") == address_class::loopback));
    BOOST_TEST((c("10.0.0.1") == address_class::private_network));
    BOOST_TEST((c("172.16.0.1") == address_class::private_network));
    BOOST_TEST((c("172.31.255.255") == address_class::private_network));
    BOOST_TEST((c("172.32.0.1") == address_class::global));
    BOOST_TEST((c("192.168.1.1") == address_class::private_network));
    BOOST_TEST((c("100.64.0.1") == address_class::private_network));
    BOOST_TEST((c("100.128.0.1") == address_class::global));
    BOOST_TEST((c("fd00::1") == address_class::private_network));
    BOOST_TEST((c("169.254.169.254") == address_class::link_local));
    BOOST_TEST((c("fe80::1") == address_class::link_local));
    BOOST_TEST((c("0.0.0.0") == address_class::unspecified));
    BOOST_TEST((c("::") == address_class::unspecified));
    BOOST_TEST((c("224.0.0.1") == address_class::multicast));
    BOOST_TEST((c("ff02::1") == address_class::multicast));
    BOOST_TEST((c("255.255.255.255") == address_class::reserved));
    BOOST_TEST((c("::ffff:127.0.0.1") == address_class::loopback));
    BOOST_TEST((c("::ffff:169.254.169.254") == address_class::link_local));
    BOOST_TEST((c("::ffff:10.1.2.3") == address_class::private_network));
    BOOST_TEST((c("93.184.216.34") == address_class::global));
    BOOST_TEST((c("2606:2800:220:1::1") == address_class::global));
    // IPv6 addresses that carry an IPv4 address are judged by it: IPv4-compatible,
    // NAT64 (well-known /96, local-use /96; any other local-use form is private), 6to4.
    BOOST_TEST((c("::127.0.0.1") == address_class::loopback));
    BOOST_TEST((c("::10.0.0.1") == address_class::private_network));
    BOOST_TEST((c("::169.254.169.254") == address_class::link_local));
    BOOST_TEST((c("::93.184.216.34") == address_class::global));
    BOOST_TEST((c("64:ff9b::a00:1") == address_class::private_network));
    BOOST_TEST((c("64:ff9b::127.0.0.1") == address_class::loopback));
    BOOST_TEST((c("64:ff9b::169.254.169.254") == address_class::link_local));
    BOOST_TEST((c("64:ff9b::0.0.0.0") == address_class::unspecified));
    BOOST_TEST((c("64:ff9b::93.184.216.34") == address_class::global));
    BOOST_TEST((c("64:ff9b:1::7f00:1") == address_class::loopback));
    BOOST_TEST((c("64:ff9b:1::5db8:d822") == address_class::global));
    BOOST_TEST((c("64:ff9b:1:7f00:0:100::") == address_class::private_network));
    BOOST_TEST((c("2002:7f00:0001::") == address_class::loopback));
    BOOST_TEST((c("2002:a00:1::1") == address_class::private_network));
    BOOST_TEST((c("2002:a9fe:a9fe::") == address_class::link_local));
    BOOST_TEST((c("2002:5db8:d822::1") == address_class::global));
    BOOST_TEST((c("::ffff:0.0.0.0") == address_class::unspecified));
    // Near misses are plain IPv6.
    BOOST_TEST((c("64:ff9b:2::7f00:1") == address_class::global));
    BOOST_TEST((c("2003:7f00:1::") == address_class::global));

    address_policy p;
    BOOST_TEST(p.allows(make_address("93.184.216.34")));
    for (const char* a : {"127.0.0.1", "10.0.0.1", "169.254.169.254", "::ffff:127.0.0.1", "0.0.0.0",
                          "224.0.0.1", "fe80::1", "::127.0.0.1", "64:ff9b::7f00:1",
                          "64:ff9b::a9fe:a9fe", "2002:7f00:1::", "2002:a9fe:a9fe::"})
        BOOST_TEST(!p.allows(make_address(a)), a);
    p.allow_loopback = true;
    BOOST_TEST(p.allows(make_address("127.0.0.1")));
    BOOST_TEST(p.allows(make_address("::ffff:127.0.0.1")));
    BOOST_TEST(!p.allows(make_address("10.0.0.1")));
    BOOST_TEST(!p.allows(make_address("169.254.169.254")));
    p.allow_private = true;
    p.allow_link_local = true;
    BOOST_TEST(p.allows(make_address("10.0.0.1")));
    BOOST_TEST(p.allows(make_address("169.254.169.254")));
    BOOST_TEST(!p.allows(make_address("0.0.0.0")));
    BOOST_TEST(!p.allows(make_address("224.0.0.1")));
}

BOOST_AUTO_TEST_CASE(host_allow_list) {
    address_policy p;
    BOOST_TEST(p.allows_host("anything.example"));
    p.allowed_hosts = {"hooks.example.com", "*.partner.org"};
    BOOST_TEST(p.allows_host("hooks.example.com"));
    BOOST_TEST(p.allows_host("HOOKS.example.com"));
    BOOST_TEST(!p.allows_host("example.com"));
    BOOST_TEST(!p.allows_host("hooks.example.com.evil.net"));
    BOOST_TEST(p.allows_host("a.partner.org"));
    BOOST_TEST(p.allows_host("a.b.partner.org"));
    BOOST_TEST(!p.allows_host("partner.org"));
    BOOST_TEST(!p.allows_host("evilpartner.org"));
}

BOOST_AUTO_TEST_CASE(retry_after) {
    using namespace std::chrono;
    // 1994-11-06 08:49:37 UTC
    auto at = system_clock::from_time_t(784111777);
    BOOST_TEST(parse_retry_after("120", at)->count() == 120);
    BOOST_TEST(parse_retry_after(" 0 ", at)->count() == 0);
    BOOST_TEST(parse_retry_after("Sun, 06 Nov 1994 08:50:37 GMT", at)->count() == 60);
    BOOST_TEST(parse_retry_after("Sunday, 06-Nov-94 08:50:37 GMT", at)->count() == 60);
    BOOST_TEST(parse_retry_after("Sun Nov  6 08:50:37 1994", at)->count() == 60);
    // A fraction of a second before the date rounds up, a date in the past is now.
    BOOST_TEST(
        parse_retry_after("Sun, 06 Nov 1994 08:50:37 GMT", at + milliseconds(500))->count() == 60);
    BOOST_TEST(parse_retry_after("Sun, 06 Nov 1994 08:00:00 GMT", at)->count() == 0);
    BOOST_TEST(!parse_retry_after("", at));
    BOOST_TEST(!parse_retry_after("-5", at));
    BOOST_TEST(!parse_retry_after("1.5", at));
    BOOST_TEST(!parse_retry_after("soon", at));
    BOOST_TEST(!parse_retry_after("Sun, 06 Nov 1994 08:50:37 GMT trailing", at));
    BOOST_TEST(parse_retry_after("99999999999999999999999", at)->count() > 0);
}

// What a hostile receiver may send: far dates and huge numbers are clamped (to 2^31 s, about
// 68 years) without overflowing anything (this test runs under UBSan too), the rest ignored.
BOOST_AUTO_TEST_CASE(retry_after_extremes) {
    using namespace std::chrono;
    const auto now = system_clock::now();
    constexpr long long most = 1LL << 31;
    auto far = parse_retry_after("Fri, 31 Dec 9999 23:59:59 GMT", now);
    BOOST_REQUIRE(far);
    BOOST_TEST(far->count() == most);
    auto far850 = parse_retry_after("Friday, 31-Dec-99 23:59:59 GMT", now);
    BOOST_TEST((!far850 || far850->count() <= most));
    auto asctime = parse_retry_after("Fri Dec 31 23:59:59 9999", now);
    BOOST_REQUIRE(asctime);
    BOOST_TEST(asctime->count() == most);
    BOOST_TEST(parse_retry_after("99999999999999999999", now)->count() == most);
    BOOST_TEST(parse_retry_after("9223372036854775807", now)->count() == most);
    BOOST_TEST(parse_retry_after("2147483649", now)->count() == most);
    BOOST_TEST(parse_retry_after("2147483647", now)->count() == most - 1);
    BOOST_TEST(parse_retry_after("Sat, 01 Jan 0000 00:00:00 GMT", now).value_or(seconds(0)) ==
               seconds(0));
    BOOST_TEST(parse_retry_after("Thu, 01 Jan 1970 00:00:00 GMT", now)->count() == 0);
    // A clock far in the future or the past does not overflow either.
    BOOST_TEST(parse_retry_after("Fri, 31 Dec 9999 23:59:59 GMT", system_clock::time_point::max())
                   ->count() == most);
    BOOST_TEST(parse_retry_after("Sun, 06 Nov 1994 08:49:37 GMT", system_clock::time_point::max())
                   ->count() == 0);
    BOOST_TEST(parse_retry_after("Fri, 31 Dec 9999 23:59:59 GMT", system_clock::time_point::min())
                   ->count() == most);
    for (const char* bad : {"-1", "-99999999999999999999", "+5", "5s", "0x10", "1e9", "\xff\xfe",
                            "Fri, 32 Dec 9999 23:59:59 GMT", "Fri, 31 Dec 99999 23:59:59 GMT",
                            "31 Dec 9999", "GMT", ","})
        BOOST_TEST(!parse_retry_after(bad, now), bad);
}

BOOST_AUTO_TEST_CASE(signature_scheme) {
    const std::string secret = "s3cret";
    const signed_request r{"POST", "https://hooks.example.com/orders?x=1", "order-42", 3,
                           R"({"order":42})"};
    // The canonical text, as docs/server.md spells it: six lines, the body last.
    BOOST_TEST(canonical_v2(1700000000, r) == "1700000000\nPOST\nhttps://hooks.example.com/"
                                              "orders?x=1\norder-42\n3\n{\"order\":42}");
    auto header = sign({secret}, 1700000000, r);
    // Recomputed here from the documented scheme with OpenSSL's HMAC, hex.
    auto hmac = [](const std::string& key, const std::string& message) {
        unsigned char mac[32];
        unsigned len = 0;
        HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()),
             reinterpret_cast<const unsigned char*>(message.data()), message.size(), mac, &len);
        std::string hex;
        for (unsigned i = 0; i < len; ++i) {
            char b[3];
            std::snprintf(b, sizeof b, "%02x", mac[i]);
            hex += b;
        }
        return hex;
    };
    const std::string hex = hmac(secret, canonical_v2(1700000000, r));
    BOOST_TEST(header == "t=1700000000,v2=" + hex);

    // The example of docs/server.md, computed there with Python's hmac module.
    BOOST_TEST(
        sign({"shared-secret"}, 1700000000,
             {"POST", "https://hooks.example.com/orders", "order-42", 1, R"({"order": 42})"}) ==
        "t=1700000000,v2=801b3dee032e4b9d32d9658eb4bae0770e98bcaf15062276e93b1bcbff01609f");

    // Two secrets: one v2 each; v1 only on request, over "<t>.<body>".
    auto two = sign({"a", "b"}, 1700000000, r, true);
    BOOST_TEST(two == "t=1700000000,v2=" + hmac("a", canonical_v2(1700000000, r)) +
                          ",v2=" + hmac("b", canonical_v2(1700000000, r)) +
                          ",v1=" + hmac("a", "1700000000." + std::string(r.body)) +
                          ",v1=" + hmac("b", "1700000000." + std::string(r.body)));

    auto at = std::chrono::system_clock::time_point(std::chrono::seconds(1700000000));
    BOOST_TEST(verify_signature(header, secret, r, at));
    BOOST_TEST(verify_signature(two, "a", r, at));
    BOOST_TEST(verify_signature(two, "b", r, at));
    BOOST_TEST(verify_signature(header, secret, r, at + std::chrono::minutes(4)));
    BOOST_TEST(!verify_signature(header, secret, r, at + std::chrono::minutes(6)));
    BOOST_TEST(!verify_signature(header, "other", r, at));
    auto other = r;
    other.body = "{}";
    BOOST_TEST(!verify_signature(header, secret, other, at));
    other = r;
    other.url = "https://elsewhere.example/orders?x=1";
    BOOST_TEST(!verify_signature(header, secret, other, at));
    other = r;
    other.idempotency_key = "order-43";
    BOOST_TEST(!verify_signature(header, secret, other, at));
    other = r;
    other.attempt = 4;
    BOOST_TEST(!verify_signature(header, secret, other, at));
    other = r;
    other.method = "PUT";
    BOOST_TEST(!verify_signature(header, secret, other, at));
    BOOST_TEST(!verify_signature("v2=" + hex, secret, r, at));
    BOOST_TEST(!verify_signature("t=1700000000", secret, r, at));
    BOOST_TEST(verify_signature("t=1700000000,v2=00,v2=" + hex, secret, r, at));
    // A v1 entry alone does not verify: v2 is what a receiver checks.
    BOOST_TEST(!verify_signature(
        "t=1700000000,v1=" + hmac(secret, "1700000000." + std::string(r.body)), secret, r, at));
    // A t far from now (a forged header) is refused without overflowing anything.
    BOOST_TEST(!verify_signature("t=9223372036854775807,v2=" + hex, secret, r, at));
    BOOST_TEST(!verify_signature("t=-9223372036854775807,v2=" + hex, secret, r, at));
}

// Text from a network made fit for JSON: every ill-formed sequence becomes U+FFFD (one per
// maximal ill-formed subpart), and a cut never splits a character.
BOOST_AUTO_TEST_CASE(utf8_repair_and_cut) {
    const std::string fffd = "\xef\xbf\xbd";
    BOOST_TEST(valid_utf8("plain ascii") == "plain ascii");
    BOOST_TEST(valid_utf8("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80") ==
               "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80");
    BOOST_TEST(valid_utf8("a\xff"
                          "b") == "a" + fffd + "b"); // never valid
    BOOST_TEST(valid_utf8("a\x80"
                          "b") == "a" + fffd + "b"); // stray continuation
    BOOST_TEST(valid_utf8("a\xc3") == "a" + fffd);   // truncated at the end
    BOOST_TEST(valid_utf8("a\xe2\x82"
                          "b") == "a" + fffd + "b");              // truncated, one U+FFFD
    BOOST_TEST(valid_utf8("\xc0\x80") == fffd + fffd);            // overlong NUL
    BOOST_TEST(valid_utf8("\xe0\x80\x80") == fffd + fffd + fffd); // overlong
    BOOST_TEST(valid_utf8("\xed\xa0\x80") == fffd + fffd + fffd); // a surrogate
    BOOST_TEST(valid_utf8("\xf4\x90\x80\x80") == fffd + fffd + fffd + fffd); // > U+10FFFF
    BOOST_TEST(valid_utf8("\xf5\x80") == fffd + fffd);
    BOOST_TEST(valid_utf8(std::string("a\0b", 3)) == std::string("a\0b", 3)); // NUL is valid
    // Cuts fall before a character that does not fit, never inside it.
    BOOST_TEST(valid_utf8("ab\xe2\x82\xac", 4) == "ab");
    BOOST_TEST(valid_utf8("ab\xe2\x82\xac", 5) == "ab\xe2\x82\xac");
    BOOST_TEST(valid_utf8("ab\xff", 4) == "ab");
    BOOST_TEST(valid_utf8("abc", 0) == "");
    BOOST_TEST(is_valid_utf8("caf\xc3\xa9"));
    BOOST_TEST(!is_valid_utf8("caf\xc3"));
    BOOST_TEST(!is_valid_utf8("\xed\xbf\xbf"));
    // Whatever comes in, what goes out is valid and within the limit.
    std::string junk;
    for (int i = 0; i < 4096; ++i)
        junk += static_cast<char>((i * 7919) & 0xff);
    for (std::size_t limit : {0u, 1u, 2u, 3u, 100u, 1000u, 100000u}) {
        const auto out = valid_utf8(junk, limit);
        BOOST_TEST(is_valid_utf8(out));
        BOOST_TEST(out.size() <= limit);
    }
}
