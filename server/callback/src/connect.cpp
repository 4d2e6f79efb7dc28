//
// server/callback/src/connect.cpp
//
// Opening a connection for a call: the host resolved, the SSRF check made on the addresses
// themselves (a name cannot smuggle a refused address past it), the connect bounded by
// connect_timeout, then TLS with the host name verified and sent as SNI. Every wait is one
// the call's deadline, its cancellation or close() can interrupt (call_op::abort()).
//
#include "call.hpp"

#include <boost/asio/redirect_error.hpp>
#include <boost/asio/ssl/error.hpp>
#include <boost/asio/ssl/host_name_verification.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <openssl/ssl.h>

namespace timewheeld::callback::detail {

namespace {

bool verify_failure(const error_code& ec) {
    return ec.category() == net::error::get_ssl_category() &&
           ERR_GET_REASON(static_cast<unsigned long>(ec.value())) ==
               SSL_R_CERTIFICATE_VERIFY_FAILED;
}

} // namespace

net::awaitable<std::unique_ptr<connection>> open_connection(state_ptr st, call_op& op, const url& u,
                                                            outcome& failure) {
    error_code ec;
    tcp::resolver resolver(st->ex);
    op.phase = "resolving the host";
    op.resolver = &resolver;
    auto results = co_await resolver.async_resolve(u.host, std::to_string(u.port),
                                                   net::redirect_error(net::use_awaitable, ec));
    op.resolver = nullptr;
    if (op.stopped()) {
        failure = stopped_outcome(op);
        co_return nullptr;
    }
    if (ec) {
        failure =
            make_outcome(ec, verdict::retry, "cannot resolve \"" + u.host + "\": " + ec.message());
        co_return nullptr;
    }
    // The SSRF check, on the addresses themselves: only those the policy allows are tried.
    std::vector<tcp::endpoint> allowed;
    std::string refused;
    for (const auto& r : results) {
        auto a = r.endpoint().address();
        if (st->opt.policy.allows(a)) {
            allowed.push_back(r.endpoint());
        } else {
            if (!refused.empty())
                refused += ", ";
            refused += a.to_string() + " (" + std::string(to_string(classify(a))) + ")";
        }
    }
    if (allowed.empty()) {
        ++st->stats.refused;
        failure = make_outcome(error::address_refused, verdict::fail,
                               "\"" + u.host + "\" resolves to refused addresses only: " + refused +
                                   "; nothing was sent (see the SSRF settings)");
        co_return nullptr;
    }

    auto c = std::make_unique<connection>();
    if (u.https) {
        c->tls.emplace(st->ex, st->tls);
        if (st->opt.verify_certificates) {
            c->tls->set_verify_mode(ssl::verify_peer);
            c->tls->set_verify_callback(ssl::host_name_verification(u.host));
        } else {
            c->tls->set_verify_mode(ssl::verify_none);
        }
        boost::system::error_code aec;
        net::ip::make_address(u.host, aec);
        // SNI carries names only (RFC 6066 3).
        if (aec && !SSL_set_tlsext_host_name(c->tls->native_handle(), u.host.c_str())) {
            failure = make_outcome(
                error_code(static_cast<int>(::ERR_get_error()), net::error::get_ssl_category()),
                verdict::fail, "cannot set the TLS server name");
            co_return nullptr;
        }
    } else {
        c->plain.emplace(st->ex);
    }

    op.phase = "connecting";
    op.conn = c.get();
    auto& stream = c->tcp();
    stream.expires_after(st->opt.connect_timeout);
    ++st->stats.connects;
    co_await stream.async_connect(allowed, net::redirect_error(net::use_awaitable, ec));
    stream.expires_never();
    if (op.stopped()) {
        failure = stopped_outcome(op);
        co_return nullptr;
    }
    if (ec == beast::error::timeout) {
        failure = make_outcome(error::connect_timeout, verdict::retry,
                               "no connection to " + u.origin() + " within " +
                                   std::to_string(st->opt.connect_timeout.count()) + " ms");
        co_return nullptr;
    }
    if (ec) {
        failure = make_outcome(ec, verdict::retry,
                               "cannot connect to " + u.origin() + ": " + ec.message());
        co_return nullptr;
    }
    if (c->plain) {
        c->socket.emplace(c->plain->release_socket());
        c->plain.reset();
    }
    if (c->tls) {
        op.phase = "in the TLS handshake";
        co_await c->tls->async_handshake(ssl::stream_base::client,
                                         net::redirect_error(net::use_awaitable, ec));
        if (op.stopped()) {
            failure = stopped_outcome(op);
            co_return nullptr;
        }
        if (ec) {
            if (verify_failure(ec))
                failure = make_outcome(error::tls_verify_failed, verdict::fail,
                                       "TLS certificate of " + u.origin() +
                                           " not trusted: " + ec.message());
            else
                failure =
                    make_outcome(ec, verdict::retry,
                                 "TLS handshake with " + u.origin() + " failed: " + ec.message());
            co_return nullptr;
        }
    }
    co_return c;
}

} // namespace timewheeld::callback::detail
