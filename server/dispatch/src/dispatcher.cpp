//
// server/dispatch/src/dispatcher.cpp
//
#include <timewheeld/dispatch/dispatcher.hpp>

#include <timewheeld/service/notice.hpp>

#include <timewheel/dq/queue.hpp>

// GCC 12 at -O1 sees Asio's coroutine frames, allocated with aligned_alloc and released with
// the frame's own operator delete (which calls free), as a mismatch: a false positive.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
#endif

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core/string.hpp>
#include <boost/json/serialize.hpp>

#include <algorithm>
#include <chrono>
#include <optional>
#include <utility>

namespace timewheeld::dispatch {

namespace net = boost::asio;
namespace dq = timewheel::dq;

options options_from(const service::settings& s) {
    options o;
    o.client.policy.allow_loopback = s.callback_allow_loopback;
    o.client.policy.allow_private = s.callback_allow_private;
    o.client.policy.allowed_hosts = s.callback_allow_hosts;
    o.client.signing_secrets = s.signing_secrets;
    o.client.host_signing_secrets = s.signing_secrets_for;
    o.client.signature_v1 = s.signing_send_v1;
    o.client.total_timeout = s.callback_timeout;
    o.client.connect_timeout = std::min(o.client.connect_timeout, s.callback_timeout);
    o.client.max_connections_per_host = s.max_per_host;
    o.client.max_url_length = s.validation.callback.max_url_length;
    // A dispatcher's io_context is run by its one thread.
    o.client.deadline_on_wheel = true;
    // The limits the API validated the callback with: what it accepted parses here too.
    o.payload = s.validation.callback;
    o.result_deadline = s.result_deadline;
    o.max_awaiting_results = s.max_awaiting_results;
    o.lease = s.lease;
    o.concurrency = s.worker_concurrency;
    return o;
}

struct dispatcher::state : std::enable_shared_from_this<dispatcher::state> {
    // An attempt whose callback answered 202, waiting for its result.
    struct waiter {
        std::uint32_t attempt;
        net::steady_timer* timer;
        std::optional<dq::outcome> result;
        bool lost = false; // the lease was lost: no result is taken any more
    };

    state(net::io_context& io, dq::store& store, const options& opt, service::service_metrics& m,
          result_router& router, dispatcher* owner, service::node_stats* stats,
          std::size_t stats_shard)
        : io(io)
        , opt(opt)
        , metrics(m)
        , router(router)
        , owner(owner)
        , stats(stats)
        , stats_shard(stats_shard)
        , producer(store)
        , client(io.get_executor(), opt.client)
        , worker(store, worker_options(opt, m), [this](dq::job j) {
            // The job is the coroutine's: it may give its slot back while it waits.
            net::co_spawn(this->io, run(shared_from_this(), std::move(j)), net::detached);
        }) {}

    static dq::worker_options worker_options(const options& opt,
                                             service::service_metrics& metrics) {
        dq::worker_options w;
        // Retried by the worker after a backoff; counted, so that an operator sees the store
        // failing before the backlog shows it.
        w.on_error = [&metrics](std::string_view what, boost::system::error_code) {
            metrics.store_error(what);
        };
        w.on_wakeup = [&metrics] { metrics.wakeups.inc(); };
        w.claim.worker = opt.worker_name;
        // The lease outlives a call by far: a running task's lease is renewed anyway.
        w.claim.lease = opt.lease.count() > 0
                            ? std::chrono::duration_cast<dq::duration>(opt.lease)
                            : std::max<dq::duration>(dq::duration(30000),
                                                     std::chrono::duration_cast<dq::duration>(
                                                         3 * opt.client.total_timeout));
        w.concurrency = opt.concurrency;
        // An ack goes with the next start call (one store round trip a tick) when one comes
        // within this delay; a finished task is recorded up to this much later (a crash
        // meanwhile repeats its callback, as at-least-once allows).
        w.ack_delay = ack_delay;
        return w;
    }

    net::awaitable<void> run(std::shared_ptr<state> self, dq::job j) {
        (void)self; // kept alive while the run goes on
        const auto lateness = std::max(worker.store_now() - j.due(), dq::duration(0));
        metrics.in_flight.add(1);
        struct leave {
            service::gauge& g;
            ~leave() { g.sub(1); }
        } on_leave{metrics.in_flight};
        service::node_stats::host_ref host; // held from the call's start to its outcome
        dq::outcome o;
        try {
            // (no co_await inside a conditional operator: GCC 12)
            if (service::is_notice_id(j.id())) {
                o = co_await notify(j, host);
            } else {
                o = co_await call(j, host);
            }
        } catch (const std::exception& e) {
            o = dq::outcome::retry(e.what());
        }
        if (o.what != dq::outcome::kind::defer) { // (a deferral is no attempt)
            metrics.fired.inc();
            metrics.lateness.observe(lateness);
        }
        count(j, o);
        figures(std::chrono::duration_cast<std::chrono::milliseconds>(lateness), o, host);
        j.report(std::move(o));
    }

