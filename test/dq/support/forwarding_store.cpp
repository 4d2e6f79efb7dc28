//
// test/dq/support/forwarding_store.cpp
//
// forwarding_store (forwarding_store.hpp): each operation to the inner store, as it came.
//
#include <test/dq/support/forwarding_store.hpp>

#include <utility>

namespace timewheel::test {

namespace dq = timewheel::dq;

forwarding_store::executor_type forwarding_store::get_executor() const {
    return inner_.get_executor();
}

const dq::limits& forwarding_store::get_limits() const noexcept {
    return inner_.get_limits();
}

void forwarding_store::wait_wakeup(handler<void(error_code, dq::time_point)> h) {
    inner_.wait_wakeup(std::move(h));
}

void forwarding_store::now(handler<void(error_code, dq::time_point)> h) {
    inner_.now(std::move(h));
}

void forwarding_store::probe(handler<void(error_code, dq::time_point)> h) {
    inner_.probe(std::move(h));
}

void forwarding_store::earliest_due(
    handler<void(error_code, dq::time_point, std::optional<dq::time_point>)> h) {
    inner_.earliest_due(std::move(h));
}

void forwarding_store::do_submit(dq::task t,
                                 handler<void(error_code, dq::submit_result, std::string)> h) {
    inner_.submit(std::move(t), std::move(h));
}

void forwarding_store::do_cancel(std::string id, handler<void(error_code, dq::cancel_result)> h) {
    inner_.cancel(std::move(id), std::move(h));
}

void forwarding_store::do_reschedule(std::string id, dq::due_time due,
                                     handler<void(error_code)> h) {
    inner_.reschedule(std::move(id), due, std::move(h));
}

void forwarding_store::do_status(std::string id, handler<void(error_code, dq::task_status)> h) {
    inner_.status(std::move(id), std::move(h));
}

void forwarding_store::do_list_dead(std::string cursor, std::size_t count,
                                    handler<void(error_code, dq::dead_page)> h) {
    inner_.list_dead(std::move(cursor), count, std::move(h));
}

void forwarding_store::do_requeue_dead(std::string id, dq::due_time due,
                                       handler<void(error_code)> h) {
    inner_.requeue_dead(std::move(id), due, std::move(h));
}

void forwarding_store::do_delete_dead(std::string id, handler<void(error_code)> h) {
    inner_.delete_dead(std::move(id), std::move(h));
}

void forwarding_store::do_claim(const dq::claim_options& opt,
                                handler<void(error_code, dq::claim_result)> h) {
    inner_.claim(opt, std::move(h));
}

void forwarding_store::do_start(std::vector<dq::lease_ref> leases,
                                handler<void(error_code, std::vector<dq::start_result>)> h) {
    inner_.start(std::move(leases), std::move(h));
}

void forwarding_store::do_renew(std::vector<dq::lease_ref> leases, dq::duration lease,
                                handler<void(error_code, std::vector<dq::ack_result>)> h) {
    inner_.renew(std::move(leases), lease, std::move(h));
}

void forwarding_store::do_acknowledge(std::vector<dq::ack> acks,
                                      handler<void(error_code, std::vector<dq::ack_result>)> h) {
    inner_.acknowledge(std::move(acks), std::move(h));
}

void forwarding_store::do_release(std::vector<dq::lease_ref> leases, handler<void(error_code)> h) {
    inner_.release(std::move(leases), std::move(h));
}

} // namespace timewheel::test
