//
// src/dq/sqlite/worker_ops.cpp
//
// The worker's operations on the engine's thread, inside the group's transaction: claim
// (which first returns expired leases), start, renew, acknowledge (which logs the attempt and
// retries with backoff, or ends the task) and release. Leases carry a fresh random token from
// the engine's generator, as do the retries' jittered delays. The semantics are those of the
// Redis store's scripts, state by state.
//

#include "engine.hpp"

#include <algorithm>

namespace timewheel::dq::detail {

using namespace sqlite;

namespace {

// Bounded work per group: expired leases handled by one claim.
constexpr int expired_per_claim = 64;

} // namespace

// Expired leases go back: a prefetched task at its due time (it never started); a
// running one has used its attempt: retried now, or dead when it was the last.
void sqlite_engine::expire(std::int64_t now) {
    std::vector<std::pair<std::int64_t, std::string>> ids;
    {
        query q(stmt("SELECT rowid, id FROM tasks WHERE state IN (1, 2) AND lease_until <= ?1 "
                     "ORDER BY lease_until LIMIT ?2"));
        q.bind(1, now).bind(2, expired_per_claim);
        while (q.step()) {
            ids.emplace_back(q.integer(0), q.text(1));
        }
    }
    for (const auto& [rowid, id] : ids) {
        auto r = find(id);
        if (!r) {
            continue;
        }
        if (r->state == prefetched) {
            delay(*r, r->due, r->attempt, r->last_error, r->updated);
            continue;
        }
        log(id, r->lease_attempt, r->worker, r->started, now, "lease_expired", "");
        if (r->lease_attempt >= r->max_attempts) {
            end(*r, dead, r->lease_attempt, "lease expired", now);
        } else {
            delay(*r, now, r->lease_attempt, "lease expired", now);
        }
    }
}

claim_result sqlite_engine::claim(const claim_options& o) {
    const auto now = now_ms();
    claim_result out;
    out.server_time = ms(now);
    expire(now);
    struct pick {
        std::int64_t rowid;
        claimed_task t;
    };
    std::vector<pick> picks;
    {
        query q(stmt("SELECT rowid, id, due, attempt, payload, max_attempts, base, cap "
                     "FROM tasks WHERE state = 0 AND due <= ?1 ORDER BY due LIMIT ?2"));
        q.bind(1, now + o.horizon.count()).bind(2, static_cast<std::int64_t>(o.batch));
        while (q.step()) {
            pick p;
            p.rowid = q.integer(0);
            p.t.id = q.text(1);
            p.t.due = ms(q.integer(2));
            p.t.attempt = static_cast<std::uint32_t>(q.integer(3) + 1);
            p.t.payload = q.text(4);
            p.t.retry.max_attempts = static_cast<std::uint32_t>(q.integer(5));
            p.t.retry.base = duration(q.integer(6));
            p.t.retry.cap = duration(q.integer(7));
            picks.push_back(std::move(p));
        }
    }
    out.tasks.reserve(picks.size());
    for (auto& p : picks) {
        p.t.token = token();
        query u(stmt("UPDATE tasks SET state = 1, token = ?2, lease_until = ?3, "
                     "lease_attempt = ?4, worker = ?5, started = 0 WHERE rowid = ?1"));
        u.bind(1, p.rowid)
            .bind(2, p.t.token)
            .bind(3, std::max(p.t.due.time_since_epoch().count(), now) + o.lease.count())
            .bind(4, static_cast<std::int64_t>(p.t.attempt))
            .bind(5, o.worker)
            .run();
        moved(delayed, prefetched);
        out.tasks.push_back(std::move(p.t));
    }
    if (auto e = earliest()) {
        out.next_due = ms(*e);
    }
    return out;
}

std::vector<start_result> sqlite_engine::start(const std::vector<lease_ref>& leases) {
    const auto now = now_ms();
    std::vector<start_result> out;
    out.reserve(leases.size());
    for (const auto& l : leases) {
        auto r = find(l.id);
        if (!r || !r->holds(l.token)) {
            out.push_back(start_result::stale);
        } else if (r->due > now) {
            out.push_back(start_result::too_early);
        } else {
            if (r->state != running) {
                query u(stmt("UPDATE tasks SET state = 2, started = ?2 WHERE rowid = ?1"));
                u.bind(1, r->rowid).bind(2, now).run();
                moved(prefetched, running);
            }
            out.push_back(start_result::started);
        }
    }
    return out;
}

std::vector<ack_result> sqlite_engine::renew(const std::vector<lease_ref>& leases, duration lease) {
    const auto now = now_ms();
    std::vector<ack_result> out;
    out.reserve(leases.size());
    for (const auto& l : leases) {
        auto r = find(l.id);
        if (!r || !r->holds(l.token)) {
            out.push_back(ack_result::stale);
            continue;
        }
        query u(stmt("UPDATE tasks SET lease_until = ?2 WHERE rowid = ?1"));
        u.bind(1, r->rowid).bind(2, now + lease.count()).run();
        out.push_back(ack_result::ok);
    }
    return out;
}

std::vector<ack_result> sqlite_engine::acknowledge(const std::vector<ack>& acks) {
    const auto now = now_ms();
    std::vector<ack_result> out;
    out.reserve(acks.size());
    for (const auto& a : acks) {
        // An ack clears the token: a second ack of the same lease in a batch is stale.
        auto r = find(a.lease.id);
        if (!r || !r->holds(a.lease.token)) {
            out.push_back(ack_result::stale);
            continue;
        }
        out.push_back(ack_result::ok);
        auto started = a.started.time_since_epoch().count();
        auto ended = a.ended.time_since_epoch().count();
        if (started <= 0) {
            started = r->started;
        }
        if (ended <= 0) {
            ended = now;
        }
        const auto att = r->lease_attempt;
        const std::string_view err = a.outcome.error;
        switch (a.outcome.what) {
        case outcome::kind::success:
            log(a.lease.id, att, r->worker, started, ended, "success", "");
            end(*r, finished, att, "", now);
            break;
        case outcome::kind::failure:
            log(a.lease.id, att, r->worker, started, ended, "failure", err);
            end(*r, dead, att, err, now);
            break;
        case outcome::kind::retry:
            log(a.lease.id, att, r->worker, started, ended, "retry", err);
            if (att >= r->max_attempts) {
                end(*r, dead, att, err, now);
            } else {
                const auto wait =
                    a.outcome.retry_after ? a.outcome.retry_after->count() : backoff(*r, att);
                delay(*r, now + wait, att, err, now);
            }
            break;
        case outcome::kind::defer:
            // Nothing ran: the attempt is given back (the count stays the one before
            // the claim) and nothing is logged.
            delay(*r, now + (a.outcome.retry_after ? a.outcome.retry_after->count() : 0),
                  r->attempt, err, now);
            break;
        }
    }
    return out;
}

void sqlite_engine::release(const std::vector<lease_ref>& leases) {
    for (const auto& l : leases) {
        auto r = find(l.id);
        if (r && r->holds(l.token) && r->state == prefetched) {
            delay(*r, r->due, r->attempt, r->last_error, r->updated);
        }
    }
}

// The retry delay after attempt `att` failed: uniform in [0, min(cap, base * 2^(att-1))].
std::int64_t sqlite_engine::backoff(const row& r, std::int64_t att) {
    const auto shift = std::max<std::int64_t>(att - 1, 0);
    std::int64_t d = r.cap;
    if (r.base == 0) {
        d = 0;
    } else if (shift < 62 && r.base <= (r.cap >> shift)) {
        d = r.base << shift;
    }
    return std::uniform_int_distribution<std::int64_t>(0, d)(rng_);
}

std::string sqlite_engine::token() {
    static constexpr char hex[] = "0123456789abcdef";
    std::string t(20, '0');
    std::uint64_t a = rng_();
    std::uint64_t b = rng_();
    for (std::size_t i = 0; i < t.size(); ++i) {
        std::uint64_t& v = i < 10 ? a : b;
        t[i] = hex[v & 15];
        v >>= 4;
    }
    return t;
}

} // namespace timewheel::dq::detail
