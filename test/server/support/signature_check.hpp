//
// test/server/support/signature_check.hpp
//
// What a receiver of timewheeld's callbacks does to check Timewheel-Signature, written
// from docs/server.md ("The signature") with OpenSSL's HMAC directly, not with the
// service's own code:
//
//   t=<unix seconds>,v2=<hex HMAC-SHA256(secret, canonical)>[,v2=...][,v1=...]
//   canonical = t "\n" method "\n" url "\n" Idempotency-Key "\n" Timewheel-Attempt "\n" body
//
#ifndef TIMEWHEEL_TEST_SERVER_SUPPORT_SIGNATURE_CHECK_HPP
#define TIMEWHEEL_TEST_SERVER_SUPPORT_SIGNATURE_CHECK_HPP

#include <test/server/support/sink.hpp>

#include <openssl/evp.h>
#include <openssl/hmac.h>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace timewheel::test {

/// The parts of a Timewheel-Signature header.
struct signature_parts {
    std::string t;
    std::vector<std::string> v2;
    std::vector<std::string> v1;
};

/// Splits "t=...,v2=...,..." (nothing when t or every v2 is missing).
inline std::optional<signature_parts> split_signature(std::string_view header) {
    signature_parts p;
    while (!header.empty()) {
        const auto comma = header.find(',');
        const auto item = header.substr(0, comma);
        header = comma == std::string_view::npos ? std::string_view() : header.substr(comma + 1);
        if (item.starts_with("t=")) {
            p.t = item.substr(2);
        } else if (item.starts_with("v2=")) {
            p.v2.emplace_back(item.substr(3));
        } else if (item.starts_with("v1=")) {
            p.v1.emplace_back(item.substr(3));
        }
    }
    if (p.t.empty() || p.v2.empty()) {
        return std::nullopt;
    }
    return p;
}

/// Lower-case hex of HMAC-SHA256(secret, message).
inline std::string hmac_sha256_hex(std::string_view secret, std::string_view message) {
    unsigned char mac[EVP_MAX_MD_SIZE];
    unsigned int len = 0;
    HMAC(EVP_sha256(), secret.data(), static_cast<int>(secret.size()),
         reinterpret_cast<const unsigned char*>(message.data()), message.size(), mac, &len);
    static constexpr char digits[] = "0123456789abcdef";
    std::string hex;
    for (unsigned int i = 0; i < len; ++i) {
        hex += digits[mac[i] >> 4];
        hex += digits[mac[i] & 0xf];
    }
    return hex;
}

/// The v2 HMAC a receiver expects for a request it got at `url` (the URL it registered).
inline std::string expected_v2(std::string_view secret, std::string_view t,
                               const timewheel::test::recorded_request& r, std::string_view url) {
    const std::string message = std::string(t) + "\n" + r.method + "\n" + std::string(url) + "\n" +
                                r.header("Idempotency-Key").value_or("") + "\n" +
                                r.header("Timewheel-Attempt").value_or("") + "\n" + r.body;
    return hmac_sha256_hex(secret, message);
}

/// Whether the request's Timewheel-Signature has a v2 entry that `secret` made for it, as
/// received at `url`.
inline bool signature_matches(const timewheel::test::recorded_request& r, std::string_view secret,
                              std::string_view url) {
    const auto header = r.header("Timewheel-Signature");
    const auto p = header ? split_signature(*header) : std::nullopt;
    if (!p) {
        return false;
    }
    const auto expected = expected_v2(secret, p->t, r, url);
    for (const auto& v : p->v2) {
        if (v == expected) {
            return true;
        }
    }
    return false;
}

} // namespace timewheel::test

#endif // TIMEWHEEL_TEST_SERVER_SUPPORT_SIGNATURE_CHECK_HPP
