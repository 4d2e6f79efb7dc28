#include <timewheeld/callback/error.hpp>

#include <string>

namespace timewheeld::callback {

namespace {
class category final : public boost::system::error_category {
public:
    const char* name() const noexcept override { return "timewheeld.callback"; }
    std::string message(int ev) const override {
        switch (static_cast<error>(ev)) {
        case error::bad_url:
            return "bad callback URL";
        case error::url_too_long:
            return "callback URL too long";
        case error::scheme_not_allowed:
            return "callback URL scheme not allowed";
        case error::host_not_allowed:
            return "host not on the allow-list";
        case error::address_refused:
            return "address refused by the SSRF policy";
        case error::redirect_refused:
            return "redirect refused (redirects are not followed)";
        case error::connect_timeout:
            return "connect timeout";
        case error::timeout:
            return "callback timeout";
        case error::rate_limited:
            return "host rate limit reached";
        case error::host_backing_off:
            return "host backing off after 429";
        case error::tls_verify_failed:
            return "TLS certificate not trusted";
        case error::client_closed:
            return "callback client closed";
        case error::bad_header:
            return "bad callback header";
        case error::too_many_interim:
            return "too many interim (1xx) answers";
        }
        return "unknown callback error";
    }
};
} // namespace

const boost::system::error_category& error_category() noexcept {
    static const category c;
    return c;
}

} // namespace timewheeld::callback
