//
// src/dq/worker/report.cpp
//
// A job's end: its report frees the record and the handler slot, and its ack joins a batch
// sent when it holds ack_batch acks, after ack_delay, or with the next start call for what
// the wheel fired, whichever comes first (one store call for many tasks; fire.cpp). A
// batch the store did not answer is sent again after a backoff. A job may also give its slot
// back early (yield_slot) and go on waiting for its own report.
//

#include "worker_impl.hpp"

namespace timewheel::dq::detail {

void worker_impl::report(worker_record& r, outcome o) {
    switch (o.what) {
    case outcome::kind::success:
        ++stats_.succeeded;
        break;
    case outcome::kind::retry:
        ++stats_.retried;
        break;
    case outcome::kind::failure:
        ++stats_.failed;
        break;
    case outcome::kind::defer:
        ++stats_.deferred;
        break;
    }
    if (r.state_ == worker_record::state::awaiting) {
        --awaiting_;
    } else {
        --running_;
    }
    stats_.running = running_;
    stats_.awaiting = awaiting_;
    if (running_ + awaiting_ == 0) {
        renew_timer_.cancel(); // an idle worker keeps no timer but the claim's
    }
    ack a{{std::move(r.task_.id), std::move(r.task_.token)}, std::move(o), r.started_, store_now()};
    release_record(r);
    if (closed_) {
        return;
    }
    queue_ack(std::move(a));
    if (ready_.head || started_waiting_.head) {
        schedule_starts();
    }
    if (stopping_) {
        maybe_finish_stop();
    }
}

void worker_impl::abandon(worker_record& r) noexcept {
    try {
        ++stats_.abandoned;
        report(r, outcome::retry("abandoned"));
    } catch (...) {
        // Out of memory while queueing the ack: the lease runs out and the task comes back.
    }
}

void worker_impl::yield_slot(worker_record& r) {
    if (r.state_ != worker_record::state::running) {
        return; // yielded already
    }
    r.state_ = worker_record::state::awaiting;
    // Many jobs may wait this way: each keeps its id and lease, not its payload.
    r.task_.payload = std::string();
    --running_;
    ++awaiting_;
    stats_.running = running_;
    stats_.awaiting = awaiting_;
    if (!closed_ && (ready_.head || started_waiting_.head)) {
        schedule_starts();
    }
}

void worker_impl::on_lease_lost(worker_record& r, std::function<void()> f) {
    if (!f || !r.lost_) {
        r.on_lost_ = std::move(f);
        return;
    }
    // Lost already: told from a handler of our own, never inside the call.
    net::post(executor_, std::move(f));
}

void worker_impl::queue_ack(ack a) {
    pending_acks_.push_back(std::move(a));
    if (pending_acks_.size() >= options_.ack_batch) {
        flush_acks();
    } else if (!ack_timer_.armed()) {
        ack_timer_.expires_after(std::chrono::duration_cast<steady::duration>(options_.ack_delay));
    }
}

void worker_impl::flush_acks() {
    ack_timer_.cancel();
    if (pending_acks_.empty() || closed_) {
        return;
    }
    std::vector<ack> batch = std::move(pending_acks_);
    pending_acks_ = {};
    pending_acks_.reserve(options_.ack_batch);
    // A copy stays here, to be sent again if the store does not answer.
    auto copy = batch;
    ++acks_in_flight_;
    store_.acknowledge(std::move(batch),
                       [self = shared_from_this(), sent = std::move(copy)](
                           error_code ec, std::vector<ack_result> results) mutable {
                           self->on_acked(ec, std::move(results), std::move(sent));
                       });
}

void worker_impl::on_acked(error_code ec, std::vector<ack_result> results, std::vector<ack> sent) {
    --acks_in_flight_;
    if (closed_) {
        return;
    }
    if (ec) {
        failed("acknowledge", ec);
        if (stopping_ && !stop_handler_) {
            return; // stopped: the leases will run out
        }
        for (auto& a : sent) {
            pending_acks_.push_back(std::move(a));
        }
        ack_timer_.expires_after(backoff());
        return;
    }
    failures_ = 0;
    ++stats_.ack_batches;
    for (auto r : results) {
        if (r == ack_result::ok) {
            ++stats_.acked;
        } else {
            ++stats_.ack_stale;
        }
    }
    if (stopping_) {
        maybe_finish_stop();
    }
}

} // namespace timewheel::dq::detail
