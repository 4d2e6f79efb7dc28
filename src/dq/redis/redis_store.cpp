//
// src/dq/redis/redis_store.cpp
//
// dq::redis_store: validation, request building and reply parsing around the scripts of
// redis_scripts.cpp, over a redis::connection or a redis::cluster.
//

#include <timewheel/dq/redis_store.hpp>

#include <timewheel/dq/detail/input_checks.hpp>
#include "scripts.hpp"

#include <timewheel/redis/cluster.hpp>
#include <timewheel/redis/connection.hpp>
#include <timewheel/redis/subscriber.hpp>

#include <boost/asio/append.hpp>
#include <boost/asio/dispatch.hpp>
#include <boost/asio/error.hpp>
#include <boost/asio/post.hpp>

#include <algorithm>
#include <charconv>
#include <limits>
#include <optional>
#include <random>
#include <stdexcept>
#include <utility>

namespace timewheel::dq {

namespace detail {

namespace {

using boost::system::error_code;
using exec_handler = boost::asio::any_completion_handler<void(error_code, std::size_t)>;

// Where the store's requests go: one server or a Cluster.
class backend {
public:
    virtual ~backend() = default;
    virtual void exec(const redis::request& req, redis::response& resp, exec_handler h) = 0;
    virtual void close() = 0;
};

class connection_backend final : public backend {
public:
    connection_backend(const store::executor_type& ex, redis::config cfg)
        : conn_(ex, std::move(cfg)) {}
    void exec(const redis::request& req, redis::response& resp, exec_handler h) override {
        conn_.async_exec(req, resp, std::move(h));
    }
    void close() override { conn_.close(); }

private:
    redis::connection conn_;
};

class cluster_backend final : public backend {
public:
    cluster_backend(const store::executor_type& ex, redis::cluster_config cfg)
        : cluster_(ex, std::move(cfg)) {}
    void exec(const redis::request& req, redis::response& resp, exec_handler h) override {
        cluster_.async_exec(req, resp, std::move(h));
    }
    void close() override { cluster_.close(); }

private:
    redis::cluster cluster_;
};

std::string number(std::int64_t v) {
    char text[24];
    auto r = std::to_chars(text, text + sizeof text, v);
    return std::string(text, r.ptr);
}

std::int64_t to_int(std::string_view s) {
    std::int64_t v = 0;
    std::from_chars(s.data(), s.data() + s.size(), v);
    return v;
}

// The error a script's error reply stands for.
error_code script_error(redis::reply r) {
    const auto text = r.error_message();
    if (text.starts_with("OOM") || text.find("OOM command not allowed") != std::string_view::npos) {
        return error::store_full;
    }
    static constexpr std::pair<std::string_view, error> known[] = {
        {"DQ not_found", error::not_found},
        {"DQ wrong_state", error::wrong_state},
        {"DQ due_out_of_range", error::due_out_of_range},
    };
    for (const auto& [k, e] : known) {
        if (text.find(k) != std::string_view::npos) {
            return e;
        }
    }
    return error::store_error;
}

time_point ms(std::int64_t v) {
    return time_point(duration(v));
}

// Arguments of one script call: the shard's keys, the common header, the operation's own.
struct call_args {
    explicit call_args(std::size_t n = 8) { args.reserve(n); }
    std::vector<std::string> args;
    void add(std::string_view s) { args.emplace_back(s); }
    void add(std::int64_t v) { args.push_back(number(v)); }
};

} // namespace

class redis_store_impl : public std::enable_shared_from_this<redis_store_impl> {
public:
    using executor_type = store::executor_type;

    redis_store_impl(const executor_type& ex, std::unique_ptr<backend> b, redis::config sub_cfg,
                     redis_store_options opt)
        : ex_(ex)
        , backend_(std::move(b))
        , sub_cfg_(std::move(sub_cfg))
        , opt_(std::move(opt)) {
        if (opt_.name.empty() || opt_.name.find_first_of("{}") != std::string::npos) {
            throw std::invalid_argument(
                "dq::redis_store: the queue name must be non-empty and hold no '{' or '}'");
        }
        if (opt_.shards == 0 || opt_.shards > 16384) {
            throw std::invalid_argument("dq::redis_store: shards must be in 1..16384");
        }
        if (opt_.buckets == 0 || opt_.buckets > 65536) {
            throw std::invalid_argument("dq::redis_store: buckets must be in 1..65536");
        }
        if (opt_.done_retention.count() < 0 || opt_.dead_retention.count() < 0) {
            throw std::invalid_argument("dq::redis_store: retention must not be negative");
        }
        channel_ = opt_.name + ":wake";
        config_key_ = "{" + opt_.name + "}:config";
        keys_.resize(opt_.shards);
        prefixes_.resize(opt_.shards);
        for (std::size_t s = 0; s < opt_.shards; ++s) {
            const std::string p = "{" + opt_.name + ":" + std::to_string(s) + "}:";
            prefixes_[s] = p;
            keys_[s] = {p + "d", p + "l", p + "k", p + "done", p + "dead", p + "h"};
        }
        header_ = {std::string(),
                   number(static_cast<std::int64_t>(opt_.shards)),
                   number(static_cast<std::int64_t>(opt_.buckets)),
                   channel_,
                   number(static_cast<std::int64_t>(opt_.done_max)),
                   number(opt_.done_retention.count()),
                   number(static_cast<std::int64_t>(opt_.dead_max)),
                   number(opt_.dead_retention.count()),
                   number(static_cast<std::int64_t>(std::max<std::size_t>(opt_.log_maxlen, 1))),
                   number(max_due.time_since_epoch().count())};
        std::random_device rd;
        rng_.seed((std::uint64_t(rd()) << 32) ^ rd());
    }

