//
// src/dq/worker.cpp
//
// dq::worker's machinery. Everything runs on the store's executor (one thread). The state
// lives in worker_impl, shared by the worker, its jobs and the store operations in flight
// (so that a job reported after the worker is gone, or a reply that comes late, finds
// memory that is still there and does nothing).
//
// A task's record goes free -> prefetched (armed in the wheel) -> ready (fired, waiting for
// a handler slot) -> starting (in a start call) -> running (handler called) -> free (its
// ack queued); a running job that gave its slot back (job::yield_slot) is `awaiting` until
// it reports, its lease still renewed. A task the store started (a claim's already-due task, or a
// start call's) when every handler slot was taken meanwhile waits as `started` for a slot. Records
// are pooled: after warm-up, holding a task allocates nothing here.
//

#include <timewheel/dq/worker.hpp>

#include <timewheel/callback_timer.hpp>
#include <timewheel/detail/service_entry.hpp>
#include <timewheel/wheel_service.hpp>

#include <boost/asio/error.hpp>
#include <boost/asio/execution/context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/query.hpp>

#include <algorithm>
#include <chrono>
#include <stdexcept>
#include <vector>

namespace timewheel::dq {
namespace detail {

namespace net = boost::asio;
using steady = std::chrono::steady_clock;
using boost::system::error_code;

struct worker_record : timewheel::detail::service_entry {
    enum class state : std::uint8_t {
        free,
        prefetched,
        ready,
        starting,
        started,
        running,
        awaiting
    };

    explicit worker_record(worker_impl* owner) noexcept
        : service_entry(&worker_record::on_event)
        , owner_(owner) {}

    static void on_event(wheel_service&, service_entry& e, timewheel::detail::entry_event ev);

    worker_impl* owner_;
    claimed_task task_;
    state state_ = state::free;
    std::uint32_t generation_ = 0;  // bumped when the record is freed: stale references
    std::uint32_t early_ = 0;       // too_early answers for this lease
    time_point lease_expiry_{};     // on the store's clock
    time_point started_{};          // on the store's clock (estimated)
    bool lost_ = false;             // a renewal found the lease lost
    std::function<void()> on_lost_; // job::on_lease_lost
    worker_record* next_ = nullptr; // free list, or the ready or the started FIFO
};

// A FIFO of records linked through next_: the tasks waiting for a handler slot.
struct record_fifo {
    worker_record* head = nullptr;
    worker_record* tail = nullptr;
    std::size_t size = 0;

    void push(worker_record& r) noexcept {
        r.next_ = nullptr;
        if (tail) {
            tail->next_ = &r;
        } else {
            head = &r;
        }
        tail = &r;
        ++size;
    }

    worker_record* pop() noexcept {
        worker_record* r = head;
        head = r->next_;
        if (!head) {
            tail = nullptr;
        }
        r->next_ = nullptr;
        --size;
        return r;
    }

    void clear() noexcept { *this = {}; }
};

// A reference to a record that may have been freed (and reused) since.
struct record_ref {
    worker_record* record;
    std::uint32_t generation;
    bool live(worker_record::state s) const noexcept {
        return record->generation_ == generation && record->state_ == s;
    }
};

class worker_impl : public std::enable_shared_from_this<worker_impl> {
public:
    worker_impl(store& s, worker_options options, std::function<void(job)> handler);
    ~worker_impl();

    void start();
    void stop(steady::time_point deadline, net::any_completion_handler<void(error_code)> h);
    void close() noexcept;

    void fire(worker_record& r);
    void report(worker_record& r, outcome o);
    void abandon(worker_record& r) noexcept;
    void yield_slot(worker_record& r);
    void on_lease_lost(worker_record& r, std::function<void()> f);

    time_point store_now() const noexcept { return to_store(steady::now()); }
    steady::duration clock_rtt() const noexcept { return best_rtt_; }
    const worker_stats& stats() const noexcept { return stats_; }
    store& get_store() const noexcept { return store_; }

private:
    struct call {
        worker_impl* self;
        void (worker_impl::*fn)();
        void operator()() const { (self->*fn)(); }
    };
    using timer = callback_timer<call>;

    // Clock: store time (ns since the epoch) = steady time (ns) + offset_.
    time_point to_store(steady::time_point t) const noexcept {
        return time_point(std::chrono::floor<duration>(
            std::chrono::nanoseconds(t.time_since_epoch().count() + offset_)));
    }
    steady::time_point to_local(time_point t) const noexcept {
        return steady::time_point(std::chrono::nanoseconds(
            std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count() -
            offset_));
    }
    void sample_clock(steady::time_point sent, steady::time_point received, time_point server);

    worker_record* allocate();
    void release_record(worker_record& r) noexcept;
    void push_ready(worker_record& r) noexcept;
    void push_started(worker_record& r) noexcept;
    void run_or_wait(worker_record& r);
    std::size_t unstarted() const noexcept { return held_; }

