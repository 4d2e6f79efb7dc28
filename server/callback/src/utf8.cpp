#include <timewheeld/callback/utf8.hpp>

#include <algorithm>

namespace timewheeld::callback {

namespace {
// The length of the well-formed sequence at the start of `s` (Unicode Table 3-7), or 0
// when it is ill-formed; `bad` is then the length of its maximal ill-formed subpart.
std::size_t sequence(std::string_view s, std::size_t& bad) noexcept {
    const auto byte = [&](std::size_t i) { return static_cast<unsigned char>(s[i]); };
    const unsigned char b0 = byte(0);
    bad = 1;
    if (b0 < 0x80)
        return 1;
    std::size_t n = 0;
    unsigned char lo = 0x80, hi = 0xbf; // the second byte's range
    if (b0 >= 0xc2 && b0 <= 0xdf) {
        n = 2;
    } else if (b0 >= 0xe0 && b0 <= 0xef) {
        n = 3;
        if (b0 == 0xe0)
            lo = 0xa0; // no overlong forms
        else if (b0 == 0xed)
            hi = 0x9f; // no surrogates
    } else if (b0 >= 0xf0 && b0 <= 0xf4) {
        n = 4;
        if (b0 == 0xf0)
            lo = 0x90;
        else if (b0 == 0xf4)
            hi = 0x8f; // nothing above U+10FFFF
    } else {
        return 0;
    }
    for (std::size_t i = 1; i < n; ++i) {
        if (i >= s.size())
            return 0;
        const unsigned char b = byte(i);
        if (i == 1 ? (b < lo || b > hi) : (b < 0x80 || b > 0xbf))
            return 0;
        bad = i + 1;
    }
    return n;
}
} // namespace

std::string valid_utf8(std::string_view text, std::size_t max_bytes) {
    static constexpr std::string_view replacement = "\xef\xbf\xbd";
    std::string out;
    out.reserve(std::min(text.size(), max_bytes));
    while (!text.empty()) {
        std::size_t bad = 0;
        const std::size_t n = sequence(text, bad);
        const std::string_view piece = n ? text.substr(0, n) : replacement;
        if (out.size() + piece.size() > max_bytes)
            break;
        out += piece;
        text.remove_prefix(n ? n : bad);
    }
    return out;
}

bool is_valid_utf8(std::string_view text) noexcept {
    while (!text.empty()) {
        std::size_t bad = 0;
        const std::size_t n = sequence(text, bad);
        if (n == 0)
            return false;
        text.remove_prefix(n);
    }
    return true;
}

} // namespace timewheeld::callback