    const executor_type& get_executor() const noexcept { return ex_; }
    const redis_store_options& options() const noexcept { return opt_; }

    std::size_t shard_of(std::string_view id) const noexcept {
        return redis_store::hash(id) % opt_.shards;
    }

    void close() {
        closed_ = true;
        backend_->close();
        if (sub_) {
            sub_->close();
        }
    }

    // --- helpers ------------------------------------------------------------------------

    template <typename Handler, typename... Args>
    void post(Handler h, Args&&... args) {
        boost::asio::post(ex_, boost::asio::append(std::move(h), std::forward<Args>(args)...));
    }

    template <typename Handler, typename... Args>
    void finish(Handler h, Args&&... args) {
        boost::asio::dispatch(ex_, boost::asio::append(std::move(h), std::forward<Args>(args)...));
    }

    // A claim call's token prefix: 64 random bits, six to a character, new for every call, so
    // that no two leases (of any worker) share a token; the script appends the task's rank in
    // the call (two characters). 13 characters in all: a token fits a std::string's own
    // buffer, so holding, starting and acknowledging a lease allocates nothing for it.
    std::string token_base() {
        static constexpr char digits[] =
            "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ-_";
        std::string t(11, '0');
        std::uint64_t v = rng_();
        for (auto& c : t) {
            c = digits[v & 63];
            v >>= 6;
        }
        return t;
    }

    void push_shard_script(redis::request& req, const redis::script& s, std::size_t shard,
                           call_args& a) {
        header_[0] = prefixes_[shard];
        std::vector<std::string_view> args;
        args.reserve(header_.size() + a.args.size());
        for (const auto& h : header_) {
            args.emplace_back(h);
        }
        for (const auto& x : a.args) {
            args.emplace_back(x);
        }
        req.push_script_range(s, keys_[shard], args);
    }

    struct exec_state {
        redis::request req;
        redis::response resp;
    };

    // Runs `st`'s request (after the queue's config is checked once) and calls
    // fn(ec, response) on the executor.
    template <typename Fn>
    void run(std::shared_ptr<exec_state> st, Fn fn) {
        if (configured_) {
            send(std::move(st), std::move(fn));
            return;
        }
        auto cfg = std::make_shared<exec_state>();
        cfg->req.push_script(scripts::config(), 1, config_key_,
                             number(static_cast<std::int64_t>(opt_.shards)),
                             number(static_cast<std::int64_t>(opt_.buckets)));
        auto self = shared_from_this();
        backend_->exec(cfg->req, cfg->resp,
                       [self, cfg, st = std::move(st), fn = std::move(fn)](error_code ec,
                                                                           std::size_t) mutable {
                           if (!ec) {
                               auto r = cfg->resp[0];
                               if (r.is_error()) {
                                   ec = script_error(r);
                               } else if (!r.is_integer() || r.as_integer() != 1) {
                                   ec = error::not_configured;
                               } else {
                                   self->configured_ = true;
                               }
                           }
                           if (ec) {
                               fn(ec, st->resp);
                               return;
                           }
                           self->send(std::move(st), std::move(fn));
                       });
    }

    template <typename Fn>
    void send(std::shared_ptr<exec_state> st, Fn fn) {
        auto* req = &st->req;
        auto* resp = &st->resp;
        backend_->exec(*req, *resp,
                       [st = std::move(st), fn = std::move(fn)](
                           error_code ec, std::size_t) mutable { fn(ec, st->resp); });
    }

    // --- producer -----------------------------------------------------------------------

    void submit(task t, store::handler<void(error_code, submit_result, std::string)> h) {
        const auto due = detail::encode_due(t.due);
        auto st = std::make_shared<exec_state>();
        call_args a;
        a.add(t.id);
        a.add(std::string_view(&due.kind, 1));
        a.add(due.ms);
        a.add(t.payload);
        a.add(static_cast<std::int64_t>(t.retry.max_attempts));
        a.add(t.retry.base.count());
        a.add(t.retry.cap.count());
        a.add(std::string_view(t.replace ? "1" : "0"));
        push_shard_script(st->req, scripts::submit(), shard_of(t.id), a);
        forget_due(shard_of(t.id));
        run(st, [self = shared_from_this(), h = std::move(h),
                 id = std::move(t.id)](error_code ec, redis::response& resp) mutable {
            submit_result r = submit_result::created;
            if (!ec) {
                auto rep = resp[0];
                if (rep.is_error()) {
                    ec = script_error(rep);
                } else {
                    const auto s = rep.as_string();
                    r = s == "exists"     ? submit_result::exists
                        : s == "replaced" ? submit_result::replaced
                                          : submit_result::created;
                }
            }
            self->finish(std::move(h), ec, r, std::move(id));
        });
    }

