//
// server/api/src/routes_queues.cpp
//
// The endpoints of named queues, /v1/queues and /v1/queues/{id}
// (docs/design/queues-and-flow-control.md, step 1): create (201, then 200 for the same spec,
// 409 queue_conflict for another), read, list a page at a time, change, delete (409
// queue_not_empty while the queue holds tasks that can still run). A name with a namespace
// ("acme/billing") is one path segment, its slash percent-encoded (acme%2Fbilling). Only the
// retry policy is a setting today; the design's other settings are refused by name
// (service::parse_queue). Every answer that shows a queue reads it back from the store.
//
#include "routes.hpp"

#include <timewheel/dq/detail/input_checks.hpp>
#include <timewheel/dq/error.hpp>

#include <optional>
#include <variant>

namespace timewheeld::api::detail {

namespace {

response no_such_queue() {
    return error_response(http::status::not_found, "not_found", "no such queue");
}

// A store's refusal of a queue operation.
response queue_store_error(const boost::system::error_code& ec) {
    if (ec.category() == dq::error_category()) {
        switch (static_cast<dq::error>(ec.value())) {
        case dq::error::not_found:
            return no_such_queue();
        case dq::error::queue_conflict:
            return error_response(http::status::conflict, "queue_conflict",
                                  "a queue with this id exists with another spec (PATCH "
                                  "changes it)",
                                  "id");
        case dq::error::queue_not_empty:
            return error_response(http::status::conflict, "queue_not_empty",
                                  "the queue still holds delayed, running or dead tasks: cancel "
                                  "or delete them first");
        case dq::error::default_queue:
            return error_response(http::status::bad_request, "invalid_field",
                                  "the default queue takes the service's settings: it cannot "
                                  "be changed or deleted",
                                  "id");
        case dq::error::invalid_queue:
            return error_response(http::status::bad_request, "invalid_field", ec.message(), "id");
        default:
            break;
        }
    }
    return store_error(ec);
}

// The id of a path, checked as a queue's name.
std::optional<response> bad_queue_id(std::string_view id) {
    try {
        service::check_queue_name(id, "id");
    } catch (const service::invalid_field& e) {
        return bad_field(e);
    }
    return std::nullopt;
}

} // namespace

net::awaitable<response> queue_answer(api_context& ctx, std::string id, http::status status) {
    if (auto refused = bad_queue_id(id)) {
        co_return std::move(*refused);
    }
    timed t(ctx, "get_queue");
    auto [ec, st] = co_await ctx.queue.async_get_queue(std::move(id), use_tuple);
    if (ec) {
        co_return queue_store_error(ec);
    }
    co_return json_response(status, service::queue_to_json(st));
}

net::awaitable<response> create_queue(api_context& ctx, const request& req) {
    dq::queue_spec spec;
    try {
        spec = service::parse_queue(req.body(), ctx.cfg.validation);
    } catch (const service::invalid_field& e) {
        co_return bad_field(e);
    }
    const std::string id = spec.id;
    dq::create_queue_result r{};
    {
        timed t(ctx, "create_queue");
        auto [ec, result] = co_await ctx.queue.async_create_queue(std::move(spec), use_tuple);
        if (ec) {
            co_return queue_store_error(ec);
        }
        r = result;
    }
    auto res = co_await queue_answer(
        ctx, id, r == dq::create_queue_result::created ? http::status::created : http::status::ok);
    if (res.result() == http::status::created || res.result() == http::status::ok) {
        res.set(http::field::location, "/v1/queues/" + encode_segment(id));
    }
    co_return res;
}

net::awaitable<response> list_queues(api_context& ctx, std::string_view query) {
    auto params = parse_page_params(query);
    if (auto* refused = std::get_if<response>(&params)) {
        co_return std::move(*refused);
    }
    auto& [cursor, limit] = std::get<page_params>(params);
    std::string prefix;
    if (const auto p = query_param(query, "id_prefix")) {
        const auto d = decode(*p, true);
        // A prefix of a name: its alphabet, and no longer than a name.
        if (!d || d->size() > 2 * dq::detail::max_queue_part + 1 ||
            d->find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789_-/") != std::string::npos) {
            co_return error_response(http::status::bad_request, "invalid_field",
                                     "must be the start of a queue's name ([a-z0-9_-/])",
                                     "id_prefix");
        }
        prefix = *d;
    }
    if (cursor.size() > 2 * dq::detail::max_queue_part + 1) {
        co_return error_response(http::status::bad_request, "invalid_field",
                                 "not a cursor of this list", "cursor");
    }
    timed t(ctx, "list_queues");
    auto [ec, page] = co_await ctx.queue.async_list_queues(std::move(prefix), std::move(cursor),
                                                           limit, use_tuple);
    if (ec) {
        if (ec == dq::error::invalid_argument) {
            co_return error_response(http::status::bad_request, "invalid_field", ec.message(),
                                     "cursor");
        }
        co_return store_error(ec);
    }
    co_return json_response(http::status::ok, service::queue_page_to_json(page));
}

// The fields given replace the stored ones (read, changed, written back whole: of two PATCHes
// at once, the later write wins whole).
net::awaitable<response> change_queue(api_context& ctx, std::string id, const request& req) {
    if (auto refused = bad_queue_id(id)) {
        co_return std::move(*refused);
    }
    if (id == dq::default_queue) {
        co_return queue_store_error(dq::error::default_queue);
    }
    dq::queue_status st;
    {
        timed t(ctx, "get_queue");
        auto [ec, s] = co_await ctx.queue.async_get_queue(id, use_tuple);
        if (ec) {
            co_return queue_store_error(ec);
        }
        st = std::move(s);
    }
    dq::queue_spec spec;
    try {
        spec = service::parse_queue_patch(req.body(), std::move(st.spec), ctx.cfg.validation);
    } catch (const service::invalid_field& e) {
        co_return bad_field(e);
    }
    {
        timed t(ctx, "update_queue");
        auto [ec] = co_await ctx.queue.async_update_queue(std::move(spec), use_tuple);
        if (ec) {
            co_return queue_store_error(ec);
        }
    }
    co_return co_await queue_answer(ctx, std::move(id), http::status::ok);
}

net::awaitable<response> delete_queue(api_context& ctx, std::string id) {
    if (auto refused = bad_queue_id(id)) {
        co_return std::move(*refused);
    }
    timed t(ctx, "delete_queue");
    auto [ec] = co_await ctx.queue.async_delete_queue(id, use_tuple);
    if (ec) {
        co_return queue_store_error(ec);
    }
    co_return json_response(http::status::ok, json::object{{"id", id}, {"deleted", true}});
}

net::awaitable<std::variant<dq::queue_status, response>> named_queue(api_context& ctx,
                                                                     std::string name) {
    timed t(ctx, "get_queue");
    auto [ec, st] = co_await ctx.queue.async_get_queue(name, use_tuple);
    if (ec == dq::error::not_found) {
        // No implicit creation: a typo or a hostile client would make queues at will.
        co_return error_response(http::status::bad_request, "unknown_queue",
                                 "no queue named \"" + name + "\" (POST /v1/queues creates one)",
                                 "queue");
    }
    if (ec) {
        co_return store_error(ec);
    }
    co_return std::move(st);
}

void apply_queue(const dq::queue_status& q, dq::task& task, bool gives_retry) {
    if (!gives_retry && q.spec.retry) {
        task.retry = *q.spec.retry;
    }
}

} // namespace timewheeld::api::detail
