//
// server/api/src/routes.hpp
//
// The endpoints of the API: a parsed request in, an answer out, on the store of the
// calling thread. server.cpp reads and writes the HTTP; the routes know what it means:
// routes.cpp checks every request and finds its endpoint, the endpoints live by resource
// (routes_tasks.cpp, routes_dead.cpp, routes_schedules.cpp, routes_queues.cpp,
// routes_probes.cpp), and the
// dashboard's files next to them (routes_ui.cpp). The second
// half of this header is what they share, private to these files.
//
#ifndef TIMEWHEELD_API_SRC_ROUTES_HPP
#define TIMEWHEELD_API_SRC_ROUTES_HPP

// GCC 12 at -O1 sees Asio's coroutine frames, allocated with aligned_alloc and released with
// the frame's own operator delete (which calls free), as a mismatch: a false positive.
// Here, for the route files that include this header first (a diagnostic pragma holds to
// the end of the file that includes it).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
#endif

#include "auth.hpp"

#include <timewheeld/service/log.hpp>
#include <timewheeld/service/metrics.hpp>
#include <timewheeld/service/node_stats.hpp>
#include <timewheeld/service/result_sink.hpp>
#include <timewheeld/service/settings.hpp>
#include <timewheeld/service/task_json.hpp>

#include <timewheel/dq/queue.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/http/message.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/json/object.hpp>
#include <boost/system/error_code.hpp>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