    void cancel(std::string id, store::handler<void(error_code, cancel_result)> h) {
        auto st = std::make_shared<exec_state>();
        call_args a;
        a.add(id);
        push_shard_script(st->req, scripts::cancel(), shard_of(id), a);
        run(st, [self = shared_from_this(), h = std::move(h)](error_code ec,
                                                              redis::response& resp) mutable {
            cancel_result r = cancel_result::not_found;
            if (!ec) {
                auto rep = resp[0];
                if (rep.is_error()) {
                    ec = script_error(rep);
                } else {
                    const auto s = rep.as_string();
                    r = s == "cancelled"  ? cancel_result::cancelled
                        : s == "too_late" ? cancel_result::too_late
                                          : cancel_result::not_found;
                }
            }
            self->finish(std::move(h), ec, r);
        });
    }

    // An operation on one id whose reply is 'ok' or an error.
    void simple(const redis::script& s, std::string id, std::optional<due_time> due,
                store::handler<void(error_code)> h) {
        auto st = std::make_shared<exec_state>();
        call_args a;
        a.add(id);
        if (due) {
            const auto d = detail::encode_due(*due);
            a.add(std::string_view(&d.kind, 1));
            a.add(d.ms);
        }
        push_shard_script(st->req, s, shard_of(id), a);
        forget_due(shard_of(id));
        run(st, [self = shared_from_this(), h = std::move(h)](error_code ec,
                                                              redis::response& resp) mutable {
            if (!ec && resp[0].is_error()) {
                ec = script_error(resp[0]);
            }
            self->finish(std::move(h), ec);
        });
    }

    void status(std::string id, store::handler<void(error_code, task_status)> h) {
        auto st = std::make_shared<exec_state>();
        call_args a;
        a.add(id);
        push_shard_script(st->req, scripts::status(), shard_of(id), a);
        run(st, [self = shared_from_this(), h = std::move(h), id](error_code ec,
                                                                  redis::response& resp) mutable {
            task_status out;
            if (!ec) {
                auto rep = resp[0];
                if (rep.is_error()) {
                    ec = script_error(rep);
                } else {
                    try {
                        out = parse_status(rep, id);
                    } catch (const std::exception&) {
                        ec = error::store_error;
                    }
                }
            }
            self->finish(std::move(h), ec, std::move(out));
        });
    }

    static task_status parse_status(redis::reply rep, const std::string& id) {
        task_status out;
        out.id = id;
        const std::string_view state = rep[0].as_string();
        static constexpr std::pair<std::string_view, task_state> states[] = {
            {"delayed", task_state::delayed}, {"prefetched", task_state::prefetched},
            {"running", task_state::running}, {"finished", task_state::finished},
            {"dead", task_state::dead},       {"cancelled", task_state::cancelled}};
        for (const auto& [n, s] : states) {
            if (n == state) {
                out.state = s;
            }
        }
        out.attempt = static_cast<std::uint32_t>(rep[1].as_integer());
        out.due = ms(rep[2].as_integer());
        out.created = ms(rep[3].as_integer());
        out.updated = ms(rep[4].as_integer());
        out.retry.max_attempts = static_cast<std::uint32_t>(rep[5].as_integer());
        out.retry.base = duration(rep[6].as_integer());
        out.retry.cap = duration(rep[7].as_integer());
        out.last_error = std::string(rep[8].as_string());
        out.payload = std::string(rep[9].as_string());
        const std::size_t n = rep.size();
        // Walk the array once (operator[] is linear).
        std::vector<redis::reply> items;
        items.reserve(n);
        for (std::size_t i = 0; i < n; ++i) {
            items.push_back(rep[i]);
        }
        for (std::size_t i = 10; i + 6 <= n; i += 6) {
            attempt_record r;
            r.attempt = static_cast<std::uint32_t>(items[i].as_integer());
            r.worker = std::string(items[i + 1].as_string());
            r.started = ms(items[i + 2].as_integer());
            r.ended = ms(items[i + 3].as_integer());
            r.outcome = std::string(items[i + 4].as_string());
            r.error = std::string(items[i + 5].as_string());
            if (out.state == task_state::finished) {
                // A finished task's record is gone: its attempts are in its log.
                out.attempt = std::max(out.attempt, r.attempt);
            }
            out.log.push_back(std::move(r));
        }
        return out;
    }

