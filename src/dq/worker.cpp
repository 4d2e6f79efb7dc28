//
// src/dq/worker.cpp
//
// dq::worker and dq::job, the public face: each call goes to the worker's machinery,
// detail::worker_impl (src/dq/worker/worker_impl.hpp and the files beside it).
//

#include <timewheel/dq/worker.hpp>

#include "worker/worker_impl.hpp"

#include <stdexcept>
#include <utility>

namespace timewheel::dq {

const claimed_task& job::task() const noexcept {
    return record_->task_;
}

void job::report(outcome o) {
    if (!record_) {
        throw std::logic_error("dq::job: this job has already reported (or is empty)");
    }
    auto* r = std::exchange(record_, nullptr);
    auto impl = std::move(impl_);
    impl->report(*r, std::move(o));
}

void job::yield_slot() {
    if (!record_) {
        throw std::logic_error("dq::job: yield_slot() on an empty job");
    }
    impl_->yield_slot(*record_);
}

void job::on_lease_lost(std::function<void()> f) {
    if (!record_) {
        throw std::logic_error("dq::job: on_lease_lost() on an empty job");
    }
    impl_->on_lease_lost(*record_, std::move(f));
}

bool job::lease_lost() const noexcept {
    return record_ && record_->lost_;
}

void job::abandon() noexcept {
    if (record_) {
        auto* r = std::exchange(record_, nullptr);
        auto impl = std::move(impl_);
        impl->abandon(*r);
    }
}

worker::worker(dq::store& s, worker_options options, erased_handler handler, int)
    : impl_(std::make_shared<detail::worker_impl>(s, std::move(options), std::move(handler))) {}

worker::~worker() {
    if (impl_) {
        impl_->close();
    }
}

worker::executor_type worker::get_executor() const {
    return impl_->get_store().get_executor();
}

void worker::start() {
    impl_->start();
}

void worker::stop(std::chrono::steady_clock::time_point deadline,
                  boost::asio::any_completion_handler<void(boost::system::error_code)> handler) {
    impl_->stop(deadline, std::move(handler));
}

const worker_stats& worker::stats() const noexcept {
    return impl_->stats();
}

time_point worker::store_now() const noexcept {
    return impl_->store_now();
}

std::chrono::steady_clock::duration worker::clock_rtt() const noexcept {
    return impl_->clock_rtt();
}

} // namespace timewheel::dq
