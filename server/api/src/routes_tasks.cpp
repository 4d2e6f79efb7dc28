//
// server/api/src/routes_tasks.cpp
//
// The endpoints of one task, /v1/tasks and /v1/tasks/{id}: submit, read, cancel,
// reschedule, and the result reported for a callback that answered 202 (handed to the result
// sink, which may answer on another thread). Each answer shows the task as the store holds
// it, not as it was asked for.
//
#include "routes.hpp"

#include <boost/asio/dispatch.hpp>
#include <boost/asio/executor_work_guard.hpp>

#include <chrono>

namespace timewheeld::api::detail {

namespace {

dq::time_point now_ms() {
    return std::chrono::time_point_cast<dq::duration>(std::chrono::system_clock::now());
}

// A task just created, as the store holds it: everything but its times is what was
// submitted; its creation time is this node's clock just before the submit was sent. The
// store stamped it within the submit's round trip after that, on its own clock (SQLite's
// is this node's; Redis's TIME, on the same machine, too): GET shows that exact time. The
// answer errs early, never late, so that a delay_ms's due_at it shows is never after the
// real one (a callback never arrives before the due_at its submitter was told).
dq::task_status created_status(const dq::task& t, std::string id, dq::time_point before) {
    dq::task_status st;
    st.id = std::move(id);
    st.state = dq::task_state::delayed;
    st.attempt = 0;
    st.created = before;
    st.updated = st.created;
    if (const auto* delay = std::get_if<dq::duration>(&t.due)) {
        st.due = st.created + *delay;
    } else {
        st.due = std::get<dq::time_point>(t.due);
    }
    st.retry = t.retry;
    st.payload = t.payload;
    return st;
}

} // namespace

// The task as JSON after an operation: its status (one more round trip, so that the answer
// shows what the store holds, not what was asked).
net::awaitable<response> task_answer(api_context& ctx, std::string id, http::status status) {
    timed t(ctx, "status");
    auto [ec, st] = co_await ctx.queue.async_status(std::move(id), use_tuple);
    if (ec) {
        co_return store_error(ec);
    }
    co_return json_response(status, service::status_to_json(st));
}

net::awaitable<response> submit(api_context& ctx, const request& req) {
    dq::task task;
    try {
        task = service::parse_submit(req.body(), ctx.cfg.validation);
    } catch (const service::invalid_field& e) {
        co_return bad_field(e);
    }
    const bool relative = std::holds_alternative<dq::duration>(task.due);
    dq::submit_result result{};
    std::string id;
    dq::time_point before;
    {
        timed t(ctx, "submit");
        // Kept for the answer: a created task needs no second round trip to be shown.
        dq::task copy = task;
        before = now_ms();
        auto [ec, r, i] = co_await ctx.queue.async_submit(std::move(copy), use_tuple);
        if (ec) {
            co_return store_error(ec, relative ? "delay_ms" : "due_at");
        }
        result = r;
        id = std::move(i);
    }
    const bool created = result == dq::submit_result::created;
    if (created) {
        ctx.metrics.submitted.inc();
    }
    // "exists" (or "replaced") reads what the store holds: not what was asked.
    response res;
    if (created) {
        res = json_response(http::status::created,
                            service::status_to_json(created_status(task, id, before)));
    } else {
        res = co_await task_answer(ctx, id, http::status::ok);
    }
    if (res.result() == http::status::created || res.result() == http::status::ok) {
        res.set(http::field::location, "/v1/tasks/" + encode_segment(id));
    }
    co_return res;
}

net::awaitable<response> cancel(api_context& ctx, std::string id) {
    dq::cancel_result r{};
    {
        timed t(ctx, "cancel");
        auto [ec, result] = co_await ctx.queue.async_cancel(id, use_tuple);
        if (ec) {
            co_return store_error(ec);
        }
        r = result;
    }
    switch (r) {
    case dq::cancel_result::cancelled:
        ctx.metrics.cancelled.inc();
        co_return json_response(http::status::ok, json::object{{"id", id}, {"state", "cancelled"}});
    case dq::cancel_result::not_found:
        co_return error_response(http::status::not_found, "not_found", "no such task");
    case dq::cancel_result::too_late:
        break;
    }
    co_return error_response(http::status::conflict, "too_late",
                             "the task is running, finished, dead or already cancelled");
}

net::awaitable<response> reschedule(api_context& ctx, std::string id, const request& req) {
    dq::due_time due;
    try {
        due = service::parse_reschedule(req.body());
    } catch (const service::invalid_field& e) {
        co_return bad_field(e);
    }
    {
        timed t(ctx, "reschedule");
        auto [ec] = co_await ctx.queue.async_reschedule(id, due, use_tuple);
        if (ec) {
            co_return store_error(ec, std::holds_alternative<dq::duration>(due) ? "delay_ms"
                                                                                : "due_at");
        }
    }
    co_return co_await task_answer(ctx, std::move(id), http::status::ok);
}

net::awaitable<response> report_result(api_context& ctx, std::string id, const request& req) {
    service::result_report report;
    try {
        report = service::parse_result(req.body());
    } catch (const service::invalid_field& e) {
        co_return bad_field(e);
    }
    if (!ctx.sink) {
        co_return error_response(http::status::not_found, "no_pending_attempt",
                                 "no attempt of this task waits for a result on this node");
    }
    // The sink may answer on any thread: come back to this one.
    const service::deliver_result r =
        co_await net::async_initiate<decltype(net::use_awaitable), void(service::deliver_result)>(
            [&](auto handler) {
                auto work = net::make_work_guard(net::get_associated_executor(handler));
                ctx.sink->deliver(id, report.attempt, report.outcome,
                                  [h = std::move(handler),
                                   w = std::move(work)](service::deliver_result result) mutable {
                                      auto ex = w.get_executor();
                                      net::dispatch(ex, [h = std::move(h), result]() mutable {
                                          std::move(h)(result);
                                      });
                                  });
            },
            net::use_awaitable);
    switch (r) {
    case service::deliver_result::accepted:
        co_return json_response(
            http::status::ok,
            json::object{{"id", id}, {"attempt", report.attempt}, {"accepted", true}});
    case service::deliver_result::wrong_attempt:
        co_return error_response(http::status::conflict, "wrong_attempt",
                                 "another attempt of this task waits for a result");
    case service::deliver_result::forwarded:
        // Sent to the node that may hold the attempt, which has not confirmed in time.
        co_return json_response(
            http::status::accepted,
            json::object{{"id", id}, {"attempt", report.attempt}, {"forwarded", true}});
    case service::deliver_result::unavailable:
        co_return store_unavailable("the report could not be forwarded to the other nodes");
    case service::deliver_result::not_pending:
        break;
    }
    co_return error_response(http::status::not_found, "no_pending_attempt",
                             "no attempt of this task waits for a result");
}

} // namespace timewheeld::api::detail
