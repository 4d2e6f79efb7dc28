//
// src/dq/sqlite/sqlite_store.cpp
//
// dq::sqlite_store: each operation, its input checked by dq::store, becomes a closure that the
// engine's thread runs inside a group transaction (engine.hpp), its completion posted back to
// the store's executor.
//
// Several stores may share one engine (the sharing constructor): an operation carries the
// executor of the store it was started on, and its completion is posted there, so each of
// a server's io_contexts gets its own completions, while the file keeps one writer and one
// group commit. That per-store executor is why sharing is a second store object rather than
// the handlers' associated executors: the queue's and the worker's handlers often have none
// (plain lambdas), and their completion must still land on the thread that started them.
//

#include <timewheel/dq/sqlite_store.hpp>

#include "engine.hpp"

#include <timewheel/dq/detail/input_checks.hpp>

#include <boost/asio/append.hpp>
#include <boost/asio/error.hpp>
#include <boost/asio/execution/outstanding_work.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/prefer.hpp>

#include <sqlite3.h>

#include <charconv>
#include <optional>
#include <stdexcept>
#include <tuple>
#include <utility>

namespace timewheel::dq {

namespace {

class sqlite_category_impl final : public boost::system::error_category {
public:
    const char* name() const noexcept override { return "timewheel.dq.sqlite"; }
    std::string message(int ev) const override { return sqlite3_errstr(ev); }
};

} // namespace

const boost::system::error_category& sqlite_category() noexcept {
    static const sqlite_category_impl c;
    return c;
}

namespace detail {

using boost::system::error_code;

namespace {

// An operation whose closure `fn(engine, ec, results...)` fills its results.
template <typename Fn, typename... R>
class fn_op final : public sqlite_op {
public:
    fn_op(const store::executor_type& ex, store::handler<void(error_code, R...)> h, Fn fn)
        : ex_(ex)
        , work_(boost::asio::prefer(ex, boost::asio::execution::outstanding_work.tracked))
        , h_(std::move(h))
        , fn_(std::move(fn)) {}

    void run(sqlite_engine& e) override {
        std::apply([&](R&... r) { fn_(e, ec_, r...); }, results_);
    }
    bool failed() const noexcept override { return static_cast<bool>(ec_); }
    void fail(error_code ec) override {
        ec_ = ec;
        results_ = {};
    }

private:
    void post_results() override {
        std::apply(
            [&](R&... r) {
                boost::asio::post(ex_, boost::asio::append(std::move(h_), ec_, std::move(r)...));
            },
            results_);
    }
    void post_timeout() override {
        boost::asio::post(
            ex_, boost::asio::append(std::move(h_), error_code(error::store_timeout), R{}...));
    }

