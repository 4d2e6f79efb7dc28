//
// server/callback/src/request.cpp
//
// A callback's request as bytes: written by hand, in one string, exactly as Beast's
// serializer would write the message (one allocation a call instead of one per field), with
// the headers the service sets itself (Host, User-Agent, Idempotency-Key, the attempt, the
// signature, Content-Length). The callback's own headers are checked to go out as one line
// each, whoever made the call_request.
//
#include "call.hpp"

#include <timewheeld/callback/signature.hpp>

#include <boost/beast/http/verb.hpp>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <string_view>

namespace timewheeld::callback::detail {

namespace http = beast::http;

namespace {

bool token_char(char c) {
    return std::isalnum(static_cast<unsigned char>(c)) ||
           std::string_view("!#$%&'*+-.^_`|~").find(c) != std::string_view::npos;
}

} // namespace

// A header that would not go out as one header line (parse_callback refuses them, but a
// call_request can be made by hand): its name, or nothing when every header is sound.
std::optional<std::string> bad_header(const callback_spec& spec) {
    for (const auto* list : {&spec.headers, &spec.secret_headers}) {
        for (const auto& [name, value] : *list) {
            const bool name_ok = !name.empty() && std::all_of(name.begin(), name.end(), token_char);
            const bool value_ok = std::none_of(value.begin(), value.end(), [](char c) {
                const auto u8 = static_cast<unsigned char>(c);
                return (u8 < 0x20 && c != '\t') || u8 == 0x7f;
            });
            if (!name_ok || !value_ok)
                return name;
        }
    }
    return std::nullopt;
}

// The request's bytes, as Beast's serializer would write the message it used to build (the
// same fields in the same order, Content-Length as prepare_payload() sets it), in one
// string: one allocation a call instead of one per header field plus the serializer's. The
// method is one string_to_verb() knows and the headers passed bad_header().
std::string build_request(const client_options& opt, const url& u, const call_request& req) {
    const auto& spec = req.spec;
    const auto host = u.host_header();
    char attempt[16];
    const auto attempt_end = std::to_chars(attempt, attempt + sizeof attempt, req.attempt).ptr;
    std::string signature;
    const auto own = opt.host_signing_secrets.find(u.host);
    const auto& secrets = own != opt.host_signing_secrets.end() ? own->second : opt.signing_secrets;
    if (!secrets.empty()) {
        auto now = std::chrono::duration_cast<std::chrono::seconds>(
                       std::chrono::system_clock::now().time_since_epoch())
                       .count();
        signature = sign(secrets, now, {spec.method, spec.url, req.task_id, req.attempt, spec.body},
                         opt.signature_v1);
    }
    const auto verb = http::string_to_verb(spec.method);
    const bool length = !spec.body.empty() || verb == http::verb::post || verb == http::verb::put ||
                        verb == http::verb::options;
    char length_text[24];
    const auto length_end =
        std::to_chars(length_text, length_text + sizeof length_text, spec.body.size()).ptr;

    std::size_t size = spec.method.size() + u.target.size() + host.size() + opt.user_agent.size() +
                       req.task_id.size() + signature.size() + spec.body.size() + 160;
    for (const auto* list : {&spec.headers, &spec.secret_headers})
        for (const auto& [name, value] : *list)
            size += name.size() + value.size() + 4;
    std::string r;
    r.reserve(size);
    auto line = [&r](std::string_view name, std::string_view value) {
        r += name;
        r += ": ";
        r += value;
        r += "\r\n";
    };
    r += spec.method;
    r += ' ';
    r += u.target;
    r += " HTTP/1.1\r\n";
    line("Host", host);
    line("User-Agent", opt.user_agent);
    for (const auto* list : {&spec.headers, &spec.secret_headers})
        for (const auto& [name, value] : *list)
            line(name, value);
    line("Idempotency-Key", req.task_id);
    line("Timewheel-Attempt", std::string_view(attempt, attempt_end - attempt));
    if (!signature.empty())
        line(signature_header, signature);
    if (length)
        line("Content-Length", std::string_view(length_text, length_end - length_text));
    r += "\r\n";
    r += spec.body;
    return r;
}

} // namespace timewheeld::callback::detail
