//
// src/dq/worker/worker_impl.hpp
//
// dq::worker's machinery, shared by the files of src/dq/worker/ (one per part of a task's way
// through the worker) and by src/dq/worker.cpp (the public face). Everything runs on the
// store's executor (one thread). The state lives in worker_impl, shared by the worker, its
// jobs and the store operations in flight (so that a job reported after the worker is gone,
// or a reply that comes late, finds memory that is still there and does nothing).
//
// A task's record goes free -> prefetched (armed in the wheel) -> ready (fired, waiting for
// a handler slot) -> starting (in a start call) -> running (handler called) -> free (its
// ack queued); a running job that gave its slot back (job::yield_slot) is `awaiting` until
// it reports, its lease still renewed. A task the store started (a claim's already-due task,
// or a start call's) when every handler slot was taken meanwhile waits as `started` for a
// slot. Records are pooled: after warm-up, holding a task allocates nothing here. The pool's
// few lines are defined here, inline, since every part of the way takes or frees a record.
//
//   worker_impl.cpp  construction, closing, the store's clock, failures and their backoff
//   claim.cpp        claiming (prefetch into the wheel) and the store's wake-ups
//   fire.cpp         firing from the wheel, start calls, running the handler
//   report.cpp       a job's report, yielding its slot, and the batching of acks
//   renew.cpp        renewing the leases of running tasks, and lost leases
//   stop.cpp         stopping: releasing what is held, waiting for what runs
//

#ifndef TIMEWHEEL_SRC_DQ_WORKER_WORKER_IMPL_HPP
#define TIMEWHEEL_SRC_DQ_WORKER_WORKER_IMPL_HPP

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
#include <cstdint>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string_view>
#include <utility>
#include <vector>

namespace timewheel::dq::detail {

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
    bool fired_ = false; // the wheel fired a task since the last start call (fire.cpp)
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

inline net::execution_context& context_of(const net::any_io_executor& ex) {
    return net::query(ex, net::execution::context);
}

// --- The pool of records -------------------------------------------------------------

inline worker_record* worker_impl::allocate() {
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

inline void worker_impl::release_record(worker_record& r) noexcept {
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

inline void worker_impl::push_ready(worker_record& r) noexcept {
    r.state_ = worker_record::state::ready;
    ready_.push(r);
}

inline void worker_impl::push_started(worker_record& r) noexcept {
    r.state_ = worker_record::state::started;
    started_waiting_.push(r);
}

} // namespace timewheel::dq::detail

#endif // TIMEWHEEL_SRC_DQ_WORKER_WORKER_IMPL_HPP
