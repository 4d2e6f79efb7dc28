//
// src/dq/redis/store_impl.cpp
//
// dq::redis_store's operations: each builds its script calls (the shard's keys and header,
// then its own arguments, as listed atop lua/<name>.lua), sends them in one request and
// decodes the replies. Input has been checked by dq::store before it gets here.
//

#include "store_impl.hpp"

#include <timewheel/dq/detail/input_checks.hpp>
#include <timewheel/dq/detail/redis_keys.hpp>

#include <boost/asio/error.hpp>

#include <algorithm>
#include <stdexcept>

namespace timewheel::dq::detail {

using replies::ms;
using replies::number;
using replies::script_error;

namespace {

// The options, or std::invalid_argument: checked before anything is sized from them.
redis_store_options checked(redis_store_options opt) {
    if (opt.name.empty() || opt.name.find_first_of("{}") != std::string::npos) {
        throw std::invalid_argument(
            "dq::redis_store: the queue name must be non-empty and hold no '{' or '}'");
    }
    if (opt.shards == 0 || opt.shards > 16384) {
        throw std::invalid_argument("dq::redis_store: shards must be in 1..16384");
    }
    if (opt.buckets == 0 || opt.buckets > 65536) {
        throw std::invalid_argument("dq::redis_store: buckets must be in 1..65536");
    }
    if (opt.done_retention.count() < 0 || opt.dead_retention.count() < 0) {
        throw std::invalid_argument("dq::redis_store: retention must not be negative");
    }
    return opt;
}

} // namespace

redis_store_impl::redis_store_impl(const executor_type& ex, std::unique_ptr<backend> b,
                                   redis::config sub_cfg, redis_store_options opt)
    : ex_(ex)
    , backend_(std::move(b))
    , sub_cfg_(std::move(sub_cfg))
    , opt_(checked(std::move(opt)))
    , schedule_(opt_.shards) {
    channel_ = redis_keys::wake_channel(opt_.name);
    config_key_ = redis_keys::config_key(opt_.name);
    keys_.resize(opt_.shards);
    prefixes_.resize(opt_.shards);
    for (std::size_t s = 0; s < opt_.shards; ++s) {
        const std::string p = redis_keys::shard_prefix(opt_.name, s);
        prefixes_[s] = p;
        keys_[s].reserve(redis_keys::shard_keys.size());
        for (const auto& k : redis_keys::shard_keys) {
            keys_[s].push_back(p + std::string(k.suffix));
        }
    }
    header_ = {std::string(),
               number(static_cast<std::int64_t>(opt_.shards)),
               number(static_cast<std::int64_t>(opt_.buckets)),
               channel_,
               number(static_cast<std::int64_t>(opt_.done_max)),
               number(opt_.done_retention.count()),
               number(static_cast<std::int64_t>(opt_.dead_max)),
               number(opt_.dead_retention.count()),
               number(static_cast<std::int64_t>(std::max<std::size_t>(opt_.log_maxlen, 1))),
               number(max_due.time_since_epoch().count())};
    std::random_device rd;
    rng_.seed((std::uint64_t(rd()) << 32) ^ rd());
}

void redis_store_impl::close() {
    closed_ = true;
    backend_->close();
    if (sub_) {
        sub_->close();
    }
}

// A claim call's token prefix: 64 random bits, six to a character, new for every call, so
// that no two leases (of any worker) share a token; the script appends the task's rank in
// the call (two characters). 13 characters in all: a token fits a std::string's own buffer,
// so holding, starting and acknowledging a lease allocates nothing for it.
std::string redis_store_impl::token_base() {
    static constexpr char digits[] =
        "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ-_";
    std::string t(11, '0');
    std::uint64_t v = rng_();
    for (auto& c : t) {
        c = digits[v & 63];
        v >>= 6;
    }
    return t;
}

void redis_store_impl::push_shard_script(redis::request& req, const redis::script& s,
                                         std::size_t shard, call_args& a) {
    header_[0] = prefixes_[shard];
    std::vector<std::string_view> args;
    args.reserve(header_.size() + a.args.size());
    for (const auto& h : header_) {
        args.emplace_back(h);
    }
    for (const auto& x : a.args) {
        args.emplace_back(x);
    }
    req.push_script_range(s, keys_[shard], args);
}

// --- producer ---------------------------------------------------------------------------

void redis_store_impl::submit(task t,
                              store::handler<void(error_code, submit_result, std::string)> h) {
    const auto due = detail::encode_due(t.due);
    auto st = std::make_shared<exec_state>();
    call_args a;
    a.add(t.id);
    a.add(std::string_view(&due.kind, 1));
    a.add(due.ms);
    a.add(t.payload);
    a.add(static_cast<std::int64_t>(t.retry.max_attempts));
    a.add(t.retry.base.count());
    a.add(t.retry.cap.count());
    a.add(std::string_view(t.replace ? "1" : "0"));
    push_shard_script(st->req, scripts::submit(), shard_of(t.id), a);
    schedule_.forget(shard_of(t.id));
    run(st, [self = shared_from_this(), h = std::move(h),
             id = std::move(t.id)](error_code ec, redis::response& resp) mutable {
        submit_result r = submit_result::created;
        if (!ec) {
            auto rep = resp[0];
            if (rep.is_error()) {
                ec = script_error(rep);
            } else {
                r = replies::submit_reply(rep.as_string());
            }
        }
        self->finish(std::move(h), ec, r, std::move(id));
    });
}

void redis_store_impl::cancel(std::string id, store::handler<void(error_code, cancel_result)> h) {
    auto st = std::make_shared<exec_state>();
    call_args a;
    a.add(id);
    push_shard_script(st->req, scripts::cancel(), shard_of(id), a);
    run(st, [self = shared_from_this(), h = std::move(h)](error_code ec,
                                                          redis::response& resp) mutable {
        cancel_result r = cancel_result::not_found;
        if (!ec) {
            auto rep = resp[0];
            if (rep.is_error()) {
                ec = script_error(rep);
            } else {
                r = replies::cancel_reply(rep.as_string());
            }
        }
        self->finish(std::move(h), ec, r);
    });
}

void redis_store_impl::simple(const redis::script& s, std::string id, std::optional<due_time> due,
                              store::handler<void(error_code)> h) {
    auto st = std::make_shared<exec_state>();
    call_args a;
    a.add(id);
    if (due) {
        const auto d = detail::encode_due(*due);
        a.add(std::string_view(&d.kind, 1));
        a.add(d.ms);
    }
    push_shard_script(st->req, s, shard_of(id), a);
    schedule_.forget(shard_of(id));
    run(st, [self = shared_from_this(), h = std::move(h)](error_code ec,
                                                          redis::response& resp) mutable {
        if (!ec && resp[0].is_error()) {
            ec = script_error(resp[0]);
        }
        self->finish(std::move(h), ec);
    });
}

void redis_store_impl::status(std::string id, store::handler<void(error_code, task_status)> h) {
    auto st = std::make_shared<exec_state>();
    call_args a;
    a.add(id);
    push_shard_script(st->req, scripts::status(), shard_of(id), a);
    run(st, [self = shared_from_this(), h = std::move(h), id](error_code ec,
                                                              redis::response& resp) mutable {
        task_status out;
        if (!ec) {
            auto rep = resp[0];
            if (rep.is_error()) {
                ec = script_error(rep);
            } else {
                try {
                    out = replies::status_reply(rep, id);
                } catch (const std::exception&) {
                    ec = error::store_error;
                }
            }
        }
        self->finish(std::move(h), ec, std::move(out));
    });
}

// Cursor: "<shard>:<score>:<id>" of the last entry returned.
void redis_store_impl::list_dead(std::string cursor, std::size_t count,
                                 store::handler<void(error_code, dead_page)> h) {
    std::size_t first = 0;
    std::string after_id;
    std::int64_t after_score = 0;
    error_code ec;
    if (!cursor.empty()) {
        const auto c1 = cursor.find(':');
        const auto c2 = c1 == std::string::npos ? c1 : cursor.find(':', c1 + 1);
        if (c2 == std::string::npos) {
            ec = error::invalid_argument;
        } else {
            first =
                static_cast<std::size_t>(replies::to_int(std::string_view(cursor).substr(0, c1)));
            after_score = replies::to_int(std::string_view(cursor).substr(c1 + 1, c2 - c1 - 1));
            after_id = cursor.substr(c2 + 1);
            if (first >= opt_.shards || after_id.empty()) {
                ec = error::invalid_argument;
            }
        }
    }
    if (ec) {
        post(std::move(h), ec, dead_page{});
        return;
    }
    auto st = std::make_shared<exec_state>();
    for (std::size_t s = first; s < opt_.shards; ++s) {
        call_args a;
        a.add(s == first ? std::string_view(after_id) : std::string_view());
        a.add(after_score);
        a.add(static_cast<std::int64_t>(count));
        push_shard_script(st->req, scripts::list_dead(), s, a);
    }
    run(st, [self = shared_from_this(), h = std::move(h), first,
             count](error_code ec, redis::response& resp) mutable {
        dead_page page;
        std::string last;
        if (!ec) {
            for (std::size_t i = 0; i < resp.size() && page.entries.size() < count; ++i) {
                auto rep = resp[i];
                if (rep.is_error()) {
                    ec = script_error(rep);
                    break;
                }
                replies::dead_reply(rep, first + i, count, page, last);
                if (page.entries.size() == count) {
                    // More may follow: in this shard if it was not exhausted, or later.
                    page.cursor = last;
                }
            }
        }
        if (ec) {
            page = {};
        }
        self->finish(std::move(h), ec, std::move(page));
    });
}

// --- worker -----------------------------------------------------------------------------

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
    for (std::size_t i = 0; i < n; ++i) {
        std::size_t limit = base + (i < extra ? 1 : 0);
        limit = std::min<std::size_t>(limit, 2000);
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
        push_shard_script(st->req, scripts::claim(), visit[i], a);
    }
    if (n == 0) {
        // Nothing due by the cache: only the store's clock, for the worker's offset.
        st->req.push("TIME");
    }
    run(st, [self = shared_from_this(), h = std::move(h), visit](error_code ec,
                                                                 redis::response& resp) mutable {
        claim_result out;
        if (!ec) {
            ec = visit.empty() ? self->time_only_reply(resp, out)
                               : self->claim_replies(resp, visit, out);
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
                                     const std::vector<std::size_t>& visit, claim_result& out)
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
        any = true;
        const auto head = replies::claim_reply(rep, out.tasks);
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

auto redis_store_impl::group(const std::vector<std::string_view>& ids) const -> grouping {
    grouping g;
    std::vector<std::size_t> call_of(opt_.shards, std::size_t(-1));
    for (std::size_t i = 0; i < ids.size(); ++i) {
        const std::size_t s = shard_of(ids[i]);
        if (call_of[s] == std::size_t(-1)) {
            call_of[s] = g.shards.size();
            g.shards.push_back(s);
            g.members.emplace_back();
        }
        g.members[call_of[s]].push_back(i);
    }
    return g;
}

std::vector<std::string_view> redis_store_impl::ids_of(const std::vector<lease_ref>& leases) {
    std::vector<std::string_view> ids;
    ids.reserve(leases.size());
    for (const auto& l : leases) {
        ids.emplace_back(l.id);
    }
    return ids;
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
        [](char c) {
            return c == 'r'   ? start_result::started
                   : c == 'e' ? start_result::too_early
                              : start_result::stale;
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
        [](char c) { return c == 'o' ? ack_result::ok : ack_result::stale; }, std::move(h));
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
                a.add(std::string_view(&kind, 1));
                a.add(k.outcome.retry_after ? k.outcome.retry_after->count() : std::int64_t(-1));
                a.add(k.outcome.error);
                a.add(k.started.time_since_epoch().count());
                a.add(k.ended.time_since_epoch().count());
            }
        },
        [](char c) { return c == 'o' ? ack_result::ok : ack_result::stale; }, std::move(h));
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
        [](char c) { return c == 'o' ? ack_result::ok : ack_result::stale; },
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
            const auto due = replies::to_int(m.payload);
            self->schedule_.saw_wakeup(m.payload, due);
            self->finish(std::move(h), error_code(), ms(due));
        });
}