    net::awaitable<dq::outcome> call(dq::job& j, service::node_stats::host_ref& host) {
        callback::callback_spec spec;
        try {
            spec = callback::parse_callback(std::string_view(j.payload()), opt.payload);
        } catch (const callback::payload_error& e) {
            co_return dq::outcome::failure(std::string("bad callback: ") + e.what());
        }
        // Completion notices (service/notice.hpp): the notice is in the store before the
        // report of an end, so that no end goes without one. On the last attempt it goes in
        // before the call: a node that dies during that call reports nothing, and the task
        // dies when its lease runs out.
        std::optional<service::notice> notice;
        if (spec.on_success || spec.on_failure) {
            notice = service::notice{j.id(), worker.store_now(), spec.on_success, spec.on_failure};
        }
        const bool last = j.attempt() >= j.task().retry.max_attempts;
        if (notice && last) {
            const auto ec = co_await submit_notice(*notice);
            if (ec) {
                // Nothing was sent: no attempt.
                co_return dq::outcome::defer(notice_error(ec), defer_default);
            }
        }
        const auto r = co_await send(std::move(spec), j, host);
        dq::outcome o;
        if (r.verdict == callback::verdict::accepted) {
            o = co_await wait_for_result(j);
        } else {
            o = outcome_of(r);
        }
        if (notice && !last &&
            (o.what == dq::outcome::kind::success || o.what == dq::outcome::kind::failure)) {
            const auto ec = co_await submit_notice(*notice);
            if (ec) {
                // Not the last attempt: the task lives on, and its callback is made again
                // (at least once), rather than ending without its notice.
                co_return dq::outcome::retry(
                    notice_error(ec) + " (the callback's " +
                    (o.what == dq::outcome::kind::success ? "success" : "failure") +
                    " was not recorded)");
            }
        }
        co_return o;
    }

    // Stores the notice task (once: a notice that exists is kept). The store refusing the
    // notice itself (an id or payload over its limits: a task a dq producer submitted, not
    // the API, which keeps room for both) cannot get better: the end goes on without a notice
    // rather than never. The store's failures (store_full, store_timeout...) are errors.
    net::awaitable<boost::system::error_code> submit_notice(const service::notice& n) {
        dq::task t;
        t.id = service::notice_id(n.task_id);
        t.due = dq::duration(0);
        t.payload = service::notice_payload(n);
        auto [ec, result, id] =
            co_await producer.async_submit(std::move(t), net::as_tuple(net::use_awaitable));
        (void)result; // created, or exists: made once
        (void)id;
        if (ec == dq::error::id_too_long || ec == dq::error::invalid_id ||
            ec == dq::error::payload_too_large) {
            co_return boost::system::error_code();
        }
        co_return ec;
    }

    static std::string notice_error(const boost::system::error_code& ec) {
        return "the completion notice could not be stored: " + ec.message();
    }

    // The run of a notice task: the task's end as the store has it, posted to the target
    // for that end. A task that has not ended yet (its report not applied: acks are
    // batched; or still running, as after a last attempt's early notice) is waited for.
    net::awaitable<dq::outcome> notify(dq::job& j, service::node_stats::host_ref& host) {
        service::notice n;
        try {
            n = service::parse_notice(j.payload(), opt.payload);
        } catch (const callback::payload_error& e) {
            co_return dq::outcome::failure(std::string("bad notice: ") + e.what());
        }
        auto [ec, st] =
            co_await producer.async_status(n.task_id, net::as_tuple(net::use_awaitable));
        if (ec == dq::error::not_found) {
            co_return dq::outcome::failure("the task " + n.task_id +
                                           " is no longer in the store: no end to notify");
        }
        if (ec) {
            co_return dq::outcome::defer("reading the task: " + ec.message(), defer_default);
        }
        const callback::notice_target* target = nullptr;
        switch (st.state) {
        case dq::task_state::delayed:
        case dq::task_state::prefetched:
        case dq::task_state::running:
            co_return dq::outcome::defer(std::string("the task has not ended (") +
                                             dq::to_string(st.state) + ")",
                                         notice_wait(n, st));
        case dq::task_state::cancelled:
            co_return dq::outcome::success();
        case dq::task_state::finished:
            target = n.on_success ? &*n.on_success : nullptr;
            break;
        case dq::task_state::dead:
            target = n.on_failure ? &*n.on_failure : nullptr;
            break;
        }
        if (!target) {
            co_return dq::outcome::success();
        }
        callback::callback_spec spec;
        spec.url = target->url;
        spec.headers = target->headers;
        const bool typed = std::any_of(spec.headers.begin(), spec.headers.end(), [](const auto& h) {
            return boost::beast::iequals(h.first, "Content-Type");
        });
        if (!typed) {
            spec.headers.emplace_back("Content-Type", "application/json");
        }
        spec.body = boost::json::serialize(service::notice_body(st));
        const auto r = co_await send(std::move(spec), j, host);
        if (r.verdict == callback::verdict::accepted) {
            // There is no result to wait for: a 202 took the notice.
            co_return dq::outcome::success();
        }
        co_return outcome_of(r);
    }

