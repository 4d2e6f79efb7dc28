//
// server/api/src/routes_dead.cpp
//
// The endpoints of dead letters, /v1/dead and /v1/dead/{id}: a page of them at a time (the
// store's cursor, opaque to the client), one delayed again, one forgotten.
//
#include "routes.hpp"

#include <timewheel/dq/error.hpp>

#include <variant>

namespace timewheeld::api::detail {

net::awaitable<response> list_dead(api_context& ctx, std::string_view query) {
    auto params = parse_page_params(query);
    if (auto* refused = std::get_if<response>(&params)) {
        co_return std::move(*refused);
    }
    auto& [cursor, limit] = std::get<page_params>(params);
    timed t(ctx, "list_dead");
    auto [ec, page] = co_await ctx.queue.async_list_dead(std::move(cursor), limit, use_tuple);
    if (ec) {
        if (ec == dq::error::invalid_argument) {
            co_return error_response(http::status::bad_request, "invalid_field", ec.message(),
                                     "cursor");
        }
        co_return store_error(ec);
    }
    co_return json_response(http::status::ok, service::dead_page_to_json(page));
}

net::awaitable<response> retry_dead(api_context& ctx, std::string id, const request& req) {
    dq::due_time due;
    try {
        due = service::parse_requeue(req.body());
    } catch (const service::invalid_field& e) {
        co_return bad_field(e);
    }
    {
        timed t(ctx, "requeue_dead");
        auto [ec] = co_await ctx.queue.async_requeue_dead(id, due, use_tuple);
        if (ec == dq::error::not_found) {
            co_return error_response(http::status::not_found, "not_found", "no such dead letter");
        }
        if (ec) {
            co_return store_error(ec);
        }
    }
    co_return co_await task_answer(ctx, std::move(id), http::status::ok);
}

net::awaitable<response> delete_dead(api_context& ctx, std::string id) {
    timed t(ctx, "delete_dead");
    auto [ec] = co_await ctx.queue.async_delete_dead(id, use_tuple);
    if (ec == dq::error::not_found) {
        co_return error_response(http::status::not_found, "not_found", "no such dead letter");
    }
    if (ec) {
        co_return store_error(ec);
    }
    co_return json_response(http::status::ok, json::object{{"id", id}, {"deleted", true}});
}

} // namespace timewheeld::api::detail
