// The client is one coroutine per call (co_spawn on the client's executor), with the shared
// state in client::state: the pools per origin, the calls in flight (so that close() can end
// them) and the TLS context. A call never waits on anything that its deadline, its
// cancellation slot or close() cannot interrupt: each of them sets the reason and
// call_op::abort() cancels the one thing the call is waiting on (the resolver, the socket or
// the timer of its place in the queue).

#include <timewheeld/callback/client.hpp>

#include <timewheeld/callback/retry_after.hpp>
#include <timewheeld/callback/signature.hpp>
#include <timewheeld/callback/url.hpp>
#include <timewheeld/callback/utf8.hpp>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/dispatch.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/ssl/error.hpp>
#include <boost/asio/ssl/host_name_verification.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/beast/ssl/ssl_stream.hpp>

#include <openssl/ssl.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <deque>
#include <system_error>
#include <unordered_map>
#include <vector>

namespace timewheeld::callback {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace ssl = net::ssl;
using tcp = net::ip::tcp;
using steady = std::chrono::steady_clock;
using boost::system::error_code;

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

// What a receiver's answer may cost: its header at most header_limit bytes, and the read
// buffer at most read_buffer_limit, whatever it sends (Beast's parser bounds neither a
// chunk extension nor trailers by itself: the buffer's own limit does, with
// http::error::buffer_overflow). The body is bounded by max_response_body, and the time by
// the call's deadline.
constexpr std::size_t header_limit = 16 * 1024;
constexpr std::size_t read_buffer_limit = 64 * 1024;
// An error text for the log and the task's last_error: valid UTF-8, at most this long (the
// stores keep 1024 bytes: never cut there, mid code point).
constexpr std::size_t max_error_bytes = 512;

// A plain connection is made through a beast::tcp_stream (for its connect timeout), then
// used as the bare socket: every read and write through tcp_stream copies its executor and
// shared state and checks its timers, a cost at each call that a kept-alive connection does
// not need (the call's own deadline closes the socket).
struct connection {
    std::optional<beast::tcp_stream> plain;     // while connecting
    std::optional<net::ip::tcp::socket> socket; // plain, once connected
    std::optional<beast::ssl_stream<beast::tcp_stream>> tls;
    beast::flat_buffer buffer{read_buffer_limit};
    steady::time_point idle_since;

    beast::tcp_stream& tcp() { return tls ? beast::get_lowest_layer(*tls) : *plain; }
    void close() {
        if (socket) {
            error_code ignored;
            socket->close(ignored);
        } else {
            tcp().close();
        }
    }
};

struct host_pool;

// A call's place in the queue for a concurrency slot; it leaves the queue however its
// coroutine ends (even destroyed unfinished with its io_context).
struct waiter {
    waiter(net::steady_timer& t, host_pool& p);
    waiter(const waiter&) = delete;
    waiter& operator=(const waiter&) = delete;
    ~waiter();

    net::steady_timer* timer;
    host_pool* pool;
    bool granted = false;
};

struct host_pool {
    std::size_t active = 0;
    std::deque<waiter*> waiters;
    std::vector<std::unique_ptr<connection>> idle;
    steady::time_point next_slot{};
    steady::time_point backoff_until{};
};

waiter::waiter(net::steady_timer& t, host_pool& p)
    : timer(&t)
    , pool(&p) {
    p.waiters.push_back(this);
}

waiter::~waiter() {
    if (!granted)
        std::erase(pool->waiters, this);
}

struct call_op {
    explicit call_op(const net::any_io_executor& ex)
        : deadline(ex) {}

    net::steady_timer deadline;
    std::chrono::milliseconds timeout{0};
    std::optional<error> stop; // timeout or client_closed
    bool cancelled = false;
    const char* phase = "starting";
    callback::reach reach = callback::reach::held;
    tcp::resolver* resolver = nullptr;
    connection* conn = nullptr;
    net::steady_timer* wait = nullptr;