    void claim();
    void on_claim_timer();
    void on_claimed(error_code ec, claim_result r, steady::time_point sent, std::size_t asked,
                    std::size_t start_asked);
    void arm_claim(steady::time_point at);
    void wait_wakeup();
    void on_wakeup_timer() { wait_wakeup(); }
    void schedule_starts();
    void flush_starts();
    void on_started(error_code ec, std::vector<start_result> results,
                    std::vector<record_ref> batch);
    void run_handler(worker_record& r);
    void began_running(worker_record& r);
    void queue_ack(ack a);
    void flush_acks();
    void on_ack_timer() { flush_acks(); }
    void on_acked(error_code ec, std::vector<ack_result> results, std::vector<ack> sent);
    void on_renew_timer();
    void release_held();
    void on_stop_timer();
    void maybe_finish_stop();
    void finish_stop(error_code ec);
    void failed(std::string_view what, error_code ec);
    steady::duration backoff();

    store& store_;
    worker_options options_;
    std::function<void(job)> handler_;
    net::any_io_executor executor_;

    // Clock offset: the sample with the smallest round trip, aged.
    std::int64_t offset_ = 0;
    steady::duration best_rtt_{};
    steady::time_point best_at_{};
    bool have_sample_ = false;

    std::vector<std::unique_ptr<worker_record>> records_;
    worker_record* free_ = nullptr;
    record_fifo ready_;        // fired, waiting for a handler slot
    std::size_t held_ = 0;     // prefetched + ready + starting
    std::size_t starting_ = 0; // in start calls in flight
    std::size_t running_ = 0;
    std::size_t awaiting_ = 0; // jobs that gave their slot back, not reported
    // Started in the store, waiting for a handler slot (claims and start calls in flight
    // together may start more than the slots free when they were sent).
    record_fifo started_waiting_;

    bool started_ = false;
    // Claims in flight, and what they may bring: prefetched tasks (counted against
    // `prefetch`) and tasks started by the store (counted against `concurrency`). While
    // claims come back full (a backlog), a second one is sent before the last one's tasks
    // are handled, so that the store always has a claim to run.
    static constexpr std::size_t max_claims_in_flight = 2;
    std::size_t claims_in_flight_ = 0;
    std::size_t claim_reserved_ = 0;
    std::size_t start_reserved_ = 0;
    bool backlog_ = false;
    bool claim_again_ = false;
    bool claim_blocked_ = false;
    bool waiting_wakeup_ = false;
    bool starts_posted_ = false;
    bool stopping_ = false;
    bool stopped_ = false;
    bool closed_ = false;
    std::uint32_t failures_ = 0; // consecutive store failures
    std::uint64_t rng_ = 0x9e3779b97f4a7c15ull;

    std::vector<ack> pending_acks_;
    std::size_t acks_in_flight_ = 0;
    std::size_t releases_in_flight_ = 0;

    timer claim_timer_;
    steady::time_point claim_at_{};
    timer wakeup_timer_;
    timer ack_timer_;
    timer renew_timer_;
    timer stop_timer_;
    net::any_completion_handler<void(error_code)> stop_handler_;

    worker_stats stats_;
};

namespace {

net::execution_context& context_of(const net::any_io_executor& ex) {
    return net::query(ex, net::execution::context);
}

} // namespace

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

// --- Records -------------------------------------------------------------------------

worker_record* worker_impl::allocate() {
    if (!free_) {
        records_.push_back(std::make_unique<worker_record>(this));
        free_ = records_.back().get();
    }
    auto* r = free_;
    free_ = r->next_;
    r->next_ = nullptr;
    r->early_ = 0;
    return r;
}

void worker_impl::release_record(worker_record& r) noexcept {
    if (r.armed()) {
        net::use_service<wheel_service>(context_of(executor_)).cancel(r);
    }
    r.state_ = worker_record::state::free;
    r.lost_ = false;
    r.on_lost_ = nullptr;
    ++r.generation_;
    r.next_ = free_;
    free_ = &r;
}

void worker_impl::push_ready(worker_record& r) noexcept {
    r.state_ = worker_record::state::ready;
    ready_.push(r);
}

void worker_impl::push_started(worker_record& r) noexcept {
    r.state_ = worker_record::state::started;
    started_waiting_.push(r);
}

// A task the store has started: its handler runs now if a slot is free, else it waits.
void worker_impl::run_or_wait(worker_record& r) {
    if (running_ < options_.concurrency) {
        began_running(r);
        run_handler(r);
    } else {
        push_started(r);
    }
}

// --- Claiming ------------------------------------------------------------------------

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
        arm_claim(std::max(received, to_local(*r.next_due) - horizon));
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

// --- Firing and starting ---------------------------------------------------------------

void worker_impl::fire(worker_record& r) {
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

// --- Reports and acks ----------------------------------------------------------------

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

// --- Renewals ------------------------------------------------------------------------

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

// --- Stopping ------------------------------------------------------------------------

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

} // namespace detail

// --- The public face ---------------------------------------------------------------------

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
