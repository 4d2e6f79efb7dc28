//
// src/dq/redis/store_schedules.cpp
//
// dq::redis_store's schedules: each operation on one schedule is one call of
// lua/schedule.lua on the schedule's shard; listing and the materialiser's read visit every
// shard in one pipeline; materialise groups schedules by shard, one lua/materialise.lua call
// per shard, each schedule's step atomic in it. A schedule's occurrences ("{id}@...") are on
// its shard (redis_store::hash honours the hash tag), so that one script creates them. The
// record's bytes (prelude/schedules.lua) are decoded here.
//

#include "store_impl.hpp"

#include <timewheel/dq/detail/input_checks.hpp>

namespace timewheel::dq::detail {

using boost::system::error_code;
using replies::script_error;

namespace {

// Big-endian unsigned of `n` bytes at `p`.
std::uint64_t be(const unsigned char* p, std::size_t n) {
    std::uint64_t v = 0;
    for (std::size_t i = 0; i < n; ++i) {
        v = v << 8 | p[i];
    }
    return v;
}

// A record of prelude/schedules.lua; false when it is not one.
bool decode_record(std::string_view id, std::string_view rec, schedule_status& st) {
    constexpr std::size_t head = 1 + 9 * 6;
    if (rec.size() < head + 2) {
        return false;
    }
    const auto* p = reinterpret_cast<const unsigned char*>(rec.data());
    const unsigned flags = p[0];
    std::uint64_t v[9];
    for (std::size_t i = 0; i < 9; ++i) {
        v[i] = be(p + 1 + 6 * i, 6);
    }
    std::size_t pos = head;
    const auto nl = be(p + pos, 2);
    pos += 2;
    if (rec.size() < pos + nl + 4) {
        return false;
    }
    st.last_task.assign(rec.substr(pos, nl));
    pos += nl;
    const auto rl = be(p + pos, 4);
    pos += 4;
    if (rec.size() < pos + rl) {
        return false;
    }
    st.spec.id.assign(id);
    if (!decode_spec(rec.substr(pos, rl), rec.substr(pos + rl), st.spec)) {
        return false;
    }
    st.spec.paused = (flags & 1) != 0;
    st.created = replies::ms(static_cast<std::int64_t>(v[0]));
    st.updated = replies::ms(static_cast<std::int64_t>(v[1]));
    st.cursor = replies::ms(static_cast<std::int64_t>(v[2]));
    st.next = (flags & 2) != 0
                  ? std::optional<time_point>(replies::ms(static_cast<std::int64_t>(v[3])))
                  : std::nullopt;
    st.revision = v[4];
    st.occurrences = v[5];
    st.triggers = v[6];
    st.skipped_misfire = v[7];
    st.skipped_overlap = v[8];
    return true;
}

// Pairs (id, record) of a reply from element `from`, into `out`; false on a bad shape.
bool records(redis::reply rep, std::size_t from, std::vector<schedule_status>& out) {
    const std::size_t n = rep.size();
    if (n < from || (n - from) % 2 != 0) {
        return false;
    }
    for (std::size_t j = from; j < n; j += 2) {
        schedule_status st;
        if (!rep[j].is_string() || !rep[j + 1].is_string() ||
            !decode_record(rep[j].as_string(), rep[j + 1].as_string(), st)) {
            return false;
        }
        out.push_back(std::move(st));
    }
    return true;
}

} // namespace

void redis_store_impl::schedule_op(std::string_view op, std::string id, const schedule_spec* spec,
                                   store::handler<void(error_code, std::string)> h) {
    auto st = std::make_shared<exec_state>();
    call_args a(6);
    a.add(op);
    a.add(id);
    if (spec) {
        auto e = encode_spec(*spec);
        a.add(e.rule);
        a.add(e.rest);
        a.add(spec->paused ? std::string_view("1") : std::string_view("0"));
    }
    const auto shard = shard_of(id);
    push_shard_script(*st, scripts::schedule(), shard, a);
    if (op == "trigger") {
        schedule_.forget(shard); // a task was created there
    }
    run(st, [self = shared_from_this(), h = std::move(h)](error_code ec,
                                                          redis::response& resp) mutable {
        std::string out;
        if (!ec) {
            auto rep = resp[0];
            if (rep.is_error()) {
                ec = script_error(rep);
            } else if (!rep.is_string()) {
                ec = error::store_error;
            } else {
                out.assign(rep.as_string());
            }
        }
        self->finish(std::move(h), ec, std::move(out));
    });
}

void redis_store_impl::get_schedule(std::string id,
                                    store::handler<void(error_code, schedule_status)> h) {
    schedule_op(
        "get", id, nullptr,
        [self = shared_from_this(), id, h = std::move(h)](error_code ec, std::string rec) mutable {
            schedule_status st;
            if (!ec && !decode_record(id, rec, st)) {
                ec = error::store_error;
            }
            std::move(h)(ec, std::move(st));
        });
}

// Cursor: "<shard>:<id>" of the last schedule returned; a page goes through the shards in
// order, each in id order.
void redis_store_impl::list_schedules(std::string cursor, std::size_t count,
                                      store::handler<void(error_code, schedule_page)> h) {
    std::size_t first = 0;
    std::string after;
    if (!cursor.empty()) {
        const auto colon = cursor.find(':');
        const auto digits = std::string_view(cursor).substr(0, colon);
        if (colon == std::string::npos || colon == 0 || colon + 1 == cursor.size() ||
            digits.find_first_not_of("0123456789") != std::string_view::npos ||
            (first = static_cast<std::size_t>(replies::to_int(digits))) >= opt_.shards) {
            post(std::move(h), error_code(error::invalid_argument), schedule_page{});
            return;
        }
        after = cursor.substr(colon + 1);
    }
    auto st = std::make_shared<exec_state>();
    for (std::size_t s = first; s < opt_.shards; ++s) {
        call_args a(2);
        a.add(s == first ? std::string_view(after) : std::string_view());
        a.add(static_cast<std::int64_t>(count));
        push_shard_script(*st, scripts::schedule_list(), s, a);
    }
    st->read_only = true;
    run(st, [self = shared_from_this(), h = std::move(h), first,
             count](error_code ec, redis::response& resp) mutable {
        schedule_page page;
        for (std::size_t i = 0; !ec && i < resp.size() && page.entries.size() < count; ++i) {
            auto rep = resp[i];
            if (rep.is_error()) {
                ec = script_error(rep);
                break;
            }
            std::vector<schedule_status> got;
            if (!rep.is_array() || !records(rep, 0, got)) {
                ec = error::store_error;
                break;
            }
            for (auto& g : got) {
                if (page.entries.size() == count) {
                    break;
                }
                page.entries.push_back(std::move(g));
                if (page.entries.size() == count) {
                    // More may follow: in this shard or a later one.
                    page.cursor = std::to_string(first + i) + ":" + page.entries.back().spec.id;
                }
            }
        }
        if (ec) {
            page = {};
        }
        self->finish(std::move(h), ec, std::move(page));
    });
}

void redis_store_impl::due_schedules(duration window, std::size_t batch,
                                     store::handler<void(error_code, due_schedules_result)> h) {
    auto st = std::make_shared<exec_state>();
    for (std::size_t s = 0; s < opt_.shards; ++s) {
        call_args a(2);
        a.add(window.count());
        a.add(static_cast<std::int64_t>(batch));
        push_shard_script(*st, scripts::schedule_due(), s, a);
    }
    run(st, [self = shared_from_this(), h = std::move(h)](error_code ec,
                                                          redis::response& resp) mutable {
        due_schedules_result out;
        std::int64_t now = 0;
        for (std::size_t i = 0; !ec && i < resp.size(); ++i) {
            auto rep = resp[i];
            if (rep.is_error()) {
                ec = script_error(rep);
                break;
            }
            if (!rep.is_array() || rep.size() < 1 || !rep[0].is_integer() ||
                !replies::is_time(rep[0].as_integer()) || !records(rep, 1, out.schedules)) {
                ec = error::store_error;
                break;
            }
            now = std::max(now, rep[0].as_integer());
        }
        out.now = replies::ms(now);
        if (ec) {
            out = {};
        }
        self->finish(std::move(h), ec, std::move(out));
    });
}

void redis_store_impl::materialise(
    std::vector<materialisation> ms,
    store::handler<void(error_code, std::vector<materialise_result>)> h) {
    std::vector<std::string_view> ids;
    ids.reserve(ms.size());
    for (const auto& m : ms) {
        ids.emplace_back(m.schedule_id);
    }
    const auto g = group(ids);
    auto st = std::make_shared<exec_state>();
    for (std::size_t c = 0; c < g.shards.size(); ++c) {
        call_args a(16 * g.members[c].size());
        for (const auto k : g.members[c]) {
            const auto& m = ms[k];
            a.add(m.schedule_id);
            a.add(static_cast<std::int64_t>(m.revision));
            a.add(m.forbid_overlap ? std::string_view("1") : std::string_view("0"));
            a.add(m.cursor.time_since_epoch().count());
            if (m.next) {
                a.add(m.next->time_since_epoch().count());
            } else {
                a.add(std::string_view());
            }
            a.add(static_cast<std::int64_t>(m.skipped_misfire));
            a.add(m.payload);
            a.add(static_cast<std::int64_t>(m.retry.max_attempts));
            a.add(m.retry.base.count());
            a.add(m.retry.cap.count());
            a.add(static_cast<std::int64_t>(m.occurrences.size()));
            for (const auto& o : m.occurrences) {
                a.add(o.task_id);
                a.add(o.at.time_since_epoch().count());
            }
        }
        push_shard_script(*st, scripts::materialise(), g.shards[c], a);
        schedule_.forget(g.shards[c]);
    }
    run(st, [self = shared_from_this(), h = std::move(h), g,
             n = ms.size()](error_code ec, redis::response& resp) mutable {
        std::vector<materialise_result> out(n);
        for (std::size_t c = 0; !ec && c < g.shards.size(); ++c) {
            auto rep = resp[c];
            if (rep.is_error()) {
                ec = script_error(rep);
                break;
            }
            if (!rep.is_array() || rep.size() != 3 * g.members[c].size()) {
                ec = error::store_error;
                break;
            }
            for (std::size_t k = 0; k < g.members[c].size(); ++k) {
                auto& r = out[g.members[c][k]];
                // Counts of runs: a value past 32 bits was truncated by the cast.
                const auto is_count = [](redis::reply v) {
                    return v.is_integer() && v.as_integer() >= 0 && v.as_integer() <= UINT32_MAX;
                };
                if (!rep[3 * k].is_integer() || !is_count(rep[3 * k + 1]) ||
                    !is_count(rep[3 * k + 2])) {
                    ec = error::store_error;
                    break;
                }
                r.committed = rep[3 * k].as_integer() == 1;
                r.created = static_cast<std::uint32_t>(rep[3 * k + 1].as_integer());
                r.overlapped = static_cast<std::uint32_t>(rep[3 * k + 2].as_integer());
            }
        }
        if (ec) {
            out.clear();
        }
        self->finish(std::move(h), ec, std::move(out));
    });
}

} // namespace timewheel::dq::detail

