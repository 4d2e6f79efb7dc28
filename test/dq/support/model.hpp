//
// test/dq/support/model.hpp
//
// The reference model of the durable queue's states, for the differential tests: what each
// store operation must answer and leave behind, task by task, written as plainly as
// possible (a map of ids to states, no sharding, no encoding). Times come from the store's
// clock as the test observes it (a claim's server_time, now() before and after an
// operation), so the model knows which tasks were due; an outcome that depends on time
// within a few milliseconds of a boundary is accepted either way (`ambiguous`).
//
#ifndef TIMEWHEEL_TEST_DQ_SUPPORT_MODEL_HPP
#define TIMEWHEEL_TEST_DQ_SUPPORT_MODEL_HPP

#include <timewheel/dq/task.hpp>

#include <map>
#include <optional>
#include <string>

namespace timewheel::test {

namespace dq = timewheel::dq;

struct model_task {
    dq::task_state state = dq::task_state::delayed;
    std::uint32_t attempt = 0;      ///< attempts counted in the store's record
    std::uint32_t max_attempts = 1; ///< the policy's
    dq::time_point due{};           ///< when delayed or claimed: the due time
    std::string token;              ///< when claimed: the current lease's token
    std::uint32_t lease_attempt = 0;
};

class model {
public:
    std::map<std::string, model_task> tasks;

    const model_task* find(const std::string& id) const {
        auto it = tasks.find(id);
        return it == tasks.end() ? nullptr : &it->second;
    }

    // submit: created for an unknown id, replaced for a pending one (delayed, or prefetched:
    // taken back from its worker) with replace, exists otherwise. The due time is learnt
    // afterwards (set_due).
    dq::submit_result submit(const std::string& id, bool replace, std::uint32_t max_attempts) {
        auto it = tasks.find(id);
        if (it == tasks.end()) {
            model_task t;
            t.max_attempts = max_attempts;
            tasks.emplace(id, t);
            return dq::submit_result::created;
        }
        auto& t = it->second;
        if (replace &&
            (t.state == dq::task_state::delayed || t.state == dq::task_state::prefetched)) {
            t.state = dq::task_state::delayed;
            t.token.clear();
            return dq::submit_result::replaced;
        }
        return dq::submit_result::exists;
    }

    dq::cancel_result cancel(const std::string& id) {
        auto it = tasks.find(id);
        if (it == tasks.end()) {
            return dq::cancel_result::not_found;
        }
        auto& t = it->second;
        if (t.state == dq::task_state::delayed || t.state == dq::task_state::prefetched) {
            t.state = dq::task_state::cancelled;
            t.token.clear();
            return dq::cancel_result::cancelled;
        }
        return dq::cancel_result::too_late;
    }

    // reschedule: true when it must succeed (the task becomes delayed; due learnt after);
    // otherwise the error it must fail with.
    std::optional<dq::error> reschedule(const std::string& id) {
        auto it = tasks.find(id);
        if (it == tasks.end()) {
            return dq::error::not_found;
        }
        auto& t = it->second;
        if (t.state == dq::task_state::delayed || t.state == dq::task_state::prefetched) {
            t.state = dq::task_state::delayed;
            t.token.clear();
            return std::nullopt;
        }
        return dq::error::wrong_state;
    }

    // Whether a delayed task must be claimed by a claim that answered at `server_time` with
    // `horizon`: yes, no, or either (within `slack` of the boundary: the shards' scripts
    // read the clock one after the other).
    enum class claimable { yes, no, either };
    static claimable due_by(const model_task& t, dq::time_point limit, dq::duration slack) {
        if (t.due <= limit - slack) {
            return claimable::yes;
        }
        if (t.due > limit + slack) {
            return claimable::no;
        }
        return claimable::either;
    }

    void claimed(const std::string& id, const std::string& token, std::uint32_t attempt) {
        auto& t = tasks.at(id);
        t.state = dq::task_state::prefetched;
        t.token = token;
        t.lease_attempt = attempt;
    }

    bool holds(const std::string& id, const std::string& token) const {
        const auto* t = find(id);
        return t && !t->token.empty() && t->token == token &&
               (t->state == dq::task_state::prefetched || t->state == dq::task_state::running);
    }

    // After an ack of a current lease.
    void acked(const std::string& id, dq::outcome::kind what) {
        auto& t = tasks.at(id);
        t.token.clear();
        if (what == dq::outcome::kind::defer) {
            t.state = dq::task_state::delayed; // the attempt given back; due learnt after
            return;
        }
        t.attempt = t.lease_attempt;
        if (what == dq::outcome::kind::success) {
            t.state = dq::task_state::finished;
        } else if (what == dq::outcome::kind::failure || t.attempt >= t.max_attempts) {
            t.state = dq::task_state::dead;
        } else {
            t.state = dq::task_state::delayed; // due learnt after
        }
    }

    // The attempt status() reports.
    static std::uint32_t reported_attempt(const model_task& t) {
        if (t.state == dq::task_state::running) {
            return t.lease_attempt;
        }
        return t.attempt;
    }
};

} // namespace timewheel::test

#endif // TIMEWHEEL_TEST_DQ_SUPPORT_MODEL_HPP
