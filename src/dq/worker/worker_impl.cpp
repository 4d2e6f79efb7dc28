//
// src/dq/worker/worker_impl.cpp
//
// dq::worker's state: its construction (the options checked, the clock offset first taken
// from this host), its closing (timers cancelled, records disarmed), the estimate of the
// store's clock from each claim's round trip, and the count and backoff of store failures.
//

#include "worker_impl.hpp"

namespace timewheel::dq::detail {

void worker_record::on_event(wheel_service&, service_entry& e, timewheel::detail::entry_event ev) {
    if (ev == timewheel::detail::entry_event::expired) {
        auto& r = static_cast<worker_record&>(e);
        r.owner_->fire(r);
    }
}

worker_impl::worker_impl(store& s, worker_options options, std::function<void(job)> handler)
    : store_(s)
    , options_(std::move(options))
    , handler_(std::move(handler))
    , executor_(s.get_executor())
    , claim_timer_(context_of(executor_), call{this, &worker_impl::on_claim_timer})
    , wakeup_timer_(context_of(executor_), call{this, &worker_impl::on_wakeup_timer})
    , ack_timer_(context_of(executor_), call{this, &worker_impl::on_ack_timer})
    , renew_timer_(context_of(executor_), call{this, &worker_impl::on_renew_timer})
    , stop_timer_(context_of(executor_), call{this, &worker_impl::on_stop_timer}) {
    if (!handler_) {
        throw std::invalid_argument("dq::worker: the handler must not be empty");
    }
    if (options_.concurrency == 0) {
        throw std::invalid_argument("dq::worker: concurrency must be at least 1");
    }
    if (options_.claim.batch == 0) {
        throw std::invalid_argument("dq::worker: claim.batch must be at least 1");
    }
    if (options_.prefetch == 0) {
        // Room for two claims: one in flight while the last one's tasks wait.
        options_.prefetch = 2 * options_.claim.batch;
    }
    if (options_.ack_batch == 0) {
        throw std::invalid_argument("dq::worker: ack_batch must be at least 1");
    }
    if (options_.claim.lease < duration(3) || options_.claim.horizon < duration(0)) {
        throw std::invalid_argument(
            "dq::worker: claim.lease must be at least 3 ms and claim.horizon not negative");
    }
    if (options_.poll <= duration(0) || options_.ack_delay < duration(0) ||
        options_.backoff_min <= duration(0) || options_.backoff_max < options_.backoff_min) {
        throw std::invalid_argument("dq::worker: poll, ack_delay or backoff out of range");
    }
    // Until the first claim answers, the store's clock is taken to be this host's.
    offset_ = std::chrono::duration_cast<std::chrono::nanoseconds>(
                  std::chrono::system_clock::now().time_since_epoch())
                  .count() -
              std::chrono::duration_cast<std::chrono::nanoseconds>(steady::now().time_since_epoch())
                  .count();
    rng_ ^= reinterpret_cast<std::uintptr_t>(this);
    pending_acks_.reserve(options_.ack_batch);
}

worker_impl::~worker_impl() {
    close();
}

void worker_impl::close() noexcept {
    closed_ = true;
    claim_timer_.cancel();
    wakeup_timer_.cancel();
    ack_timer_.cancel();
    renew_timer_.cancel();
    stop_timer_.cancel();
    for (auto& r : records_) {
        if (r->armed()) {
            net::use_service<wheel_service>(context_of(executor_)).cancel(*r);
        }
    }
    stop_handler_ = nullptr;
}

// --- Clock ---------------------------------------------------------------------------

void worker_impl::sample_clock(steady::time_point sent, steady::time_point received,
                               time_point server) {
    const auto rtt = received - sent;
    // Redis TIME is truncated to the millisecond: the server's time was in [server,
    // server + 1 ms), so its middle is the estimate.
    const auto mid_server =
        std::chrono::duration_cast<std::chrono::nanoseconds>(server.time_since_epoch()).count() +
        500'000;
    const auto mid_local =
        std::chrono::duration_cast<std::chrono::nanoseconds>(sent.time_since_epoch()).count() +
        std::chrono::duration_cast<std::chrono::nanoseconds>(rtt).count() / 2;
    // A kept sample loses 1 ms of credit per second of age (clocks drift, and NTP slews
    // the store's clock by up to 0.5 ms/s).
    const auto aged = best_rtt_ + (received - best_at_) / 1000;
    if (!have_sample_ || rtt <= aged) {
        have_sample_ = true;
        best_rtt_ = rtt;
        best_at_ = received;
        offset_ = mid_server - mid_local;
    }
}

steady::duration worker_impl::backoff() {
    const auto max = std::chrono::duration_cast<steady::duration>(options_.backoff_max);
    auto d = std::chrono::duration_cast<steady::duration>(options_.backoff_min);
    for (std::uint32_t i = 1; i < failures_ && d < max; ++i) {
        d *= 2;
    }
    d = std::min(d, max);
    rng_ ^= rng_ << 13;
    rng_ ^= rng_ >> 7;
    rng_ ^= rng_ << 17;
    // Full jitter, but never below the minimum: a dead store is not hammered.
    const auto min = std::chrono::duration_cast<steady::duration>(options_.backoff_min);
    const auto span = static_cast<std::uint64_t>((d - min).count()) + 1;
    return min + steady::duration(static_cast<steady::duration::rep>(rng_ % span));
}

void worker_impl::failed(std::string_view what, error_code ec) {
    ++stats_.store_errors;
    ++failures_;
    if (options_.on_error) {
        options_.on_error(what, ec);
    }
}

} // namespace timewheel::dq::detail