    // Cursor: "<shard>:<score>:<id>" of the last entry returned.
    void list_dead(std::string cursor, std::size_t count,
                   store::handler<void(error_code, dead_page)> h) {
        std::size_t first = 0;
        std::string after_id;
        std::int64_t after_score = 0;
        error_code ec;
        if (!cursor.empty()) {
            const auto c1 = cursor.find(':');
            const auto c2 = c1 == std::string::npos ? c1 : cursor.find(':', c1 + 1);
            if (c2 == std::string::npos) {
                ec = error::invalid_argument;
            } else {
                first = static_cast<std::size_t>(to_int(std::string_view(cursor).substr(0, c1)));
                after_score = to_int(std::string_view(cursor).substr(c1 + 1, c2 - c1 - 1));
                after_id = cursor.substr(c2 + 1);
                if (first >= opt_.shards || after_id.empty()) {
                    ec = error::invalid_argument;
                }
            }
        }
        if (ec) {
            post(std::move(h), ec, dead_page{});
            return;
        }
        auto st = std::make_shared<exec_state>();
        for (std::size_t s = first; s < opt_.shards; ++s) {
            call_args a;
            a.add(s == first ? std::string_view(after_id) : std::string_view());
            a.add(after_score);
            a.add(static_cast<std::int64_t>(count));
            push_shard_script(st->req, scripts::list_dead(), s, a);
        }
        run(st, [self = shared_from_this(), h = std::move(h), first,
                 count](error_code ec, redis::response& resp) mutable {
            dead_page page;
            std::string last;
            if (!ec) {
                for (std::size_t i = 0; i < resp.size() && page.entries.size() < count; ++i) {
                    auto rep = resp[i];
                    if (rep.is_error()) {
                        ec = script_error(rep);
                        break;
                    }
                    const std::size_t n = rep.size();
                    std::size_t j = 0;
                    for (; j + 4 <= n && page.entries.size() < count; j += 4) {
                        dead_page::entry e;
                        e.id = std::string(rep[j].as_string());
                        e.died = ms(rep[j + 1].as_integer());
                        e.attempt = static_cast<std::uint32_t>(rep[j + 2].as_integer());
                        e.last_error = std::string(rep[j + 3].as_string());
                        last = std::to_string(first + i) + ":" +
                               std::to_string(e.died.time_since_epoch().count()) + ":" + e.id;
                        page.entries.push_back(std::move(e));
                    }
                    if (page.entries.size() == count) {
                        // More may follow: in this shard if it was not exhausted, or later.
                        page.cursor = last;
                    }
                }
            }
            if (ec) {
                page = {};
            }
            self->finish(std::move(h), ec, std::move(page));
        });
    }

    // --- worker -------------------------------------------------------------------------

    void claim(const claim_options& opt, store::handler<void(error_code, claim_result)> h) {
        const auto visit = shards_to_visit(opt.horizon.count(), opt.batch);
        auto st = std::make_shared<exec_state>();
        // The batch is spread over the shards visited, the remainder to the first ones.
        const std::size_t n = visit.size();
        const std::size_t base = n == 0 ? 0 : opt.batch / n;
        const std::size_t extra = n == 0 ? 0 : opt.batch % n;
        const std::size_t start_due = std::min(opt.start_due, opt.batch);
        const std::size_t start_base = n == 0 ? 0 : start_due / n;
        const std::size_t start_extra = n == 0 ? 0 : start_due % n;
        for (std::size_t i = 0; i < n; ++i) {
            std::size_t limit = base + (i < extra ? 1 : 0);
            limit = std::min<std::size_t>(limit, 2000);
            // start_due is spread as the batch is: the total never exceeds it.
            const std::size_t starts =
                std::min(limit, start_base + (i < start_extra ? std::size_t(1) : 0));
            call_args a;
            a.add(static_cast<std::int64_t>(limit));
            a.add(opt.horizon.count());
            a.add(opt.lease.count());
            a.add(opt.worker);
            a.add(static_cast<std::int64_t>(starts));
            a.add(token_base());
            push_shard_script(st->req, scripts::claim(), visit[i], a);
        }
        if (n == 0) {
            // Nothing due by the cache: only the store's clock, for the worker's offset.
            st->req.push("TIME");
        }
        run(st, [self = shared_from_this(), h = std::move(h),
                 visit](error_code ec, redis::response& resp) mutable {
            claim_result out;
            if (!ec) {
                ec = visit.empty() ? self->parse_time_only(resp, out)
                                   : self->parse_claim(resp, visit, out);
            }
            self->finish(std::move(h), ec, std::move(out));
        });
    }

    // --- The next-due cache ----------------------------------------------------------------
    //
    // A claim script costs Redis a fixed ~15 us even on an empty shard, so a claim runs only
    // on the shards with something due by now + horizon, each given a larger part of the
    // batch. next_due_[s] (store ms) is never later than the shard's earliest delayed task:
    // it comes from each claim's reply (the shard's earliest), lowered by wake-ups (which
    // carry the shard) and reset to unknown by this store's own writes. Lease expiries and
    // anything missed while unsubscribed are caught by a full visit of every shard at least
    // every full_visit_interval; without a subscription every claim is a full visit.

