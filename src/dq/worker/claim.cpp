//
// src/dq/worker/claim.cpp
//
// Claiming: the worker leases tasks due within the horizon and arms each in the local wheel
// (prefetch), or runs at once those the store started. Claims stay within `prefetch`; while
// they come back full (a backlog) a second one is in flight, so that the store always has
// one to run. The next claim is timed by the earliest due time the store reported (when it
// is half the horizon away: one claim for half a horizon of tasks, not one per task at a
// steady rate), by a wake-up from the store (a submit that made a task its earliest), or by
// the poll.
//

#include "worker_impl.hpp"

namespace timewheel::dq::detail {

void worker_impl::start() {
    if (started_) {
        throw std::logic_error("dq::worker: start() called twice");
    }
    started_ = true;
    wait_wakeup();
    claim();
}

void worker_impl::arm_claim(steady::time_point at) {
    const auto latest = steady::now() + options_.poll;
    at = std::min(at, latest);
    if (!claim_timer_.armed() || claim_at_ > at) {
        claim_at_ = at;
        claim_timer_.expires_at(at);
    }
}

void worker_impl::on_claim_timer() {
    claim();
}

void worker_impl::claim() {
    if (closed_ || stopping_) {
        return;
    }
    if (claims_in_flight_ > 0 && (!backlog_ || claims_in_flight_ >= max_claims_in_flight)) {
        claim_again_ = true;
        return;
    }
    const std::size_t taken = held_ + claim_reserved_;
    const std::size_t room = options_.prefetch > taken ? options_.prefetch - taken : 0;
    if (room == 0) {
        // A claim in flight claims again when it comes back; otherwise a start does.
        claim_blocked_ = claims_in_flight_ == 0;
        claim_again_ = claims_in_flight_ > 0;
        return;
    }
    claim_blocked_ = false;
    claim_again_ = false;
    claim_timer_.cancel();
    claim_options opt = options_.claim;
    opt.batch = std::min(opt.batch, room);
    // Free handler slots (after the tasks already waiting for one, and those the claims in
    // flight may start): the store may start that many already-due tasks itself, saving
    // their start call.
    const std::size_t busy =
        running_ + starting_ + ready_.size + started_waiting_.size + start_reserved_;
    opt.start_due =
        std::min(opt.batch, options_.concurrency > busy ? options_.concurrency - busy : 0);
    ++claims_in_flight_;
    claim_reserved_ += opt.batch;
    start_reserved_ += opt.start_due;
    const auto sent = steady::now();
    store_.claim(opt, [self = shared_from_this(), sent, asked = opt.batch,
                       start_asked = opt.start_due](error_code ec, claim_result r) {
        self->on_claimed(ec, std::move(r), sent, asked, start_asked);
    });
}

void worker_impl::on_claimed(error_code ec, claim_result r, steady::time_point sent,
                             std::size_t asked, std::size_t start_asked) {
    --claims_in_flight_;
    claim_reserved_ -= asked;
    start_reserved_ -= start_asked;
    if (closed_) {
        return;
    }
    const auto received = steady::now();
    if (ec) {
        backlog_ = false;
        failed("claim", ec);
        if (stopping_) {
            maybe_finish_stop();
            return;
        }
        arm_claim(received + backoff());
        return;
    }
    failures_ = 0;
    ++stats_.claims;
    sample_clock(sent, received, r.server_time);
    // Tasks the claim started (due by the store's clock) run now, even when stopping: they
    // cannot be given back, and stopping waits for running handlers.
    std::vector<record_ref> run_now;
    std::size_t started_here = 0;
    for (auto& t : r.tasks) {
        if (!t.running) {
            continue;
        }
        ++started_here;
        auto* rec = allocate();
        rec->task_ = std::move(t);
        rec->lease_expiry_ = std::max(rec->task_.due, r.server_time) + options_.claim.lease;
        ++stats_.claimed;
        ++stats_.started_by_claim;
        if (running_ < options_.concurrency) {
            began_running(*rec);
            run_now.push_back({rec, rec->generation_});
        } else {
            push_started(*rec);
        }
    }
    if (started_here > 0) {
        std::erase_if(r.tasks, [](const claimed_task& t) { return t.running; });
        // Earliest first, as a start call's: the claim's answer comes shard by shard.
        std::stable_sort(run_now.begin(), run_now.end(),
                         [](const record_ref& a, const record_ref& b) {
                             return a.record->task_.due < b.record->task_.due;
                         });
    }
    if (started_waiting_.head) {
        schedule_starts(); // the ones that found no free handler slot
    }
    // Runs them after this reply's bookkeeping (a handler may report, and claim, at once).
    struct run_at_exit {
        worker_impl* self;
        std::vector<record_ref>& jobs;
        ~run_at_exit() {
            for (auto& j : jobs) {
                if (!self->closed_ && j.live(worker_record::state::running)) {
                    self->run_handler(*j.record);
                }
            }
        }
    } runner{this, run_now};
    if (stopping_) {
        // Claimed while stopping: give them straight back.
        if (!r.tasks.empty()) {
            std::vector<lease_ref> leases;
            leases.reserve(r.tasks.size());
            for (auto& t : r.tasks) {
                leases.push_back({std::move(t.id), std::move(t.token)});
            }
            const auto n = leases.size();
            ++releases_in_flight_;
            store_.release(std::move(leases), [self = shared_from_this(), n](error_code ec) {
                --self->releases_in_flight_;
                if (ec) {
                    self->failed("release", ec);
                } else {
                    self->stats_.released += n;
                }
                self->maybe_finish_stop();
            });
        }
        maybe_finish_stop();
        return;
    }
    auto& service = net::use_service<wheel_service>(context_of(executor_));
    for (auto& t : r.tasks) {
        auto* rec = allocate();
        rec->task_ = std::move(t);
        rec->state_ = worker_record::state::prefetched;
        rec->lease_expiry_ = rec->task_.due + options_.claim.lease;
        ++held_;
        ++stats_.claimed;
        service.arm(*rec, to_local(rec->task_.due));
    }
    stats_.held = held_;
    const auto horizon = std::chrono::duration_cast<steady::duration>(options_.claim.horizon);
    backlog_ = r.tasks.size() + started_here >= asked;
    if (backlog_ || claim_again_) {
        // A full batch: more may be due already. Claim now, before this batch's handlers
        // run, so that the store works on the next claims meanwhile (up to two in flight).
        claim_again_ = false;
        claim();
        if (backlog_) {
            claim();
        }
    } else if (claims_in_flight_ > 0) {
        // A later claim is in flight: its reply decides when to claim next.
    } else if (r.next_due) {
        // Claim ahead: not when the next due time enters the horizon (at a steady rate, a
        // claim per task), but when it is half the horizon away, so that each claim takes
        // half a horizon of tasks, still at least half a horizon before they are due.
        arm_claim(std::max(received, to_local(*r.next_due) - horizon / 2));
    } else {
        arm_claim(received + options_.poll);
    }
}

void worker_impl::wait_wakeup() {
    if (closed_ || stopping_ || waiting_wakeup_) {
        return;
    }
    waiting_wakeup_ = true;
    store_.wait_wakeup([self = shared_from_this()](error_code ec, time_point due) {
        auto& w = *self;
        w.waiting_wakeup_ = false;
        if (w.closed_ || w.stopping_) {
            return;
        }
        if (ec == net::error::operation_aborted) {
            // The store closed its subscription (closed, or its connection dropped): listen
            // again later; the poll covers the gap.
            w.wakeup_timer_.expires_after(
                std::chrono::duration_cast<steady::duration>(w.options_.backoff_max));
            return;
        }
        if (ec) {
            w.failed("wait_wakeup", ec);
            w.wakeup_timer_.expires_at(steady::now() + w.backoff());
            return;
        }
        ++w.stats_.wakeups;
        if (w.options_.on_wakeup) {
            w.options_.on_wakeup();
        }
        const auto at = w.to_local(due) -
                        std::chrono::duration_cast<steady::duration>(w.options_.claim.horizon);
        if (w.claims_in_flight_ > 0) {
            w.claim_again_ = true;
        } else {
            w.arm_claim(std::max(at, steady::now()));
        }
        w.wait_wakeup();
    });
}

} // namespace timewheel::dq::detail
