//
// server/api/src/routes_tasks.cpp
//
// The endpoints of one task, /v1/tasks and /v1/tasks/{id}: submit (alone, or many at once
// with /v1/tasks:batch), read, cancel, reschedule, and the result reported for a callback that
// answered 202 (handed to the result sink, which may answer on another thread). Each answer shows
// the task as the store holds it, not as it was asked for.
//
#include "routes.hpp"

#include <boost/asio/dispatch.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/json/parse.hpp>

#include <algorithm>
#include <chrono>
#include <memory>
#include <utility>
#include <vector>

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
    if (t.max_delay) {
        // A debounce's first submit is capped too.
        st.due = std::min(st.due, st.created + *t.max_delay);
    }
    st.retry = t.retry;
    st.payload = t.payload;
    st.queue = t.queue.empty() ? std::string(dq::default_queue) : t.queue;
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

namespace {

// A replace or debounce that found its task past replacing (running, finished, dead or
// cancelled): 409, naming the state it has now.
json::object not_replaced(const dq::task_status& st) {
    const std::string state = dq::to_string(st.state);
    const bool pending =
        st.state == dq::task_state::delayed || st.state == dq::task_state::prefetched;
    return json::object{
        {"code", "conflict"},
        {"message",
         pending ? "the task was running when this submit reached the store (it is " + state +
                       " now): submit again to replace it"
                 : "the task is " + state + ": only a delayed or prefetched task is replaced"},
        {"state", state}};
}

// What a submit that found its id answers, from the task read back: 200 with the task and
// whether this submit replaced it, or 409 when a replace or debounce could not.
std::pair<http::status, json::object> found_answer(const dq::task& asked, dq::submit_result r,
                                                   const dq::task_status& st) {
    if (r == dq::submit_result::exists && asked.replace) {
        return {http::status::conflict, not_replaced(st)};
    }
    auto o = service::status_to_json(st);
    o["replaced"] = r == dq::submit_result::replaced;
    return {http::status::ok, std::move(o)};
}

// The statuses of `ids`, read at once (each its own round trip, all in flight together),
// in order.
net::awaitable<std::vector<std::pair<boost::system::error_code, dq::task_status>>>
read_all(api_context& ctx, std::vector<std::string> ids) {
    using result = std::vector<std::pair<boost::system::error_code, dq::task_status>>;
    co_return co_await net::async_initiate<decltype(net::use_awaitable), void(result)>(
        [&ctx](auto handler, std::vector<std::string> ids) {
            using handler_type = decltype(handler);
            struct gather {
                result out;
                std::size_t left;
                handler_type h;
            };
            auto g = std::make_shared<gather>(
                gather{result(ids.size()), ids.size(), std::move(handler)});
            for (std::size_t i = 0; i < ids.size(); ++i) {
                ctx.queue.async_status(std::move(ids[i]),
                                       [g, i](boost::system::error_code ec, dq::task_status st) {
                                           g->out[i] = {ec, std::move(st)};
                                           if (--g->left == 0) {
                                               std::move(g->h)(std::move(g->out));
                                           }
                                       });
            }
        },
        net::use_awaitable, std::move(ids));
}

// An item of a batch's answer that failed: its status and error, the error naming the item.
json::object item_error(unsigned status, json::object error, std::size_t index) {
    error["index"] = static_cast<std::int64_t>(index);
    return json::object{{"status", static_cast<std::int64_t>(status)}, {"error", std::move(error)}};
}

// The error object of an answer made by store_error() (one mapping of the store's errors).
json::object error_of(const response& res) {
    boost::system::error_code ec;
    auto v = json::parse(res.body(), ec);
    if (!ec && v.is_object() && v.get_object().contains("error") &&
        v.get_object().at("error").is_object()) {
        return v.get_object().at("error").get_object();
    }
    return json::object{{"code", "store_unavailable"}, {"message", "the store failed"}};
}

} // namespace

