//
// fuzz/check.hpp
//
// What the fuzz targets share: FUZZ_CHECK, an assertion that holds in every build (NDEBUG
// included) and stops the run with the broken invariant, and checks of text that every
// answer must pass.
//
#ifndef TIMEWHEEL_FUZZ_CHECK_HPP
#define TIMEWHEEL_FUZZ_CHECK_HPP

#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <string_view>

#define FUZZ_CHECK(cond, what)                                                                     \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            std::fprintf(stderr, "%s:%d: invariant broken: %s (%s)\n", __FILE__, __LINE__, what,   \
                         #cond);                                                                   \
            std::abort();                                                                          \
        }                                                                                          \
    } while (false)

namespace timewheel::fuzz {

/// Whether `s` is well-formed UTF-8 (RFC 3629: no overlongs, no surrogates, at most U+10FFFF).
inline bool valid_utf8(std::string_view s) noexcept {
    std::size_t i = 0;
    const auto byte = [&](std::size_t k) { return static_cast<unsigned char>(s[k]); };
    while (i < s.size()) {
        const unsigned c = byte(i);
        std::size_t n = 0;
        unsigned lo = 0x80, hi = 0xBF;
        if (c < 0x80) {
            ++i;
            continue;
        } else if (c >= 0xC2 && c <= 0xDF) {
            n = 1;
        } else if (c >= 0xE0 && c <= 0xEF) {
            n = 2;
            lo = c == 0xE0 ? 0xA0 : 0x80;
            hi = c == 0xED ? 0x9F : 0xBF;
        } else if (c >= 0xF0 && c <= 0xF4) {
            n = 3;
            lo = c == 0xF0 ? 0x90 : 0x80;
            hi = c == 0xF4 ? 0x8F : 0xBF;
        } else {
            return false;
        }
        if (i + n >= s.size()) { // truncated sequence
            return false;
        }
        if (byte(i + 1) < lo || byte(i + 1) > hi) {
            return false;
        }
        for (std::size_t k = 2; k <= n; ++k) {
            if (byte(i + k) < 0x80 || byte(i + k) > 0xBF) {
                return false;
            }
        }
        i += n + 1;
    }
    return true;
}

} // namespace timewheel::fuzz

#endif // TIMEWHEEL_FUZZ_CHECK_HPP