    static constexpr std::int64_t unknown_due = std::numeric_limits<std::int64_t>::min();
    static constexpr std::int64_t no_due = std::numeric_limits<std::int64_t>::max();
    static constexpr std::size_t tasks_per_visit = 64;
    static constexpr auto full_visit_interval = std::chrono::milliseconds(250);

    // A wake-up's payload is "<due> {Q:s}:": the shard's next-due is now at most `due`.
    void saw_wakeup(std::string_view payload, std::int64_t due) {
        const auto close = payload.rfind('}');
        const auto colon = close == std::string_view::npos ? close : payload.rfind(':', close);
        if (colon == std::string_view::npos) {
            // Not ours to read: trust nothing until the next full visit.
            std::fill(next_due_.begin(), next_due_.end(), unknown_due);
            return;
        }
        const auto s =
            static_cast<std::size_t>(to_int(payload.substr(colon + 1, close - colon - 1)));
        if (s < next_due_.size() && due < next_due_[s]) {
            next_due_[s] = due;
        }
    }

    void forget_due(std::size_t shard) {
        if (!next_due_.empty()) {
            next_due_[shard] = unknown_due;
        }
    }

    // The store's clock now, estimated from the last claim's reply.
    std::int64_t estimated_now() const {
        const auto elapsed = std::chrono::steady_clock::now() - server_seen_at_;
        return server_ms_ + std::chrono::duration_cast<std::chrono::milliseconds>(elapsed).count();
    }

    std::vector<std::size_t> shards_to_visit(std::int64_t horizon_ms, std::size_t batch) {
        const std::size_t n = opt_.shards;
        std::vector<std::size_t> visit;
        const auto now = std::chrono::steady_clock::now();
        if (next_due_.size() != n) {
            next_due_.assign(n, unknown_due);
        }
        if (!subscribed_ || now - last_full_visit_ >= full_visit_interval) {
            last_full_visit_ = now;
            visit.reserve(n);
            for (std::size_t i = 0; i < n; ++i) {
                visit.push_back((claim_rotation_ + i) % n);
            }
            claim_rotation_ = (claim_rotation_ + 1) % n;
            return visit;
        }
        const std::int64_t limit = estimated_now() + horizon_ms;
        std::vector<std::pair<std::int64_t, std::size_t>> due;
        for (std::size_t i = 0; i < n; ++i) {
            const std::size_t s = (claim_rotation_ + i) % n;
            if (next_due_[s] <= limit) {
                due.emplace_back(next_due_[s], s);
            }
        }
        claim_rotation_ = (claim_rotation_ + 1) % n;
        // Earliest first (unknown ones before all), so that no due shard waits behind later
        // ones: each claim takes the m earliest, and claiming moves their next-due on.
        const std::size_t m =
            std::min(due.size(), std::max<std::size_t>(1, batch / tasks_per_visit));
        std::partial_sort(due.begin(), due.begin() + static_cast<std::ptrdiff_t>(m), due.end(),
                          [](const auto& a, const auto& b) { return a.first < b.first; });
        visit.reserve(m);
        for (std::size_t i = 0; i < m; ++i) {
            visit.push_back(due[i].second);
        }
        return visit;
    }

    // The earliest next-due of the cache (now for an unknown shard), or -1 when none.
    std::int64_t cached_next_due() const {
        std::int64_t best = no_due;
        for (auto d : next_due_) {
            best = std::min(best, d == unknown_due ? server_ms_ : d);
        }
        return best == no_due ? -1 : best;
    }

    void saw_server_time(std::int64_t ms) {
        if (ms >= server_ms_) {
            server_ms_ = ms;
            server_seen_at_ = std::chrono::steady_clock::now();
        }
    }

    error_code parse_time_only(const redis::response& resp, claim_result& out) {
        auto rep = resp[0];
        if (rep.is_error() || !rep.is_array() || rep.size() != 2) {
            return error::store_error;
        }
        const auto t = to_int(rep[0].as_string()) * 1000 + to_int(rep[1].as_string()) / 1000;
        saw_server_time(t);
        out.server_time = ms(t);
        if (const auto nd = cached_next_due(); nd >= 0) {
            out.next_due = ms(nd);
        }
        return {};
    }

