//
// server/api/src/routes_ui.cpp
//
// The dashboard's files at /ui/ (timewheeld_ui, compiled into the binary). They are served
// without the token: they hold no data (every figure on the pages comes from a request
// that carries the token), and a browser's navigation to /ui/ cannot send a bearer token,
// which must never be a cookie. What keeps the pages safe is in their headers: a
// Content-Security-Policy that lets them run only their own scripts and styles and talk
// only to this service, no MIME sniffing, no Referer, no framing; and revalidation at every
// load (no-cache with an ETag), so a browser never runs the files of an older binary.
//
#include "routes.hpp"

#include <timewheeld/ui/assets.hpp>

namespace timewheeld::api::detail {

namespace {

// The headers of every answer under /ui/, errors included.
void secure(response& res) {
    res.set("Content-Security-Policy",
            "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; "
            "connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'");
    res.set("X-Content-Type-Options", "nosniff");
    res.set("Referrer-Policy", "no-referrer");
}

// Whether If-None-Match names `etag` (a list, or "*"; weak comparison, as RFC 9110 asks of
// GET).
bool matches(std::string_view if_none_match, std::string_view etag) {
    while (!if_none_match.empty()) {
        const auto comma = if_none_match.find(',');
        auto tag = if_none_match.substr(0, comma);
        while (!tag.empty() && (tag.front() == ' ' || tag.front() == '\t')) {
            tag.remove_prefix(1);
        }
        while (!tag.empty() && (tag.back() == ' ' || tag.back() == '\t')) {
            tag.remove_suffix(1);
        }
        if (tag.starts_with("W/")) {
            tag.remove_prefix(2);
        }
        if (tag == "*" || tag == etag) {
            return true;
        }
        if_none_match =
            comma == std::string_view::npos ? std::string_view() : if_none_match.substr(comma + 1);
    }
    return false;
}

} // namespace

response ui_file(const request& req, std::string_view path) {
    response res;
    if (req.method() != http::verb::get && req.method() != http::verb::head) {
        res = error_response(http::status::method_not_allowed, "method_not_allowed",
                             "allowed: GET, HEAD");
        res.set(http::field::allow, "GET, HEAD");
    } else if (path == "/ui") {
        // The pages name their files relative to /ui/.
        res = response(http::status::moved_permanently, 11);
        res.set(http::field::location, "/ui/");
    } else {
        auto name = path.substr(4); // after "/ui/"
        const ui::asset* a = ui::find_asset(name.empty() ? "index.html" : name);
        if (!a) {
            res = error_response(http::status::not_found, "not_found", "no such file");
        } else {
            res = response(matches(req[http::field::if_none_match], a->etag)
                               ? http::status::not_modified
                               : http::status::ok,
                           11);
            res.set(http::field::etag, a->etag);
            res.set(http::field::cache_control, "no-cache");
            if (res.result() == http::status::ok) {
                res.set(http::field::content_type, a->content_type);
                res.body() = a->body;
            }
        }
    }
    secure(res);
    return res;
}

} // namespace timewheeld::api::detail
