//
// test/server/support/signature_check.hpp
//
// What a receiver of timewheeld's callbacks does to check Timewheel-Signature, written
// from docs/server.md ("The signature") with OpenSSL's HMAC directly, not with the
// service's own code: `t=<unix seconds>,v1=<hex HMAC-SHA256(secret, "<t>.<body>")>`.
//
#ifndef TIMEWHEEL_TEST_SERVER_SUPPORT_SIGNATURE_CHECK_HPP
#define TIMEWHEEL_TEST_SERVER_SUPPORT_SIGNATURE_CHECK_HPP

#include <openssl/evp.h>
#include <openssl/hmac.h>

#include <optional>
#include <string>
#include <string_view>

namespace timewheel::test_support {

/// The parts of a Timewheel-Signature header.
struct signature_parts {
    std::string t;
    std::string v1;
};

/// Splits "t=...,v1=..." (nothing when either is missing).
inline std::optional<signature_parts> split_signature(std::string_view header) {
    signature_parts p;
    while (!header.empty()) {
        const auto comma = header.find(',');
        const auto item = header.substr(0, comma);
        header = comma == std::string_view::npos ? std::string_view() : header.substr(comma + 1);
        if (item.starts_with("t=")) {
            p.t = item.substr(2);
        } else if (item.starts_with("v1=")) {
            p.v1 = item.substr(3);
        }
    }
    if (p.t.empty() || p.v1.empty()) {
        return std::nullopt;
    }
    return p;
}

/// Lower-case hex of HMAC-SHA256(secret, "<t>.<body>").
inline std::string expected_signature(std::string_view secret, std::string_view t,
                                      std::string_view body) {
    const std::string message = std::string(t) + "." + std::string(body);
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

/// Whether `header` signs `body` with `secret`.
inline bool signature_matches(std::string_view header, std::string_view secret,
                              std::string_view body) {
    const auto p = split_signature(header);
    return p && p->v1 == expected_signature(secret, p->t, body);
}

} // namespace timewheel::test_support

#endif // TIMEWHEEL_TEST_SERVER_SUPPORT_SIGNATURE_CHECK_HPP