    // How long a notice waits for its task's end before it looks again: until a delayed
    // task's due time, and otherwise as long as it has waited so far (from 100 ms to 30 s),
    // so that a task's quick end is seen soon and a long 202 wait is not polled often.
    dq::duration notice_wait(const service::notice& n, const dq::task_status& st) const {
        const auto now = worker.store_now();
        auto wait = std::clamp(now - n.since, notice_wait_min, notice_wait_max);
        if (st.state == dq::task_state::delayed) {
            wait = std::max(wait, st.due - now);
        }
        return wait;
    }

    // The call itself, and this node's figures of it.
    net::awaitable<callback::call_result> send(callback::callback_spec spec, const dq::job& j,
                                               service::node_stats::host_ref& host) {
        // A named request, not a braced temporary in the co_await expression: GCC 12
        // destroys such temporaries twice.
        if (stats && service::destination_of(spec.url, destination)) {
            host = stats->call_started(destination);
        }
        callback::call_request req{std::move(spec), j.id(), j.attempt()};
        callback::call_result r;
        {
            // In flight to its destination while the client has it (not while a 202
            // waits for its result).
            struct in_flight {
                service::node_stats* stats;
                service::node_stats::host_ref host;
                ~in_flight() {
                    if (stats) {
                        stats->call_ended(host);
                    }
                }
            } guard{stats, host};
            auto [ec, result] = co_await client.call(std::move(req));
            (void)ec; // r.verdict and r.error say what ec means for the task
            r = std::move(result);
        }
        if (r.status != 0) {
            metrics.callback_latency.observe(r.latency);
        }
        co_return r;
    }

    // The outcome of a call's verdict (not accepted: that waits for a result).
    dq::outcome outcome_of(const callback::call_result& r) const {
        switch (r.verdict) {
        case callback::verdict::success:
        case callback::verdict::accepted:
            break;
        case callback::verdict::retry:
            if (r.reach == callback::reach::held) {
                // Our own flow control held it back: nothing reached the receiver, so this
                // is no attempt. A connection that failed (refused, unresolved, timed out)
                // is one: a dead receiver must not be retried for ever.
                return dq::outcome::defer(
                    r.error, r.retry_after
                                 ? std::chrono::duration_cast<dq::duration>(*r.retry_after)
                             : stopping ? dq::duration(0)
                                        : defer_default);
            }
            return dq::outcome::retry(
                r.error, r.retry_after
                             ? std::optional<dq::duration>(
                                   std::chrono::duration_cast<dq::duration>(*r.retry_after))
                             : std::nullopt);
        case callback::verdict::fail:
            return dq::outcome::failure(r.error);
        }
        return dq::outcome::success();
    }

    net::awaitable<dq::outcome> wait_for_result(dq::job& j) {
        if (stopping) {
            co_return dq::outcome::retry("accepted (202), but this node is stopping",
                                         dq::duration(0));
        }
        if (j.lease_lost()) {
            co_return dq::outcome::retry(lease_lost_error);
        }
        net::steady_timer timer(io, opt.result_deadline);
        waiter w{j.attempt(), &timer, std::nullopt};
        const std::string id = j.id();
        waiting[id] = &w;
        router.add(id, owner);
        // The wait takes no callback slot, up to the bound: beyond, it keeps its slot (the
        // node slows down, no attempt is lost).
        if (worker.stats().awaiting < opt.max_awaiting_results) {
            j.yield_slot();
        }
        metrics.awaiting.add(1);
        j.on_lease_lost([&w] {
            w.lost = true;
            w.timer->cancel();
        });
        co_await timer.async_wait(net::as_tuple(net::use_awaitable));
        j.on_lease_lost({}); // w goes with this frame
        metrics.awaiting.sub(1);
        waiting.erase(id);
        router.remove(id, owner);
        if (w.result) {
            co_return std::move(*w.result);
        }
        if (w.lost) {
            co_return dq::outcome::retry(lease_lost_error);
        }
        if (stopping) {
            co_return dq::outcome::retry("accepted (202), no result before this node stopped",
                                         dq::duration(0));
        }
        co_return dq::outcome::retry("accepted (202), no result within " +
                                     std::to_string(opt.result_deadline.count()) + " ms");
    }

