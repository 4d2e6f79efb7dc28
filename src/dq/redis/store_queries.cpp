//
// src/dq/redis/store_queries.cpp
//
// dq::redis_store's listing and counting (store::list_tasks, count_tasks). A page is two
// pipelines: list_tasks.lua on every shard gives up to `limit` positions (sort key, id) past
// the start, in the state's order; merged here, the first `limit` of them are read by
// task_entries.lua on their shards (only those: reading every shard's candidates whole would
// cost 64 times the records). A position stands for itself across shards, since (key, id) is
// a total order: the cursor needs no per-shard part.
//
// A shard tells how far its answer is complete: up to its last entry when it gave `limit` of
// them, up to where it stopped when it bounded its scan (an id_prefix or a finished/cancelled
// filter: Redis has no index on ids), or everywhere when it ran out. The page is complete up
// to the earliest of those; what lies beyond is the next page's, so that a short (even empty)
// page with a cursor is possible and nothing is skipped.
//

#include "store_impl.hpp"

#include <timewheel/dq/detail/input_checks.hpp>

#include <algorithm>
#include <map>

namespace timewheel::dq::detail {

using replies::ms;
using replies::script_error;

// What one shard gave so far: its entries past the page's start, in order, and how far that
// is complete (`done`: everywhere, the shard ran out).
struct shard_walk {
    std::vector<task_position> got;
    std::optional<task_position> horizon;
    bool done = false;
};

struct redis_store_impl::list_walk {
    task_query q;
    list_bounds start;
    bool filtered = false; // entries may be skipped (an id prefix, finished vs cancelled)
    int round = 0;
    std::vector<shard_walk> shards;
    std::vector<std::size_t> asked; // the shards of the current round's calls
    // (an optional: Boost 1.81's any_completion_handler recurses forever on move assignment)
    std::optional<store::handler<void(error_code, task_page, std::optional<task_position>)>> h;
    // The page once chosen: positions and their shards.
    std::vector<std::pair<task_position, std::size_t>> page;
    std::optional<task_position> next;
};

namespace {

// The most rounds of calls for one page; then a short page with a cursor.
constexpr int max_rounds = 4;

} // namespace

void redis_store_impl::list_tasks(
    task_query q, std::optional<task_position> from,
    store::handler<void(error_code, task_page, std::optional<task_position>)> h) {
    auto w = std::make_shared<list_walk>();
    w->start = bounds_of(q, from);
    w->filtered = !q.id_prefix.empty() || !q.queue.empty() || q.state == task_state::finished ||
                  q.state == task_state::cancelled;
    w->q = std::move(q);
    w->shards.resize(opt_.shards);
    w->h.emplace(std::move(h));
    list_round(std::move(w));
}

// One round: list_tasks.lua on each shard that may still hold entries of the page. The first
// asks every shard for a few (tasks spread evenly over the shards by id: about limit/shards
// each, and a margin); a later one asks those whose answer ends before the page does for a
// whole page more. A filtered listing reads at most about 10 * limit entries a round in all.
void redis_store_impl::list_round(std::shared_ptr<list_walk> w) {
    const auto& q = w->q;
    const bool desc = q.descending;
    const std::size_t n = w->shards.size();
    const std::size_t want = w->round == 0 ? std::min(q.limit, 3 * q.limit / n + 4) : q.limit;
    const std::size_t scan = w->filtered ? std::max(want, (10 * q.limit + n - 1) / n) : want;
    // The shards to ask: in the first round all; then those not done whose horizon comes
    // before the page's last entry so far (they may hold entries of it).
    std::vector<task_position> all;
    for (const auto& s : w->shards) {
        all.insert(all.end(), s.got.begin(), s.got.end());
    }
    std::sort(all.begin(), all.end(),
              [desc](const auto& a, const auto& b) { return comes_before(a, b, desc); });
    w->asked.clear();
    for (std::size_t s = 0; s < n; ++s) {
        const auto& sw = w->shards[s];
        if (w->round == 0 || (!sw.done && (all.size() < q.limit ||
                                           comes_before(*sw.horizon, all[q.limit - 1], desc)))) {
            w->asked.push_back(s);
        }
    }
    auto st = std::make_shared<exec_state>();
    for (auto s : w->asked) {
        const auto& sw = w->shards[s];
        call_args a;
        a.add(static_cast<std::int64_t>(q.state));
        a.add(std::string_view(desc ? "1" : "0"));
        if (sw.horizon) {
            a.add(sw.horizon->key.time_since_epoch().count());
            a.add(std::string_view(sw.horizon->id));
        } else {
            a.add(w->start.start_key);
            a.add(std::string_view(w->start.start_id));
        }
        a.add(w->start.end_key);
        a.add(std::string_view(q.id_prefix));
        a.add(static_cast<std::int64_t>(want));
        a.add(static_cast<std::int64_t>(scan));
        a.add(std::string_view(q.queue));
        push_shard_script(*st, scripts::list_tasks(), s, a);
    }
    st->read_only = true;
    run(st, [self = shared_from_this(), w = std::move(w), want](error_code ec,
                                                                redis::response& resp) mutable {
        const bool desc = w->q.descending;
        try {
            for (std::size_t i = 0; !ec && i < w->asked.size(); ++i) {
                auto rep = resp[i];
                if (rep.is_error()) {
                    ec = script_error(rep);
                    break;
                }
                const std::size_t m = rep.size();
                if (m < 3 || (m - 3) % 2 != 0) {
                    ec = error::store_error;
                    break;
                }
                auto& sw = w->shards[w->asked[i]];
                for (std::size_t j = 3; j < m; j += 2) {
                    sw.got.push_back({replies::time_in(rep[j], "position key"),
                                      std::string(rep[j + 1].as_string())});
                }
                if (rep[0].as_integer() == 1) {
                    sw.horizon = task_position{replies::time_in(rep[1], "horizon key"),
                                               std::string(rep[2].as_string())};
                } else if ((m - 3) / 2 >= want) {
                    sw.horizon = sw.got.back();
                } else {
                    sw.done = true;
                }
            }
        } catch (const std::exception&) {
            ec = error::store_error;
        }
        if (ec) {
            return self->finish(std::move(*w->h), ec, task_page{}, std::optional<task_position>());
        }
        ++w->round;
        // Complete up to the earliest horizon of a shard not done.
        std::optional<task_position> complete_to;
        for (const auto& sw : w->shards) {
            if (!sw.done && (!complete_to || comes_before(*sw.horizon, *complete_to, desc))) {
                complete_to = sw.horizon;
            }
        }
        std::vector<std::pair<task_position, std::size_t>> all;
        for (std::size_t s = 0; s < w->shards.size(); ++s) {
            for (const auto& p : w->shards[s].got) {
                if (!complete_to || !comes_before(*complete_to, p, desc)) {
                    all.emplace_back(p, s);
                }
            }
        }
        std::sort(all.begin(), all.end(), [desc](const auto& a, const auto& b) {
            return comes_before(a.first, b.first, desc);
        });
        const std::size_t limit = w->q.limit;
        if (all.size() < limit && complete_to && w->round < max_rounds &&
            !(w->filtered && w->round >= 2)) {
            return self->list_round(std::move(w));
        }
        if (all.size() >= limit) {
            all.resize(limit);
            w->next = all.back().first;
        } else {
            w->next = complete_to;
        }
        w->page = std::move(all);
        self->list_read(std::move(w));
    });
}

// The chosen tasks, read on their shards (one call each): task_entries.lua.
void redis_store_impl::list_read(std::shared_ptr<list_walk> w) {
    if (w->page.empty()) {
        return finish(std::move(*w->h), error_code(), task_page{}, std::move(w->next));
    }
    std::map<std::size_t, std::vector<std::size_t>> by_shard;
    for (std::size_t i = 0; i < w->page.size(); ++i) {
        by_shard[w->page[i].second].push_back(i);
    }
    auto st = std::make_shared<exec_state>();
    for (const auto& [shard, members] : by_shard) {
        call_args a(members.size() + 1);
        a.add(static_cast<std::int64_t>(w->q.state));
        for (auto i : members) {
            a.add(std::string_view(w->page[i].first.id));
        }
        push_shard_script(*st, scripts::task_entries(), shard, a);
    }
    st->read_only = true;
    run(st, [self = shared_from_this(), w = std::move(w),
             by_shard = std::move(by_shard)](error_code ec, redis::response& resp) mutable {
        std::vector<std::optional<task_page::entry>> got(w->page.size());
        try {
            std::size_t call = 0;
            for (const auto& [shard, members] : by_shard) {
                auto rep = resp[call++];
                if (rep.is_error()) {
                    ec = script_error(rep);
                    break;
                }
                if (rep.size() != members.size() * 6) {
                    ec = error::store_error;
                    break;
                }
                for (std::size_t k = 0; k < members.size(); ++k) {
                    if (rep[6 * k].as_integer() != 1) {
                        continue; // it moved since the first step: not on this page
                    }
                    const auto& pos = w->page[members[k]].first;
                    task_page::entry e;
                    e.id = pos.id;
                    e.state = w->q.state;
                    e.key = pos.key;
                    e.due = replies::time_in(rep[6 * k + 1], "due time");
                    e.attempt = replies::attempts(rep[6 * k + 2], "attempt");
                    e.last_error = std::string(rep[6 * k + 3].as_string());
                    e.payload = std::string(rep[6 * k + 4].as_string());
                    e.queue = replies::queue_name(rep[6 * k + 5].as_string());
                    got[members[k]] = std::move(e);
                }
            }
        } catch (const std::exception&) {
            ec = error::store_error;
        }
        task_page page;
        if (!ec) {
            for (auto& e : got) {
                if (e) {
                    page.entries.push_back(std::move(*e));
                }
            }
        } else {
            w->next.reset();
        }
        self->finish(std::move(*w->h), ec, std::move(page), std::move(w->next));
    });
}

void redis_store_impl::count_tasks(store::handler<void(error_code, task_counts)> h) {
    auto st = std::make_shared<exec_state>();
    for (std::size_t s = 0; s < opt_.shards; ++s) {
        call_args a;
        push_shard_script(*st, scripts::count_tasks(), s, a);
    }
    st->read_only = true;
    run(st, [self = shared_from_this(), h = std::move(h)](error_code ec,
                                                          redis::response& resp) mutable {
        task_counts c;
        try {
            for (std::size_t i = 0; !ec && i < resp.size(); ++i) {
                auto rep = resp[i];
                if (rep.is_error()) {
                    ec = script_error(rep);
                    break;
                }
                if (rep.size() != 9) {
                    ec = error::store_error;
                    break;
                }
                // A negative count was taken for 0; it is no count_tasks.lua answer.
                const auto n = [&](std::size_t k) { return replies::count(rep[k], "count"); };
                c.now = std::max(c.now, replies::time_in(rep[0], "clock"));
                c.delayed += n(1);
                c.prefetched += n(2);
                c.running += n(3);
                c.finished += n(4);
                c.dead += n(5);
                c.cancelled += n(6);
                c.due_now += n(7);
                if (const auto e = replies::time_or_none(rep[8], "oldest due time"); e >= 0) {
                    c.oldest_due = c.oldest_due ? std::min(*c.oldest_due, ms(e)) : ms(e);
                }
            }
        } catch (const std::exception&) {
            ec = error::store_error;
        }
        if (ec) {
            c = {};
        }
        self->finish(std::move(h), ec, c);
    });
}

} // namespace timewheel::dq::detail
