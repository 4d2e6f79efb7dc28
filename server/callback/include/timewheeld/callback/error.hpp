//
// timewheeld/callback/error.hpp
//
// The errors of the callback client that are not the network's own: a URL or an address the
// policy refuses, a redirect, a timeout, a host that asked us to back off. Network failures
// (connection refused, reset, TLS) keep their Asio/OpenSSL error codes.
//

#ifndef TIMEWHEELD_CALLBACK_ERROR_HPP
#define TIMEWHEELD_CALLBACK_ERROR_HPP

#include <boost/system/error_code.hpp>

#include <type_traits>

namespace timewheeld::callback {

enum class error {
    bad_url = 1,        ///< the URL does not parse (the result's error text says where)
    url_too_long,       ///< longer than client_options::max_url_length
    scheme_not_allowed, ///< not http or https
    host_not_allowed,   ///< not on client_options::allowed_hosts
    address_refused,    ///< every resolved address is in a refused range; nothing was sent
    redirect_refused,   ///< the host answered 3xx; redirects are never followed
    connect_timeout,    ///< no TCP connection within client_options::connect_timeout
    timeout,            ///< the call's total timeout ran out
    rate_limited,       ///< the host's rate limit has no slot before the deadline
    host_backing_off,   ///< the host answered 429 recently; its back-off has not ended
    tls_verify_failed,  ///< the host's certificate is not trusted (or names another host)
    client_closed,      ///< close() or the client's destructor ended the call
    bad_header,         ///< a header name that is not a token, or a value with CR, LF, NUL...
    too_many_interim,   ///< more 1xx answers before the final one than anyone sends
};

/// The category of timewheeld::callback::error ("timewheeld.callback").
const boost::system::error_category& error_category() noexcept;

inline boost::system::error_code make_error_code(error e) noexcept {
    return {static_cast<int>(e), error_category()};
}

} // namespace timewheeld::callback

template <>
struct boost::system::is_error_code_enum<timewheeld::callback::error> : std::true_type {};

#endif
