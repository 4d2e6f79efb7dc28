#include <timewheeld/callback/url.hpp>

#include <timewheeld/callback/error.hpp>

#include <boost/asio/ip/address.hpp>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <string_view>

namespace timewheeld::callback {

namespace {
bool default_port(const url& u) {
    return u.port == (u.https ? 443 : 80);
}
// Host (bracketed when it is an IPv6 literal), then ":port" when `with_port`: in one
// allocation, since the client builds both strings at every call.
std::string host_and_port(const url& u, std::string_view prefix, bool with_port) {
    std::string out;
    out.reserve(prefix.size() + u.host.size() + 8);
    out += prefix;
    const bool v6 = u.host.find(':') != std::string::npos;
    if (v6)
        out += '[';
    out += u.host;
    if (v6)
        out += ']';
    if (with_port) {
        char digits[8];
        const auto end = std::to_chars(digits, digits + sizeof digits, u.port).ptr;
        out += ':';
        out.append(digits, end);
    }
    return out;
}
} // namespace

std::string url::origin() const {
    return host_and_port(*this, https ? "https://" : "http://", true);
}

std::string url::host_header() const {
    return host_and_port(*this, {}, !default_port(*this));
}

namespace {
bool fail(boost::system::error_code& ec, std::string& why, error e, std::string text) {
    ec = e;
    why = std::move(text);
    return false;
}
bool host_char(char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '.' || c == '_';
}
bool target_char(char c) {
    // Printable ASCII without space; percent-encoding passes as is.
    return c > 0x20 && c < 0x7f && c != '#';
}
} // namespace

bool parse_url(std::string_view text, std::size_t max_length, url& out,
               boost::system::error_code& ec, std::string& why) {
    if (text.size() > max_length)
        return fail(ec, why, error::url_too_long,
                    "URL is " + std::to_string(text.size()) + " bytes, more than the limit of " +
                        std::to_string(max_length));
    auto colon = text.find("://");
    if (colon == std::string_view::npos)
        return fail(ec, why, error::bad_url, "URL has no scheme (expected http:// or https://)");
    std::string scheme(text.substr(0, colon));
    std::transform(scheme.begin(), scheme.end(), scheme.begin(),
                   [](unsigned char c) { return std::tolower(c); });
    url u;
    if (scheme == "https")
        u.https = true;
    else if (scheme != "http")
        return fail(ec, why, error::scheme_not_allowed,
                    "URL scheme \"" + scheme + "\" is not allowed (only http and https)");
    auto rest = text.substr(colon + 3);
    auto end = rest.find_first_of("/?#");
    auto authority = rest.substr(0, end);
    auto tail = end == std::string_view::npos ? std::string_view{} : rest.substr(end);
    if (authority.find('@') != std::string_view::npos)
        return fail(ec, why, error::bad_url, "URL has user info (\"user@\"), which is refused");
    std::string_view host, port;
    bool has_port = false;
    if (!authority.empty() && authority.front() == '[') {
        auto close = authority.find(']');
        if (close == std::string_view::npos)
            return fail(ec, why, error::bad_url, "URL has an unclosed [ in its host");
        host = authority.substr(1, close - 1);
        auto after = authority.substr(close + 1);
        if (!after.empty()) {
            if (after.front() != ':')
                return fail(ec, why, error::bad_url, "URL has text after its [IPv6] host");
            port = after.substr(1);
            has_port = true;
        }
        boost::system::error_code aec;
        auto a = boost::asio::ip::make_address_v6(std::string(host), aec);
        if (aec)
            return fail(ec, why, error::bad_url,
                        "URL host [" + std::string(host) + "] is not an IPv6 address");
        u.host = a.to_string();
    } else {
        auto c = authority.rfind(':');
        host = authority.substr(0, c);
        if (c != std::string_view::npos) {
            port = authority.substr(c + 1);
            has_port = true;
        }
        if (host.empty())
            return fail(ec, why, error::bad_url, "URL has no host");
        if (!std::all_of(host.begin(), host.end(), host_char))
            return fail(ec, why, error::bad_url,
                        "URL host \"" + std::string(host) + "\" has a character not allowed");
        u.host.assign(host);
        std::transform(u.host.begin(), u.host.end(), u.host.begin(),
                       [](unsigned char ch) { return std::tolower(ch); });
    }
    if (u.host.empty())
        return fail(ec, why, error::bad_url, "URL has no host");
    u.port = u.https ? 443 : 80;
    if (has_port) {
        unsigned p = 0;
        auto [ptr, perr] = std::from_chars(port.data(), port.data() + port.size(), p);
        if (port.empty() || perr != std::errc{} || ptr != port.data() + port.size() || p == 0 ||
            p > 65535)
            return fail(ec, why, error::bad_url,
                        "URL port \"" + std::string(port) + "\" is not a number in 1-65535");
        u.port = static_cast<std::uint16_t>(p);
    }
    auto fragment = tail.find('#');
    tail = tail.substr(0, fragment);
    if (!std::all_of(tail.begin(), tail.end(), target_char))
        return fail(ec, why, error::bad_url,
                    "URL path or query has a space or a control character (percent-encode it)");
    if (tail.empty())
        u.target = "/";
    else if (tail.front() == '?')
        u.target = "/" + std::string(tail);
    else
        u.target.assign(tail);
    out = std::move(u);
    ec = {};
    return true;
}

} // namespace timewheeld::callback
