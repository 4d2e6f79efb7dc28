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

namespace {

// How many entries a shard reads past the start for `limit` of them, when it may have to
// skip some (an id prefix; finished and cancelled tasks share KDL): a short page beyond.
std::size_t scan_of(const task_query& q) {
    const bool filtered =
        !q.id_prefix.empty() || q.state == task_state::finished || q.state == task_state::cancelled;
    return filtered ? q.limit * 10 : q.limit;
}

struct candidate {
    task_position pos;
    std::size_t shard;
};

} // namespace

void redis_store_impl::list_tasks(
    task_query q, std::optional<task_position> from,
    store::handler<void(error_code, task_page, std::optional<task_position>)> h) {
    const auto b = bounds_of(q, from);
    auto st = std::make_shared<exec_state>();
    for (std::size_t s = 0; s < opt_.shards; ++s) {
        call_args a;
        a.add(static_cast<std::int64_t>(q.state));
        a.add(std::string_view(q.descending ? "1" : "0"));
        a.add(b.start_key);
        a.add(std::string_view(b.start_id));
        a.add(b.end_key);
        a.add(std::string_view(q.id_prefix));
        a.add(static_cast<std::int64_t>(q.limit));
        a.add(static_cast<std::int64_t>(scan_of(q)));
        push_shard_script(st->req, scripts::list_tasks(), s, a);
    }
    run(st, [self = shared_from_this(), h = std::move(h),
             q = std::move(q)](error_code ec, redis::response& resp) mutable {
        const bool desc = q.descending;
        std::vector<candidate> all;
        std::optional<task_position> complete_to; // the page is complete up to here
        auto lower = [&](task_position p) {
            if (!complete_to || comes_before(p, *complete_to, desc)) {
                complete_to = std::move(p);
            }
        };
        try {
            for (std::size_t s = 0; !ec && s < resp.size(); ++s) {
                auto rep = resp[s];
                if (rep.is_error()) {
                    ec = script_error(rep);
                    break;
                }
                const std::size_t n = rep.size();
                if (n < 3 || (n - 3) % 2 != 0) {
                    ec = error::store_error;
                    break;
                }
                for (std::size_t j = 3; j < n; j += 2) {
                    all.push_back(
                        {{ms(rep[j].as_integer()), std::string(rep[j + 1].as_string())}, s});
                }
                if (rep[0].as_integer() == 1) {
                    lower({ms(rep[1].as_integer()), std::string(rep[2].as_string())});
                } else if ((n - 3) / 2 >= q.limit) {
                    lower(all.back().pos);
                }
            }
        } catch (const std::exception&) {
            ec = error::store_error;
        }
        if (ec) {
            return self->finish(std::move(h), ec, task_page{}, std::optional<task_position>());
        }
        std::sort(all.begin(), all.end(), [desc](const candidate& a, const candidate& b) {
            return comes_before(a.pos, b.pos, desc);
        });
        std::size_t keep = 0;
        while (keep < all.size() && keep < q.limit &&
               (!complete_to || !comes_before(*complete_to, all[keep].pos, desc))) {
            ++keep;
        }
        all.resize(keep);
        std::optional<task_position> next;
        if (keep == q.limit) {
            next = all.back().pos;
        } else if (complete_to) {
            next = complete_to;
        }
        if (all.empty()) {
            return self->finish(std::move(h), ec, task_page{}, std::move(next));
        }
        // The chosen tasks, read on their shards (one call each).
        std::map<std::size_t, std::vector<std::size_t>> by_shard;
        for (std::size_t i = 0; i < all.size(); ++i) {
            by_shard[all[i].shard].push_back(i);
        }
        auto st2 = std::make_shared<exec_state>();
        for (const auto& [shard, members] : by_shard) {
            call_args a(members.size() + 1);
            a.add(static_cast<std::int64_t>(q.state));
            for (auto i : members) {
                a.add(std::string_view(all[i].pos.id));
            }
            self->push_shard_script(st2->req, scripts::task_entries(), shard, a);
        }
        self->run(st2, [self, h = std::move(h), all = std::move(all),
                        by_shard = std::move(by_shard), next = std::move(next),
                        state = q.state](error_code ec, redis::response& resp) mutable {
            std::vector<std::optional<task_page::entry>> got(all.size());
            try {
                std::size_t call = 0;
                for (const auto& [shard, members] : by_shard) {
                    if (ec) {
                        break;
                    }
                    auto rep = resp[call++];
                    if (rep.is_error()) {
                        ec = script_error(rep);
                        break;
                    }
                    if (rep.size() != members.size() * 5) {
                        ec = error::store_error;
                        break;
                    }
                    for (std::size_t k = 0; k < members.size(); ++k) {
                        if (rep[5 * k].as_integer() != 1) {
                            continue; // it moved since the first step: not on this page
                        }
                        task_page::entry e;
                        e.id = all[members[k]].pos.id;
                        e.state = state;
                        e.key = all[members[k]].pos.key;
                        e.due = ms(rep[5 * k + 1].as_integer());
                        e.attempt = static_cast<std::uint32_t>(rep[5 * k + 2].as_integer());
                        e.last_error = std::string(rep[5 * k + 3].as_string());
                        e.payload = std::string(rep[5 * k + 4].as_string());
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
                next.reset();
            }
            self->finish(std::move(h), ec, std::move(page), std::move(next));
        });
    });
}

void redis_store_impl::count_tasks(store::handler<void(error_code, task_counts)> h) {
    auto st = std::make_shared<exec_state>();
    for (std::size_t s = 0; s < opt_.shards; ++s) {
        call_args a;
        push_shard_script(st->req, scripts::count_tasks(), s, a);
    }
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
                const auto n = [&](std::size_t k) {
                    return static_cast<std::uint64_t>(
                        std::max<std::int64_t>(0, rep[k].as_integer()));
                };
                c.now = std::max(c.now, ms(rep[0].as_integer()));
                c.delayed += n(1);
                c.prefetched += n(2);
                c.running += n(3);
                c.finished += n(4);
                c.dead += n(5);
                c.cancelled += n(6);
                c.due_now += n(7);
                if (const auto e = rep[8].as_integer(); e >= 0) {
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
