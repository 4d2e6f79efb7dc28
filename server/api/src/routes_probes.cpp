//
// server/api/src/routes_probes.cpp
//
// What operators and their tools ask: /readyz (the store answers in time; /healthz, which
// needs nothing, is answered by the router) and /metrics (the registry, and the task counts
// by state, those due now and the oldest due task's age, read from the store at most every
// --metrics-store-interval-ms: nothing on the hot path, and one store read per interval
// under a storm of scrapes).
//
#include "routes.hpp"

#include <chrono>

namespace timewheeld::api::detail {

namespace {

// The gauges read from the store, when the last read is older than the interval: the
// first scrape past it reads (the others meanwhile show the last values), exact when read
// (a store that does not answer leaves the last values, and shows in the store round-trip
// metric).
net::awaitable<void> refresh_store_gauges(api_context& ctx) {
    const auto now = std::chrono::steady_clock::now().time_since_epoch();
    const auto now_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(now).count();
    auto next = ctx.gauges.next.load(std::memory_order_relaxed);
    const auto interval =
        std::chrono::duration_cast<std::chrono::nanoseconds>(ctx.cfg.metrics_store_interval);
    if (now_ns < next || !ctx.gauges.next.compare_exchange_strong(next, now_ns + interval.count(),
                                                                  std::memory_order_relaxed)) {
        co_return;
    }
    timed t(ctx, "count_tasks");
    auto [ec, counts] = co_await ctx.queue.async_count_tasks(use_tuple);
    if (ec) {
        ctx.metrics.store_error("count_tasks");
        ctx.log.debug("task_counts", {{"error", ec.message()}});
        co_return;
    }
    show_counts(ctx.metrics, counts);
}

} // namespace

// Ready when the store serves an operation within --store-timeout-ms (dq::store::probe: a
// query on SQLite's writer thread, TIME on Redis), not merely when a clock can be read.
net::awaitable<response> ready(api_context& ctx) {
    timed t(ctx, "probe");
    auto [ec, now] = co_await net::async_initiate<decltype(use_tuple),
                                                  void(boost::system::error_code, dq::time_point)>(
        [&](auto handler) {
            ctx.queue.get_store().probe(
                dq::store::handler<void(boost::system::error_code, dq::time_point)>(
                    std::move(handler)));
        },
        use_tuple);
    if (ec) {
        co_return store_unavailable(ec.message());
    }
    co_return json_response(
        http::status::ok,
        json::object{{"status", "ready"}, {"store_time", service::format_rfc3339(now)}});
}

net::awaitable<response> metrics(api_context& ctx) {
    co_await refresh_store_gauges(ctx);
    response res(http::status::ok, 11);
    res.set(http::field::content_type, "text/plain; version=0.0.4; charset=utf-8");
    res.body() = ctx.metrics.registry.render();
    co_return res;
}

} // namespace timewheeld::api::detail
