//
// src/wheel_completed_waits.cpp
//
// detail::completed_waits: ordering and posting the wheel_timer waits a run expired.
//

#include <timewheel/detail/completed_waits.hpp>

#include <cstddef>

namespace timewheel::detail {

namespace net = boost::asio;

namespace {

// Stable merge sort of a singly linked list of waits by expiry, without allocating: the
// waits that expire together complete earliest expiry first, as steady_timer's do.
wait_op_base* next_of(wait_op_base* op) noexcept {
    return static_cast<wait_op_base*>(net::detail::op_queue_access::next(op));
}

void set_next(wait_op_base* op, wait_op_base* next) noexcept {
    net::detail::op_queue_access::next(op, next);
}

wait_op_base* sort_by_expiry(wait_op_base* head) noexcept {
    if (head == nullptr || next_of(head) == nullptr) {
        return head;
    }
    wait_op_base* slow = head;
    wait_op_base* fast = next_of(head);
    while (fast != nullptr && next_of(fast) != nullptr) {
        slow = next_of(slow);
        fast = next_of(next_of(fast));
    }
    wait_op_base* second = next_of(slow);
    set_next(slow, nullptr);
    wait_op_base* a = sort_by_expiry(head);
    wait_op_base* b = sort_by_expiry(second);
    wait_op_base* merged = nullptr;
    wait_op_base* tail = nullptr;
    while (a != nullptr && b != nullptr) {
        wait_op_base*& from = b->expiry_ < a->expiry_ ? b : a; // ties: a, stable
        wait_op_base* taken = from;
        from = next_of(from);
        if (tail == nullptr) {
            merged = taken;
        } else {
            set_next(tail, taken);
        }
        tail = taken;
    }
    set_next(tail, a != nullptr ? a : b);
    return merged;
}

} // namespace

void completed_waits::flush(bool keep_first) noexcept {
    if (ready_.empty()) {
        return;
    }
    if (!sorted_) {
        // Relink the queue as a null-terminated list, sort it, and queue it again.
        wait_op_base* head = nullptr;
        wait_op_base* tail = nullptr;
        while (wait_op_base* op = ready_.front()) {
            ready_.pop();
            if (tail == nullptr) {
                head = op;
            } else {
                set_next(tail, op);
            }
            tail = op;
        }
        head = sort_by_expiry(head);
        while (head != nullptr) {
            wait_op_base* next = next_of(head);
            set_next(head, nullptr);
            ready_.push(head);
            head = next;
        }
    }
    sorted_ = true;
    last_ = nullptr;
    if (keep_first) {
        kept_ = ready_.front();
        ready_.pop();
    }
    post(ready_);
}

void completed_waits::post(op_queue<wait_op_base>& ops) noexcept {
    net::detail::op_queue<net::detail::scheduler_operation> queue;
    std::size_t count = 0;
    while (wait_op_base* op = ops.front()) {
        ops.pop();
        queue.push(op);
        ++count;
    }
    if (count != 0) {
        // A continuation: inside run() the waits go to this thread's private queue and are
        // counted without an atomic (a wheel belongs to the thread that runs it).
        scheduler_.post_immediate_completions(count, queue, true);
    }
}

} // namespace timewheel::detail
