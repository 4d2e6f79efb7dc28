//
// test/dq/support/forwarding_store.hpp
//
// A dq::store that hands every operation to another store, unchanged: the base of the
// decorators that tests and benchmarks put between a worker and its store (a store whose
// clock lies, one that counts the calls). Such a decorator overrides only the do_* it
// changes, and calls inner() for the real work; everything else goes through here. One
// home for the forwarding, which each decorator used to write out in full.
//
// Each do_* calls the inner store's public operation, so the input is checked again there:
// a decorator sees what a worker sends, and the inner store stays the judge of it.
//
#ifndef TIMEWHEEL_TEST_DQ_SUPPORT_FORWARDING_STORE_HPP
#define TIMEWHEEL_TEST_DQ_SUPPORT_FORWARDING_STORE_HPP

#include <timewheel/dq/store.hpp>

namespace timewheel::test {

class forwarding_store : public timewheel::dq::store {
public:
    using error_code = boost::system::error_code;

    explicit forwarding_store(timewheel::dq::store& inner)
        : inner_(inner) {}

    executor_type get_executor() const override;
    const timewheel::dq::limits& get_limits() const noexcept override;
    void wait_wakeup(handler<void(error_code, timewheel::dq::time_point)> h) override;
    void now(handler<void(error_code, timewheel::dq::time_point)> h) override;
    void probe(handler<void(error_code, timewheel::dq::time_point)> h) override;
    void earliest_due(handler<void(error_code, timewheel::dq::time_point,
                                   std::optional<timewheel::dq::time_point>)>
                          h) override;

protected:
    timewheel::dq::store& inner() const noexcept { return inner_; }

    void do_submit(timewheel::dq::task t,
                   handler<void(error_code, timewheel::dq::submit_result, std::string)> h) override;
    void do_cancel(std::string id,
                   handler<void(error_code, timewheel::dq::cancel_result)> h) override;
    void do_reschedule(std::string id, timewheel::dq::due_time due,
                       handler<void(error_code)> h) override;
    void do_status(std::string id,
                   handler<void(error_code, timewheel::dq::task_status)> h) override;
    void do_list_dead(std::string cursor, std::size_t count,
                      handler<void(error_code, timewheel::dq::dead_page)> h) override;
    void do_requeue_dead(std::string id, timewheel::dq::due_time due,
                         handler<void(error_code)> h) override;
    void do_delete_dead(std::string id, handler<void(error_code)> h) override;
    void do_claim(const timewheel::dq::claim_options& opt,
                  handler<void(error_code, timewheel::dq::claim_result)> h) override;
    void do_start(std::vector<timewheel::dq::lease_ref> leases,
                  handler<void(error_code, std::vector<timewheel::dq::start_result>)> h) override;
    void do_renew(std::vector<timewheel::dq::lease_ref> leases, timewheel::dq::duration lease,
                  handler<void(error_code, std::vector<timewheel::dq::ack_result>)> h) override;
    void
    do_acknowledge(std::vector<timewheel::dq::ack> acks,
                   handler<void(error_code, std::vector<timewheel::dq::ack_result>)> h) override;
    void do_release(std::vector<timewheel::dq::lease_ref> leases,
                    handler<void(error_code)> h) override;

private:
    timewheel::dq::store& inner_;
};

} // namespace timewheel::test

#endif // TIMEWHEEL_TEST_DQ_SUPPORT_FORWARDING_STORE_HPP
