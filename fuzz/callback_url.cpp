//
// fuzz/callback_url.cpp
//
// The callback side's checks of where a callback goes: parse_url (url.hpp) and the SSRF
// address policy (address_policy.hpp). The first byte picks what the rest is:
//   0: a URL (the second byte sets the length limit). Invariants: a refusal sets an error
//      code and says why; an accepted URL has a lower-case host, a port in 1-65535, a
//      target of printable ASCII starting with '/' or '?', and its origin() + target parses
//      back to the same URL (so does its Host header with the scheme).
//   1: an address, 4 raw bytes (IPv4) or 16 (IPv6), and the policy's flags in the second
//      byte. Invariants: an IPv4-mapped IPv6 address classifies as its IPv4 address, the
//      address's text form classifies as the address, allows() follows the class (global
//      always, loopback/private/link-local by their flag, the others never).
//   2: allowed_hosts lines, then a host (the last line). Invariants: no list allows all;
//      a host on the list is allowed whatever its case; "*.x" never allows "x" itself.
//
#include "check.hpp"

#include <timewheeld/callback/address_policy.hpp>
#include <timewheeld/callback/url.hpp>

#include <boost/asio/ip/address.hpp>

#include <algorithm>
#include <array>
#include <cctype>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

namespace {

namespace cb = timewheeld::callback;
namespace ip = boost::asio::ip;

bool same(const cb::url& a, const cb::url& b) {
    return a.https == b.https && a.host == b.host && a.port == b.port && a.target == b.target;
}

void fuzz_url(std::string_view text, std::size_t max_length) {
    cb::url u;
    boost::system::error_code ec;
    std::string why;
    if (!cb::parse_url(text, max_length, u, ec, why)) {
        FUZZ_CHECK(ec.failed(), "a refused URL sets an error code");
        FUZZ_CHECK(!why.empty(), "a refused URL says why");
        return;
    }
    FUZZ_CHECK(!ec.failed(), "an accepted URL sets no error");
    FUZZ_CHECK(!u.host.empty(), "an accepted URL has a host");
    FUZZ_CHECK(
        std::none_of(u.host.begin(), u.host.end(), [](unsigned char c) { return std::isupper(c); }),
        "the host is lower-case");
    FUZZ_CHECK(u.port != 0, "the port is in 1-65535");
    FUZZ_CHECK(!u.target.empty() && (u.target[0] == '/' || u.target[0] == '?'),
               "the target starts with / or ?");
    FUZZ_CHECK(std::all_of(u.target.begin(), u.target.end(),
                           [](char c) { return c > 0x20 && c < 0x7f && c != '#'; }),
               "the target is printable ASCII without space or fragment");
    const std::size_t unlimited = static_cast<std::size_t>(-1);
    cb::url again;
    FUZZ_CHECK(cb::parse_url(u.origin() + u.target, unlimited, again, ec, why),
               "origin() + target parses");
    FUZZ_CHECK(same(u, again), "origin() + target is the same URL");
    const std::string with_host = (u.https ? "https://" : "http://") + u.host_header() + u.target;
    FUZZ_CHECK(cb::parse_url(with_host, unlimited, again, ec, why), "the Host header parses");
    FUZZ_CHECK(same(u, again), "the Host header names the same origin");
}

void fuzz_address(std::string_view bytes, std::uint8_t flags) {
    ip::address a;
    if (bytes.size() >= 16) {
        ip::address_v6::bytes_type b{};
        std::memcpy(b.data(), bytes.data(), 16);
        a = ip::address_v6(b);
    } else if (bytes.size() >= 4) {
        ip::address_v4::bytes_type b{};
        std::memcpy(b.data(), bytes.data(), 4);
        a = ip::address_v4(b);
    } else {
        return;
    }
    const auto c = cb::classify(a);
    FUZZ_CHECK(!cb::to_string(c).empty(), "every class has a name");
    if (a.is_v6() && a.to_v6().is_v4_mapped()) {
        const auto v4 = ip::make_address_v4(ip::v4_mapped, a.to_v6());
        FUZZ_CHECK(cb::classify(v4) == c, "an IPv4-mapped address classifies as its IPv4");
    }
    if (a.is_v4()) {
        FUZZ_CHECK(cb::classify(ip::make_address_v6(ip::v4_mapped, a.to_v4())) == c,
                   "an IPv4 address classifies as its IPv4-mapped form");
    }
    FUZZ_CHECK(cb::classify(ip::make_address(a.to_string())) == c,
               "the text form classifies as the address");

    cb::address_policy p;
    p.allow_loopback = flags & 1;
    p.allow_private = flags & 2;
    p.allow_link_local = flags & 4;
    bool expected = false;
    switch (c) {
    case cb::address_class::global:
        expected = true;
        break;
    case cb::address_class::loopback:
        expected = p.allow_loopback;
        break;
    case cb::address_class::private_network:
        expected = p.allow_private;
        break;
    case cb::address_class::link_local:
        expected = p.allow_link_local;
        break;
    case cb::address_class::unspecified:
    case cb::address_class::multicast:
    case cb::address_class::reserved:
        expected = false;
        break;
    }
    FUZZ_CHECK(p.allows(a) == expected, "allows() follows the address's class and the flags");
}

void fuzz_hosts(std::string_view text) {
    std::vector<std::string> lines;
    std::size_t at = 0;
    for (;;) {
        const auto nl = text.find('\n', at);
        lines.emplace_back(text.substr(at, nl == std::string_view::npos ? nl : nl - at));
        if (nl == std::string_view::npos) {
            break;
        }
        at = nl + 1;
    }
    const std::string host = lines.back();
    lines.pop_back();
    cb::address_policy open;
    FUZZ_CHECK(open.allows_host(host), "no allowed_hosts allows every host");
    cb::address_policy p;
    p.allowed_hosts = lines;
    const bool allowed = p.allows_host(host);
    std::string lower = host;
    std::transform(lower.begin(), lower.end(), lower.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    bool listed = false;
    bool only_wildcard_of_itself = !lines.empty();
    for (const auto& l : lines) {
        std::string ll = l;
        std::transform(ll.begin(), ll.end(), ll.begin(),
                       [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
        listed = listed || ll == lower;
        if (!(ll.size() == lower.size() + 2 && ll.starts_with("*.") && ll.substr(2) == lower)) {
            only_wildcard_of_itself = false;
        }
    }
    if (listed) {
        FUZZ_CHECK(allowed, "a listed host is allowed, whatever its case");
    }
    if (only_wildcard_of_itself) {
        FUZZ_CHECK(!allowed, "*.example.com does not allow example.com");
    }
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size < 2) {
        return 0;
    }
    const std::string_view rest(reinterpret_cast<const char*>(data + 2), size - 2);
    switch (data[0] % 3) {
    case 0:
        fuzz_url(rest, data[1] == 0 ? 2048 : std::size_t{data[1]} * 8);
        break;
    case 1:
        fuzz_address(rest, data[1]);
        break;
    default:
        fuzz_hosts(std::string_view(reinterpret_cast<const char*>(data + 1), size - 1));
        break;
    }
    return 0;
}
