#include <timewheeld/callback/signature.hpp>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include <charconv>
#include <optional>
#include <stdexcept>

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
} // namespace

std::string canonical_v2(std::int64_t t, const signed_request& r) {
    std::string s = std::to_string(t);
    s.reserve(s.size() + r.method.size() + r.url.size() + r.idempotency_key.size() + r.body.size() +
              16);
    for (std::string_view line : {r.method, r.url, r.idempotency_key}) {
        s += '\n';
        s.append(line);
    }
    s += '\n';
    s += std::to_string(r.attempt);
    s += '\n';
    s.append(r.body);
    return s;
}

std::string sign(const std::vector<std::string>& secrets, std::int64_t t, const signed_request& r,
                 bool with_v1) {
    std::string header = "t=" + std::to_string(t);
    const auto text = canonical_v2(t, r);
    for (const auto& secret : secrets)
        header += ",v2=" + hmac_hex(secret, text);
    if (with_v1) {
        std::string v1 = std::to_string(t) + ".";
        v1.append(r.body);
        for (const auto& secret : secrets)
            header += ",v1=" + hmac_hex(secret, v1);
    }
    return header;
}

bool verify_signature(std::string_view header, std::string_view secret, const signed_request& r,
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
        } else if (item.starts_with("v2=")) {
            candidates.push_back(item.substr(3));
        }
    }
    if (!t || candidates.empty())
        return false;
    // In seconds: a t far from now (a forged header) must not overflow a time_point.
    const auto now_s =
        std::chrono::duration_cast<std::chrono::seconds>(now.time_since_epoch()).count();
    const auto skew = *t > now_s
                          ? static_cast<std::uint64_t>(*t) - static_cast<std::uint64_t>(now_s)
                          : static_cast<std::uint64_t>(now_s) - static_cast<std::uint64_t>(*t);
    if (skew > static_cast<std::uint64_t>(tolerance.count()))
        return false;
    auto expected = hmac_hex(secret, canonical_v2(*t, r));
    for (auto c : candidates)
        if (c.size() == expected.size() && CRYPTO_memcmp(c.data(), expected.data(), c.size()) == 0)
            return true;
    return false;
}

} // namespace timewheeld::callback
