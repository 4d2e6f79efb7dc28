//
// src/dq/worker/stop.cpp
//
// Stopping: claiming ends, the prefetched tasks go back to the store (release), the pending
// acks are flushed, and the stop completes when the running handlers have reported and
// every call in flight has answered, or at the deadline with timed_out.
//

#include "worker_impl.hpp"

namespace timewheel::dq::detail {

void worker_impl::release_held() {
    auto& service = net::use_service<wheel_service>(context_of(executor_));
    std::vector<lease_ref> leases;
    for (auto& p : records_) {
        auto& r = *p;
        if (r.state_ == worker_record::state::prefetched ||
            r.state_ == worker_record::state::ready) {
            service.cancel(r);
            leases.push_back({std::move(r.task_.id), std::move(r.task_.token)});
            --held_;
            release_record(r);
        }
    }
    ready_.clear();
    stats_.held = held_;
    if (leases.empty()) {
        return;
    }
    const auto n = leases.size();
    ++releases_in_flight_;
    store_.release(std::move(leases), [self = shared_from_this(), n](error_code ec) {
        --self->releases_in_flight_;
        if (self->closed_) {
            return;
        }
        if (ec) {
            self->failed("release", ec); // the leases will run out instead
        } else {
            self->stats_.released += n;
        }
        self->maybe_finish_stop();
    });
}

void worker_impl::stop(steady::time_point deadline,
                       net::any_completion_handler<void(error_code)> h) {
    if (stopping_ || closed_) {
        net::post(executor_, [h = std::move(h)]() mutable {
            std::move(h)(error_code(net::error::in_progress));
        });
        return;
    }
    stopping_ = true;
    stop_handler_.swap(h); // (Boost 1.81's move assignment recurses: swap instead)
    claim_timer_.cancel();
    wakeup_timer_.cancel();
    release_held();
    flush_acks();
    stop_timer_.expires_at(deadline);
    // Complete from a handler of our own, never inside the initiating function.
    net::post(executor_, [self = shared_from_this()] { self->maybe_finish_stop(); });
}

void worker_impl::on_stop_timer() {
    if (stop_handler_) {
        finish_stop(running_ + awaiting_ + starting_ + started_waiting_.size > 0
                        ? error_code(net::error::timed_out)
                        : error_code());
    }
}

void worker_impl::maybe_finish_stop() {
    if (!stopping_ || !stop_handler_ || closed_) {
        return;
    }
    if (running_ + awaiting_ > 0 || starting_ > 0 || started_waiting_.size > 0) {
        return;
    }
    if (!pending_acks_.empty() && acks_in_flight_ == 0 && !ack_timer_.armed()) {
        flush_acks();
    }
    if (claims_in_flight_ > 0 || !pending_acks_.empty() || acks_in_flight_ > 0 ||
        releases_in_flight_ > 0) {
        return;
    }
    finish_stop({});
}

void worker_impl::finish_stop(error_code ec) {
    stop_timer_.cancel();
    if (running_ + awaiting_ == 0) {
        renew_timer_.cancel();
    }
    stopped_ = true;
    auto h = std::move(stop_handler_);
    stop_handler_ = nullptr;
    net::post(executor_, [h = std::move(h), ec]() mutable { std::move(h)(ec); });
}

} // namespace timewheel::dq::detail
