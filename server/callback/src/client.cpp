//
// server/callback/src/client.cpp
//
// A call is one coroutine, run_call: co_spawned on the client's executor by async_call, or
// awaited inside the caller's coroutine by call() (the dispatcher's way: no second coroutine,
// handler or completion per task). The shared state is in client::state: the pools per
// origin, the calls in flight (so that close() can end them) and the TLS context. A call
// never waits on anything that its deadline, its cancellation slot or close() cannot
// interrupt: each of them sets the reason and call_op::abort() cancels the one thing the call
// is waiting on (the resolver, the socket or the timer of its place in the queue). This file
// runs a call: its slot in the origin's pool, a kept-alive connection or a new one
// (connect.cpp), one exchange (the request from request.cpp, the answer read within its
// limits) and the verdict; call.hpp holds what the parts share.
//
#include <timewheeld/callback/client.hpp>

#include "call.hpp"

#include <timewheeld/callback/retry_after.hpp>
#include <timewheeld/callback/url.hpp>
#include <timewheeld/callback/utf8.hpp>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/dispatch.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/ssl/error.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/http/basic_parser.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/rfc7230.hpp>

#include <algorithm>
#include <system_error>
#include <vector>

namespace timewheeld::callback {

using namespace detail;
namespace http = beast::http;

const char* to_string(verdict v) noexcept {
    switch (v) {
    case verdict::success:
        return "success";
    case verdict::accepted:
        return "accepted";
    case verdict::retry:
        return "retry";
    case verdict::fail:
        return "fail";
    }
    return "unknown";
}

namespace {

// Longer back-offs than this are cut: a host's Retry-After should not park a whole origin
// for days; the task's own retry policy still sees the full value in call_result.
constexpr std::chrono::seconds max_backoff = std::chrono::hours(1);

// An error text for the log and the task's last_error: valid UTF-8, at most this long (the
// stores keep 1024 bytes: never cut there, mid code point).
constexpr std::size_t max_error_bytes = 512;

} // namespace

namespace detail {

namespace {

std::string_view phase_text(const call_op& op) {
    return op.phase;
}

} // namespace

outcome stopped_outcome(const call_op& op) {
    outcome o;
    if (op.cancelled) {
        o.ec = net::error::operation_aborted;
        o.result.error = "cancelled while " + std::string(phase_text(op));
    } else if (*op.stop == error::timeout) {
        o.ec = error::timeout;
        o.result.error = "no answer within " + std::to_string(op.timeout.count()) +
                         " ms (timed out while " + std::string(phase_text(op)) + ")";
    } else {
        o.ec = *op.stop;
        o.result.error = "client closed while " + std::string(phase_text(op));
    }
    o.result.verdict = verdict::retry;
    return o;
}

outcome make_outcome(error_code ec, verdict v, std::string text) {
    outcome o;
    o.ec = ec;
    o.result.verdict = v;
    o.result.error = std::move(text);
    return o;
}

} // namespace detail

namespace {

// The concurrency slot of a call, given back when the call ends however it ends: to the
// first waiter, or to the pool.
class slot_guard {
public:
    explicit slot_guard(host_pool& p)
        : pool_(&p) {}
    slot_guard(const slot_guard&) = delete;
    slot_guard& operator=(const slot_guard&) = delete;
    ~slot_guard() {
        if (!pool_->waiters.empty()) {
            auto* w = pool_->waiters.front();
            pool_->waiters.pop_front();
            w->granted = true;
            w->timer->cancel();
        } else {
            --pool_->active;
        }
    }

private:
    host_pool* pool_;
};

// A pooled connection the host closed while it was idle fails this way before any answer;
// the call then goes over a fresh connection.
bool stale_connection(const error_code& ec) {
    return ec == http::error::end_of_stream || ec == net::error::eof ||
           ec == net::error::connection_reset || ec == net::error::broken_pipe ||
           ec == net::ssl::error::stream_truncated;
}

verdict verdict_of(unsigned status) {
    if (status == 202)
        return verdict::accepted;
    if (status >= 200 && status < 300)
        return verdict::success;
    if (status == 408 || status == 429 || (status >= 500 && status < 600))
        return verdict::retry;
    return verdict::fail;
}

// What the verdict reads of an answer, parsed by Beast's own parser (its header and body
// limits, its chunk and framing checks) without keeping the rest: the status, the first
// Retry-After, Location and Connection (as basic_fields::find and keep_alive() would see
// them), the body counted and dropped. An http::response_parser would allocate a node per
// header field and keep the body, on every call, for nothing.
class response_parser : public http::basic_parser<false> {
public:
    unsigned result_int() const noexcept { return status_; }
    const std::optional<std::string>& retry_after() const noexcept { return retry_after_; }
    const std::optional<std::string>& location() const noexcept { return location_; }
    // As http::message::keep_alive(): the version and the first Connection field.
    bool keep_alive() const {
        if (version_ < 11)
            return connection_ && http::token_list(*connection_).exists("keep-alive");
        return !connection_ || !http::token_list(*connection_).exists("close");
    }

private:
    static void keep_first(std::optional<std::string>& slot, beast::string_view value) {
        if (!slot)
            slot.emplace(value.data(), value.size());
    }
    void on_request_impl(http::verb, beast::string_view, beast::string_view, int,
                         error_code&) override {}
    void on_response_impl(int code, beast::string_view, int version, error_code&) override {
        status_ = static_cast<unsigned>(code);
        version_ = version;
    }
    void on_field_impl(http::field name, beast::string_view, beast::string_view value,
                       error_code&) override {
        if (name == http::field::retry_after)
            keep_first(retry_after_, value);
        else if (name == http::field::location)
            keep_first(location_, value);
        else if (name == http::field::connection)
            keep_first(connection_, value);
    }
    void on_header_impl(error_code&) override {}
    void on_body_init_impl(const boost::optional<std::uint64_t>&, error_code&) override {}
    std::size_t on_body_impl(beast::string_view body, error_code&) override { return body.size(); }
    void on_chunk_header_impl(std::uint64_t, beast::string_view, error_code&) override {}
    std::size_t on_chunk_body_impl(std::uint64_t, beast::string_view body, error_code&) override {
        return body.size();
    }
    void on_finish_impl(error_code&) override {}