net::awaitable<response> submit(api_context& ctx, const request& req) {
    dq::task task;
    bool gives_retry = false;
    try {
        task = service::parse_submit(req.body(), ctx.cfg.validation, &gives_retry);
    } catch (const service::invalid_field& e) {
        co_return bad_field(e);
    }
    if (!task.queue.empty() && task.queue != dq::default_queue) {
        auto q = co_await named_queue(ctx, task.queue);
        if (auto* refused = std::get_if<response>(&q)) {
            co_return std::move(*refused);
        }
        apply_queue(std::get<dq::queue_status>(q), task, gives_retry);
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
    response res;
    if (result == dq::submit_result::created) {
        ctx.metrics.submitted.inc();
        res = json_response(http::status::created,
                            service::status_to_json(created_status(task, id, before)));
    } else {
        // "exists" (or "replaced") reads what the store holds: not what was asked.
        dq::task_status st;
        {
            timed t(ctx, "status");
            auto [ec, s] = co_await ctx.queue.async_status(id, use_tuple);
            if (ec) {
                co_return store_error(ec);
            }
            st = std::move(s);
        }
        auto [status, body] = found_answer(task, result, st);
        if (status == http::status::conflict) {
            co_return json_response(status, json::object{{"error", std::move(body)}});
        }
        res = json_response(status, body);
    }
    res.set(http::field::location, "/v1/tasks/" + encode_segment(id));
    co_return res;
}

// Every item parsed on its own; those that pass go to the store in one submit_many (one
// round trip per shard); those found read back together. The answer is 200 whatever the
// items' fates: each item has its own status.
net::awaitable<response> submit_batch(api_context& ctx, const request& req) {
    std::vector<service::batch_item> items;
    try {
        items = service::parse_batch(req.body(), ctx.cfg.validation);
    } catch (const service::batch_too_large& e) {
        co_return json_response(http::status::payload_too_large,
                                service::error_body("batch_too_large", e.message(), e.field()));
    } catch (const service::invalid_field& e) {
        co_return bad_field(e);
    }
    json::array results(items.size());
    std::vector<dq::task> tasks;
    std::vector<std::size_t> where; // tasks[k] is items[where[k]]
    // Each queue the items name is read once; an item naming an unknown one fails alone.
    std::vector<std::pair<std::string, std::variant<dq::queue_status, response>>> queues;
    for (std::size_t i = 0; i < items.size(); ++i) {
        if (items[i].error || items[i].task->queue.empty() ||
            items[i].task->queue == dq::default_queue) {
            continue;
        }
        auto& task = *items[i].task;
        auto known = std::find_if(queues.begin(), queues.end(),
                                  [&](const auto& q) { return q.first == task.queue; });
        if (known == queues.end()) {
            auto q = co_await named_queue(ctx, task.queue);
            queues.emplace_back(task.queue, std::move(q));
            known = queues.end() - 1;
        }
        if (const auto* refused = std::get_if<response>(&known->second)) {
            results[i] = item_error(refused->result_int(), error_of(*refused), i);
            items[i].task.reset();
        } else {
            apply_queue(std::get<dq::queue_status>(known->second), task, items[i].gives_retry);
        }
    }
    for (std::size_t i = 0; i < items.size(); ++i) {
        if (items[i].error) {
            const auto& e = *items[i].error;
            auto v = json::parse(
                service::error_body("invalid_field", e.message(), e.field(), e.position()));
            results[i] = item_error(400, std::move(v.get_object().at("error").get_object()), i);
        } else if (!items[i].task) {
            // Refused above (its queue).
        } else {
            tasks.push_back(std::move(*items[i].task));
            where.push_back(i);
        }
    }
    std::vector<dq::submit_outcome> outs;
    dq::time_point before;
    if (!tasks.empty()) {
        timed t(ctx, "submit_many");
        before = now_ms();
        auto [ec, o] = co_await ctx.queue.async_submit_many(tasks, use_tuple);
        if (ec) {
            // The call itself refused (it cannot, within max_batch_tasks): each item says so.
            o.assign(tasks.size(), dq::submit_outcome{ec, {}, {}});
        }
        outs = std::move(o);
    }
    std::vector<std::string> found;
    std::vector<std::size_t> found_of; // found[j] is tasks[found_of[j]]
    for (std::size_t k = 0; k < tasks.size(); ++k) {
        const auto& o = outs[k];
        if (o.ec) {
            const bool relative = std::holds_alternative<dq::duration>(tasks[k].due);
            const auto res = store_error(o.ec, relative ? "delay_ms" : "due_at");
            results[where[k]] = item_error(res.result_int(), error_of(res), where[k]);
        } else if (o.result == dq::submit_result::created) {
            ctx.metrics.submitted.inc();
            results[where[k]] = json::object{
                {"status", 201},
                {"task", service::status_to_json(created_status(tasks[k], o.id, before))}};
        } else {
            found.push_back(o.id);
            found_of.push_back(k);
        }
    }
    if (!found.empty()) {
        timed t(ctx, "status");
        const auto reads = co_await read_all(ctx, std::move(found));
        for (std::size_t j = 0; j < reads.size(); ++j) {
            const auto k = found_of[j];
            const auto& [ec, st] = reads[j];
            if (ec) {
                const auto res = store_error(ec);
                results[where[k]] = item_error(res.result_int(), error_of(res), where[k]);
                continue;
            }
            auto [status, body] = found_answer(tasks[k], outs[k].result, st);
            if (status == http::status::conflict) {
                results[where[k]] = item_error(409, std::move(body), where[k]);
            } else {
                results[where[k]] = json::object{{"status", 200}, {"task", std::move(body)}};
            }
        }
    }
    co_return json_response(http::status::ok, json::object{{"results", std::move(results)}});
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
