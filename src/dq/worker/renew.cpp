//
// src/dq/worker/renew.cpp
//
// Renewals: every lease/3, the leases of running (and waiting, and yielded) tasks that are
// within two thirds of their end are extended in one renew call. A lease the store no
// longer grants is lost: its job is told (job::on_lease_lost), and its report will be stale.
//

#include "worker_impl.hpp"

namespace timewheel::dq::detail {

void worker_impl::on_renew_timer() {
    if (closed_ || running_ + awaiting_ == 0) {
        return;
    }
    const auto lease = options_.claim.lease;
    const auto now = store_now();
    std::vector<record_ref> batch;
    std::vector<lease_ref> leases;
    for (auto& p : records_) {
        auto& r = *p;
        const bool held_running = r.state_ == worker_record::state::running ||
                                  r.state_ == worker_record::state::started ||
                                  r.state_ == worker_record::state::awaiting;
        if (held_running && r.lease_expiry_ - now < lease * 2 / 3) {
            batch.push_back({&r, r.generation_});
            leases.push_back({r.task_.id, r.task_.token});
        }
    }
    renew_timer_.expires_after(std::chrono::duration_cast<steady::duration>(lease / 3));
    if (leases.empty()) {
        return;
    }
    store_.renew(std::move(leases), lease,
                 [self = shared_from_this(), batch = std::move(batch),
                  now](error_code ec, std::vector<ack_result> results) {
                     auto& w = *self;
                     if (w.closed_) {
                         return;
                     }
                     if (ec || results.size() != batch.size()) {
                         w.failed("renew", ec ? ec : error_code(dq::error::store_error));
                         return; // the next round tries again
                     }
                     for (std::size_t i = 0; i < batch.size(); ++i) {
                         if (!batch[i].live(worker_record::state::running) &&
                             !batch[i].live(worker_record::state::started) &&
                             !batch[i].live(worker_record::state::awaiting)) {
                             continue;
                         }
                         auto& r = *batch[i].record;
                         if (results[i] == ack_result::ok) {
                             ++w.stats_.renewals;
                             r.lease_expiry_ = now + w.options_.claim.lease;
                         } else {
                             ++w.stats_.renew_stale;
                             // Lost: no more renewals; its report will come back stale.
                             r.lease_expiry_ = max_due;
                             r.lost_ = true;
                             if (r.on_lost_) {
                                 ++w.stats_.lease_lost;
                                 // May report (and free the record): the next ones are
                                 // checked by generation.
                                 auto f = std::move(r.on_lost_);
                                 r.on_lost_ = nullptr;
                                 f();
                             }
                         }
                     }
                 });
}

} // namespace timewheel::dq::detail