    error_code parse_claim(const redis::response& resp, const std::vector<std::size_t>& visit,
                           claim_result& out) {
        error_code first_error;
        bool any = false;
        for (std::size_t i = 0; i < resp.size(); ++i) {
            auto rep = resp[i];
            if (rep.is_error()) {
                if (!first_error) {
                    first_error = script_error(rep);
                }
                if (i < visit.size()) {
                    forget_due(visit[i]);
                }
                continue;
            }
            any = true;
            const std::size_t n = rep.size();
            std::vector<redis::reply> items;
            items.reserve(n);
            for (std::size_t j = 0; j < n; ++j) {
                items.push_back(rep[j]);
            }
            const auto now = items[0].as_integer();
            if (now > out.server_time.time_since_epoch().count()) {
                out.server_time = ms(now);
            }
            saw_server_time(now);
            const auto nd = items[1].as_integer();
            if (i < visit.size() && visit[i] < next_due_.size()) {
                next_due_[visit[i]] = nd >= 0 ? nd : no_due;
            }
            for (std::size_t j = 2; j + 9 <= n; j += 9) {
                claimed_task t;
                t.id = std::string(items[j].as_string());
                t.token = std::string(items[j + 1].as_string());
                t.due = ms(items[j + 2].as_integer());
                t.attempt = static_cast<std::uint32_t>(items[j + 3].as_integer());
                t.payload = std::string(items[j + 4].as_string());
                t.retry.max_attempts = static_cast<std::uint32_t>(items[j + 5].as_integer());
                t.retry.base = duration(items[j + 6].as_integer());
                t.retry.cap = duration(items[j + 7].as_integer());
                t.running = items[j + 8].as_integer() == 1;
                out.tasks.push_back(std::move(t));
            }
        }
        if (const auto nd = cached_next_due(); nd >= 0) {
            out.next_due = ms(nd);
        }
        return any ? error_code() : first_error;
    }

    // Groups items by shard: one script call per shard, results put back in order.
    struct grouping {
        std::vector<std::size_t> shards;               // shard of each call
        std::vector<std::vector<std::size_t>> members; // item indexes of each call
    };

    template <typename Ids>
    grouping group(const Ids& ids) const {
        grouping g;
        std::vector<std::size_t> call_of(opt_.shards, std::size_t(-1));
        for (std::size_t i = 0; i < ids.size(); ++i) {
            const std::size_t s = shard_of(ids[i]);
            if (call_of[s] == std::size_t(-1)) {
                call_of[s] = g.shards.size();
                g.shards.push_back(s);
                g.members.emplace_back();
            }
            g.members[call_of[s]].push_back(i);
        }
        return g;
    }

    // Runs one script per shard over `leases`; `letters` decodes each result letter.
    template <typename Result, typename Push, typename Decode>
    void per_shard(const redis::script& script, const std::vector<std::string_view>& ids, Push push,
                   Decode decode, store::handler<void(error_code, std::vector<Result>)> h) {
        const auto g = group(ids);
        auto st = std::make_shared<exec_state>();
        for (std::size_t c = 0; c < g.shards.size(); ++c) {
            // Sized once: an ack is 7 arguments a task (vector growth was 4 allocations).
            call_args a(1 + 7 * g.members[c].size());
            push(a, g.members[c]);
            push_shard_script(st->req, script, g.shards[c], a);
        }
        run(st, [self = shared_from_this(), h = std::move(h), g, n = ids.size(),
                 decode](error_code ec, redis::response& resp) mutable {
            std::vector<Result> out(n);
            if (!ec) {
                for (std::size_t c = 0; c < g.shards.size() && !ec; ++c) {
                    auto rep = resp[c];
                    if (rep.is_error()) {
                        ec = script_error(rep);
                        break;
                    }
                    const auto letters = rep.as_string();
                    if (letters.size() != g.members[c].size()) {
                        ec = error::store_error;
                        break;
                    }
                    for (std::size_t k = 0; k < letters.size(); ++k) {
                        out[g.members[c][k]] = decode(letters[k]);
                    }
                }
            }
            if (ec) {
                out.clear();
            }
            self->finish(std::move(h), ec, std::move(out));
        });
    }

    static std::vector<std::string_view> ids_of(const std::vector<lease_ref>& leases) {
        std::vector<std::string_view> ids;
        ids.reserve(leases.size());
        for (const auto& l : leases) {
            ids.emplace_back(l.id);
        }
        return ids;
    }

    void start(std::vector<lease_ref> leases,
               store::handler<void(error_code, std::vector<start_result>)> h) {
        const auto ids = ids_of(leases);
        per_shard<start_result>(
            scripts::start(), ids,
            [&](call_args& a, const std::vector<std::size_t>& m) {
                for (auto i : m) {
                    a.add(leases[i].id);
                    a.add(leases[i].token);
                }
            },
            [](char c) {
                return c == 'r'   ? start_result::started
                       : c == 'e' ? start_result::too_early
                                  : start_result::stale;
            },
            std::move(h));
    }

    void renew(std::vector<lease_ref> leases, duration lease,
               store::handler<void(error_code, std::vector<ack_result>)> h) {
        const auto ids = ids_of(leases);
        per_shard<ack_result>(
            scripts::renew(), ids,
            [&](call_args& a, const std::vector<std::size_t>& m) {
                a.add(lease.count());
                for (auto i : m) {
                    a.add(leases[i].id);
                    a.add(leases[i].token);
                }
            },
            [](char c) { return c == 'o' ? ack_result::ok : ack_result::stale; }, std::move(h));
    }

