//
// timewheeld/callback/utf8.hpp
//
// Text that came from a network (a receiver's Location header, an error it caused) or from
// a store that kept it, made fit to show in JSON: valid UTF-8, at most a given length.
//
//     valid_utf8("caf\xc3\xa9 \xff")   == "café \uFFFD" (in UTF-8)
//     valid_utf8("caf\xc3\xa9", 4)     == "caf"          (never half a code point)
//
// Every ill-formed sequence (a stray continuation byte, a truncated sequence, an overlong
// form, a surrogate, a code point above U+10FFFF) becomes U+FFFD, one per maximal ill-formed
// subpart as Unicode recommends (W3C/WHATWG decoders do the same).
//

#ifndef TIMEWHEELD_CALLBACK_UTF8_HPP
#define TIMEWHEELD_CALLBACK_UTF8_HPP

#include <cstddef>
#include <limits>
#include <string>
#include <string_view>

namespace timewheeld::callback {

/// `text` as valid UTF-8, cut on a code point boundary to at most `max_bytes` bytes (of
/// the result, replacement characters included).
std::string valid_utf8(std::string_view text,
                       std::size_t max_bytes = std::numeric_limits<std::size_t>::max());

/// Whether `text` is valid UTF-8 already.
bool is_valid_utf8(std::string_view text) noexcept;

} // namespace timewheeld::callback

#endif