// Every shard's earliest delayed due time (its `d` set or its first slot) and Redis's clock,
// in one pipeline; the earliest of all, the latest clock reading.
void redis_store_impl::earliest_due(
    store::handler<void(error_code, time_point, std::optional<time_point>)> h) {
    auto st = std::make_shared<exec_state>();
    for (std::size_t s = 0; s < opt_.shards; ++s) {
        call_args a;
        push_shard_script(st->req, scripts::earliest_due(), s, a);
    }
    run(st, [self = shared_from_this(), h = std::move(h)](error_code ec,
                                                          redis::response& resp) mutable {
        time_point now{};
        std::optional<time_point> earliest;
        for (std::size_t i = 0; !ec && i < resp.size(); ++i) {
            auto rep = resp[i];
            if (rep.is_error()) {
                ec = script_error(rep);
            } else if (!rep.is_array() || rep.size() != 2) {
                ec = error::store_error;
            } else {
                now = std::max(now, ms(rep[0].as_integer()));
                if (const auto e = rep[1].as_integer(); e >= 0) {
                    earliest = earliest ? std::min(*earliest, ms(e)) : ms(e);
                }
            }
        }
        if (ec) {
            now = {};
            earliest.reset();
        }
        self->finish(std::move(h), ec, now, earliest);
    });
}

void redis_store_impl::now(store::handler<void(error_code, time_point)> h) {
    auto st = std::make_shared<exec_state>();
    st->req.push("TIME");
    send(st, [self = shared_from_this(), h = std::move(h)](error_code ec,
                                                           redis::response& resp) mutable {
        time_point t{};
        if (!ec) {
            if (const auto v = replies::time_reply(resp[0])) {
                t = ms(*v);
            } else {
                ec = error::store_error;
            }
        }
        self->finish(std::move(h), ec, t);
    });
}

} // namespace timewheel::dq::detail
