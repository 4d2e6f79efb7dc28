//
// server/api/src/routes_views.cpp
//
// The views over many tasks: GET /v1/tasks, a page of the tasks of one state (the store's
// listing, with the service's own `host` filter on the callback URL), and GET /v1/stats,
// the store's counts by state next to this node's callback figures (node_stats: the
// worker side records them, this side only reads). The counts also refresh the /metrics
// gauges (show_counts), so that a dashboard's polling keeps them current for free.
//
#include "routes.hpp"

#include <timewheeld/service/task_list.hpp>

#include <timewheel/dq/error.hpp>

#include <boost/json/array.hpp>

#include <chrono>
#include <variant>

namespace timewheeld::api::detail {

namespace {

// With the `host` filter (or a Redis id_prefix, whose scan the store bounds) a store page
// may hold fewer entries than asked: more are read, up to these bounds, and a short page
// with a cursor answers when they are reached (the client goes on from it). No further store
// page is asked for past 15 ms, so that an answer stays near 20 ms however rare the match (a
// Redis page of 100 over 1M tasks takes about 7 ms, one bounded prefix scan up to 20).
constexpr int max_store_pages = 10;
constexpr std::chrono::milliseconds max_list_time{15};

json::value optional_number(std::optional<std::int64_t> v) {
    return v ? json::value(*v) : json::value(nullptr);
}

json::object node_to_json(const service::node_figures& f) {
    json::array throughput;
    for (const auto& b : f.throughput) {
        throughput.push_back(json::object{
            {"at", service::format_rfc3339(std::chrono::time_point_cast<dq::duration>(b.at))},
            {"fired", b.fired},
            {"succeeded", b.succeeded},
            {"failed", b.failed}});
    }
    json::array histogram;
    for (std::size_t i = 0; i < f.lateness.size(); ++i) {
        histogram.push_back(json::object{{"le_ms", i < service::lateness_bounds_ms.size()
                                                       ? json::value(service::lateness_bounds_ms[i])
                                                       : json::value(nullptr)},
                                         {"count", f.lateness[i]}});
    }
    return json::object{
        {"window_s", f.window.count()},
        {"throughput", std::move(throughput)},
        {"callbacks_per_second", f.callbacks_per_second},
        {"lateness_ms", json::object{{"p50", f.lateness_quantile(0.5).count()},
                                     {"p90", f.lateness_quantile(0.9).count()},
                                     {"p99", f.lateness_quantile(0.99).count()},
                                     {"max", f.lateness_max.count()},
                                     {"count", f.lateness_count}}},
        {"lateness_histogram", std::move(histogram)},
    };
}

json::array hosts_to_json(const service::node_figures& f) {
    constexpr std::size_t max_hosts_shown = 50;
    json::array hosts;
    for (const auto& h : f.hosts) {
        if (hosts.size() == max_hosts_shown) {
            break;
        }
        hosts.push_back(json::object{
            {"host", h.name},
            {"in_flight", h.in_flight},
            {"backing_off", h.backing_off},
            {"succeeded", h.succeeded},
            {"failed", h.failed},
            {"last_error", h.last_error ? json::value(*h.last_error) : json::value(nullptr)}});
    }
    return hosts;
}

} // namespace

void show_counts(service::service_metrics& m, const dq::task_counts& c) {
    const std::uint64_t by_state[] = {c.delayed,  c.prefetched, c.running,
                                      c.finished, c.dead,       c.cancelled};
    for (std::size_t i = 0; i < m.tasks.size(); ++i) {
        m.tasks[i]->set(static_cast<double>(by_state[i]));
    }
    m.tasks_due_now.set(static_cast<double>(c.due_now));
    const auto age = c.due_now > 0 && c.oldest_due && *c.oldest_due < c.now ? c.now - *c.oldest_due
                                                                            : dq::duration(0);
    m.oldest_due_age.set(std::chrono::duration<double>(age).count());
}

net::awaitable<response> list_tasks(api_context& ctx, std::string_view query) {
    auto params = query_params(query);
    if (auto* refused = std::get_if<response>(&params)) {
        co_return std::move(*refused);
    }
    service::task_list_request r;
    try {
        r = service::parse_task_list(std::get<0>(params), ctx.cfg.validation);
    } catch (const service::invalid_field& e) {
        co_return bad_field(e);
    }
    const std::size_t limit = r.query.limit;
    const auto deadline = std::chrono::steady_clock::now() + max_list_time;
    json::array entries;
    std::string cursor = std::move(r.query.cursor);
    std::string destination;
    for (int pages = 1;; ++pages) {
        // Never more than the answer has room for: the store's cursor is then exactly
        // where the answer ends.
        auto q = r.query;
        q.cursor = std::move(cursor);
        q.limit = limit - entries.size();
        dq::task_page page;
        {
            timed t(ctx, "list_tasks");
            auto [ec, p] = co_await ctx.queue.async_list_tasks(std::move(q), use_tuple);
            if (ec == dq::error::invalid_argument) {
                // Everything else was checked above: what the store refuses is the cursor
                // (one that does not decode, or was made for another state or order).
                co_return error_response(http::status::bad_request, "invalid_field", ec.message(),
                                         "cursor");
            }
            if (ec) {
                co_return store_error(ec);
            }
            page = std::move(p);
        }
        for (const auto& e : page.entries) {
            auto o = service::task_entry_to_json(e, ctx.cfg.validation, destination);
            if (r.host.empty() || service::host_matches(r.host, destination)) {
                entries.push_back(std::move(o));
            }
        }
        cursor = std::move(page.cursor);
        if (cursor.empty() || entries.size() >= limit || pages >= max_store_pages ||
            std::chrono::steady_clock::now() >= deadline) {
            break;
        }
    }
    co_return json_response(
        http::status::ok,
        json::object{{"entries", std::move(entries)},
                     {"next_cursor", cursor.empty() ? json::value(nullptr) : json::value(cursor)}});
}

net::awaitable<response> stats(api_context& ctx) {
    constexpr auto reuse_for = std::chrono::seconds(1);
    std::optional<dq::task_counts> recent;
    {
        std::lock_guard lock(ctx.gauges.mutex);
        if (ctx.gauges.counts &&
            std::chrono::steady_clock::now() - ctx.gauges.counted_at < reuse_for) {
            recent = ctx.gauges.counts;
        }
    }
    dq::task_counts c;
    if (recent) {
        c = *recent;
    } else {
        timed t(ctx, "count_tasks");
        auto [ec, counts] = co_await ctx.queue.async_count_tasks(use_tuple);
        if (ec) {
            co_return store_error(ec);
        }
        c = counts;
        std::lock_guard lock(ctx.gauges.mutex);
        ctx.gauges.counted_at = std::chrono::steady_clock::now();
        ctx.gauges.counts = c;
    }
    show_counts(ctx.metrics, c);
    std::optional<std::int64_t> oldest_age;
    if (c.due_now > 0 && c.oldest_due) {
        oldest_age = std::max(c.now - *c.oldest_due, dq::duration(0)).count();
    }
    const auto figures = ctx.stats->read();
    co_return json_response(http::status::ok,
                            json::object{{"counts", json::object{{"delayed", c.delayed},
                                                                 {"prefetched", c.prefetched},
                                                                 {"running", c.running},
                                                                 {"finished", c.finished},
                                                                 {"dead", c.dead},
                                                                 {"cancelled", c.cancelled}}},
                                         {"due_now", c.due_now},
                                         {"oldest_due_age_ms", optional_number(oldest_age)},
                                         {"node", node_to_json(figures)},
                                         {"hosts", hosts_to_json(figures)}});
}

} // namespace timewheeld::api::detail