    store::executor_type ex_;
    store::executor_type work_; // the io_context keeps running while the operation is away
    store::handler<void(error_code, R...)> h_;
    Fn fn_;
    error_code ec_;
    std::tuple<R...> results_;
};

} // namespace

} // namespace detail

namespace {

using boost::system::error_code;

template <typename H, typename... Args>
void post_now(const store::executor_type& ex, H h, Args&&... args) {
    boost::asio::post(ex, boost::asio::append(std::move(h), std::forward<Args>(args)...));
}

// Whether an operation's commit must wait for fsync (sqlite_op::durable): the worker's
// transitions need not (sqlite_store_options::fsync_worker).
enum class commit { durable, worker };

// Hands `fn` to the engine; fails the handler with operation_aborted when it is closed.
template <typename... R, typename Fn>
void enqueue(detail::sqlite_engine* engine, const store::executor_type& ex,
             store::handler<void(error_code, R...)> h, Fn fn, commit c = commit::durable) {
    if (!engine) {
        post_now(ex, std::move(h), error_code(boost::asio::error::operation_aborted), R{}...);
        return;
    }
    std::unique_ptr<detail::sqlite_op> op =
        std::make_unique<detail::fn_op<Fn, R...>>(ex, std::move(h), std::move(fn));
    op->durable = c == commit::durable;
    if (!engine->push(op)) {
        // Stopped: complete it here (push left it with us).
        op->fail(boost::asio::error::operation_aborted);
        op->complete();
    }
}

} // namespace

namespace {

sqlite_store_options checked(sqlite_store_options opt) {
    if (opt.path.empty()) {
        throw std::invalid_argument("dq::sqlite_store: the database path is empty");
    }
    if (opt.done_retention.count() < 0 || opt.dead_retention.count() < 0) {
        throw std::invalid_argument("dq::sqlite_store: retention must not be negative");
    }
    return opt;
}

} // namespace

sqlite_store::sqlite_store(const executor_type& ex, sqlite_store_options opt)
    : ex_(ex)
    , opt_(checked(std::move(opt)))
    , waiter_(std::make_shared<detail::sqlite_waiter>(ex))
    , engine_(std::make_shared<detail::sqlite_engine>(opt_)) {
    engine_->add_waiter(waiter_);
}

namespace {

const std::shared_ptr<detail::sqlite_engine>&
open_engine(const std::shared_ptr<detail::sqlite_engine>& e) {
    if (!e) {
        throw std::invalid_argument("dq::sqlite_store: the store to share is closed");
    }
    return e;
}

} // namespace

sqlite_store::sqlite_store(const executor_type& ex, const sqlite_store& other)
    : ex_(ex)
    , opt_(other.opt_)
    , waiter_(std::make_shared<detail::sqlite_waiter>(ex))
    , engine_(open_engine(other.engine_)) {
    engine_->add_waiter(waiter_);
}

sqlite_store::~sqlite_store() {
    close();
}

void sqlite_store::close() {
    if (engine_) {
        // The last store of the database writes what is queued and stops the thread here;
        // no other can share it any more (sharing copies from a store that holds it).
        if (engine_.use_count() == 1) {
            engine_->stop();
        }
        stats_at_close_ = engine_->stats();
        engine_.reset();
    }
    waiter_->close();
}

sqlite_store_stats sqlite_store::stats() const noexcept {
    return engine_ ? engine_->stats() : stats_at_close_;
}

const sqlite_store_options& sqlite_store::options() const noexcept {
    return opt_;
}

store::executor_type sqlite_store::get_executor() const {
    return ex_;
}

const dq::limits& sqlite_store::get_limits() const noexcept {
    return opt_.limits;
}

void sqlite_store::do_submit(
    task t, handler<void(boost::system::error_code, submit_result, std::string)> h) {
    const auto due = detail::encode_due(t.due);
    enqueue<submit_result, std::string>(engine_.get(), ex_, std::move(h),
                                        [t = std::move(t), kind = due.kind,
                                         value = due.ms](detail::sqlite_engine& e, error_code& ec,
                                                         submit_result& r, std::string& id) {
                                            r = e.submit(t, kind, value, ec);
                                            if (!ec) {
                                                id = t.id;
                                            }
                                        });
}

// One operation: the tasks in one transaction, in order, each with its own answer (a task's
// due time out of range fails that task alone, having written nothing).
void sqlite_store::do_submit_many(
    std::vector<task> tasks,
    handler<void(boost::system::error_code, std::vector<submit_outcome>)> h) {
    enqueue<std::vector<submit_outcome>>(
        engine_.get(), ex_, std::move(h),
        [tasks = std::move(tasks)](detail::sqlite_engine& e, error_code&,
                                   std::vector<submit_outcome>& out) {
            out.resize(tasks.size());
            for (std::size_t i = 0; i < tasks.size(); ++i) {
                const auto due = detail::encode_due(tasks[i].due);
                out[i].id = tasks[i].id;
                out[i].result = e.submit(tasks[i], due.kind, due.ms, out[i].ec);
            }
        });
}

void sqlite_store::do_cancel(std::string id,
                             handler<void(boost::system::error_code, cancel_result)> h) {
    enqueue<cancel_result>(engine_.get(), ex_, std::move(h),
                           [id = std::move(id)](detail::sqlite_engine& e, error_code&,
                                                cancel_result& r) { r = e.cancel(id); });
}

void sqlite_store::do_reschedule(std::string id, due_time due,
                                 handler<void(boost::system::error_code)> h) {
    const auto d = detail::encode_due(due);
    enqueue<>(engine_.get(), ex_, std::move(h),
              [id = std::move(id), kind = d.kind, value = d.ms](
                  detail::sqlite_engine& e, error_code& ec) { e.reschedule(id, kind, value, ec); });
}

void sqlite_store::do_status(std::string id,
                             handler<void(boost::system::error_code, task_status)> h) {
    enqueue<task_status>(engine_.get(), ex_, std::move(h),
                         [id = std::move(id)](detail::sqlite_engine& e, error_code& ec,
                                              task_status& r) { r = e.status(id, ec); });
}

void sqlite_store::do_list_dead(std::string cursor, std::size_t count,
                                handler<void(boost::system::error_code, dead_page)> h) {
    std::optional<std::pair<std::int64_t, std::string>> after;
    error_code ec;
    if (!cursor.empty()) {
        const auto colon = cursor.find(':');
        std::int64_t died = -1;
        if (colon != std::string::npos) {
            const auto r = std::from_chars(cursor.data(), cursor.data() + colon, died);
            if (r.ec != std::errc() || r.ptr != cursor.data() + colon) {
                died = -1;
            }
        }
        if (died < 0 || colon + 1 >= cursor.size()) {
            ec = error::invalid_argument;
        } else {
            after.emplace(died, cursor.substr(colon + 1));
        }
    }
    if (ec) {
        post_now(ex_, std::move(h), ec, dead_page{});
        return;
    }
    enqueue<dead_page>(
        engine_.get(), ex_, std::move(h),
        [after = std::move(after), count](detail::sqlite_engine& e, error_code&, dead_page& r) {
            r = e.list_dead(after, count);
        });
}

void sqlite_store::do_requeue_dead(std::string id, due_time due,
                                   handler<void(boost::system::error_code)> h) {
    const auto d = detail::encode_due(due);
    enqueue<>(engine_.get(), ex_, std::move(h),
              [id = std::move(id), kind = d.kind, value = d.ms](detail::sqlite_engine& e,
                                                                error_code& ec) {
                  e.requeue_dead(id, kind, value, ec);
              });
}

void sqlite_store::do_delete_dead(std::string id, handler<void(boost::system::error_code)> h) {
    enqueue<>(
        engine_.get(), ex_, std::move(h),
        [id = std::move(id)](detail::sqlite_engine& e, error_code& ec) { e.delete_dead(id, ec); });
}

void sqlite_store::do_claim(const claim_options& opt,
                            handler<void(boost::system::error_code, claim_result)> h) {
    enqueue<claim_result>(
        engine_.get(), ex_, std::move(h),
        [opt](detail::sqlite_engine& e, error_code&, claim_result& r) { r = e.claim(opt); },
        commit::worker);
}

void sqlite_store::do_start(std::vector<lease_ref> leases,
                            handler<void(boost::system::error_code, std::vector<start_result>)> h) {
    enqueue<std::vector<start_result>>(
        engine_.get(), ex_, std::move(h),
        [leases = std::move(leases)](detail::sqlite_engine& e, error_code&,
                                     std::vector<start_result>& r) { r = e.start(leases); },
        commit::worker);
}

void sqlite_store::do_renew(std::vector<lease_ref> leases, duration lease,
                            handler<void(boost::system::error_code, std::vector<ack_result>)> h) {
    enqueue<std::vector<ack_result>>(
        engine_.get(), ex_, std::move(h),
        [leases = std::move(leases), lease](detail::sqlite_engine& e, error_code&,
                                            std::vector<ack_result>& r) {
            r = e.renew(leases, lease);
        },
        commit::worker);
}

void sqlite_store::do_acknowledge(
    std::vector<ack> acks, handler<void(boost::system::error_code, std::vector<ack_result>)> h) {
    enqueue<std::vector<ack_result>>(
        engine_.get(), ex_, std::move(h),
        [acks = std::move(acks)](detail::sqlite_engine& e, error_code&,
                                 std::vector<ack_result>& r) { r = e.acknowledge(acks); },
        commit::worker);
}

void sqlite_store::do_release(std::vector<lease_ref> leases,
                              handler<void(boost::system::error_code)> h) {
    enqueue<>(
        engine_.get(), ex_, std::move(h),
        [leases = std::move(leases)](detail::sqlite_engine& e, error_code&) { e.release(leases); },
        commit::worker);
}

void sqlite_store::wait_wakeup(handler<void(boost::system::error_code, time_point)> h) {
    waiter_->wait(std::move(h));
}

void sqlite_store::now(handler<void(boost::system::error_code, time_point)> h) {
    post_now(ex_, std::move(h), error_code(), detail::sqlite::ms(detail::sqlite::now_ms()));
}

void sqlite_store::probe(handler<void(boost::system::error_code, time_point)> h) {
    enqueue<time_point>(
        engine_.get(), ex_, std::move(h),
        [](detail::sqlite_engine& e, error_code&, time_point& t) { t = e.probe(); });
}

void sqlite_store::earliest_due(
    handler<void(boost::system::error_code, time_point, std::optional<time_point>)> h) {
    enqueue<time_point, std::optional<time_point>>(
        engine_.get(), ex_, std::move(h),
        [](detail::sqlite_engine& e, error_code&, time_point& now,
           std::optional<time_point>& earliest) { earliest = e.earliest_due(now); });
}

// --- Listing and counting (the engine's side: query_ops.cpp) ---------------------------------

void sqlite_store::do_list_tasks(
    task_query q, std::optional<task_position> from,
    handler<void(boost::system::error_code, task_page, std::optional<task_position>)> h) {
    enqueue<task_page, std::optional<task_position>>(
        engine_.get(), ex_, std::move(h),
        [q = std::move(q), from = std::move(from)](
            detail::sqlite_engine& e, error_code&, task_page& page,
            std::optional<task_position>& next) { page = e.list_tasks(q, from, next); });
}

void sqlite_store::do_count_tasks(handler<void(boost::system::error_code, task_counts)> h) {
    enqueue<task_counts>(
        engine_.get(), ex_, std::move(h),
        [](detail::sqlite_engine& e, error_code&, task_counts& c) { c = e.count_tasks(); });
}

// --- Schedules (the engine's side: schedule_ops.cpp) -----------------------------------------

void sqlite_store::do_create_schedule(
    schedule_spec spec, handler<void(boost::system::error_code, create_schedule_result)> h) {
    enqueue<create_schedule_result>(
        engine_.get(), ex_, std::move(h),
        [spec = std::move(spec)](detail::sqlite_engine& e, error_code& ec,
                                 create_schedule_result& r) { r = e.create_schedule(spec, ec); });
}

void sqlite_store::do_replace_schedule(schedule_spec spec,
                                       handler<void(boost::system::error_code)> h) {
    enqueue<>(engine_.get(), ex_, std::move(h),
              [spec = std::move(spec)](detail::sqlite_engine& e, error_code& ec) {
                  e.replace_schedule(spec, ec);
              });
}

void sqlite_store::do_get_schedule(std::string id,
                                   handler<void(boost::system::error_code, schedule_status)> h) {
    enqueue<schedule_status>(
        engine_.get(), ex_, std::move(h),
        [id = std::move(id)](detail::sqlite_engine& e, error_code& ec, schedule_status& r) {
            r = e.get_schedule(id, ec);
        });
}

void sqlite_store::do_list_schedules(std::string cursor, std::size_t count,
                                     handler<void(boost::system::error_code, schedule_page)> h) {
    enqueue<schedule_page>(engine_.get(), ex_, std::move(h),
                           [cursor = std::move(cursor), count](detail::sqlite_engine& e,
                                                               error_code&, schedule_page& r) {
                               r = e.list_schedules(cursor, count);
                           });
}

void sqlite_store::do_delete_schedule(std::string id, handler<void(boost::system::error_code)> h) {
    enqueue<>(engine_.get(), ex_, std::move(h),
              [id = std::move(id)](detail::sqlite_engine& e, error_code& ec) {
                  e.delete_schedule(id, ec);
              });
}

void sqlite_store::do_create_queue(
    queue_spec spec, handler<void(boost::system::error_code, create_queue_result)> h) {
    enqueue<create_queue_result>(
        engine_.get(), ex_, std::move(h),
        [spec = std::move(spec)](detail::sqlite_engine& e, error_code& ec, create_queue_result& r) {
            r = e.create_queue(spec, ec);
        });
}

void sqlite_store::do_update_queue(queue_spec spec, handler<void(boost::system::error_code)> h) {
    enqueue<>(engine_.get(), ex_, std::move(h),
              [spec = std::move(spec)](detail::sqlite_engine& e, error_code& ec) {
                  e.update_queue(spec, ec);
              });
}

void sqlite_store::do_get_queue(std::string id,
                                handler<void(boost::system::error_code, queue_status)> h) {
    enqueue<queue_status>(engine_.get(), ex_, std::move(h),
                          [id = std::move(id)](detail::sqlite_engine& e, error_code& ec,
                                               queue_status& r) { r = e.get_queue(id, ec); });
}

void sqlite_store::do_list_queues(std::string id_prefix, std::string cursor, std::size_t count,
                                  handler<void(boost::system::error_code, queue_page)> h) {
    enqueue<queue_page>(engine_.get(), ex_, std::move(h),
                        [id_prefix = std::move(id_prefix), cursor = std::move(cursor),
                         count](detail::sqlite_engine& e, error_code&, queue_page& r) {
                            r = e.list_queues(id_prefix, cursor, count);
                        });
}

void sqlite_store::do_delete_queue(std::string id, handler<void(boost::system::error_code)> h) {
    enqueue<>(
        engine_.get(), ex_, std::move(h),
        [id = std::move(id)](detail::sqlite_engine& e, error_code& ec) { e.delete_queue(id, ec); });
}

void sqlite_store::do_pause_schedule(std::string id, bool paused,
                                     handler<void(boost::system::error_code)> h) {
    enqueue<>(engine_.get(), ex_, std::move(h),
              [id = std::move(id), paused](detail::sqlite_engine& e, error_code& ec) {
                  e.pause_schedule(id, paused, ec);
              });
}

void sqlite_store::do_trigger_schedule(std::string id,
                                       handler<void(boost::system::error_code, std::string)> h) {
    enqueue<std::string>(engine_.get(), ex_, std::move(h),
                         [id = std::move(id)](detail::sqlite_engine& e, error_code& ec,
                                              std::string& r) { r = e.trigger_schedule(id, ec); });
}

void sqlite_store::do_due_schedules(
    duration window, std::size_t batch,
    handler<void(boost::system::error_code, due_schedules_result)> h) {
    enqueue<due_schedules_result>(
        engine_.get(), ex_, std::move(h),
        [window, batch](detail::sqlite_engine& e, error_code&, due_schedules_result& r) {
            r = e.due_schedules(window, batch);
        });
}

void sqlite_store::do_materialise(
    std::vector<materialisation> m,
    handler<void(boost::system::error_code, std::vector<materialise_result>)> h) {
    enqueue<std::vector<materialise_result>>(
        engine_.get(), ex_, std::move(h),
        [m = std::move(m)](detail::sqlite_engine& e, error_code&,
                           std::vector<materialise_result>& r) { r = e.materialise(m); });
}

} // namespace timewheel::dq