    void acknowledge(std::vector<ack> acks,
                     store::handler<void(error_code, std::vector<ack_result>)> h) {
        std::vector<std::string_view> ids;
        ids.reserve(acks.size());
        for (const auto& a : acks) {
            ids.emplace_back(a.lease.id);
        }
        per_shard<ack_result>(
            scripts::ack(), ids,
            [&](call_args& a, const std::vector<std::size_t>& m) {
                for (auto i : m) {
                    const auto& k = acks[i];
                    a.add(k.lease.id);
                    a.add(k.lease.token);
                    const char kind = k.outcome.what == outcome::kind::success ? 's'
                                      : k.outcome.what == outcome::kind::retry ? 'r'
                                      : k.outcome.what == outcome::kind::defer ? 'd'
                                                                               : 'f';
                    a.add(std::string_view(&kind, 1));
                    a.add(k.outcome.retry_after ? k.outcome.retry_after->count()
                                                : std::int64_t(-1));
                    a.add(k.outcome.error);
                    a.add(k.started.time_since_epoch().count());
                    a.add(k.ended.time_since_epoch().count());
                }
            },
            [](char c) { return c == 'o' ? ack_result::ok : ack_result::stale; }, std::move(h));
    }

    void release(std::vector<lease_ref> leases, store::handler<void(error_code)> h) {
        const auto ids = ids_of(leases);
        for (const auto id : ids) {
            forget_due(shard_of(id));
        }
        per_shard<ack_result>(
            scripts::release(), ids,
            [&](call_args& a, const std::vector<std::size_t>& m) {
                for (auto i : m) {
                    a.add(leases[i].id);
                    a.add(leases[i].token);
                }
            },
            [](char c) { return c == 'o' ? ack_result::ok : ack_result::stale; },
            store::handler<void(error_code, std::vector<ack_result>)>(
                [h = std::move(h)](error_code ec, std::vector<ack_result>) mutable {
                    std::move(h)(ec);
                }));
    }

    void wait_wakeup(store::handler<void(error_code, time_point)> h) {
        if (closed_) {
            post(std::move(h), error_code(boost::asio::error::operation_aborted), time_point{});
            return;
        }
        if (!sub_) {
            sub_ = std::make_unique<redis::subscriber>(ex_, sub_cfg_);
            sub_->subscribe({channel_});
        }
        subscribed_ = true;
        sub_->async_receive(
            [self = shared_from_this(), h = std::move(h)](error_code ec, redis::message m) mutable {
                if (ec || self->closed_) {
                    // Wake-ups may have been missed: claims visit every shard again until
                    // the next wait.
                    self->subscribed_ = false;
                    self->finish(std::move(h), error_code(boost::asio::error::operation_aborted),
                                 time_point{});
                    return;
                }
                const auto due = to_int(m.payload);
                self->saw_wakeup(m.payload, due);
                self->finish(std::move(h), error_code(), ms(due));
            });
    }

    // Every shard's earliest delayed due time (its `d` set or its first slot) and Redis's
    // clock, in one pipeline; the earliest of all, the latest clock reading.
    void earliest_due(store::handler<void(error_code, time_point, std::optional<time_point>)> h) {
        auto st = std::make_shared<exec_state>();
        for (std::size_t s = 0; s < opt_.shards; ++s) {
            call_args a;
            push_shard_script(st->req, scripts::earliest_due(), s, a);
        }
        run(st, [self = shared_from_this(), h = std::move(h)](error_code ec,
                                                              redis::response& resp) mutable {
            time_point now{};
            std::optional<time_point> earliest;
            for (std::size_t i = 0; !ec && i < resp.size(); ++i) {
                auto rep = resp[i];
                if (rep.is_error()) {
                    ec = script_error(rep);
                } else if (!rep.is_array() || rep.size() != 2) {
                    ec = error::store_error;
                } else {
                    now = std::max(now, ms(rep[0].as_integer()));
                    if (const auto e = rep[1].as_integer(); e >= 0) {
                        earliest = earliest ? std::min(*earliest, ms(e)) : ms(e);
                    }
                }
            }
            if (ec) {
                now = {};
                earliest.reset();
            }
            self->finish(std::move(h), ec, now, earliest);
        });
    }

