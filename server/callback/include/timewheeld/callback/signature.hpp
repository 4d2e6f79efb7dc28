//
// timewheeld/callback/signature.hpp
//
// The signature of a callback, so that its receiver can tell that it comes from us, for it,
// and is not a replay. With shared secrets configured, each request carries
//
//     Timewheel-Signature: t=<unix seconds>,v2=<hex HMAC-SHA256(secret, canonical)>[,v2=...]
//
// one v2 entry per secret in force (several during a rotation: a receiver accepts if any
// matches), lower-case hex, 64 digits. The canonical text of scheme v2 is six lines joined
// by "\n" (no "\n" after the last):
//
//     <t>                  the decimal unix seconds of the t= entry
//     <method>             "POST", as sent
//     <url>                the callback's url exactly as the task gave it
//     <idempotency key>    the Idempotency-Key header: the task id
//     <attempt>            the Timewheel-Attempt header, decimal
//     <body>               the exact bytes sent (may hold "\n": it is last)
//
// None of the first five can hold "\n" (the URL, the id and the method are refused with
// control characters), so the lines cannot be confused. A receiver recomputes the HMAC over
// the URL it was registered with and the headers and body it got, compares in constant time,
// and refuses a t too far from its clock (5 minutes is usual): a signature made for one URL,
// task or attempt does not verify for another, and an old one is a replay.
//
// Scheme v1 (t and the body only, "<t>.<body>") lets anyone who may submit tasks make the
// service sign a body of their choosing for any receiver; it is sent only on request, next
// to v2, while receivers move to v2 (client_options::signature_v1).
//

#ifndef TIMEWHEELD_CALLBACK_SIGNATURE_HPP
#define TIMEWHEELD_CALLBACK_SIGNATURE_HPP

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace timewheeld::callback {

/// The header's name.
inline constexpr std::string_view signature_header = "Timewheel-Signature";

/// What a v2 signature covers.
struct signed_request {
    std::string_view method;
    std::string_view url;
    std::string_view idempotency_key;
    std::uint32_t attempt = 1;
    std::string_view body;
};

/// The canonical text of scheme v2 (see the top of this file).
std::string canonical_v2(std::int64_t unix_seconds, const signed_request& r);

/// The header's value: t, then one v2 entry per secret (in order), then, when `with_v1`,
/// one v1 entry per secret.
std::string sign(const std::vector<std::string>& secrets, std::int64_t unix_seconds,
                 const signed_request& r, bool with_v1 = false);

/// What a receiver does: true when `header` is well formed, one of its v2 entries is the
/// HMAC of `r` with `secret`, and its t is within `tolerance` of `now`. v1 entries are
/// ignored.
bool verify_signature(std::string_view header, std::string_view secret, const signed_request& r,
                      std::chrono::system_clock::time_point now,
                      std::chrono::seconds tolerance = std::chrono::minutes(5));

} // namespace timewheeld::callback

#endif
