//
// src/dq/redis/store_producer.cpp
//
// The producer's operations of the Redis store (submit, cancel, reschedule, status, dead
// letters): each builds its script call on the id's shard (or one per shard for a page of
// dead letters; the submits of one turn of the executor, one per shard for them all), its own
// arguments as listed atop lua/<name>.lua, and decodes the reply. Input has been checked by
// dq::store before it gets here.
//

#include "store_impl.hpp"

#include <timewheel/dq/detail/input_checks.hpp>

namespace timewheel::dq::detail {

using replies::script_error;

namespace {

// Submits a call at most: a script runs alone on its server, so a burst of submits must not
// hold a shard's server for long.
constexpr std::size_t max_submits_per_call = 128;

} // namespace

void redis_store_impl::submit(task t,
                              store::handler<void(error_code, submit_result, std::string)> h) {
    submits_.push_back({std::move(t), std::move(h)});
    if (submits_.size() == 1) {
        boost::asio::post(ex_, [self = shared_from_this()] { self->flush_submits(); });
    }
}

void redis_store_impl::flush_submits() {
    auto batch = std::make_shared<std::vector<pending_submit>>(std::move(submits_));
    submits_.clear();
    std::vector<std::string_view> ids;
    ids.reserve(batch->size());
    for (const auto& p : *batch) {
        ids.push_back(p.t.id);
    }
    const auto g = group(ids);
    auto st = std::make_shared<exec_state>();
    std::vector<std::pair<std::size_t, std::size_t>> calls; // (group, first member) per call
    for (std::size_t c = 0; c < g.shards.size(); ++c) {
        schedule_.forget(g.shards[c]);
        const auto& m = g.members[c];
        for (std::size_t first = 0; first < m.size(); first += max_submits_per_call) {
            const std::size_t last = std::min(m.size(), first + max_submits_per_call);
            call_args a(10 * (last - first));
            for (std::size_t k = first; k < last; ++k) {
                const auto& t = (*batch)[m[k]].t;
                const auto due = detail::encode_due(t.due);
                a.add(t.id);
                a.add(std::string_view(&due.kind, 1));
                a.add(due.ms);
                a.add(t.payload);
                a.add(static_cast<std::int64_t>(t.retry.max_attempts));
                a.add(t.retry.base.count());
                a.add(t.retry.cap.count());
                a.add(std::string_view(t.replace ? "1" : "0"));
                if (t.max_delay) {
                    a.add(t.max_delay->count());
                } else {
                    a.add(std::string_view());
                }
                a.add(t.queue);
            }
            push_shard_script(*st, scripts::submit(), g.shards[c], a);
            calls.emplace_back(c, first);
        }
    }
    run(st, [self = shared_from_this(), batch, g,
             calls = std::move(calls)](error_code ec, redis::response& resp) mutable {
        for (std::size_t k = 0; k < calls.size(); ++k) {
            const auto& m = g.members[calls[k].first];
            const std::size_t first = calls[k].second;
            const std::size_t last = std::min(m.size(), first + max_submits_per_call);
            // The call's error, or a reply of another shape (a hostile or confused server),
            // fails each of its tasks; a task's own error fails that task.
            error_code call_ec = ec;
            std::vector<redis::reply> answers;
            if (!call_ec) {
                const auto rep = resp[k];
                if (rep.is_error()) {
                    call_ec = script_error(rep);
                } else if (!rep.is_array() || rep.size() != last - first) {
                    call_ec = error::store_error;
                } else {
                    answers = rep.elements();
                }
            }
            for (std::size_t i = first; i < last; ++i) {
                auto& p = (*batch)[m[i]];
                error_code task_ec = call_ec;
                submit_result r = submit_result::created;
                if (!task_ec) {
                    const auto& a = answers[i - first];
                    if (a.is_error()) {
                        task_ec = script_error(a);
                    } else if (const auto w = a.is_string() ? replies::submit_reply(a.as_string())
                                                            : std::nullopt) {
                        r = *w;
                    } else {
                        task_ec = error::store_error;
                    }
                }
                self->finish(std::move(p.h), task_ec, r, std::move(p.t.id));
            }
        }
    });
}

void redis_store_impl::cancel(std::string id, store::handler<void(error_code, cancel_result)> h) {
    auto st = std::make_shared<exec_state>();
    call_args a;
    a.add(id);
    push_shard_script(*st, scripts::cancel(), shard_of(id), a);
    run(st, [self = shared_from_this(), h = std::move(h)](error_code ec,
                                                          redis::response& resp) mutable {
        cancel_result r = cancel_result::not_found;
        if (!ec) {
            auto rep = resp[0];
            if (rep.is_error()) {
                ec = script_error(rep);
            } else if (const auto c = replies::cancel_reply(rep)) {
                r = *c;
            } else {
                ec = error::store_error;
            }
        }
        self->finish(std::move(h), ec, r);
    });
}

void redis_store_impl::simple(const scripts::function& s, std::string id,
                              std::optional<due_time> due, store::handler<void(error_code)> h) {
    auto st = std::make_shared<exec_state>();
    call_args a;
    a.add(id);
    if (due) {
        const auto d = detail::encode_due(*due);
        a.add(std::string_view(&d.kind, 1));
        a.add(d.ms);
    }
    push_shard_script(*st, s, shard_of(id), a);
    schedule_.forget(shard_of(id));
    run(st, [self = shared_from_this(), h = std::move(h)](error_code ec,
                                                          redis::response& resp) mutable {
        if (!ec && resp[0].is_error()) {
            ec = script_error(resp[0]);
        } else if (!ec && !replies::is_ok(resp[0])) {
            ec = error::store_error;
        }
        self->finish(std::move(h), ec);
    });
}

void redis_store_impl::status(std::string id, store::handler<void(error_code, task_status)> h) {
    auto st = std::make_shared<exec_state>();
    call_args a;
    a.add(id);
    push_shard_script(*st, scripts::status(), shard_of(id), a);
    st->read_only = true;
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
        push_shard_script(*st, scripts::list_dead(), s, a);
    }
    st->read_only = true;
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
                try {
                    replies::dead_reply(rep, first + i, count, page, last);
                } catch (const std::exception&) {
                    ec = error::store_error; // not list_dead.lua's reply
                    break;
                }
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

} // namespace timewheel::dq::detail
