// The callback of a task as JSON (timewheeld/callback/payload.hpp): defaults, round trip,
// and an error naming the field for each way a callback can be wrong.
#include <timewheeld/callback/payload.hpp>

#include <boost/json/serialize.hpp>

#define BOOST_TEST_MODULE server_callback_payload
#include <boost/test/unit_test.hpp>

#include <string>

using namespace timewheeld::callback;

namespace {
// The field a bad callback is refused for (and that it is refused at all).
std::string refused_field(const std::string& json, const payload_limits& limits = {}) {
    try {
        parse_callback(std::string_view(json), limits);
    } catch (const payload_error& e) {
        BOOST_TEST(std::string(e.what()).starts_with(e.field() + ": "));
        return e.field();
    }
    return "(accepted)";
}
} // namespace

BOOST_AUTO_TEST_CASE(defaults) {
    auto spec = parse_callback(std::string_view(R"({"url": "http://example.com/hook"})"));
    BOOST_TEST(spec.url == "http://example.com/hook");
    BOOST_TEST(spec.method == "POST");
    BOOST_TEST(spec.headers.empty());
    BOOST_TEST(spec.body == "");
    BOOST_TEST(spec.timeout.count() == 0);
}

BOOST_AUTO_TEST_CASE(every_field_and_round_trip) {
    auto spec = parse_callback(std::string_view(
        R"({"url": "https://example.com:8443/a?b=c", "method": "PUT",
            "headers": {"Content-Type": "application/json", "X-Trace": "abc"},
            "body": "{\"x\":1}", "timeout_ms": 2500})"));
    BOOST_TEST(spec.method == "PUT");
    BOOST_TEST(spec.headers.size() == 2u);
    BOOST_TEST(spec.body == R"({"x":1})");
    BOOST_TEST(spec.timeout.count() == 2500);
    auto again = parse_callback(boost::json::value(to_json(spec)));
    BOOST_TEST((again == spec));
    auto defaults = parse_callback(std::string_view(R"({"url": "http://h/"})"));
    BOOST_TEST((parse_callback(boost::json::value(to_json(defaults))) == defaults));
}

BOOST_AUTO_TEST_CASE(errors_name_the_field) {
    BOOST_TEST(refused_field("{") == "callback");
    BOOST_TEST(refused_field("[1]") == "callback");
    BOOST_TEST(refused_field("{}") == "url");
    BOOST_TEST(refused_field(R"({"url": 5})") == "url");
    BOOST_TEST(refused_field(R"({"url": "ftp://example.com/"})") == "url");
    BOOST_TEST(refused_field(R"({"url": "http://user:pw@example.com/"})") == "url");
    BOOST_TEST(refused_field(R"({"url": "http://example.com:99999/"})") == "url");
    BOOST_TEST(refused_field(R"({"url": "http://h/", "method": "CONNECT"})") == "method");
    BOOST_TEST(refused_field(R"({"url": "http://h/", "method": 1})") == "method");
    BOOST_TEST(refused_field(R"({"url": "http://h/", "headers": []})") == "headers");
    BOOST_TEST(refused_field(R"({"url": "http://h/", "headers": {"Host": "evil"}})") ==
               "headers.Host");
    BOOST_TEST(refused_field(R"({"url": "http://h/", "headers": {"idempotency-key": "x"}})") ==
               "headers.idempotency-key");
    BOOST_TEST(refused_field(R"({"url": "http://h/", "headers": {"Timewheel-Attempt": "9"}})") ==
               "headers.Timewheel-Attempt");
    BOOST_TEST(refused_field(R"({"url": "http://h/", "headers": {"Bad Name": "x"}})") ==
               "headers.Bad Name");
    BOOST_TEST(refused_field(R"({"url": "http://h/", "headers": {"X-A": "a\r\nX-B: b"}})") ==
               "headers.X-A");
    BOOST_TEST(refused_field(R"({"url": "http://h/", "headers": {"X-A": 1}})") == "headers.X-A");
    BOOST_TEST(refused_field(R"({"url": "http://h/", "body": {}})") == "body");
    BOOST_TEST(refused_field(R"({"url": "http://h/", "timeout_ms": 0})") == "timeout_ms");
    BOOST_TEST(refused_field(R"({"url": "http://h/", "timeout_ms": 1.5})") == "timeout_ms");
    BOOST_TEST(refused_field(R"({"url": "http://h/", "timeout_ms": 99999999})") == "timeout_ms");
    BOOST_TEST(refused_field(R"({"url": "http://h/", "retries": 3})") == "retries");
}

// The headers the worker refuses, the API refuses too (it parses with this same code):
// each with the field it names.
BOOST_AUTO_TEST_CASE(notice_targets_round_trip_and_name_their_fields) {
    const auto spec = parse_callback(std::string_view(
        R"({"url": "http://h/", "on_success": {"url": "https://n.example/ok",
            "headers": {"X-Key": "k"}}, "on_failure": {"url": "http://n.example/ko"}})"));
    BOOST_TEST_REQUIRE(spec.on_success.has_value());
    BOOST_TEST(spec.on_success->url == "https://n.example/ok");
    BOOST_TEST(spec.on_success->headers.size() == 1u);
    BOOST_TEST_REQUIRE(spec.on_failure.has_value());
    BOOST_TEST(spec.on_failure->headers.empty());
    BOOST_TEST((parse_callback(boost::json::value(to_json(spec))) == spec));
    BOOST_TEST(!parse_callback(std::string_view(R"({"url": "http://h/"})")).on_success);

    BOOST_TEST(refused_field(R"({"url": "http://h/", "on_success": 1})") == "on_success");
    BOOST_TEST(refused_field(R"({"url": "http://h/", "on_success": {}})") == "on_success.url");
    BOOST_TEST(refused_field(R"({"url": "http://h/", "on_failure": {"url": "http://u:p@h/"}})") ==
               "on_failure.url");
    BOOST_TEST(refused_field(R"({"url": "http://h/", "on_failure": {"url": "http://h/",
                                 "body": "x"}})") == "on_failure.body");
    BOOST_TEST(refused_field(R"({"url": "http://h/", "on_success": {"url": "http://h/",
                                 "headers": {"Timewheel-Attempt": "1"}}})") ==
               "on_success.headers.Timewheel-Attempt");
    BOOST_TEST(refused_field(R"({"url": "http://h/", "on_success": {"url": "http://h/",
                                 "headers": {"X": "a\nb"}}})") == "on_success.headers.X");
    payload_limits small;
    small.max_url_length = 20;
    BOOST_TEST(
        refused_field(
            R"({"url": "http://h/", "on_success": {"url": "http://h/aaaaaaaaaaaaaaaaaaaa"}})",
            small) == "on_success.url");
}

BOOST_AUTO_TEST_CASE(headers_the_client_sets_are_refused) {
    for (const char* name :
         {"User-Agent", "user-agent", "Expect", "Timewheel-Signature", "timewheel-anything",
          "Proxy-Authorization", "Proxy-Connection", "Keep-Alive", "TE", "Trailer", "Upgrade"}) {
        const std::string json =
            std::string(R"({"url": "http://h/", "headers": {")") + name + R"(": "x"}})";
        BOOST_TEST(refused_field(json) == std::string("headers.") + name);
        const std::string secret =
            std::string(R"({"url": "http://h/", "secret_headers": {")") + name + R"(": "x"}})";
        BOOST_TEST(refused_field(secret) == std::string("secret_headers.") + name);
    }
    // More than 8 KiB of names and values.
    const std::string big(5000, 'v');
    BOOST_TEST(refused_field(R"({"url": "http://h/", "headers": {"A": ")" + big + R"(", "B": ")" +
                             big + R"("}})") == "headers");
}

// secret_headers: parsed like headers, counted with them in the same limits, kept by
// to_json, and shown by redact() with their names only.
BOOST_AUTO_TEST_CASE(secret_headers) {
    auto spec = parse_callback(std::string_view(
        R"({"url": "http://h/", "headers": {"X-A": "1"},
            "secret_headers": {"Authorization": "Bearer s3cret", "X-Key": "k"}})"));
    BOOST_TEST(spec.headers.size() == 1u);
    BOOST_REQUIRE(spec.secret_headers.size() == 2u);
    BOOST_TEST(spec.secret_headers[0].first == "Authorization");
    BOOST_TEST(spec.secret_headers[0].second == "Bearer s3cret");
    auto stored = to_json(spec);
    BOOST_TEST((parse_callback(boost::json::value(stored)) == spec));
    auto shown = stored;
    redact(shown);
    BOOST_TEST(boost::json::serialize(shown).find("s3cret") == std::string::npos);
    BOOST_TEST(shown.at("secret_headers").at("Authorization").as_string() == "***");
    BOOST_TEST(shown.at("headers").at("X-A").as_string() == "1"); // headers are shown

    BOOST_TEST(refused_field(R"({"url": "http://h/", "secret_headers": ["x"]})") ==
               "secret_headers");
    BOOST_TEST(refused_field(R"({"url": "http://h/", "secret_headers": {"X-A": 1}})") ==
               "secret_headers.X-A");
    BOOST_TEST(refused_field(R"({"url": "http://h/", "secret_headers": {"X-A": "a\nb"}})") ==
               "secret_headers.X-A");
    BOOST_TEST(refused_field(R"({"url": "http://h/", "secret_headers": {"Host": "e"}})") ==
               "secret_headers.Host");
    // A name in both: which would be sent?
    BOOST_TEST(
        refused_field(
            R"({"url": "http://h/", "headers": {"X-A": "1"}, "secret_headers": {"x-a": "2"}})") ==
        "secret_headers.x-a");
    // The limits count both together.
    payload_limits small;
    small.max_headers = 2;
    small.max_header_bytes = 10;
    BOOST_TEST(refused_field(R"({"url": "http://h/", "headers": {"A": "1", "B": "2"},
                                 "secret_headers": {"C": "3"}})",
                             small) == "secret_headers");
    BOOST_TEST(refused_field(R"({"url": "http://h/", "headers": {"A": "12345"},
                                 "secret_headers": {"B": "12345"}})",
                             small) == "secret_headers");
    BOOST_TEST(refused_field(R"({"url": "http://h/", "headers": {"A": "1"},
                                 "secret_headers": {"B": "2"}})",
                             small) == "(accepted)");
}

BOOST_AUTO_TEST_CASE(limits) {
    payload_limits small;
    small.max_url_length = 20;
    small.max_headers = 1;
    small.max_body = 3;
    BOOST_TEST(refused_field(R"({"url": "http://example.com/a-long-path"})", small) == "url");
    BOOST_TEST(refused_field(R"({"url": "http://h/", "headers": {"A": "1", "B": "2"}})", small) ==
               "headers");
    BOOST_TEST(refused_field(R"({"url": "http://h/", "body": "abcd"})", small) == "body");
    BOOST_TEST(refused_field(R"({"url": "http://h/", "body": "abc"})", small) == "(accepted)");
}