    // The client's list of calls in flight (close() ends them): intrusive, so that a call
    // costs no node allocation to enter it.
    call_op* prev = nullptr;
    call_op* next = nullptr;

    bool stopped() const { return stop || cancelled; }
    void abort() {
        if (resolver)
            resolver->cancel();
        if (conn)
            conn->close();
        if (wait)
            wait->cancel();
    }
};

struct outcome {
    error_code ec;
    call_result result;
};

} // namespace

struct client::state {
    state(net::any_io_executor e, client_options o)
        : ex(std::move(e))
        , opt(std::move(o))
        , tls(ssl::context::tls_client) {}

    net::any_io_executor ex;
    client_options opt;
    ssl::context tls;
    std::unordered_map<std::string, host_pool> pools;
    call_op* ops = nullptr; // the calls in flight, linked through call_op::prev/next
    client_stats stats;
    bool closed = false;
    steady::time_point last_sweep = steady::now();

    // Drops idle connections past their time and pools with nothing in them, so that a
    // service that called many hosts once does not keep them all.
    void sweep(steady::time_point now) {
        if (now - last_sweep < opt.idle_timeout)
            return;
        last_sweep = now;
        for (auto it = pools.begin(); it != pools.end();) {
            auto& p = it->second;
            std::erase_if(p.idle, [&](auto& c) {
                bool stale = now - c->idle_since > opt.idle_timeout;
                if (stale)
                    c->close();
                return stale;
            });
            if (p.active == 0 && p.waiters.empty() && p.idle.empty() && p.backoff_until <= now &&
                p.next_slot <= now)
                it = pools.erase(it);
            else
                ++it;
        }
    }
};

