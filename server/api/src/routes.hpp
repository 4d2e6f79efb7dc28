//
// server/api/src/routes.hpp
//
// The endpoints of the API: a parsed request in, an answer out, on the store of the
// calling thread. server.cpp reads and writes the HTTP; this file knows what it means.
//
#ifndef TIMEWHEELD_API_SRC_ROUTES_HPP
#define TIMEWHEELD_API_SRC_ROUTES_HPP

#include <timewheeld/service/log.hpp>
#include <timewheeld/service/metrics.hpp>
#include <timewheeld/service/result_sink.hpp>
#include <timewheeld/service/settings.hpp>

#include <timewheel/dq/queue.hpp>

#include <boost/asio/awaitable.hpp>
#include <boost/beast/http/message.hpp>
#include <boost/beast/http/string_body.hpp>

#include <string_view>

namespace timewheeld::api::detail {

namespace http = boost::beast::http;
using request = http::request<http::string_body>;
using response = http::response<http::string_body>;

/// What the endpoints of one thread use.
struct api_context {
    timewheel::dq::queue& queue;
    service::service_metrics& metrics;
    const service::settings& cfg;
    service::result_sink* sink;
    service::logger& log;
};

/// An answer, and the route it was given on (the metrics' label: "GET /v1/tasks/{id}").
struct routed {
    response res;
    std::string_view route;
};

/// Answers one request (authorization included).
boost::asio::awaitable<routed> handle(api_context& ctx, const request& req);

/// An error answer with the JSON body of error_body().
response error_response(http::status status, std::string_view code, std::string_view message,
                        std::string_view field = {});

/// Whether `given` equals `expected`, in a time that depends on the length of `given` only.
bool constant_time_equal(std::string_view given, std::string_view expected) noexcept;

} // namespace timewheeld::api::detail

#endif // TIMEWHEELD_API_SRC_ROUTES_HPP