namespace timewheel::dq {

using boost::system::error_code;

namespace {

// An operation whose reply is "ok" or an error; any other text is not schedule.lua's.
store::handler<void(error_code, std::string)> ignore_text(store::handler<void(error_code)> h) {
    return [h = std::move(h)](error_code ec, std::string r) mutable {
        if (!ec && r != "ok") {
            ec = error::store_error;
        }
        std::move(h)(ec);
    };
}

} // namespace

void redis_store::do_create_schedule(schedule_spec spec,
                                     handler<void(error_code, create_schedule_result)> h) {
    auto id = spec.id;
    impl_->schedule_op("create", std::move(id), &spec,
                       [h = std::move(h)](error_code ec, std::string r) mutable {
                           auto out = create_schedule_result::created;
                           if (!ec && r == "exists") {
                               out = create_schedule_result::exists;
                           } else if (!ec && r != "created") {
                               ec = error::store_error;
                           }
                           std::move(h)(ec, out);
                       });
}

void redis_store::do_replace_schedule(schedule_spec spec, handler<void(error_code)> h) {
    auto id = spec.id;
    impl_->schedule_op("replace", std::move(id), &spec, ignore_text(std::move(h)));
}

void redis_store::do_get_schedule(std::string id, handler<void(error_code, schedule_status)> h) {
    impl_->get_schedule(std::move(id), std::move(h));
}

void redis_store::do_list_schedules(std::string cursor, std::size_t count,
                                    handler<void(error_code, schedule_page)> h) {
    impl_->list_schedules(std::move(cursor), count, std::move(h));
}

void redis_store::do_delete_schedule(std::string id, handler<void(error_code)> h) {
    impl_->schedule_op("delete", std::move(id), nullptr, ignore_text(std::move(h)));
}

void redis_store::do_pause_schedule(std::string id, bool paused, handler<void(error_code)> h) {
    impl_->schedule_op(paused ? "pause" : "resume", std::move(id), nullptr,
                       ignore_text(std::move(h)));
}

void redis_store::do_trigger_schedule(std::string id, handler<void(error_code, std::string)> h) {
    impl_->schedule_op("trigger", std::move(id), nullptr,
                       [h = std::move(h)](error_code ec, std::string task_id) mutable {
                           // The new task's id: never empty.
                           if (!ec && task_id.empty()) {
                               ec = error::store_error;
                           }
                           std::move(h)(ec, ec ? std::string() : std::move(task_id));
                       });
}

void redis_store::do_due_schedules(duration window, std::size_t batch,
                                   handler<void(error_code, due_schedules_result)> h) {
    impl_->due_schedules(window, batch, std::move(h));
}

void redis_store::do_materialise(std::vector<materialisation> m,
                                 handler<void(error_code, std::vector<materialise_result>)> h) {
    impl_->materialise(std::move(m), std::move(h));
}

} // namespace timewheel::dq
