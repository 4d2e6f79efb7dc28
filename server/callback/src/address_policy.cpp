#include <timewheeld/callback/address_policy.hpp>

#include <algorithm>
#include <cctype>

namespace timewheeld::callback {

namespace {
bool in(std::uint32_t a, std::uint32_t net, int bits) {
    return (a >> (32 - bits)) == (net >> (32 - bits));
}

address_class classify_v4(const boost::asio::ip::address_v4& v4) noexcept {
    auto a = v4.to_uint();
    if (in(a, 0x7f000000, 8))
        return address_class::loopback;
    if (in(a, 0x00000000, 8))
        return address_class::unspecified;
    if (in(a, 0x0a000000, 8) || in(a, 0xac100000, 12) || in(a, 0xc0a80000, 16) ||
        in(a, 0x64400000, 10))
        return address_class::private_network;
    if (in(a, 0xa9fe0000, 16))
        return address_class::link_local;
    if (in(a, 0xe0000000, 4))
        return address_class::multicast;
    if (in(a, 0xf0000000, 4))
        return address_class::reserved;
    return address_class::global;
}
} // namespace

address_class classify(const boost::asio::ip::address& a) noexcept {
    if (a.is_v4())
        return classify_v4(a.to_v4());
    auto v6 = a.to_v6();
    if (v6.is_loopback())
        return address_class::loopback;
    if (v6.is_unspecified())
        return address_class::unspecified;
    if (v6.is_multicast())
        return address_class::multicast;
    auto b = v6.to_bytes();
    // Addresses that carry an IPv4 address, which a translator, a relay or the host's own
    // stack delivers to: judged as that address. IPv4-mapped ::ffff:a.b.c.d, the deprecated
    // IPv4-compatible ::a.b.c.d, NAT64 64:ff9b::a.b.c.d (RFC 6052) and the local-use NAT64
    // prefix 64:ff9b:1::/48 (RFC 8215, the IPv4 address in the last 32 bits as with a /96),
    // and 6to4 2002:AABB:CCDD::/48 (RFC 3056, the IPv4 address in bytes 2-5).
    auto v4_at = [&](std::size_t i) {
        return boost::asio::ip::address_v4(
            boost::asio::ip::address_v4::bytes_type{b[i], b[i + 1], b[i + 2], b[i + 3]});
    };
    auto zeros = [&](std::size_t from, std::size_t to) {
        return std::all_of(b.begin() + from, b.begin() + to,
                           [](unsigned char x) { return x == 0; });
    };
    if (zeros(0, 10) && b[10] == 0xff && b[11] == 0xff)
        return classify_v4(v4_at(12)); // IPv4-mapped
    if (zeros(0, 12))
        return classify_v4(v4_at(12)); // IPv4-compatible (:: and ::1 are above)
    if (b[0] == 0x00 && b[1] == 0x64 && b[2] == 0xff && b[3] == 0x9b) {
        if (zeros(4, 12))
            return classify_v4(v4_at(12)); // NAT64, the well-known /96
        if (b[4] == 0x00 && b[5] == 0x01) {
            // The local-use prefix: a network may carve it into a /96 (the IPv4 address
            // last) or use a shorter prefix, which puts the address elsewhere (RFC 6052 2.2):
            // only the /96 form can be read with certainty; any other is a local network.
            return zeros(6, 12) ? classify_v4(v4_at(12)) : address_class::private_network;
        }
    }
    if (b[0] == 0x20 && b[1] == 0x02)
        return classify_v4(v4_at(2)); // 6to4
    if ((b[0] & 0xfe) == 0xfc)
        return address_class::private_network;
    if (b[0] == 0xfe && (b[1] & 0xc0) == 0x80)
        return address_class::link_local;
    return address_class::global;
}

std::string_view to_string(address_class c) noexcept {
    switch (c) {
    case address_class::global:
        return "global";
    case address_class::loopback:
        return "loopback";
    case address_class::private_network:
        return "private";
    case address_class::link_local:
        return "link-local";
    case address_class::unspecified:
        return "unspecified";
    case address_class::multicast:
        return "multicast";
    case address_class::reserved:
        return "reserved";
    }
    return "unknown";
}

bool address_policy::allows(const boost::asio::ip::address& a) const noexcept {
    switch (classify(a)) {
    case address_class::global:
        return true;
    case address_class::loopback:
        return allow_loopback;
    case address_class::private_network:
        return allow_private;
    case address_class::link_local:
        return allow_link_local;
    default:
        return false;
    }
}

bool address_policy::allows_host(std::string_view host) const noexcept {
    if (allowed_hosts.empty())
        return true;
    auto iequal = [](std::string_view x, std::string_view y) {
        return x.size() == y.size() &&
               std::equal(x.begin(), x.end(), y.begin(), [](char p, char q) {
                   return std::tolower(static_cast<unsigned char>(p)) ==
                          std::tolower(static_cast<unsigned char>(q));
               });
    };
    return std::any_of(allowed_hosts.begin(), allowed_hosts.end(), [&](const std::string& h) {
        std::string_view pattern(h);
        if (pattern.starts_with("*.")) {
            auto suffix = pattern.substr(1); // ".example.com"
            return host.size() > suffix.size() &&
                   iequal(host.substr(host.size() - suffix.size()), suffix);
        }
        return iequal(host, pattern);
    });
}

} // namespace timewheeld::callback
