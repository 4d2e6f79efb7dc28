//
// timewheeld/callback/retry_after.hpp
//
// The Retry-After header (RFC 9110 10.2.3): either a number of seconds or an HTTP-date
// (IMF-fixdate, "Sun, 06 Nov 1994 08:49:37 GMT"; the obsolete RFC 850 and asctime forms too).
//

#ifndef TIMEWHEELD_CALLBACK_RETRY_AFTER_HPP
#define TIMEWHEELD_CALLBACK_RETRY_AFTER_HPP

#include <chrono>
#include <optional>
#include <string_view>

namespace timewheeld::callback {

/// How long to wait, counted from `now`; a date in the past gives 0. Returns nothing when
/// `value` is neither form (a sender's bad header is ignored, not an error).
std::optional<std::chrono::seconds> parse_retry_after(std::string_view value,
                                                      std::chrono::system_clock::time_point now);

} // namespace timewheeld::callback

#endif
