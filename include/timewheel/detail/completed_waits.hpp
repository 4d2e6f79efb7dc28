//
// timewheel/detail/completed_waits.hpp
//
// The wait-queue half of wheel_service: how the waits of wheel_timers, once completed, reach
// the io_context (as Asio keeps its scheduler apart from its timer service).
//
// A run of the wheel expires entries, and each expired wheel_timer hands its pending waits
// here (push()). When the run ends, flush() orders them earliest expiry first (waits that
// expire together complete in steady_timer's order), keeps the first, which the driver's own
// completion then runs inline (run_inline(): one wait costs the user one handler run in
// io_context::run(), as with steady_timer), and posts the others. Aborted waits are posted
// by the service (post()), directly or through the operation that completes a batch.
//
// No work is counted while a wait is pending (the driver's reactor wait counts for the
// wheel): post() counts each wait it queues, and a wait run inline is part of the operation
// running it.
//
// Part of wheel_service, on its thread; it allocates nothing.
//

#ifndef TIMEWHEEL_DETAIL_COMPLETED_WAITS_HPP
#define TIMEWHEEL_DETAIL_COMPLETED_WAITS_HPP

#include <timewheel/detail/wait_op.hpp>

#include <boost/asio/detail/scheduler.hpp>

namespace timewheel {
namespace detail {

class completed_waits {
public:
    explicit completed_waits(boost::asio::detail::scheduler& scheduler) noexcept
        : scheduler_(scheduler) {}

    completed_waits(const completed_waits&) = delete;
    completed_waits& operator=(const completed_waits&) = delete;

    /// Queues a wait that the run in progress expired (its error code set), in the order the
    /// wheel fired it; flush() sorts them if that order was not by expiry.
    void push(wait_op_base* op) noexcept {
        if (last_ != nullptr && op->expiry_ < last_->expiry_) {
            sorted_ = false;
        }
        last_ = op;
        ready_.push(op);
    }

    /// At the end of a run: posts the queued waits, earliest expiry first, but keeps the
    /// first for take_kept() when `keep_first` (not when the run is unwinding an exception).
    void flush(bool keep_first) noexcept;

    /// The wait flush() kept, if any, to run inline; null otherwise.
    wait_op_base* take_kept() noexcept {
        wait_op_base* op = kept_;
        kept_ = nullptr;
        return op;
    }

    /// Posts completed waits to the io_context, in order, counting each as work. Inside
    /// run() they go to the thread's private queue, without a lock or an atomic.
    void post(op_queue<wait_op_base>& ops) noexcept;

    /// Posts one completed wait, as post() does.
    void post(wait_op_base* op) noexcept { scheduler_.post_immediate_completion(op, true); }

    /// Runs a completed wait's handler inside the scheduler operation running now (the
    /// driver's, or a batch's), which counts as the one run of this wait.
    static void run_inline(void* owner, wait_op_base* op) { op->complete(owner, op->ec_, 0); }

private:
    boost::asio::detail::scheduler& scheduler_;
    op_queue<wait_op_base> ready_; // expired by the run in progress
    wait_op_base* last_ = nullptr; // ready_'s last, while the run lasts
    bool sorted_ = true;           // ready_ is in expiry order
    wait_op_base* kept_ = nullptr; // the first of the last run, to run inline
};

} // namespace detail
} // namespace timewheel

#endif // TIMEWHEEL_DETAIL_COMPLETED_WAITS_HPP
