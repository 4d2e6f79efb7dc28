//
// timewheeld/callback/url.hpp
//
// The callback URL, taken apart: scheme, host, port and request target. Only what a callback
// needs is accepted: http or https, a host name or an IP literal ([v6] in brackets), an
// optional port, a path and a query. User info ("user:pass@") is refused, because it is
// a classic way to make a URL look like it goes elsewhere; fragments are dropped.
//

#ifndef TIMEWHEELD_CALLBACK_URL_HPP
#define TIMEWHEELD_CALLBACK_URL_HPP

#include <boost/system/error_code.hpp>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace timewheeld::callback {

struct url {
    bool https = false;
    std::string host;      ///< lower-case; an IPv6 literal without its brackets
    std::uint16_t port{0}; ///< the scheme's default when the URL has none
    std::string target;    ///< path and query, "/" when the URL has none

    /// The key of the connection pool: "https://host:port".
    std::string origin() const;
    /// The Host header: the host, with the port when it is not the scheme's default.
    std::string host_header() const;
};

/// Parses `text`. On failure returns false, sets `ec` (error::bad_url, url_too_long or
/// scheme_not_allowed) and `why` to a sentence naming what was wrong.
bool parse_url(std::string_view text, std::size_t max_length, url& out,
               boost::system::error_code& ec, std::string& why);

} // namespace timewheeld::callback

#endif
