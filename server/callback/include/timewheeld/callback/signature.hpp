//
// timewheeld/callback/signature.hpp
//
// The signature of a callback, so that its receiver can tell that it comes from us and is
// not a replay. With a shared secret configured, each request carries
//
//     Timewheel-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256(secret, "<t>.<body>")>
//
// (lower-case hex, 64 digits; the body is the exact bytes sent). A receiver recomputes the
// HMAC over its own reading of t and the raw body, compares in constant time, and refuses a
// t too far from its clock (5 minutes is usual). Several v1= entries may appear in a later
// version (secret rotation): a receiver accepts if any matches.
//

#ifndef TIMEWHEELD_CALLBACK_SIGNATURE_HPP
#define TIMEWHEELD_CALLBACK_SIGNATURE_HPP

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>

namespace timewheeld::callback {

/// The header's name.
inline constexpr std::string_view signature_header = "Timewheel-Signature";

/// The header's value for `body` signed at `unix_seconds`.
std::string sign(std::string_view secret, std::int64_t unix_seconds, std::string_view body);

/// What a receiver does: true when `header` is well formed, one of its v1 entries matches
/// and its t is within `tolerance` of `now`.
bool verify_signature(std::string_view header, std::string_view secret, std::string_view body,
                      std::chrono::system_clock::time_point now,
                      std::chrono::seconds tolerance = std::chrono::minutes(5));

} // namespace timewheeld::callback

#endif
