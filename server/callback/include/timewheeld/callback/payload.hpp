//
// timewheeld/callback/payload.hpp
//
// The callback of a task as the API receives it and the store keeps it, in JSON:
//
//     {"url": "https://example.com/hook", "method": "POST",
//      "headers": {"Content-Type": "application/json"}, "body": "{\"a\":1}",
//      "secret_headers": {"Authorization": "Bearer abc"}, "timeout_ms": 10000,
//      "on_success": {"url": "https://example.com/done", "headers": {"X-Key": "k"}},
//      "on_failure": {"url": "https://example.com/failed"}}
//
// Only "url" is required: method defaults to POST, headers and secret_headers to none, body
// to "", timeout_ms to 0 (the client's default). Every error names the field
// ("headers.Host: ..."; the API prefixes "callback."). This is the one parser of a
// callback: the API validates a submit with it, and the worker reads the stored payload
// with it, under the same payload_limits.
//
// on_success and on_failure are the targets of the task's completion notice
// (timewheeld/service/notice.hpp): a URL and headers under the callback's own rules (each
// target's headers counted on their own), called through the same client.
//
// secret_headers are sent exactly like headers (the same rules, counted in the same
// limits), but the API never shows their values: redact() replaces each with "***".
//

#ifndef TIMEWHEELD_CALLBACK_PAYLOAD_HPP
#define TIMEWHEELD_CALLBACK_PAYLOAD_HPP

#include <boost/json/value.hpp>

#include <chrono>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace timewheeld::callback {

/// Where a completion notice goes: a POST of the notice (service/notice.hpp) to `url`, with
/// `headers`, checked and called as the callback is (URL, headers, address policy, signing).
struct notice_target {
    std::string url;
    std::vector<std::pair<std::string, std::string>> headers;

    friend bool operator==(const notice_target&, const notice_target&) = default;
};

struct callback_spec {
    std::string url;
    std::string method = "POST"; ///< GET, POST, PUT, PATCH or DELETE
    std::vector<std::pair<std::string, std::string>> headers;
    /// Sent like headers; stored, but never shown by the API (see redact()).
    std::vector<std::pair<std::string, std::string>> secret_headers;
    std::string body;
    std::chrono::milliseconds timeout{0}; ///< 0: the client's default
    /// The completion notice's target when the task finishes, and when it dies.
    std::optional<notice_target> on_success;
    std::optional<notice_target> on_failure;

    friend bool operator==(const callback_spec&, const callback_spec&) = default;
};

/// A callback that does not parse: field() names the offending field ("url",
/// "headers.Host", ...), what() says "<field>: <what is wrong>".
class payload_error : public std::invalid_argument {
public:
    payload_error(std::string field, const std::string& why)
        : std::invalid_argument(field + ": " + why)
        , field_(std::move(field))
        , why_(why) {}
    const std::string& field() const noexcept { return field_; }
    /// What is wrong, without the field's name.
    const std::string& message() const noexcept { return why_; }

private:
    std::string field_;
    std::string why_;
};

/// Limits of a callback: one object, which the API validates submits with and the worker
/// reads stored payloads with (the settings hold it: --max-callback-url-bytes and
/// --max-callback-headers set it), so that what the API accepted always parses again.
struct payload_limits {
    std::size_t max_url_length = 2048;
    std::size_t max_headers = 32;        ///< headers and secret_headers together
    std::size_t max_header_bytes = 8192; ///< names and values of both together
    std::size_t max_body = 1 << 20;
    std::chrono::milliseconds max_timeout{std::chrono::minutes(10)};
    friend bool operator==(const payload_limits&, const payload_limits&) = default;
};

/// Parses a callback object; throws payload_error. Headers the client sets itself (Host,
/// Content-Length, Transfer-Encoding, Connection, Idempotency-Key, Timewheel-*, ...) are
/// refused, as are names that are not HTTP tokens and values with control characters (no
/// header injection). The URL's syntax and length are checked here; its address is checked
/// only when called (it must be resolved first).
callback_spec parse_callback(const boost::json::value& v, const payload_limits& limits = {});

/// The same from JSON text (a syntax error names the field "callback").
callback_spec parse_callback(std::string_view json, const payload_limits& limits = {});

/// A notice target, {"url", "headers"?}, alone (a notice task's payload keeps its targets so):
/// the callback's URL and header rules, the headers counted on their own against the limits.
/// Errors name the fields under `field` ("on_success.url"). @throws payload_error
notice_target parse_notice_target(const boost::json::value& v, const payload_limits& limits,
                                  std::string_view field);

/// The JSON object parse_notice_target reads back as the same target (no empty headers).
boost::json::object to_json(const notice_target& target);

/// The JSON object parse_callback reads back as the same callback (what the store keeps:
/// secret_headers with their values). Empty headers, secret_headers and body are left out.
boost::json::object to_json(const callback_spec& spec);

/// A stored callback object as the API shows it: every value of its secret_headers replaced
/// by "***" (the names stay, so that a client can see which are set). Anything else is left
/// as it is.
void redact(boost::json::object& callback);

} // namespace timewheeld::callback

#endif
