//
// timewheeld/callback/address_policy.hpp
//
// SSRF safety: which addresses a callback may connect to. A scheduler that calls any URL it
// is given is a way into the network it runs in, so the client checks the address it is
// about to connect to (after DNS resolution, so a public name that resolves to 10.0.0.1 or
// to 169.254.169.254 is caught, and so is DNS rebinding) against these ranges:
//
//   class        IPv4                                  IPv6              allowed by
//   loopback     127/8                                 ::1               allow_loopback
//   private      10/8, 172.16/12, 192.168/16, 100.64/10 fc00::/7         allow_private
//   link-local   169.254/16 (incl. cloud metadata)     fe80::/10         allow_link_local
//   unspecified  0/8                                   ::                never
//   multicast    224/4                                 ff00::/8          never
//   reserved     240/4 (incl. 255.255.255.255)         -                 never
//
// IPv6 addresses that carry an IPv4 address are judged as that IPv4 address: IPv4-mapped
// (::ffff:a.b.c.d), IPv4-compatible (::a.b.c.d), NAT64 (64:ff9b::/96, and the local-use
// 64:ff9b:1::/48 in its /96 form, the IPv4 address in the last 32 bits; any other address
// of the local-use prefix is private) and 6to4 (2002::/16, the IPv4 address in bits
// 16-47): 64:ff9b::7f00:1 and 2002:7f00:1:: are loopback.
//

#ifndef TIMEWHEELD_CALLBACK_ADDRESS_POLICY_HPP
#define TIMEWHEELD_CALLBACK_ADDRESS_POLICY_HPP

#include <boost/asio/ip/address.hpp>

#include <string>
#include <string_view>
#include <vector>

namespace timewheeld::callback {

enum class address_class {
    global,
    loopback,
    private_network,
    link_local,
    unspecified,
    multicast,
    reserved,
};

/// What `a` is; IPv6 addresses that carry an IPv4 address are judged as that address.
address_class classify(const boost::asio::ip::address& a) noexcept;

/// "loopback", "private", "link-local", ... (for error texts).
std::string_view to_string(address_class c) noexcept;

struct address_policy {
    bool allow_loopback = false;
    bool allow_private = false;
    bool allow_link_local = false;
    /// When not empty, only these host names (case-insensitive, exact; "*.example.com"
    /// matches any subdomain of example.com, not example.com itself) may be called. The
    /// address checks above still apply to them.
    std::vector<std::string> allowed_hosts;

    /// Whether a connection to `a` is allowed.
    bool allows(const boost::asio::ip::address& a) const noexcept;
    /// Whether `host` (lower-case, as in url::host) passes allowed_hosts.
    bool allows_host(std::string_view host) const noexcept;
};

} // namespace timewheeld::callback

#endif