    void count(const dq::job& j, const dq::outcome& o) {
        switch (o.what) {
        case dq::outcome::kind::success:
            metrics.succeeded.inc();
            break;
        case dq::outcome::kind::retry:
            if (j.attempt() >= j.task().retry.max_attempts) {
                metrics.dead.inc();
            } else {
                metrics.retried.inc();
            }
            break;
        case dq::outcome::kind::failure:
            metrics.dead.inc();
            break;
        case dq::outcome::kind::defer:
            metrics.deferred.inc();
            break;
        }
    }

    // This node's figures (GET /v1/stats): an attempt's end, or a destination's deferral.
    void figures(std::chrono::milliseconds lateness, const dq::outcome& o,
                 service::node_stats::host_ref host) {
        if (!stats) {
            return;
        }
        const auto now = std::chrono::system_clock::now();
        if (o.what == dq::outcome::kind::defer) {
            stats->host_deferred(host,
                                 std::chrono::duration_cast<std::chrono::milliseconds>(
                                     o.retry_after.value_or(dq::duration(0))),
                                 now);
            return;
        }
        const bool ok = o.what == dq::outcome::kind::success;
        (*stats)[stats_shard].attempt(ok, lateness, now);
        stats->host_outcome(host, ok, o.error, now);
    }

    service::deliver_result deliver(const std::string& id, std::uint32_t attempt, dq::outcome o) {
        const auto it = waiting.find(id);
        if (it == waiting.end() || it->second->result || it->second->lost) {
            return service::deliver_result::not_pending;
        }
        if (it->second->attempt != attempt) {
            return service::deliver_result::wrong_attempt;
        }
        it->second->result = std::move(o);
        it->second->timer->cancel();
        return service::deliver_result::accepted;
    }

    void stop(std::chrono::steady_clock::time_point deadline,
              net::any_completion_handler<void(boost::system::error_code)> handler) {
        stopping = true;
        for (auto& [id, w] : waiting) {
            w->timer->cancel();
        }
        worker.async_stop(deadline, [self = shared_from_this(),
                                     h = std::move(handler)](boost::system::error_code ec) mutable {
            self->client.close();
            std::move(h)(ec);
        });
    }

    // A deferral without a Retry-After (no connection slot before the deadline).
    static constexpr dq::duration defer_default{1000};
    static constexpr dq::duration ack_delay{10};
    static constexpr dq::duration notice_wait_min{100};
    static constexpr dq::duration notice_wait_max{30000};
    static constexpr const char* lease_lost_error =
        "accepted (202), but the lease was lost while waiting for the result (the task was "
        "taken over)";

    net::io_context& io;
    options opt;
    service::service_metrics& metrics;
    result_router& router;
    dispatcher* owner;
    service::node_stats* stats;
    std::size_t stats_shard;
    dq::queue producer;      // completion notices: their submit, and the status of their task
    std::string destination; // call(): the "host:port" of a callback, its capacity reused
    callback::client client;
    std::unordered_map<std::string, waiter*> waiting;
    bool stopping = false;
    dq::worker worker; // last: destroyed first, while what its handlers use still exists
};

dispatcher::dispatcher(net::io_context& io, dq::store& store, const options& opt,
                       service::service_metrics& metrics, result_router& router,
                       service::node_stats* stats, std::size_t stats_shard)
    : state_(std::make_shared<state>(io, store, opt, metrics, router, this, stats, stats_shard)) {}

dispatcher::~dispatcher() = default;

void dispatcher::start() {
    state_->worker.start();
}

void dispatcher::stop(std::chrono::steady_clock::time_point deadline,
                      net::any_completion_handler<void(boost::system::error_code)> handler) {
    state_->stop(deadline, std::move(handler));
}

service::deliver_result dispatcher::deliver(const std::string& id, std::uint32_t attempt,
                                            dq::outcome outcome) {
    return state_->deliver(id, attempt, std::move(outcome));
}

const dq::worker& dispatcher::worker() const noexcept {
    return state_->worker;
}

net::io_context& dispatcher::io() noexcept {
    return state_->io;
}

} // namespace timewheeld::dispatch
