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
    if (v6.is_v4_mapped())
        return classify_v4(boost::asio::ip::make_address_v4(boost::asio::ip::v4_mapped, v6));
    if (v6.is_loopback())
        return address_class::loopback;
    if (v6.is_unspecified())
        return address_class::unspecified;
    if (v6.is_multicast())
        return address_class::multicast;
    auto b = v6.to_bytes();
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
