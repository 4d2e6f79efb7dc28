//
// src/dq/scheduler.cpp
//
// dq::scheduler: a pass reads the due schedules, plans each one's materialisation from its
// cursor (plan() below: the misfire policy on what is past the grace, then the occurrences
// within the window), and commits all of them in one store::materialise call, whose compare
// of each schedule's revision makes a plan that another node committed first a no-op. Passes
// are chained on a steady_timer of the store's executor. The state lives in a shared
// scheduler_impl, so that a store completion arriving after the scheduler is gone is harmless.
//

#include <timewheel/dq/scheduler.hpp>

#include <timewheel/dq/detail/input_checks.hpp>

#include <boost/asio/steady_timer.hpp>

#include <deque>
#include <optional>

namespace timewheel::dq {

namespace detail {

using boost::system::error_code;

// What one schedule's pass decided, before it is committed.
struct plan_result {
    std::optional<materialisation> m; // none: nothing to write
};

// Plans one schedule: the occurrences after its cursor, in order. Missed ones (more than
// `grace` before now) are kept per the misfire policy (the latest one, none, or the latest
// `misfire_limit`), the others counted as skipped; then every occurrence due by `horizon`
// (for overlap_policy::forbid, only up to a period ahead: an occurrence is judged against
// its predecessor's task close to its own time, not a window earlier), at most
// `max_occurrences`; at most `max_steps` in all. The new cursor is the last occurrence taken
// or skipped, the new next the first one left.
inline plan_result plan(const schedule_status& s, const cron::schedule& rule,
                        const scheduler_options& opt, time_point now) {
    const auto& spec = s.spec;
    const time_point missed_before = now - opt.grace;
    time_point horizon = now + opt.window;
    if (spec.overlap == overlap_policy::forbid) {
        horizon = std::min(horizon, now + 2 * opt.period);
    }
    std::size_t keep = 0;
    switch (spec.misfire) {
    case misfire_policy::run_latest:
        keep = 1;
        break;
    case misfire_policy::skip:
        keep = 0;
        break;
    case misfire_policy::run_all:
        keep = spec.misfire_limit;
        break;
    }
    keep = std::min(keep, std::max<std::size_t>(opt.max_steps / 2, 1));

    std::deque<time_point> missed; // the latest `keep` missed occurrences seen
    std::optional<time_point> last_skipped;
    std::uint64_t skipped = 0;
    std::vector<time_point> taken;
    time_point after = s.cursor;
    std::optional<time_point> next;
    std::size_t steps = 0;
    bool bounded = false;
    for (;;) {
        next = next_occurrence(rule, spec, after);
        if (!next || *next > horizon) {
            break;
        }
        if (steps == opt.max_steps || taken.size() == opt.max_occurrences) {
            bounded = true;
            break;
        }
        ++steps;
        if (*next < missed_before) {
            missed.push_back(*next);
            if (missed.size() > keep) {
                last_skipped = missed.front();
                missed.pop_front();
                ++skipped;
            }
        } else {
            taken.push_back(*next);
        }
        after = *next;
    }

    materialisation m;
    m.schedule_id = spec.id;
    m.revision = s.revision;
    m.skipped_misfire = skipped;
    m.forbid_overlap = spec.overlap == overlap_policy::forbid;
    m.payload = spec.payload;
    m.retry = spec.retry;
    if (bounded && taken.empty()) {
        // Still among the missed: the kept ones may not be the latest. Commit what was
        // skipped and look at the kept ones again next pass.
        m.cursor = last_skipped.value_or(s.cursor);
        m.next = missed.empty() ? next : std::optional<time_point>(missed.front());
    } else {
        for (const auto& t : missed) {
            m.occurrences.push_back({t, occurrence_id(spec.id, t)});
        }
        for (const auto& t : taken) {
            m.occurrences.push_back({t, occurrence_id(spec.id, t)});
        }
        m.cursor =
            m.occurrences.empty() ? last_skipped.value_or(s.cursor) : m.occurrences.back().at;
        m.next = next;
    }
    if (m.occurrences.empty() && m.skipped_misfire == 0 && m.cursor == s.cursor && m.next &&
        s.next == m.next) {
        return {}; // the store knows all of it already
    }
    return {std::move(m)};
}

class scheduler_impl : public std::enable_shared_from_this<scheduler_impl> {
public:
    scheduler_impl(dq::store& s, scheduler_options opt)
        : store_(s)
        , opt_(std::move(opt))
        , timer_(s.get_executor()) {}

    using run_handler = boost::asio::any_completion_handler<void(error_code)>;
    using pass_handler = boost::asio::any_completion_handler<void(error_code, bool)>;

    void run(run_handler h) {
        run_.emplace(std::move(h));
        stopped_ = false;
        next_pass();
    }

    void stop() {
        stopped_ = true;
        timer_.cancel();
        if (run_ && !busy_) {
            complete_run();
        }
    }

    void pass(pass_handler h) {
        busy_ = true;
        auto self = shared_from_this();
        store_.due_schedules(
            opt_.window, opt_.batch,
            [self, h = std::move(h)](error_code ec, due_schedules_result r) mutable {
                if (ec) {
                    self->failed("due_schedules", ec);
                    self->finish_pass(std::move(h), ec, false);
                    return;
                }
                self->commit(std::move(h), std::move(r));
            });
    }