namespace timewheeld::api::detail {

namespace net = boost::asio;
namespace json = boost::json;
namespace dq = timewheel::dq;
namespace http = boost::beast::http;
using request = http::request<http::string_body>;
using response = http::response<http::string_body>;

/// When /metrics next reads the task counts from the store (steady clock, nanoseconds):
/// shared by the threads, so that a scrape storm costs one store read per
/// settings::metrics_store_interval, whichever thread the scrapes reach.
struct store_gauges_refresh {
    std::atomic<std::int64_t> next{0};
    /// GET /v1/stats' last counts, reused for a second (a Redis count is one script per
    /// shard, about 30 ms at 1M tasks: dashboards polling together cost one a second).
    std::mutex mutex;
    std::chrono::steady_clock::time_point counted_at{};
    std::optional<dq::task_counts> counts;
};

/// What the endpoints of one thread use.
struct api_context {
    timewheel::dq::queue& queue;
    service::service_metrics& metrics;
    const service::settings& cfg;
    service::result_sink* sink;
    service::logger& log;
    store_gauges_refresh& gauges;
    /// This node's callback figures (GET /v1/stats; all zero without a worker). Never null:
    /// the server passes its own empty one until set_node_stats() names the dispatchers'.
    const service::node_stats* stats;
    /// The tokens in force (never null).
    const token_watch* tokens;
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

// --- What the endpoints share (routes*.cpp) -----------------------------------------------

/// A store operation's completion as (error_code, results...) in a coroutine.
inline constexpr auto use_tuple = boost::asio::as_tuple(boost::asio::use_awaitable);

/// An answer with a JSON body.
response json_response(http::status status, std::string body);
response json_response(http::status status, const boost::json::object& o);

/// 503 store_unavailable, with Retry-After.
response store_unavailable(std::string_view message);

/// A failed store operation as an answer; `due_field` names the due time a refusal is about.
response store_error(const boost::system::error_code& ec, std::string_view due_field = "due_at");

/// 400 invalid_field naming the field.
response bad_field(const service::invalid_field& e);

/// Percent-decoding of a path segment or a query value ("+" is a space in a query only);
/// nothing when malformed.
std::optional<std::string> decode(std::string_view s, bool query);

/// The raw value of `name` in a query string (still percent-encoded).
std::optional<std::string_view> query_param(std::string_view query, std::string_view name);

/// Every parameter of a query string, names and values percent-decoded, in order; or the
/// 400 that names the one malformed.
std::variant<std::vector<std::pair<std::string, std::string>>, response>
query_params(std::string_view query);

/// `s` as one path segment, for a Location header: everything but RFC 3986's unreserved
/// characters percent-encoded ("a/b?c" is "a%2Fb%3Fc").
std::string encode_segment(std::string_view s);

/// A list's paging parameters.
struct page_params {
    std::string cursor;
    std::size_t limit = 100;
};

/// The cursor and limit of a list's query (API.md, "Lists"), or the 400 that refuses them.
std::variant<page_params, response> parse_page_params(std::string_view query);

/// Times one store operation into the store round-trip histogram.
class timed {
public:
    timed(api_context& ctx, std::string_view op)
        : hist_(ctx.metrics.store_round_trip(op))
        , start_(std::chrono::steady_clock::now()) {}
    ~timed() { hist_.observe(std::chrono::steady_clock::now() - start_); }
    timed(const timed&) = delete;
    timed& operator=(const timed&) = delete;

private:
    service::histogram& hist_;
    std::chrono::steady_clock::time_point start_;
};

// The endpoints, by resource. routes_tasks.cpp:
/// The task as JSON, read back from the store (one more round trip: the answer shows what
/// the store holds, not what was asked).
boost::asio::awaitable<response> task_answer(api_context& ctx, std::string id, http::status status);
boost::asio::awaitable<response> submit(api_context& ctx, const request& req);
boost::asio::awaitable<response> submit_batch(api_context& ctx, const request& req);
boost::asio::awaitable<response> cancel(api_context& ctx, std::string id);
boost::asio::awaitable<response> reschedule(api_context& ctx, std::string id, const request& req);
boost::asio::awaitable<response> report_result(api_context& ctx, std::string id,
                                               const request& req);
// routes_dead.cpp:
boost::asio::awaitable<response> list_dead(api_context& ctx, std::string_view query);
boost::asio::awaitable<response> retry_dead(api_context& ctx, std::string id, const request& req);
boost::asio::awaitable<response> delete_dead(api_context& ctx, std::string id);
// routes_schedules.cpp:
boost::asio::awaitable<response> schedule_answer(api_context& ctx, std::string id,
                                                 http::status status);
boost::asio::awaitable<response> create_schedule(api_context& ctx, const request& req);
boost::asio::awaitable<response> list_schedules(api_context& ctx, std::string_view query);
boost::asio::awaitable<response> change_schedule(api_context& ctx, std::string id,
                                                 const request& req);
boost::asio::awaitable<response> delete_schedule(api_context& ctx, std::string id);
boost::asio::awaitable<response> pause_schedule(api_context& ctx, std::string id, bool pause);
boost::asio::awaitable<response> trigger_schedule(api_context& ctx, std::string id);
boost::asio::awaitable<response> next_of_schedule(api_context& ctx, std::string id,
                                                  std::string_view query);
response preview_schedule(api_context& ctx, const request& req);
// routes_queues.cpp:
boost::asio::awaitable<response> queue_answer(api_context& ctx, std::string id,
                                              http::status status);
boost::asio::awaitable<response> create_queue(api_context& ctx, const request& req);
boost::asio::awaitable<response> list_queues(api_context& ctx, std::string_view query);
boost::asio::awaitable<response> change_queue(api_context& ctx, std::string id, const request& req);
boost::asio::awaitable<response> delete_queue(api_context& ctx, std::string id);
/// The settings of the queue a task names: 400 unknown_queue (field "queue") when it does
/// not exist (no implicit creation), the store's failure otherwise.
boost::asio::awaitable<std::variant<dq::queue_status, response>> named_queue(api_context& ctx,
                                                                             std::string name);
/// The queue's retry policy onto a task that gives none.
void apply_queue(const dq::queue_status& q, dq::task& task, bool gives_retry);
// routes_views.cpp:
/// The store's counts into the /metrics gauges (tasks by state, due now, oldest due age).
void show_counts(service::service_metrics& m, const dq::task_counts& c);
boost::asio::awaitable<response> list_tasks(api_context& ctx, std::string_view query);
boost::asio::awaitable<response> stats(api_context& ctx);
// routes_probes.cpp:
boost::asio::awaitable<response> ready(api_context& ctx);
boost::asio::awaitable<response> metrics(api_context& ctx);
// openapi_document.cpp (generated by server/api/embed_openapi.cmake):
/// docs/openapi.json, the API's OpenAPI document, served at /v1/openapi.json.
const std::string& openapi_document();
// routes_ui.cpp:
/// The dashboard: `path` is "/ui" (a redirect to "/ui/") or starts with "/ui/".
response ui_file(const request& req, std::string_view path);

} // namespace timewheeld::api::detail

#endif // TIMEWHEELD_API_SRC_ROUTES_HPP
