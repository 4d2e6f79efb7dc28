//
// server/api/src/routes_schedules.cpp
//
// The endpoints of recurring schedules, /v1/schedules and /v1/schedules/{id}: create (201,
// then 200 for the same spec, 409 for another), read, list a page at a time, change, delete,
// pause, resume, trigger, the next occurrences of a stored schedule, and those of an unsaved
// rule (POST /v1/schedules:preview, an action on the collection: API.md). The store keeps
// the schedules and makes each occurrence a task exactly once (dq::scheduler, which runs next
// to the worker); here they are only read and written. Every answer that shows a schedule
// reads it back from the store: what the store holds, not what was asked.
//
#include "routes.hpp"

#include <timewheeld/service/schedule_json.hpp>

#include <timewheel/dq/error.hpp>

#include <charconv>
#include <tuple>

namespace timewheeld::api::detail {

namespace {

dq::time_point now_ms() {
    return std::chrono::time_point_cast<dq::duration>(std::chrono::system_clock::now());
}

response no_such_schedule() {
    return error_response(http::status::not_found, "not_found", "no such schedule");
}

// A store's refusal of a schedule: its own words for what only a schedule can be, the
// tasks' otherwise.
response schedule_store_error(const boost::system::error_code& ec) {
    if (ec.category() == dq::error_category()) {
        switch (static_cast<dq::error>(ec.value())) {
        case dq::error::not_found:
            return no_such_schedule();
        case dq::error::schedule_conflict:
            return error_response(http::status::conflict, "schedule_conflict",
                                  "a schedule with this id exists with another spec (PATCH "
                                  "changes it)",
                                  "id");
        case dq::error::invalid_schedule_id:
            return error_response(http::status::bad_request, "invalid_field", ec.message(), "id");
        case dq::error::invalid_rule:
        case dq::error::invalid_cron:
            return error_response(http::status::bad_request, "invalid_field", ec.message(), "cron");
        case dq::error::unknown_zone:
            return error_response(http::status::bad_request, "invalid_field", ec.message(),
                                  "time_zone");
        case dq::error::invalid_window:
            return error_response(http::status::bad_request, "invalid_field", ec.message(),
                                  "end_at");
        default:
            break;
        }
    }
    return store_error(ec);
}

// The `count` of a query: 1 to service::max_next_count, 5 by default.
std::optional<std::size_t> count_param(std::string_view query) {
    const auto c = query_param(query, "count");
    if (!c) {
        return 5;
    }
    std::size_t n = 0;
    auto [end, ec] = std::from_chars(c->data(), c->data() + c->size(), n);
    if (c->empty() || ec != std::errc() || end != c->data() + c->size() || n < 1 ||
        n > service::max_next_count) {
        return std::nullopt;
    }
    return n;
}

// The occurrences of `spec` after `after` (now when absent) as an answer.
response occurrences_answer(const dq::schedule_spec& spec, dq::time_point created,
                            std::optional<dq::time_point> after, std::size_t count) {
    try {
        const auto rule = service::rule_of(spec, created);
        auto o = service::occurrences_to_json(
            rule, service::next_occurrences(rule, spec, after.value_or(now_ms()), count));
        return json_response(http::status::ok, o);
    } catch (const service::invalid_field& e) {
        return bad_field(e);
    }
}

} // namespace

net::awaitable<response> schedule_answer(api_context& ctx, std::string id, http::status status) {
    timed t(ctx, "get_schedule");
    auto [ec, st] = co_await ctx.queue.async_get_schedule(std::move(id), use_tuple);
    if (ec) {
        co_return schedule_store_error(ec);
    }
    co_return json_response(status, service::schedule_to_json(st));
}

net::awaitable<response> create_schedule(api_context& ctx, const request& req) {
    dq::schedule_spec spec;
    try {
        spec = service::parse_schedule(req.body(), ctx.cfg.validation);
    } catch (const service::invalid_field& e) {
        co_return bad_field(e);
    }
    const std::string id = spec.id;
    dq::create_schedule_result r{};
    {
        timed t(ctx, "create_schedule");
        auto [ec, result] = co_await ctx.queue.async_create_schedule(std::move(spec), use_tuple);
        if (ec) {
            co_return schedule_store_error(ec);
        }
        r = result;
    }
    auto res = co_await schedule_answer(
        ctx, id,
        r == dq::create_schedule_result::created ? http::status::created : http::status::ok);
    if (res.result() == http::status::created || res.result() == http::status::ok) {
        res.set(http::field::location, "/v1/schedules/" + encode_segment(id));
    }
    co_return res;
}

net::awaitable<response> list_schedules(api_context& ctx, std::string_view query) {
    auto params = parse_page_params(query);
    if (auto* refused = std::get_if<response>(&params)) {
        co_return std::move(*refused);
    }
    auto& [cursor, limit] = std::get<page_params>(params);
    timed t(ctx, "list_schedules");
    auto [ec, page] = co_await ctx.queue.async_list_schedules(std::move(cursor), limit, use_tuple);
    if (ec) {
        if (ec == dq::error::invalid_argument) {
            co_return error_response(http::status::bad_request, "invalid_field", ec.message(),
                                     "cursor");
        }
        co_return store_error(ec);
    }
    co_return json_response(http::status::ok, service::schedule_page_to_json(page));
}

// The fields given replace the stored ones (read, changed, written back whole: of two PATCHes
// at once, the later write wins whole).
net::awaitable<response> change_schedule(api_context& ctx, std::string id, const request& req) {
    dq::schedule_status st;
    {
        timed t(ctx, "get_schedule");
        auto [ec, s] = co_await ctx.queue.async_get_schedule(id, use_tuple);
        if (ec) {
            co_return schedule_store_error(ec);
        }
        st = std::move(s);
    }
    dq::schedule_spec spec;
    try {
        spec = service::parse_schedule_patch(req.body(), std::move(st.spec), ctx.cfg.validation);
    } catch (const service::invalid_field& e) {
        co_return bad_field(e);
    }
    {
        timed t(ctx, "replace_schedule");
        auto [ec] = co_await ctx.queue.async_replace_schedule(std::move(spec), use_tuple);
        if (ec) {
            co_return schedule_store_error(ec);
        }
    }
    co_return co_await schedule_answer(ctx, std::move(id), http::status::ok);
}

net::awaitable<response> delete_schedule(api_context& ctx, std::string id) {
    timed t(ctx, "delete_schedule");
    auto [ec] = co_await ctx.queue.async_delete_schedule(id, use_tuple);
    if (ec) {
        co_return schedule_store_error(ec);
    }
    co_return json_response(http::status::ok, json::object{{"id", id}, {"deleted", true}});
}

net::awaitable<response> pause_schedule(api_context& ctx, std::string id, bool pause) {
    {
        timed t(ctx, pause ? "pause_schedule" : "resume_schedule");
        // One co_await a statement (GCC 12 and a co_await in a conditional operator).
        boost::system::error_code ec;
        if (pause) {
            std::tie(ec) = co_await ctx.queue.async_pause_schedule(id, use_tuple);
        } else {
            std::tie(ec) = co_await ctx.queue.async_resume_schedule(id, use_tuple);
        }
        if (ec) {
            co_return schedule_store_error(ec);
        }
    }
    co_return co_await schedule_answer(ctx, std::move(id), http::status::ok);
}

net::awaitable<response> trigger_schedule(api_context& ctx, std::string id) {
    std::string task_id;
    {
        timed t(ctx, "trigger_schedule");
        auto [ec, tid] = co_await ctx.queue.async_trigger_schedule(id, use_tuple);
        if (ec) {
            co_return schedule_store_error(ec);
        }
        task_id = std::move(tid);
    }
    // The task it created, as /v1/tasks shows it (not idempotent: each trigger is a task).
    auto res = co_await task_answer(ctx, task_id, http::status::created);
    if (res.result() == http::status::created) {
        res.set(http::field::location, "/v1/tasks/" + encode_segment(task_id));
    }
    co_return res;
}

net::awaitable<response> next_of_schedule(api_context& ctx, std::string id,
                                          std::string_view query) {
    const auto count = count_param(query);
    if (!count) {
        co_return error_response(
            http::status::bad_request, "invalid_field",
            "must be an integer in [1, " + std::to_string(service::max_next_count) + "]", "count");
    }
    std::optional<dq::time_point> after;
    if (const auto a = query_param(query, "after")) {
        const auto d = decode(*a, true);
        try {
            if (!d) {
                throw std::invalid_argument("malformed percent-encoding");
            }
            after = service::parse_rfc3339(*d);
        } catch (const std::invalid_argument& e) {
            co_return error_response(http::status::bad_request, "invalid_field", e.what(), "after");
        }
    }
    timed t(ctx, "get_schedule");
    auto [ec, st] = co_await ctx.queue.async_get_schedule(std::move(id), use_tuple);
    if (ec) {
        co_return schedule_store_error(ec);
    }
    co_return occurrences_answer(st.spec, st.created, after, *count);
}

response preview_schedule(api_context&, const request& req) {
    service::preview_request p;
    try {
        p = service::parse_preview(req.body());
    } catch (const service::invalid_field& e) {
        return bad_field(e);
    }
    // Unsaved: an interval without start_at is anchored now, as a create would be.
    return occurrences_answer(p.spec, now_ms(), p.after, p.count);
}

} // namespace timewheeld::api::detail