    const scheduler_stats& stats() const noexcept { return stats_; }
    store::executor_type get_executor() const { return store_.get_executor(); }

private:
    void failed(std::string_view what, error_code ec) {
        ++stats_.errors;
        if (opt_.on_error) {
            opt_.on_error(what, ec);
        }
    }

    void commit(pass_handler h, due_schedules_result r) {
        std::vector<materialisation> all;
        all.reserve(r.schedules.size());
        bool more = false;
        for (const auto& s : r.schedules) {
            try {
                const auto rule = schedule_rule(s.spec, s.created);
                auto p = plan(s, rule, opt_, r.now);
                if (p.m) {
                    more = more || p.m->occurrences.size() == opt_.max_occurrences ||
                           (p.m->next && *p.m->next <= r.now + opt_.window &&
                            s.spec.overlap == overlap_policy::allow);
                    all.push_back(std::move(*p.m));
                }
            } catch (const std::exception&) {
                // A rule that no longer builds (its zone left the tz database): left alone.
                failed("schedule_rule", error::invalid_cron);
            }
        }
        // A shard's batch was full: more may be due (unless nothing could be written, as when
        // every one waits for its turn under overlap_policy::forbid).
        more = more || (r.schedules.size() >= opt_.batch && !all.empty());
        // Chunks within store::materialise's bounds.
        auto chunks = std::make_shared<std::vector<std::vector<materialisation>>>();
        std::size_t occ = 0;
        for (auto& m : all) {
            if (chunks->empty() || chunks->back().size() == max_batch ||
                occ + m.occurrences.size() > max_batch) {
                chunks->emplace_back();
                occ = 0;
            }
            occ += m.occurrences.size();
            chunks->back().push_back(std::move(m));
        }
        send(std::move(h), std::move(chunks), 0, more);
    }

    void send(pass_handler h, std::shared_ptr<std::vector<std::vector<materialisation>>> chunks,
              std::size_t i, bool more) {
        if (i == chunks->size()) {
            finish_pass(std::move(h), {}, more);
            return;
        }
        auto self = shared_from_this();
        std::vector<std::uint64_t> misfires;
        for (const auto& m : (*chunks)[i]) {
            misfires.push_back(m.skipped_misfire);
        }
        auto batch = std::move((*chunks)[i]);
        store_.materialise(
            std::move(batch),
            [self, h = std::move(h), chunks, i, more, misfires = std::move(misfires)](
                error_code ec, std::vector<materialise_result> rs) mutable {
                if (ec) {
                    self->failed("materialise", ec);
                    self->finish_pass(std::move(h), ec, false);
                    return;
                }
                for (std::size_t k = 0; k < rs.size() && k < misfires.size(); ++k) {
                    const auto& r = rs[k];
                    if (!r.committed) {
                        ++self->stats_.lost;
                        continue;
                    }
                    self->stats_.created += r.created;
                    self->stats_.skipped_overlap += r.overlapped;
                    self->stats_.skipped_misfire += misfires[k];
                }
                self->send(std::move(h), std::move(chunks), i + 1, more);
            });
    }

    void finish_pass(pass_handler h, error_code ec, bool more) {
        ++stats_.passes;
        busy_ = false;
        std::move(h)(ec, more);
    }

    void next_pass() {
        if (stopped_) {
            complete_run();
            return;
        }
        auto self = shared_from_this();
        pass([self](error_code, bool more) {
            if (self->stopped_) {
                self->complete_run();
                return;
            }
            if (more) {
                self->next_pass();
                return;
            }
            self->timer_.expires_after(self->opt_.period);
            self->timer_.async_wait([self](error_code) { self->next_pass(); });
        });
    }

    void complete_run() {
        if (run_) {
            auto h = std::move(*run_);
            run_.reset();
            std::move(h)(boost::asio::error::operation_aborted);
        }
    }

    dq::store& store_;
    scheduler_options opt_;
    boost::asio::steady_timer timer_;
    scheduler_stats stats_;
    // (an optional: Boost 1.81's any_completion_handler recurses forever on move assignment)
    std::optional<run_handler> run_;
    bool stopped_ = false;
    bool busy_ = false;
};

} // namespace detail

scheduler::scheduler(dq::store& s, scheduler_options options)
    : impl_(std::make_shared<detail::scheduler_impl>(s, std::move(options))) {}

scheduler::~scheduler() {
    impl_->stop();
}

scheduler::executor_type scheduler::get_executor() const {
    return impl_->get_executor();
}

void scheduler::run(boost::asio::any_completion_handler<void(boost::system::error_code)> h) {
    impl_->run(std::move(h));
}

void scheduler::pass(boost::asio::any_completion_handler<void(boost::system::error_code, bool)> h) {
    impl_->pass(std::move(h));
}

void scheduler::stop() {
    impl_->stop();
}

const scheduler_stats& scheduler::stats() const noexcept {
    return impl_->stats();
}

} // namespace timewheel::dq