    void now(store::handler<void(error_code, time_point)> h) {
        auto st = std::make_shared<exec_state>();
        st->req.push("TIME");
        send(st, [self = shared_from_this(), h = std::move(h)](error_code ec,
                                                               redis::response& resp) mutable {
            time_point t{};
            if (!ec) {
                auto rep = resp[0];
                if (rep.is_error() || !rep.is_array() || rep.size() != 2) {
                    ec = error::store_error;
                } else {
                    t = ms(to_int(rep[0].as_string()) * 1000 + to_int(rep[1].as_string()) / 1000);
                }
            }
            self->finish(std::move(h), ec, t);
        });
    }

private:
    executor_type ex_;
    std::unique_ptr<backend> backend_;
    redis::config sub_cfg_;
    redis_store_options opt_;
    std::string channel_;
    std::string config_key_;
    std::vector<std::vector<std::string>> keys_;
    std::vector<std::string> prefixes_;
    std::vector<std::string> header_;
    std::unique_ptr<redis::subscriber> sub_;
    std::mt19937_64 rng_;
    std::size_t claim_rotation_ = 0;
    std::vector<std::int64_t> next_due_; // per shard, store ms (see shards_to_visit)
    std::int64_t server_ms_ = 0;         // the store's clock at the last reply
    std::chrono::steady_clock::time_point server_seen_at_{};
    std::chrono::steady_clock::time_point last_full_visit_{};
    bool subscribed_ = false;
    bool configured_ = false;
    bool closed_ = false;
};

} // namespace detail

redis_store::redis_store(const executor_type& ex, redis::config cfg, redis_store_options opt)
    : impl_(std::make_shared<detail::redis_store_impl>(
          ex, std::make_unique<detail::connection_backend>(ex, cfg), cfg, std::move(opt))) {}

redis_store::redis_store(const executor_type& ex, redis::cluster_config cfg,
                         redis_store_options opt)
    : impl_(std::make_shared<detail::redis_store_impl>(
          ex, std::make_unique<detail::cluster_backend>(ex, cfg), cfg.node, std::move(opt))) {}

redis_store::~redis_store() {
    impl_->close();
}

const redis_store_options& redis_store::options() const noexcept {
    return impl_->options();
}

std::size_t redis_store::shard_of(std::string_view id) const noexcept {
    return impl_->shard_of(id);
}

std::uint32_t redis_store::hash(std::string_view id) noexcept {
    std::uint32_t h = 5381;
    for (unsigned char c : id) {
        h = h * 33 + c;
    }
    return h;
}

void redis_store::close() {
    impl_->close();
}

store::executor_type redis_store::get_executor() const {
    return impl_->get_executor();
}

const dq::limits& redis_store::get_limits() const noexcept {
    return impl_->options().limits;
}

void redis_store::do_submit(
    task t, handler<void(boost::system::error_code, submit_result, std::string)> h) {
    impl_->submit(std::move(t), std::move(h));
}

void redis_store::do_cancel(std::string id,
                            handler<void(boost::system::error_code, cancel_result)> h) {
    impl_->cancel(std::move(id), std::move(h));
}

void redis_store::do_reschedule(std::string id, due_time due,
                                handler<void(boost::system::error_code)> h) {
    impl_->simple(detail::scripts::reschedule(), std::move(id), due, std::move(h));
}

void redis_store::do_status(std::string id,
                            handler<void(boost::system::error_code, task_status)> h) {
    impl_->status(std::move(id), std::move(h));
}

void redis_store::do_list_dead(std::string cursor, std::size_t count,
                               handler<void(boost::system::error_code, dead_page)> h) {
    impl_->list_dead(std::move(cursor), count, std::move(h));
}

void redis_store::do_requeue_dead(std::string id, due_time due,
                                  handler<void(boost::system::error_code)> h) {
    impl_->simple(detail::scripts::requeue_dead(), std::move(id), due, std::move(h));
}

void redis_store::do_delete_dead(std::string id, handler<void(boost::system::error_code)> h) {
    impl_->simple(detail::scripts::delete_dead(), std::move(id), std::nullopt, std::move(h));
}

void redis_store::do_claim(const claim_options& opt,
                           handler<void(boost::system::error_code, claim_result)> h) {
    impl_->claim(opt, std::move(h));
}

void redis_store::do_start(std::vector<lease_ref> leases,
                           handler<void(boost::system::error_code, std::vector<start_result>)> h) {
    impl_->start(std::move(leases), std::move(h));
}

void redis_store::do_renew(std::vector<lease_ref> leases, duration lease,
                           handler<void(boost::system::error_code, std::vector<ack_result>)> h) {
    impl_->renew(std::move(leases), lease, std::move(h));
}

void redis_store::do_acknowledge(
    std::vector<ack> acks, handler<void(boost::system::error_code, std::vector<ack_result>)> h) {
    impl_->acknowledge(std::move(acks), std::move(h));
}

void redis_store::do_release(std::vector<lease_ref> leases,
                             handler<void(boost::system::error_code)> h) {
    impl_->release(std::move(leases), std::move(h));
}

void redis_store::wait_wakeup(handler<void(boost::system::error_code, time_point)> h) {
    impl_->wait_wakeup(std::move(h));
}

void redis_store::now(handler<void(boost::system::error_code, time_point)> h) {
    impl_->now(std::move(h));
}

void redis_store::probe(handler<void(boost::system::error_code, time_point)> h) {
    impl_->now(std::move(h));
}

void redis_store::earliest_due(
    handler<void(boost::system::error_code, time_point, std::optional<time_point>)> h) {
    impl_->earliest_due(std::move(h));
}

} // namespace timewheel::dq
