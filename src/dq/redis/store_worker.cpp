//
// src/dq/redis/store_worker.cpp
//
// The worker's operations of the Redis store: claim (on the shards the schedule picks, the
// batch spread over them), start, renew, acknowledge and release (one script call per shard
// of the leases, one result letter per lease), and the wake-up subscription that keeps the
// schedule's next-due times from being late.
//

#include "store_impl.hpp"

#include <boost/asio/error.hpp>

#include <algorithm>
#include <optional>

namespace timewheel::dq::detail {

namespace {

// A letter of renew.lua, ack.lua and release.lua: 'o' ok, 's' stale.
std::optional<ack_result> ack_letter(char c) {
    if (c == 'o') {
        return ack_result::ok;
    }
    if (c == 's') {
        return ack_result::stale;
    }
    return std::nullopt;
}

} // namespace

using replies::ms;
using replies::script_error;

void redis_store_impl::claim(const claim_options& opt,
                             store::handler<void(error_code, claim_result)> h) {
    const auto visit = schedule_.shards_to_visit(opt.horizon.count(), opt.batch, subscribed_);
    auto st = std::make_shared<exec_state>();
    // The batch is spread over the shards visited, the remainder to the first ones.
    const std::size_t n = visit.size();
    const std::size_t base = n == 0 ? 0 : opt.batch / n;
    const std::size_t extra = n == 0 ? 0 : opt.batch % n;
    const std::size_t start_due = std::min(opt.start_due, opt.batch);
    const std::size_t start_base = n == 0 ? 0 : start_due / n;
    const std::size_t start_extra = n == 0 ? 0 : start_due % n;
    std::vector<std::size_t> limits(n);
    for (std::size_t i = 0; i < n; ++i) {
        std::size_t limit = base + (i < extra ? 1 : 0);
        limit = std::min<std::size_t>(limit, 2000);
        limits[i] = limit;
        // start_due is spread as the batch is: the total never exceeds it.
        const std::size_t starts =
            std::min(limit, start_base + (i < start_extra ? std::size_t(1) : 0));
        call_args a;
        a.add(static_cast<std::int64_t>(limit));
        a.add(opt.horizon.count());
        a.add(opt.lease.count());
        a.add(opt.worker);
        a.add(static_cast<std::int64_t>(starts));
        a.add(token_base());
        push_shard_script(*st, scripts::claim(), visit[i], a);
    }
    if (n == 0) {
        // Nothing due by the cache: only the store's clock, for the worker's offset.
        st->req.push("TIME");
    }
    run(st, [self = shared_from_this(), h = std::move(h), visit,
             limits = std::move(limits)](error_code ec, redis::response& resp) mutable {
        claim_result out;
        if (!ec) {
            ec = visit.empty() ? self->time_only_reply(resp, out)
                               : self->claim_replies(resp, visit, limits, out);
        }
        self->finish(std::move(h), ec, std::move(out));
    });
}

auto redis_store_impl::time_only_reply(const redis::response& resp, claim_result& out)
    -> error_code {
    const auto t = replies::time_reply(resp[0]);
    if (!t) {
        return error::store_error;
    }
    schedule_.saw_server_time(*t);
    out.server_time = ms(*t);
    if (const auto nd = schedule_.next_due(); nd >= 0) {
        out.next_due = ms(nd);
    }
    return {};
}

auto redis_store_impl::claim_replies(const redis::response& resp,
                                     const std::vector<std::size_t>& visit,
                                     const std::vector<std::size_t>& limits, claim_result& out)
    -> error_code {
    error_code first_error;
    bool any = false;
    for (std::size_t i = 0; i < resp.size(); ++i) {
        auto rep = resp[i];
        if (rep.is_error()) {
            if (!first_error) {
                first_error = script_error(rep);
            }
            if (i < visit.size()) {
                schedule_.forget(visit[i]);
            }
            continue;
        }
        // A reply of another shape (a hostile or confused server) counts as that shard's
        // error, as an error reply does; the tasks it may have leased come back when their
        // leases expire.
        replies::claim_head head;
        const std::size_t before = out.tasks.size();
        try {
            head = replies::claim_reply(rep, i < limits.size() ? limits[i] : 0, out.tasks);
        } catch (const std::exception&) {
            out.tasks.resize(before); // whole replies only
            if (!first_error) {
                first_error = error::store_error;
            }
            if (i < visit.size()) {
                schedule_.forget(visit[i]);
            }
            continue;
        }
        any = true;
        if (head.now > out.server_time.time_since_epoch().count()) {
            out.server_time = ms(head.now);
        }
        schedule_.saw_server_time(head.now);
        if (i < visit.size()) {
            schedule_.saw_next_due(visit[i], head.next_due);
        }
    }
    if (const auto nd = schedule_.next_due(); nd >= 0) {
        out.next_due = ms(nd);
    }
    return any ? error_code() : first_error;
}

void redis_store_impl::start(std::vector<lease_ref> leases,
                             store::handler<void(error_code, std::vector<start_result>)> h) {
    const auto ids = ids_of(leases);
    per_shard<start_result>(
        scripts::start(), ids,
        [&](call_args& a, const std::vector<std::size_t>& m) {
            for (auto i : m) {
                a.add(leases[i].id);
                a.add(leases[i].token);
            }
        },
        [](char c) -> std::optional<start_result> {
            switch (c) {
            case 'r':
                return start_result::started;
            case 'e':
                return start_result::too_early;
            case 's':
                return start_result::stale;
            default:
                return std::nullopt;
            }
        },
        std::move(h));
}

void redis_store_impl::renew(std::vector<lease_ref> leases, duration lease,
                             store::handler<void(error_code, std::vector<ack_result>)> h) {
    const auto ids = ids_of(leases);
    per_shard<ack_result>(
        scripts::renew(), ids,
        [&](call_args& a, const std::vector<std::size_t>& m) {
            a.add(lease.count());
            for (auto i : m) {
                a.add(leases[i].id);
                a.add(leases[i].token);
            }
        },
        ack_letter, std::move(h));
}

void redis_store_impl::acknowledge(std::vector<ack> acks,
                                   store::handler<void(error_code, std::vector<ack_result>)> h) {
    std::vector<std::string_view> ids;
    ids.reserve(acks.size());
    for (const auto& a : acks) {
        ids.emplace_back(a.lease.id);
    }
    per_shard<ack_result>(
        scripts::ack(), ids,
        [&](call_args& a, const std::vector<std::size_t>& m) {
            for (auto i : m) {
                const auto& k = acks[i];
                a.add(k.lease.id);
                a.add(k.lease.token);
                const char kind = k.outcome.what == outcome::kind::success ? 's'
                                  : k.outcome.what == outcome::kind::retry ? 'r'
                                  : k.outcome.what == outcome::kind::defer ? 'd'
                                                                           : 'f';
                // lua/ack.lua: kind and retry_after ('>c1i8'), started and ended ('>i6i6'):
                // 9 and 12 bytes, within std::string's own buffer (one 25-byte argument cost
                // an allocation a task).
                std::string head(1, kind);
                replies::append_packed(
                    head, k.outcome.retry_after ? k.outcome.retry_after->count() : -1, 8);
                a.args.push_back(std::move(head));
                std::string times;
                replies::append_packed(times, k.started.time_since_epoch().count(), 6);
                replies::append_packed(times, k.ended.time_since_epoch().count(), 6);
                a.args.push_back(std::move(times));
                a.add(k.outcome.error);
            }
        },
        ack_letter, std::move(h));
}

void redis_store_impl::release(std::vector<lease_ref> leases, store::handler<void(error_code)> h) {
    const auto ids = ids_of(leases);
    for (const auto id : ids) {
        schedule_.forget(shard_of(id));
    }
    per_shard<ack_result>(
        scripts::release(), ids,
        [&](call_args& a, const std::vector<std::size_t>& m) {
            for (auto i : m) {
                a.add(leases[i].id);
                a.add(leases[i].token);
            }
        },
        ack_letter,
        store::handler<void(error_code, std::vector<ack_result>)>(
            [h = std::move(h)](error_code ec, std::vector<ack_result>) mutable {
                std::move(h)(ec);
            }));
}

void redis_store_impl::wait_wakeup(store::handler<void(error_code, time_point)> h) {
    if (closed_) {
        post(std::move(h), error_code(boost::asio::error::operation_aborted), time_point{});
        return;
    }
    if (!sub_) {
        sub_ = std::make_unique<redis::subscriber>(ex_, sub_cfg_);
        // On a Cluster the scripts' PUBLISH reaches every node: the subscriber follows the
        // master of the channel's slot, so that a dead node (the first seed) is left.
        if (auto where = backend_->locator(channel_)) {
            sub_->set_locator(std::move(where));
        }
        sub_->subscribe({channel_});
    }
    subscribed_ = true;
    sub_->async_receive(
        [self = shared_from_this(), h = std::move(h)](error_code ec, redis::message m) mutable {
            if (ec || self->closed_) {
                // Wake-ups may have been missed: claims visit every shard again until the
                // next wait.
                self->subscribed_ = false;
                self->finish(std::move(h), error_code(boost::asio::error::operation_aborted),
                             time_point{});
                return;
            }
            // The wake-up's due time, from the network like any reply: one outside the
            // store's times (a negative one would read as "no task due") is taken as now, and
            // the shard it names is visited again.
            auto due = replies::to_int(m.payload);
            if (!replies::is_time(due)) {
                due = 0;
            }
            self->schedule_.saw_wakeup(m.payload, due);
            self->finish(std::move(h), error_code(), ms(due));
        });
}

} // namespace timewheel::dq::detail