    unsigned status_ = 0;
    int version_ = 11;
    std::optional<std::string> retry_after_;
    std::optional<std::string> location_;
    std::optional<std::string> connection_;
};

// Interim answers (100 Continue, 103 Early Hints) before the final one are read and
// dropped (RFC 9110 15.2: a client must accept them even unasked); past this many, the
// receiver is stalling.
constexpr int max_interim_answers = 8;

// A fresh parser for an answer, with the limits that bound what it may cost.
void fresh_parser(std::optional<response_parser>& parser, std::size_t body_limit) {
    parser.emplace();
    parser->header_limit(header_limit);
    parser->body_limit(body_limit);
}

template <class Stream>
net::awaitable<error_code> exchange(Stream& s, connection& c, call_op& op, const std::string& req,
                                    std::optional<response_parser>& parser, std::size_t body_limit,
                                    bool& got_header) {
    error_code ec;
    op.phase = "sending the request";
    op.reach = reach::sent;
    co_await net::async_write(s, net::buffer(req), net::redirect_error(net::use_awaitable, ec));
    if (ec)
        co_return ec;
    op.phase = "waiting for the answer";
    for (int interim = 0;; ++interim) {
        fresh_parser(parser, body_limit);
        co_await http::async_read_header(s, c.buffer, *parser,
                                         net::redirect_error(net::use_awaitable, ec));
        // A Content-Length past the body limit fails the header itself, its status read:
        // that status is the answer, the body is not read.
        if (ec == http::error::body_limit && parser->result_int() >= 200)
            got_header = true;
        if (ec)
            co_return ec;
        const auto status = parser->result_int();
        if (status >= 200 || status == 101)
            break;
        if (interim == max_interim_answers) {
            got_header = true;
            co_return error::too_many_interim;
        }
    }
    got_header = true;
    // An answer without a body (the usual 200 with Content-Length: 0) is whole already:
    // async_read would only post its completion, a turn of the io_context per call.
    if (parser->is_done())
        co_return ec;
    op.phase = "reading the answer";
    co_await http::async_read(s, c.buffer, *parser, net::redirect_error(net::use_awaitable, ec));
    co_return ec;
}

net::awaitable<outcome> run_call(state_ptr st, std::shared_ptr<call_op> op, call_request req) {
    const auto started = steady::now();
    auto done = [&](outcome o) {
        o.result.latency = steady::now() - started;
        // Errors quote what a receiver sent (a Location) and may be long: shown as they are
        // only when valid and short.
        if (o.result.error.size() > max_error_bytes || !is_valid_utf8(o.result.error))
            o.result.error = valid_utf8(o.result.error, max_error_bytes);
        o.result.reach = op->reach;
        return o;
    };
    if (st->closed)
        co_return done(make_outcome(error::client_closed, verdict::retry, "client closed"));
    ++st->stats.calls;

    url u;
    error_code ec;
    std::string why;
    if (!parse_url(req.spec.url, st->opt.max_url_length, u, ec, why))
        co_return done(make_outcome(ec, verdict::fail, why));
    if (http::string_to_verb(req.spec.method) == http::verb::unknown)
        co_return done(make_outcome(error::bad_url, verdict::fail,
                                    "unknown HTTP method \"" + req.spec.method + "\""));
    if (!st->opt.policy.allows_host(u.host))
        co_return done(make_outcome(error::host_not_allowed, verdict::fail,
                                    "host \"" + u.host + "\" is not on the allow-list"));
    if (auto name = bad_header(req.spec))
        co_return done(make_outcome(error::bad_header, verdict::fail,
                                    "header \"" + *name +
                                        "\" is not a token or its value has a control character"));

    auto now = steady::now();
    st->sweep(now);
    auto& pool = st->pools[u.origin()];
    if (pool.backoff_until > now) {
        auto o = make_outcome(error::host_backing_off, verdict::retry,
                              u.origin() + " answered 429; backing off");
        o.result.retry_after = std::chrono::ceil<std::chrono::seconds>(pool.backoff_until - now);
        co_return done(std::move(o));
    }

    // The concurrency cap: wait for a slot, in order of arrival.
    if (pool.active < std::max<std::size_t>(st->opt.max_connections_per_host, 1)) {
        ++pool.active;
    } else {
        net::steady_timer timer(st->ex, steady::time_point::max());
        waiter w(timer, pool);
        op->phase = "waiting for a connection slot";
        op->wait = &timer;
        co_await timer.async_wait(net::redirect_error(net::use_awaitable, ec));
        op->wait = nullptr;
        if (!w.granted)
            co_return done(stopped_outcome(*op));
    }
    slot_guard slot(pool);
    if (op->stopped())
        co_return done(stopped_outcome(*op));

    if (st->opt.rate_limit_per_host > 0) {
        auto interval = std::chrono::duration_cast<steady::duration>(
            std::chrono::duration<double>(1.0 / st->opt.rate_limit_per_host));
        now = steady::now();
        auto turn = std::max(now, pool.next_slot);
        if (turn > op->expiry) {
            auto o = make_outcome(error::rate_limited, verdict::retry,
                                  "rate limit of " + u.origin() + " reached");
            o.result.retry_after = std::chrono::ceil<std::chrono::seconds>(turn - now);
            co_return done(std::move(o));
        }
        pool.next_slot = turn + interval;
        if (turn > now) {
            net::steady_timer timer(st->ex, turn);
            op->phase = "waiting for the rate limit";
            op->wait = &timer;
            co_await timer.async_wait(net::redirect_error(net::use_awaitable, ec));
            op->wait = nullptr;
            if (op->stopped())
                co_return done(stopped_outcome(*op));
        }
    }

    auto hreq = build_request(st->opt, u, req);
    std::unique_ptr<connection> conn;
    while (!pool.idle.empty() && !conn) {
        conn = std::move(pool.idle.back());
        pool.idle.pop_back();
        if (steady::now() - conn->idle_since > st->opt.idle_timeout) {
            conn->close();
            conn.reset();
        }
    }
    bool reused = conn != nullptr;
    std::optional<response_parser> parser;
    for (;;) {
        if (!conn) {
            outcome failure;
            op->reach = std::max(op->reach, reach::connecting);
            conn = co_await open_connection(st, *op, u, failure);
            if (!conn)
                co_return done(std::move(failure));
        } else {
            ++st->stats.reuses;
        }
        op->conn = conn.get();
        bool got_header = false;
        if (conn->tls)
            ec = co_await exchange(*conn->tls, *conn, *op, hreq, parser, st->opt.max_response_body,
                                   got_header);
        else
            ec = co_await exchange(*conn->socket, *conn, *op, hreq, parser,
                                   st->opt.max_response_body, got_header);
        if (op->stopped()) {
            op->conn = nullptr;
            co_return done(stopped_outcome(*op));
        }
        if (ec && reused && !got_header && stale_connection(ec)) {
            conn->close();
            conn.reset();
            reused = false;
            continue;
        }
        if (ec && !got_header) {
            op->conn = nullptr;
            co_return done(make_outcome(ec, verdict::retry,
                                        "no answer from " + u.origin() + " (" + ec.message() +
                                            " while " + op->phase + ")"));
        }
        break;
    }
    op->conn = nullptr;

    const auto& res = *parser;
    outcome o;
    o.result.status = res.result_int();
    o.result.verdict = verdict_of(o.result.status);
    if (const auto& ra = res.retry_after())
        o.result.retry_after = parse_retry_after(*ra, std::chrono::system_clock::now());
    if (o.result.status >= 300 && o.result.status < 400) {
        o.ec = error::redirect_refused;
        const auto& loc = res.location();
        o.result.error = "HTTP " + std::to_string(o.result.status) + " from " + u.origin() +
                         " is a redirect" + (loc ? " to " + *loc : "") +
                         "; redirects are not followed";
    } else if (ec && ec != http::error::body_limit) {
        // The header came, the rest is broken (a flood of chunk extensions or trailers, a
        // malformed chunk): whatever the status said, the answer was not whole.
        o.ec = ec;
        o.result.verdict = verdict::retry;
        o.result.error = "HTTP " + std::to_string(o.result.status) + " from " + u.origin() +
                         ", but its answer was broken (" + ec.message() + " while " + op->phase +
                         ")";
    } else if (o.result.verdict == verdict::retry || o.result.verdict == verdict::fail) {
        o.result.error = "HTTP " + std::to_string(o.result.status) + " from " + u.origin();
    }
    if (o.result.status == 429 && st->opt.backoff_after_429.count() > 0) {
        auto wait = o.result.retry_after
                        ? std::chrono::duration_cast<steady::duration>(
                              std::min<std::chrono::seconds>(*o.result.retry_after, max_backoff))
                        : std::chrono::duration_cast<steady::duration>(st->opt.backoff_after_429);
        pool.backoff_until = std::max(pool.backoff_until, steady::now() + wait);
    }
    // Reused only when the answer was read whole and both sides keep the connection.
    if (!ec && parser->is_done() && res.keep_alive() && !st->closed) {
        conn->idle_since = steady::now();
        pool.idle.push_back(std::move(conn));
    } else {
        conn->close();
    }
    co_return done(std::move(o));
}

} // namespace

client::client(executor_type ex, client_options options)
    : ex_(std::move(ex))
    , state_(std::make_shared<state>(ex_, std::move(options))) {
    auto& o = state_->opt;
    if (!o.ca_file.empty())
        state_->tls.load_verify_file(o.ca_file);
    else if (o.verify_certificates)
        state_->tls.set_default_verify_paths();
}

client::~client() {
    close();
}

const client_options& client::options() const noexcept {
    return state_->opt;
}

client_stats client::stats() const noexcept {
    return state_->stats;
}

void client::close() {
    auto& st = *state_;
    st.closed = true;
    for (auto* op = st.ops; op; op = op->next) {
        if (!op->stop)
            op->stop = error::client_closed;
        op->abort();
    }
    for (auto& [origin, pool] : st.pools) {
        for (auto& c : pool.idle)
            c->close();
        pool.idle.clear();
    }
}

namespace {

// A call enters the client's list of calls in flight (close() ends them) with its deadline
// armed...
std::shared_ptr<call_op> enter(client::state& st, const net::any_io_executor& ex,
                               const call_request& req) {
    auto op = std::make_shared<call_op>();
    op->timeout = req.spec.timeout.count() > 0 ? req.spec.timeout : st.opt.total_timeout;
    op->expiry = steady::now() + op->timeout;
    if (st.opt.deadline_on_wheel) {
        op->wheel_deadline.emplace(ex, call_op::expire{op.get()});
        op->wheel_deadline->expires_at(op->expiry);
    } else {
        op->deadline.emplace(ex, op->expiry);
        op->deadline->async_wait([op](error_code ec) {
            if (!ec)
                op->expired();
        });
    }
    op->next = st.ops;
    if (st.ops)
        st.ops->prev = op.get();
    st.ops = op.get();
    return op;
}

// ... and leaves it, its deadline disarmed, however it ended.
void leave(client::state& st, call_op& op) {
    if (op.prev)
        op.prev->next = op.next;
    else
        st.ops = op.next;
    if (op.next)
        op.next->prev = op.prev;
    op.cancel_deadline();
}

outcome internal_error(const std::exception& x) {
    return make_outcome(make_error_code(std::errc::io_error), verdict::retry,
                        std::string("internal error: ") + x.what());
}

} // namespace

void client::start(call_request req,
                   net::any_completion_handler<void(error_code, call_result)> handler) {
    auto st = state_;
    auto op = enter(*st, ex_, req);
    auto slot = net::get_associated_cancellation_slot(handler);
    if (slot.is_connected())
        slot.assign([op](net::cancellation_type) {
            op->cancelled = true;
            op->abort();
        });
    net::co_spawn(ex_, run_call(st, op, std::move(req)),
                  [st, op, h = std::move(handler)](std::exception_ptr e, outcome out) mutable {
                      auto slot = net::get_associated_cancellation_slot(h);
                      if (slot.is_connected())
                          slot.clear();
                      leave(*st, *op);
                      if (e) {
                          try {
                              std::rethrow_exception(e);
                          } catch (const std::exception& x) {
                              out = internal_error(x);
                          }
                      }
                      auto hex = net::get_associated_executor(h, st->ex);
                      net::dispatch(hex, [h = std::move(h), out = std::move(out)]() mutable {
                          std::move(h)(out.ec, std::move(out.result));
                      });
                  });
}

net::awaitable<std::pair<error_code, call_result>> client::call(call_request req) {
    auto st = state_;
    auto op = enter(*st, ex_, req);
    // Left however the coroutine ends, even destroyed unfinished with its io_context.
    struct leaving {
        client::state& st;
        call_op& op;
        ~leaving() { leave(st, op); }
    } on_exit{*st, *op};
    outcome out;
    try {
        out = co_await run_call(st, op, std::move(req));
    } catch (const std::exception& x) {
        out = internal_error(x);
    }
    co_return std::pair<error_code, call_result>(out.ec, std::move(out.result));
}

} // namespace timewheeld::callback
