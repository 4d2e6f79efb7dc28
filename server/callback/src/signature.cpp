#include <timewheeld/callback/signature.hpp>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include <charconv>
#include <optional>
#include <stdexcept>
#include <vector>

namespace timewheeld::callback {

namespace {
std::string hmac_hex(std::string_view secret, std::string_view message) {
    unsigned char mac[EVP_MAX_MD_SIZE];
    unsigned int len = 0;
    if (!HMAC(EVP_sha256(), secret.data(), static_cast<int>(secret.size()),
              reinterpret_cast<const unsigned char*>(message.data()), message.size(), mac, &len))
        throw std::runtime_error("HMAC-SHA256 failed (OpenSSL)");
    static const char digits[] = "0123456789abcdef";
    std::string hex(len * 2, '0');
    for (unsigned i = 0; i < len; ++i) {
        hex[2 * i] = digits[mac[i] >> 4];
        hex[2 * i + 1] = digits[mac[i] & 0xf];
    }
    return hex;
}

std::string signed_text(std::int64_t t, std::string_view body) {
    std::string s = std::to_string(t);
    s += '.';
    s.append(body);
    return s;
}
} // namespace

std::string sign(std::string_view secret, std::int64_t unix_seconds, std::string_view body) {
    return "t=" + std::to_string(unix_seconds) +
           ",v1=" + hmac_hex(secret, signed_text(unix_seconds, body));
}

bool verify_signature(std::string_view header, std::string_view secret, std::string_view body,
                      std::chrono::system_clock::time_point now, std::chrono::seconds tolerance) {
    std::optional<std::int64_t> t;
    std::vector<std::string_view> candidates;
    while (!header.empty()) {
        auto comma = header.find(',');
        auto item = header.substr(0, comma);
        header = comma == std::string_view::npos ? std::string_view{} : header.substr(comma + 1);
        if (item.starts_with("t=")) {
            std::int64_t v = 0;
            auto digits = item.substr(2);
            auto [p, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), v);
            if (ec != std::errc{} || p != digits.data() + digits.size() || t)
                return false;
            t = v;
        } else if (item.starts_with("v1=")) {
            candidates.push_back(item.substr(3));
        }
    }
    if (!t || candidates.empty())
        return false;
    auto at = std::chrono::system_clock::time_point(std::chrono::seconds(*t));
    auto skew = at > now ? at - now : now - at;
    if (skew > tolerance)
        return false;
    auto expected = hmac_hex(secret, signed_text(*t, body));
    for (auto c : candidates)
        if (c.size() == expected.size() && CRYPTO_memcmp(c.data(), expected.data(), c.size()) == 0)
            return true;
    return false;
}

} // namespace timewheeld::callback