namespace {

using state_ptr = std::shared_ptr<client::state>;

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

std::string_view phase_text(const call_op& op) {
    return op.phase;
}

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

bool verify_failure(const error_code& ec) {
    return ec.category() == net::error::get_ssl_category() &&
           ERR_GET_REASON(static_cast<unsigned long>(ec.value())) ==
               SSL_R_CERTIFICATE_VERIFY_FAILED;
}

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

net::awaitable<std::unique_ptr<connection>> open_connection(state_ptr st, call_op& op, const url& u,
                                                            outcome& failure) {
    error_code ec;
    tcp::resolver resolver(st->ex);
    op.phase = "resolving the host";
    op.resolver = &resolver;
    auto results = co_await resolver.async_resolve(u.host, std::to_string(u.port),
                                                   net::redirect_error(net::use_awaitable, ec));
    op.resolver = nullptr;
    if (op.stopped()) {
        failure = stopped_outcome(op);
        co_return nullptr;
    }
    if (ec) {
        failure =
            make_outcome(ec, verdict::retry, "cannot resolve \"" + u.host + "\": " + ec.message());
        co_return nullptr;
    }
    // The SSRF check, on the addresses themselves: only those the policy allows are tried.
    std::vector<tcp::endpoint> allowed;
    std::string refused;
    for (const auto& r : results) {
        auto a = r.endpoint().address();
        if (st->opt.policy.allows(a)) {
            allowed.push_back(r.endpoint());
        } else {
            if (!refused.empty())
                refused += ", ";
            refused += a.to_string() + " (" + std::string(to_string(classify(a))) + ")";
        }
    }
    if (allowed.empty()) {
        ++st->stats.refused;
        failure = make_outcome(error::address_refused, verdict::fail,
                               "\"" + u.host + "\" resolves to refused addresses only: " + refused +
                                   "; nothing was sent (see the SSRF settings)");
        co_return nullptr;
    }

    auto c = std::make_unique<connection>();
    if (u.https) {
        c->tls.emplace(st->ex, st->tls);
        if (st->opt.verify_certificates) {
            c->tls->set_verify_mode(ssl::verify_peer);
            c->tls->set_verify_callback(ssl::host_name_verification(u.host));
        } else {
            c->tls->set_verify_mode(ssl::verify_none);
        }
        boost::system::error_code aec;
        net::ip::make_address(u.host, aec);
        // SNI carries names only (RFC 6066 3).
        if (aec && !SSL_set_tlsext_host_name(c->tls->native_handle(), u.host.c_str())) {
            failure = make_outcome(
                error_code(static_cast<int>(::ERR_get_error()), net::error::get_ssl_category()),
                verdict::fail, "cannot set the TLS server name");
            co_return nullptr;
        }
    } else {
        c->plain.emplace(st->ex);
    }

    op.phase = "connecting";
    op.conn = c.get();
    auto& stream = c->tcp();
    stream.expires_after(st->opt.connect_timeout);
    ++st->stats.connects;
    co_await stream.async_connect(allowed, net::redirect_error(net::use_awaitable, ec));
    stream.expires_never();
    if (op.stopped()) {
        failure = stopped_outcome(op);
        co_return nullptr;
    }
    if (ec == beast::error::timeout) {
        failure = make_outcome(error::connect_timeout, verdict::retry,
                               "no connection to " + u.origin() + " within " +
                                   std::to_string(st->opt.connect_timeout.count()) + " ms");
        co_return nullptr;
    }
    if (ec) {
        failure = make_outcome(ec, verdict::retry,
                               "cannot connect to " + u.origin() + ": " + ec.message());
        co_return nullptr;
    }
    if (c->plain) {
        c->socket.emplace(c->plain->release_socket());
        c->plain.reset();
    }
    if (c->tls) {
        op.phase = "in the TLS handshake";
        co_await c->tls->async_handshake(ssl::stream_base::client,
                                         net::redirect_error(net::use_awaitable, ec));
        if (op.stopped()) {
            failure = stopped_outcome(op);
            co_return nullptr;
        }
        if (ec) {
            if (verify_failure(ec))
                failure = make_outcome(error::tls_verify_failed, verdict::fail,
                                       "TLS certificate of " + u.origin() +
                                           " not trusted: " + ec.message());
            else
                failure =
                    make_outcome(ec, verdict::retry,
                                 "TLS handshake with " + u.origin() + " failed: " + ec.message());
            co_return nullptr;
        }
    }
    co_return c;
}

using response_parser = http::response_parser<http::string_body>;

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
        if (ec == http::error::body_limit && parser->get().result_int() >= 200)
            got_header = true;
        if (ec)
            co_return ec;
        const auto status = parser->get().result_int();
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

bool token_char(char c) {
    return std::isalnum(static_cast<unsigned char>(c)) ||
           std::string_view("!#$%&'*+-.^_`|~").find(c) != std::string_view::npos;
}

// A header that would not go out as one header line (parse_callback refuses them, but a
// call_request can be made by hand): its name, or nothing when every header is sound.
std::optional<std::string> bad_header(const callback_spec& spec) {
    for (const auto* list : {&spec.headers, &spec.secret_headers}) {
        for (const auto& [name, value] : *list) {
            const bool name_ok = !name.empty() && std::all_of(name.begin(), name.end(), token_char);
            const bool value_ok = std::none_of(value.begin(), value.end(), [](char c) {
                const auto u8 = static_cast<unsigned char>(c);
                return (u8 < 0x20 && c != '\t') || u8 == 0x7f;
            });
            if (!name_ok || !value_ok)
                return name;
        }
    }
    return std::nullopt;
}

// The request's bytes, as Beast's serializer would write the message it used to build (the
// same fields in the same order, Content-Length as prepare_payload() sets it), in one
// string: one allocation a call instead of one per header field plus the serializer's. The
// method is one string_to_verb() knows and the headers passed bad_header().
std::string build_request(const client_options& opt, const url& u, const call_request& req) {
    const auto& spec = req.spec;
    const auto host = u.host_header();
    char attempt[16];
    const auto attempt_end = std::to_chars(attempt, attempt + sizeof attempt, req.attempt).ptr;
    std::string signature;
    const auto own = opt.host_signing_secrets.find(u.host);
    const auto& secrets = own != opt.host_signing_secrets.end() ? own->second : opt.signing_secrets;
    if (!secrets.empty()) {
        auto now = std::chrono::duration_cast<std::chrono::seconds>(
                       std::chrono::system_clock::now().time_since_epoch())
                       .count();
        signature = sign(secrets, now, {spec.method, spec.url, req.task_id, req.attempt, spec.body},
                         opt.signature_v1);
    }
    const auto verb = http::string_to_verb(spec.method);
    const bool length = !spec.body.empty() || verb == http::verb::post || verb == http::verb::put ||
                        verb == http::verb::options;
    char length_text[24];
    const auto length_end =
        std::to_chars(length_text, length_text + sizeof length_text, spec.body.size()).ptr;

    std::size_t size = spec.method.size() + u.target.size() + host.size() + opt.user_agent.size() +
                       req.task_id.size() + signature.size() + spec.body.size() + 160;
    for (const auto* list : {&spec.headers, &spec.secret_headers})
        for (const auto& [name, value] : *list)
            size += name.size() + value.size() + 4;
    std::string r;
    r.reserve(size);
    auto line = [&r](std::string_view name, std::string_view value) {
        r += name;
        r += ": ";
        r += value;
        r += "\r\n";
    };
    r += spec.method;
    r += ' ';
    r += u.target;
    r += " HTTP/1.1\r\n";
    line("Host", host);
    line("User-Agent", opt.user_agent);
    for (const auto* list : {&spec.headers, &spec.secret_headers})
        for (const auto& [name, value] : *list)
            line(name, value);
    line("Idempotency-Key", req.task_id);
    line("Timewheel-Attempt", std::string_view(attempt, attempt_end - attempt));
    if (!signature.empty())
        line(signature_header, signature);
    if (length)
        line("Content-Length", std::string_view(length_text, length_end - length_text));
    r += "\r\n";
    r += spec.body;
    return r;
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
        if (turn > op->deadline.expiry()) {
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

    const auto& res = parser->get();
    outcome o;
    o.result.status = res.result_int();
    o.result.verdict = verdict_of(o.result.status);
    if (auto it = res.find(http::field::retry_after); it != res.end())
        o.result.retry_after =
            parse_retry_after(std::string_view(it->value()), std::chrono::system_clock::now());
    if (o.result.status >= 300 && o.result.status < 400) {
        o.ec = error::redirect_refused;
        auto loc = res.find(http::field::location);
        o.result.error = "HTTP " + std::to_string(o.result.status) + " from " + u.origin() +
                         " is a redirect" +
                         (loc != res.end() ? " to " + std::string(loc->value()) : "") +
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

void client::start(call_request req,
                   net::any_completion_handler<void(error_code, call_result)> handler) {
    auto st = state_;
    auto op = std::make_shared<call_op>(ex_);
    op->timeout = req.spec.timeout.count() > 0 ? req.spec.timeout : st->opt.total_timeout;
    op->deadline.expires_after(op->timeout);
    op->next = st->ops;
    if (st->ops)
        st->ops->prev = op.get();
    st->ops = op.get();
    op->deadline.async_wait([op](error_code ec) {
        if (!ec && !op->stop) {
            op->stop = error::timeout;
            op->abort();
        }
    });
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
                      if (op->prev)
                          op->prev->next = op->next;
                      else
                          st->ops = op->next;
                      if (op->next)
                          op->next->prev = op->prev;
                      op->deadline.cancel();
                      if (e) {
                          try {
                              std::rethrow_exception(e);
                          } catch (const std::exception& x) {
                              out =
                                  make_outcome(make_error_code(std::errc::io_error), verdict::retry,
                                               std::string("internal error: ") + x.what());
                          }
                      }
                      auto hex = net::get_associated_executor(h, st->ex);
                      net::dispatch(hex, [h = std::move(h), out = std::move(out)]() mutable {
                          std::move(h)(out.ec, std::move(out.result));
                      });
                  });
}

} // namespace timewheeld::callback
