//
// server/api/src/routes_probes.cpp
//
// What operators and their tools ask: /readyz (the store answers in time; /healthz, which
// needs nothing, is answered by the router) and /metrics (the registry, and the oldest due
// task's age read from the store at each scrape: nothing on the hot path).
//
#include "routes.hpp"

#include <chrono>

namespace timewheeld::api::detail {

namespace {

// The age of the oldest task that is due and waits for a worker, read from the store at
// each scrape: nothing on the hot path, and exact when read (a store that cannot tell, or
// does not answer, leaves the last value and shows in the store round-trip metric).
net::awaitable<void> refresh_oldest_due_age(api_context& ctx) {
    timed t(ctx, "earliest_due");
    auto [ec, now, earliest] = co_await ctx.queue.async_earliest_due(use_tuple);
    if (ec) {
        ctx.log.debug("oldest_due_age", {{"error", ec.message()}});
        co_return;
    }
    const auto age = earliest && *earliest < now ? now - *earliest : dq::duration(0);
    ctx.metrics.oldest_due_age.set(std::chrono::duration<double>(age).count());
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
    co_await refresh_oldest_due_age(ctx);
    response res(http::status::ok, 11);
    res.set(http::field::content_type, "text/plain; version=0.0.4; charset=utf-8");
    res.body() = ctx.metrics.registry.render();
    co_return res;
}

} // namespace timewheeld::api::detail
