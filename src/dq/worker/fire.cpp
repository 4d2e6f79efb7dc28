//
// src/dq/worker/fire.cpp
//
// Firing: a task the wheel fires at its due time waits for a handler slot; everything that
// fires in one turn of the executor goes to the store in one start call, earliest first,
// with the acks then pending (report.cpp).
// A started task's handler runs now, or waits for a slot; a too-early answer (this host's
// estimate of the store's clock runs ahead) arms the task again a little later each time.
//

#include "worker_impl.hpp"

namespace timewheel::dq::detail {

void worker_impl::fire(worker_record& r) {
    fired_ = true;
    push_ready(r);
    schedule_starts();
}

void worker_impl::schedule_starts() {
    if (starts_posted_ || closed_) {
        return;
    }
    starts_posted_ = true;
    // After the wheel's run: everything that fires in this turn goes in one start call.
    net::post(executor_, [self = shared_from_this()] {
        self->starts_posted_ = false;
        self->flush_starts();
    });
}

void worker_impl::flush_starts() {
    // Tasks the store has started already come first: their leases are running.
    while (!closed_ && started_waiting_.head && running_ < options_.concurrency) {
        auto* r = started_waiting_.pop();
        began_running(*r);
        run_handler(*r);
    }
    if (closed_ || !ready_.head) {
        return;
    }
    const std::size_t busy = running_ + starting_ + started_waiting_.size;
    std::size_t room = options_.concurrency > busy ? options_.concurrency - busy : 0;
    if (room == 0) {
        return; // a report makes room and flushes again
    }
    std::vector<record_ref> batch;
    while (ready_.head && room > 0) {
        auto* r = ready_.pop();
        r->state_ = worker_record::state::starting;
        batch.push_back({r, r->generation_});
        --room;
    }
    std::stable_sort(batch.begin(), batch.end(), [](const record_ref& a, const record_ref& b) {
        return a.record->task_.due < b.record->task_.due;
    });
    std::vector<lease_ref> leases;
    leases.reserve(batch.size());
    for (auto& b : batch) {
        leases.push_back({b.record->task_.id, b.record->task_.token});
    }
    starting_ += batch.size();
    store_.start(std::move(leases), [self = shared_from_this(), batch = std::move(batch)](
                                        error_code ec, std::vector<start_result> results) mutable {
        self->on_started(ec, std::move(results), std::move(batch));
    });
    // The acks waiting for their delay go along with a start for what the wheel fired (at
    // most one a tick): issued in the same turn, a Redis store writes both requests at once
    // and SQLite's thread commits both in one transaction, so a steady trickle of tasks
    // costs one store round trip a tick, not two. Not with a start for a slot a report
    // freed: those come as often as reports, and at full speed would send acks one by one.
    if (std::exchange(fired_, false) && !pending_acks_.empty()) {
        flush_acks();
    }
}

void worker_impl::on_started(error_code ec, std::vector<start_result> results,
                             std::vector<record_ref> batch) {
    starting_ -= batch.size();
    if (closed_) {
        return;
    }
    if (!ec && results.size() != batch.size()) {
        ec = dq::error::store_error;
    }
    ++stats_.start_batches;
    auto& service = net::use_service<wheel_service>(context_of(executor_));
    if (ec) {
        failed("start", ec);
        // Try again after a backoff (unless stopping: then they are released).
        const auto at = steady::now() + backoff();
        for (auto& b : batch) {
            if (!b.live(worker_record::state::starting)) {
                continue;
            }
            if (stopping_) {
                b.record->state_ = worker_record::state::prefetched;
                continue;
            }
            b.record->state_ = worker_record::state::prefetched;
            service.arm(*b.record, at);
        }
        if (stopping_) {
            release_held();
        }
        return;
    }
    failures_ = 0;
    std::size_t i = 0;
    for (auto& b : batch) {
        const auto result = results[i++];
        auto& r = *b.record;
        if (!b.live(worker_record::state::starting)) {
            continue;
        }
        switch (result) {
        case start_result::started:
            --held_;
            run_or_wait(r); // a claim in flight meanwhile may have taken the slot
            break;
        case start_result::stale:
            --held_;
            ++stats_.stale;
            release_record(r);
            break;
        case start_result::too_early: {
            ++stats_.too_early;
            r.state_ = worker_record::state::prefetched;
            // Our clock estimate runs ahead of the store's: wait a little longer each time.
            const auto extra =
                std::chrono::milliseconds(1LL << std::min<std::uint32_t>(r.early_, 6));
            ++r.early_;
            service.arm(r, std::max(to_local(r.task_.due), steady::now() + extra));
            break;
        }
        }
    }
    stats_.held = held_;
    stats_.running = running_;
    if (stopping_) {
        release_held();
    }
    if (ready_.head || started_waiting_.head) {
        schedule_starts();
    }
    if (claim_blocked_) {
        claim();
    }
}

// A task the store has started: its handler runs now if a slot is free and no started task
// waits for one (a report frees a slot and posts the flush that runs those, so an answer
// arriving between the two must not jump that queue), else it waits its turn.
void worker_impl::run_or_wait(worker_record& r) {
    if (running_ < options_.concurrency && !started_waiting_.head) {
        began_running(r);
        run_handler(r);
    } else {
        push_started(r);
    }
}

void worker_impl::began_running(worker_record& r) {
    ++stats_.started;
    r.state_ = worker_record::state::running;
    r.started_ = store_now();
    ++running_;
    stats_.running = running_;
    stats_.max_running = std::max(stats_.max_running, running_);
    if (!renew_timer_.armed()) {
        renew_timer_.expires_after(
            std::chrono::duration_cast<steady::duration>(options_.claim.lease / 3));
    }
}

void worker_impl::run_handler(worker_record& r) {
    try {
        handler_(job(shared_from_this(), &r));
    } catch (...) {
        // The job, destroyed on the way out, reported "abandoned".
        ++stats_.handler_exceptions;
    }
}

} // namespace timewheel::dq::detail
