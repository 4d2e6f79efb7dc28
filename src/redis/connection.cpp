//
// src/redis/connection.cpp
//
// The connection's machinery: connect and handshake, the write of coalesced requests, the
// read loop feeding hiredis, replies built straight into the responses, NOSCRIPT resends,
// function libraries loaded ahead of their first FCALL,
// timeouts, the health check, and reconnection with backoff; before each connect, the
// Sentinels asked for the master and a host name resolved.
//

#include <timewheel/redis/connection.hpp>

#include <boost/asio/bind_allocator.hpp>
#include <boost/asio/connect.hpp>
#include <boost/asio/defer.hpp>
#include <boost/asio/error.hpp>
#include <boost/asio/ip/address.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/local/stream_protocol.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/write.hpp>

#include <algorithm>
#include <charconv>
#include <map>
#include <stdexcept>

namespace timewheel::redis::detail {

namespace net = boost::asio;
using clock = std::chrono::steady_clock;

void cancel_exec(connection_impl& impl, op_base& op, net::cancellation_type type) {
    impl.cancel(op, type);
}

namespace {

bool is_internal(const op_base& op) noexcept {
    return !op.owner_;
}

void check_duration(std::chrono::milliseconds d, const char* name) {
    if (d.count() < 0) {
        throw std::invalid_argument(std::string("redis::config::") + name +
                                    " must not be negative");
    }
}

} // namespace

connection_impl::connection_impl(const executor_type& ex, config cfg)
    : ex_(ex)
    , cfg_(std::move(cfg))
    , socket_(ex)
    , connect_timer_(ex)
    , resolver_(ex)
    , timeout_timer_(ex)
    , health_timer_(ex)
    , reader_(&connection_impl::next_sink, this, cfg_.max_reply_bytes)
    , jitter_(static_cast<std::minstd_rand::result_type>(clock::now().time_since_epoch().count() ^
                                                         reinterpret_cast<std::uintptr_t>(this)))
    , handshake_op_([](op_base* op, boost::system::error_code ec, std::size_t, bool) {
        if (!ec) {
            static_cast<internal_op*>(op)->self->complete_handshake();
        }
    })
    , ping_op_([](op_base*, boost::system::error_code, std::size_t, bool) {}) {
    check_duration(cfg_.connect_timeout, "connect_timeout");
    check_duration(cfg_.request_timeout, "request_timeout");
    check_duration(cfg_.health_check_interval, "health_check_interval");
    check_duration(cfg_.reconnect_min_delay, "reconnect_min_delay");
    check_duration(cfg_.reconnect_max_delay, "reconnect_max_delay");
    if (cfg_.read_buffer_size == 0) {
        throw std::invalid_argument("redis::config::read_buffer_size must not be zero");
    }
    if (cfg_.max_reply_bytes == 0) {
        throw std::invalid_argument("redis::config::max_reply_bytes must not be zero");
    }
    if (!cfg_.sentinels.empty()) {
        if (cfg_.master_name.empty()) {
            throw std::invalid_argument("redis::config::master_name must be given with sentinels");
        }
        for (const auto& s : cfg_.sentinels) {
            if (s.host.empty() || s.port == 0) {
                throw std::invalid_argument(
                    "redis::config::sentinels: every Sentinel needs a host and a port");
            }
        }
        sentinel_order_ = sentinel_order::for_list(cfg_.sentinels);
    } else if (!cfg_.unix_socket.empty()) {
        endpoint_ = net::local::stream_protocol::endpoint(cfg_.unix_socket);
        tcp_ = false;
    } else if (cfg_.host.empty()) {
        throw std::invalid_argument("redis::config::host must not be empty");
    }
    read_buffer_ = std::make_unique<char[]>(cfg_.read_buffer_size);
    handshake_op_.self = this;
    handshake_op_.handshake_ = true;
    ping_op_.self = this;
    ping_op_.req.push("PING");
}

connection_impl::~connection_impl() = default;

void connection_impl::reset_reader() {
    reader_.reset();
}

response* connection_impl::next_sink(void* self) {
    return static_cast<connection_impl*>(self)->sink_for_next_reply();
}

void connection_impl::run() {
    if (state_ == conn_state::idle) {
        connect();
    }
}

void connection_impl::start(op_base& op) {
    op.owner_ = shared_from_this();
    if (state_ == conn_state::closed) {
        op.state_ = op_base::state::done;
        op.complete(make_error_code(error::closed), 0, true);
        return;
    }
    op.resp_->clear();
    op.replies_ = op.req_->size();
    op.received_ = 0;
    op.next_script_ = 0;
    op.retry_commands_.clear();
    op.retrying_ = false;
    if (op.replies_ == 0) {
        op.state_ = op_base::state::done;
        op.complete({}, 0, true);
        return;
    }
    if (cfg_.request_timeout.count() > 0) {
        op.deadline_ = clock::now() + cfg_.request_timeout;
        op.has_deadline_ = true;
        arm_timeout(op.deadline_);
    }
    op.state_ = op_base::state::queued;
    pending_.push_back(op);
    if (state_ == conn_state::idle) {
        connect();
    } else if (!writing_ && !corked_ && !flush_posted_ && state_ == conn_state::ready) {
        // Write after the caller's handler returns, with every request it issues: a loop of
        // async_exec calls becomes one write, not one write and then the rest.
        flush_posted_ = true;
        net::defer(ex_, net::bind_allocator(handler_allocator<void>(flush_memory_),
                                            [self = shared_from_this()] {
                                                self->flush_posted_ = false;
                                                self->start_write();
                                            }));
    }
}

void connection_impl::start_internal(op_base& op) {
    if (state_ == conn_state::closed || op.state_ == op_base::state::queued) {
        return;
    }
    op.received_ = 0;
    op.state_ = op_base::state::queued;
    pending_.push_back(op);
    if (state_ == conn_state::idle) {
        connect();
    } else {
        start_write();
    }
}

void connection_impl::cancel(op_base& op, net::cancellation_type type) {
    if (op.state_ == op_base::state::queued) {
        pending_.erase(pending_.iterator_to(op));
        op.state_ = op_base::state::done;
        op.complete(net::error::operation_aborted, 0, true);
    } else if (op.state_ == op_base::state::awaiting &&
               (type & (net::cancellation_type::terminal | net::cancellation_type::partial)) !=
                   net::cancellation_type::none) {
        const std::size_t i = static_cast<std::size_t>(op.seq_ - ring_head_seq_);
        ring_at(i).op = nullptr;
        if (i == 0) {
            reader_.drop_current();
        }
        op.state_ = op_base::state::done;
        op.complete(net::error::operation_aborted, 0, true);
    }
}

void connection_impl::close() {
    if (state_ == conn_state::closed) {
        return;
    }
    state_ = conn_state::closed;
    ++gen_;
    boost::system::error_code ignored;
    socket_.close(ignored);
    connect_timer_.cancel();
    resolver_.cancel();
    if (sentinel_conn_) {
        sentinel_conn_->close(); // its handler, posted, finds gen_ moved on
    }
    timeout_timer_.cancel();
    health_timer_.cancel();
    writing_ = false;
    fail_everything(make_error_code(error::closed), true);
}

void connection_impl::fail_everything(boost::system::error_code why, bool post) {
    for (op_base* internal :
         {static_cast<op_base*>(&handshake_op_), static_cast<op_base*>(&ping_op_)}) {
        if (internal->is_linked()) {
            pending_.erase(pending_.iterator_to(*internal));
        }
        internal->state_ = op_base::state::idle;
    }
    while (ring_size_ > 0) {
        op_base* op = ring_at(0).op;
        ring_pop();
        if (op && !is_internal(*op)) {
            op->state_ = op_base::state::done;
            op->complete(why, 0, post);
        } else if (op) {
            op->state_ = op_base::state::idle;
        }
    }
    while (!pending_.empty()) {
        op_base& op = pending_.front();
        pending_.pop_front();
        if (is_internal(op)) {
            op.state_ = op_base::state::idle;
            continue;
        }
        op.state_ = op_base::state::done;
        op.complete(why, 0, post);
    }
}

void connection_impl::connect() {
    state_ = conn_state::connecting;
    const std::uint64_t gen = ++gen_;
    boost::system::error_code ignored;
    socket_.close(ignored);
    if (!cfg_.sentinels.empty()) {
        sentinel_round_ = sentinel_order_->snapshot();
        sentinel_next_ = 0;
        ask_sentinel(gen);
        return;
    }
    if (locator_) {
        // Answered later, not in this call stack: the answer may come from a client that
        // completes at once.
        locator_([self = shared_from_this(), gen](boost::system::error_code ec, host_port where) {
            net::post(self->ex_, [self, gen, ec, where = std::move(where)] {
                self->on_located(ec, where, gen);
            });
        });
        return;
    }
    connect_to(cfg_.host, cfg_.port, gen);
}

void connection_impl::on_located(boost::system::error_code ec, const host_port& where,
                                 std::uint64_t gen) {
    if (gen != gen_ || state_ != conn_state::connecting) {
        return;
    }
    if (!ec && (where.host.empty() || where.port == 0)) {
        ec = make_error_code(error::no_master);
    }
    if (ec) {
        fail(ec, false);
        return;
    }
    connect_to(where.host, where.port, gen);
}

void connection_impl::drop(boost::system::error_code why) {
    if (state_ == conn_state::ready || state_ == conn_state::handshaking) {
        fail(why, true);
    }
}

// Each Sentinel gets connect_timeout for connecting and answering (its own connection's
// request_timeout), then the master its own connect_timeout: a silent Sentinel is skipped,
// not waited for, and the address found is not cut short by the search.
void connection_impl::ask_sentinel(std::uint64_t gen) {
    if (sentinel_next_ >= sentinel_round_.size()) {
        fail(make_error_code(error::no_master), false);
        return;
    }
    const auto& target = sentinel_round_[sentinel_next_++];
    config sc;
    sc.host = target.host;
    sc.port = target.port;
    sc.username = cfg_.sentinel_username;
    sc.password = cfg_.sentinel_password;
    sc.connect_timeout = cfg_.connect_timeout;
    sc.request_timeout = std::max(cfg_.connect_timeout, std::chrono::milliseconds(1));
    sc.health_check_interval = std::chrono::milliseconds(0);
    sc.reconnect = false;
    // An address is two short strings: a Sentinel sending more is broken or hostile.
    sc.read_buffer_size = 4096;
    sc.max_reply_bytes = 4096;
    if (sentinel_conn_) {
        sentinel_conn_->close();
    }
    sentinel_conn_ = std::make_unique<connection>(ex_, std::move(sc));
    sentinel_req_.clear();
    sentinel_req_.push("SENTINEL", "get-master-addr-by-name", cfg_.master_name);
    ++stats_.sentinel_queries;
    // Answered later, not in the Sentinel connection's own call stack: the answer replaces it.
    sentinel_conn_->async_exec(
        sentinel_req_, sentinel_resp_,
        [self = shared_from_this(), gen](boost::system::error_code ec, std::size_t) {
            net::post(self->ex_, [self, gen, ec] { self->on_sentinel_answer(ec, gen); });
        });
}

namespace {

// The list's key in the registry of shared orders: its hosts and ports, in order.
std::string sentinel_key(const std::vector<host_port>& sentinels) {
    std::string key;
    for (const auto& s : sentinels) {
        key += s.host;
        key += ':';
        key += std::to_string(s.port);
        key += ' ';
    }
    return key;
}

bool same_sentinel(const host_port& a, const host_port& b) {
    return a.host == b.host && a.port == b.port;
}

} // namespace

std::shared_ptr<sentinel_order> sentinel_order::for_list(const std::vector<host_port>& sentinels) {
    static std::mutex mutex;
    static std::map<std::string, std::weak_ptr<sentinel_order>> orders;
    const std::lock_guard lock(mutex);
    // Lists no connection holds any more are dropped: the registry is as large as the lists
    // in use.
    std::erase_if(orders, [](const auto& entry) { return entry.second.expired(); });
    auto& slot = orders[sentinel_key(sentinels)];
    auto order = slot.lock();
    if (!order) {
        order = std::make_shared<sentinel_order>(sentinels);
        slot = order;
    }
    return order;
}

std::vector<host_port> sentinel_order::snapshot() const {
    const std::lock_guard lock(mutex_);
    return order_;
}

void sentinel_order::answered(const host_port& s) {
    const std::lock_guard lock(mutex_);
    if (const auto at = find(s); at != order_.end()) {
        std::rotate(order_.begin(), at, at + 1);
    }
}

void sentinel_order::failed(const host_port& s) {
    const std::lock_guard lock(mutex_);
    if (const auto at = find(s); at != order_.end()) {
        std::rotate(at, at + 1, order_.end());
    }
}

std::vector<host_port>::iterator sentinel_order::find(const host_port& s) {
    return std::find_if(order_.begin(), order_.end(),
                        [&](const host_port& o) { return same_sentinel(o, s); });
}

std::optional<host_port> parse_master_address(const reply& r) {
    if (!r.is_array() || r.size() != 2) {
        return std::nullopt;
    }
    const auto parts = r.elements();
    if (!parts[0].is_string() || !parts[1].is_string()) {
        return std::nullopt;
    }
    const auto h = parts[0].as_string();
    const auto p = parts[1].as_string();
    unsigned port = 0;
    const auto [end, pec] = std::from_chars(p.data(), p.data() + p.size(), port);
    if (h.empty() || h.size() > 255 || pec != std::errc() || end != p.data() + p.size() ||
        port == 0 || port > 65535) {
        return std::nullopt;
    }
    return host_port{std::string(h), static_cast<std::uint16_t>(port)};
}

void connection_impl::on_sentinel_answer(boost::system::error_code ec, std::uint64_t gen) {
    if (gen != gen_ || state_ != conn_state::connecting) {
        return;
    }
    std::optional<host_port> found;
    if (!ec && sentinel_resp_.size() == 1) {
        found = parse_master_address(sentinel_resp_.at(0));
    }
    const std::string host = found ? found->host : std::string();
    const unsigned port = found ? found->port : 0;
    sentinel_conn_->close();
    sentinel_conn_.reset();
    // The one asked moves to the front when it answered, after the others when it did not.
    const auto& asked = sentinel_round_[sentinel_next_ - 1];
    if (host.empty()) {
        sentinel_order_->failed(asked);
    } else {
        sentinel_order_->answered(asked);
    }
    if (host.empty()) {
        ask_sentinel(gen); // no answer, nil (master unknown), or not an address: the next one
        return;
    }
    connect_to(host, static_cast<std::uint16_t>(port), gen);
}

void connection_impl::connect_to(const std::string& host, std::uint16_t port, std::uint64_t gen) {
    auto self = shared_from_this();
    connect_timer_.expires_after(cfg_.connect_timeout);
    connect_timer_.async_wait([self, gen](boost::system::error_code ec) {
        if (!ec && gen == self->gen_ &&
            (self->state_ == conn_state::connecting || self->state_ == conn_state::handshaking)) {
            self->fail(make_error_code(error::connect_timeout), false);
        }
    });
    if (!tcp_) {
        socket_.async_connect(
            endpoint_, [self, gen](boost::system::error_code ec) { self->on_connected(ec, gen); });
        return;
    }
    boost::system::error_code aec;
    const auto address = net::ip::make_address(host, aec);
    if (!aec) {
        endpoint_ = net::ip::tcp::endpoint(address, port);
        socket_.async_connect(
            endpoint_, [self, gen](boost::system::error_code ec) { self->on_connected(ec, gen); });
        return;
    }
    // A name: resolved on every attempt, so that one moved to another address is followed.
    ++stats_.resolves;
    resolver_.async_resolve(
        host, std::to_string(port),
        [self, gen](boost::system::error_code ec, net::ip::tcp::resolver::results_type found) {
            if (gen != self->gen_) {
                return;
            }
            if (ec || found.empty()) {
                self->fail(ec ? ec : make_error_code(net::error::host_not_found), false);
                return;
            }
            std::vector<net::generic::stream_protocol::endpoint> endpoints;
            for (const auto& entry : found) {
                endpoints.emplace_back(entry.endpoint());
            }
            net::async_connect(self->socket_, endpoints,
                               [self, gen](boost::system::error_code cec,
                                           const net::generic::stream_protocol::endpoint& ep) {
                                   if (!cec && gen == self->gen_) {
                                       self->endpoint_ = ep;
                                   }
                                   self->on_connected(cec, gen);
                               });
        });
}

void connection_impl::on_connected(boost::system::error_code ec, std::uint64_t gen) {
    if (gen != gen_) {
        return;
    }
    if (ec) {
        fail(ec, false);
        return;
    }
    if (tcp_) {
        boost::system::error_code ignored;
        socket_.set_option(net::ip::tcp::no_delay(true), ignored);
    }
    reset_reader();
    last_activity_ = clock::now();
    libraries_.clear(); // a new connection may reach another server (a failover, a restart)
    start_read();

    auto& hs = handshake_op_.req;
    hs.clear();
    if (!cfg_.username.empty()) {
        hs.push("AUTH", cfg_.username, cfg_.password);
    } else if (!cfg_.password.empty()) {
        hs.push("AUTH", cfg_.password);
    }
    if (cfg_.database != 0) {
        hs.push("SELECT", cfg_.database);
    }
    if (!cfg_.client_name.empty()) {
        hs.push("CLIENT", "SETNAME", cfg_.client_name);
    }
    if (!cfg_.sentinels.empty()) {
        role_reply_ = hs.size();
        hs.push("ROLE");
    }
    if (hs.empty()) {
        state_ = conn_state::handshaking;
        complete_handshake();
        return;
    }
    state_ = conn_state::handshaking;
    handshake_op_.req_ = &hs;
    handshake_op_.resp_ = &handshake_op_.resp;
    handshake_op_.resp.clear();
    handshake_op_.replies_ = hs.size();
    handshake_op_.received_ = 0;
    handshake_op_.state_ = op_base::state::queued;
    pending_.push_front(handshake_op_);
    start_write();
}

void connection_impl::complete_handshake() {
    if (state_ != conn_state::handshaking) {
        return;
    }
    if (handshake_op_.resp.has_error()) {
        fail(make_error_code(error::handshake_failed), false);
        return;
    }
    if (!cfg_.sentinels.empty()) {
        // What the Sentinel said may be stale (a failover under way, an old master back as
        // a replica): only the server itself says whether it takes writes.
        const reply role = handshake_op_.resp.at(role_reply_);
        if (!role.is_array() || role.size() == 0 || !role.elements()[0].is_string() ||
            role.elements()[0].as_string() != "master") {
            fail(make_error_code(error::not_master), false);
            return;
        }
    }
    state_ = conn_state::ready;
    connect_timer_.cancel();
    backoff_attempt_ = 0;
    ++stats_.connects;
    arm_health();
    if (push_handler_) {
        push_handler_->on_ready();
    }
    start_write();
}

void connection_impl::start_read() {
    auto self = shared_from_this();
    const std::uint64_t gen = gen_;
    socket_.async_read_some(
        net::buffer(read_buffer_.get(), cfg_.read_buffer_size),
        net::bind_allocator(handler_allocator<void>(read_memory_),
                            [self, gen](boost::system::error_code ec, std::size_t n) {
                                self->on_read(ec, n, gen);
                            }));
}

void connection_impl::on_read(boost::system::error_code ec, std::size_t n, std::uint64_t gen) {
    if (gen != gen_) {
        return;
    }
    if (ec) {
        fail(ec, true);
        return;
    }
    last_activity_ = clock::now();
    ping_outstanding_ = false;
    if (!reader_.feed(read_buffer_.get(), n)) {
        fail(make_error_code(error::protocol_error), true);
        return;
    }
    // Requests issued by the handlers completed here go out together, in one write after
    // the loop (corked), not one write per completion.
    corked_ = true;
    for (;;) {
        const auto got = reader_.next();
        if (got == reply_reader::result::protocol_error) {
            corked_ = false;
            fail(make_error_code(error::protocol_error), true);
            return;
        }
        if (got == reply_reader::result::incomplete) {
            break;
        }
        on_reply();
        if (gen != gen_) {
            corked_ = false;
            return; // a handler closed the connection, or the reply failed it
        }
    }
    corked_ = false;
    start_write();
    start_read();
}

response* connection_impl::sink_for_next_reply() {
    if (ring_size_ > 0) {
        op_base* op = ring_at(0).op;
        return op ? op->resp_ : nullptr;
    }
    if (push_handler_) {
        push_response_.clear();
        return &push_response_;
    }
    return nullptr;
}

void connection_impl::on_reply() {
    if (ring_size_ == 0) {
        if (push_handler_) {
            push_handler_->on_push(push_response_);
        }
        return;
    }
    record& r = ring_at(0);
    op_base* op = r.op;
    const bool last = --r.remaining == 0;
    if (op) {
        response& resp = *op->resp_;
        if (!op->retrying_) {
            const std::size_t command = op->received_;
            const auto& calls = op->req_->script_calls();
            if (op->next_script_ < calls.size() && calls[op->next_script_].command == command) {
                const auto& call = calls[op->next_script_];
                ++op->next_script_;
                const auto& root = resp.nodes_[resp.roots_.back()];
                if (root.type == reply_type::error) {
                    const auto text = std::string_view(resp.data_).substr(root.offset, root.length);
                    if (call.script && text.starts_with("NOSCRIPT")) {
                        op->retry_commands_.push_back(command);
                    } else if (call.library && text.starts_with("ERR Function not found")) {
                        op->retry_commands_.push_back(command);
                        forget_library(call.library, op->seq_);
                    }
                }
            }
        } else {
            const std::size_t command = op->retry_commands_[op->received_];
            resp.roots_[command] = resp.roots_.back();
            resp.roots_.pop_back();
        }
        ++op->received_;
    }
    if (last) {
        ring_pop();
        if (op) {
            finish_op(*op);
        }
    }
}

void connection_impl::finish_op(op_base& op) {
    if (!op.retrying_ && !op.retry_commands_.empty()) {
        // Resend each EVALSHA answered NOSCRIPT as EVAL <body>, with the same arguments, and
        // each FCALL answered "Function not found" as it was (start_write loads the library
        // ahead of it).
        op.retry_payload_.clear();
        const auto payload = op.req_->payload();
        for (std::size_t command : op.retry_commands_) {
            const auto& calls = op.req_->script_calls();
            const auto& call = *std::find_if(calls.begin(), calls.end(),
                                             [&](const auto& c) { return c.command == command; });
            if (call.library) {
                op.retry_payload_.append(payload.substr(call.begin, call.end - call.begin));
                ++stats_.function_retries;
                continue;
            }
            ++stats_.noscript_retries;
            const auto header_end = payload.find("\r\n", call.begin) + 2;
            op.retry_payload_.append(payload.substr(call.begin, header_end - call.begin));
            op.retry_payload_.append("$4\r\nEVAL\r\n$");
            op.retry_payload_.append(std::to_string(call.script->body().size()));
            op.retry_payload_.append("\r\n");
            op.retry_payload_.append(call.script->body());
            op.retry_payload_.append("\r\n");
            op.retry_payload_.append(payload.substr(call.rest, call.end - call.rest));
        }
        op.retrying_ = true;
        op.replies_ = op.retry_commands_.size();
        op.received_ = 0;
        op.state_ = op_base::state::queued;
        pending_.push_back(op);
        start_write();
        return;
    }
    op.state_ = is_internal(op) ? op_base::state::idle : op_base::state::done;
    op.complete({}, op.req_->size(), false);
}

void connection_impl::start_write() {
    if (writing_ || corked_ || pending_.empty() ||
        (state_ != conn_state::ready && state_ != conn_state::handshaking)) {
        return;
    }
    write_buffer_.clear();
    while (!pending_.empty()) {
        op_base& op = pending_.front();
        if (state_ == conn_state::handshaking && !op.handshake_) {
            break;
        }
        pending_.pop_front();
        load_libraries(op);
        const std::string_view payload = op.retrying_ ? op.retry_payload_ : op.req_->payload();
        write_buffer_.append(payload.data(), payload.size());
        ++stats_.requests_written;
        op.received_ = 0;
        if (op.replies_ > 0) {
            op.state_ = op_base::state::awaiting;
            op.seq_ = ring_head_seq_ + ring_size_;
            ring_push(&op, op.replies_);
        } else {
            op.state_ = op_base::state::idle; // the connection's own fire-and-forget commands
        }
    }
    if (write_buffer_.empty()) {
        return;
    }
    writing_ = true;
    ++stats_.writes;
    auto self = shared_from_this();
    const std::uint64_t gen = gen_;
    net::async_write(socket_, net::buffer(write_buffer_),
                     net::bind_allocator(handler_allocator<void>(write_memory_),
                                         [self, gen](boost::system::error_code ec, std::size_t) {
                                             self->on_written(ec, gen);
                                         }));
}

void connection_impl::on_written(boost::system::error_code ec, std::uint64_t gen) {
    if (gen != gen_) {
        return;
    }
    writing_ = false;
    if (ec) {
        fail(ec, true);
        return;
    }
    if (write_buffer_.capacity() > (std::size_t{4} << 20)) {
        std::string().swap(write_buffer_); // don't keep a large value's copy
    }
    start_write();
}

void connection_impl::fail(boost::system::error_code why, bool) {
    if (state_ == conn_state::closed || state_ == conn_state::backoff ||
        state_ == conn_state::idle) {
        return;
    }
    last_error_ = why;
    if (state_ == conn_state::ready) {
        ++stats_.disconnects;
    } else {
        ++stats_.connect_failures;
    }
    ++gen_;
    boost::system::error_code ignored;
    socket_.close(ignored);
    connect_timer_.cancel();
    resolver_.cancel();
    if (sentinel_conn_) {
        sentinel_conn_->close();
    }
    writing_ = false;
    ping_outstanding_ = false;
    reader_.forget();
    state_ = cfg_.reconnect ? conn_state::backoff : conn_state::closed;
    if (state_ == conn_state::closed) {
        timeout_timer_.cancel();
        health_timer_.cancel();
        fail_everything(make_error_code(error::closed), false);
        return;
    }
    // Written requests fail; requests not yet written wait for the next connection.
    for (op_base* internal :
         {static_cast<op_base*>(&handshake_op_), static_cast<op_base*>(&ping_op_)}) {
        if (internal->is_linked()) {
            pending_.erase(pending_.iterator_to(*internal));
        }
        internal->state_ = op_base::state::idle;
    }
    const std::uint64_t gen = gen_;
    while (ring_size_ > 0) {
        op_base* op = ring_at(0).op;
        ring_pop();
        if (!op) {
            continue;
        }
        if (is_internal(*op)) {
            op->state_ = op_base::state::idle;
            continue;
        }
        op->state_ = op_base::state::done;
        op->complete(make_error_code(error::connection_lost), 0, false);
    }
    if (gen == gen_ && state_ == conn_state::backoff) {
        schedule_reconnect();
    }
}

void connection_impl::schedule_reconnect() {
    using std::chrono::milliseconds;
    const auto cap = std::max(cfg_.reconnect_max_delay, cfg_.reconnect_min_delay);
    milliseconds delay = cfg_.reconnect_min_delay;
    for (unsigned i = 0; i < backoff_attempt_ && delay < cap; ++i) {
        delay *= 2;
    }
    delay = std::min(delay, cap);
    ++backoff_attempt_;
    std::uniform_int_distribution<long long> pick(delay.count() / 2, delay.count());
    connect_timer_.expires_after(milliseconds(pick(jitter_)));
    auto self = shared_from_this();
    const std::uint64_t gen = gen_;
    connect_timer_.async_wait([self, gen](boost::system::error_code ec) {
        if (!ec && gen == self->gen_ && self->state_ == conn_state::backoff) {
            self->connect();
        }
    });
}

void connection_impl::arm_timeout(clock::time_point deadline) {
    if (timeout_armed_ && timeout_expiry_ <= deadline) {
        return;
    }
    timeout_armed_ = true;
    timeout_expiry_ = deadline;
    timeout_timer_.expires_at(deadline);
    auto self = shared_from_this();
    timeout_timer_.async_wait([self](boost::system::error_code ec) { self->on_timeout(ec); });
}

void connection_impl::on_timeout(boost::system::error_code ec) {
    if (ec || state_ == conn_state::closed) {
        return;
    }
    timeout_armed_ = false;
    const auto now = clock::now();
    const auto error_code = make_error_code(error::request_timeout);
    // Written requests: the connection is closed under them. Keeping the request's place
    // and dropping its reply when it comes is right only for a server that answers every
    // command in order; one that skipped a reply would shift every later reply onto the
    // wrong request, where a reply of the same shape passes for another's. The timed-out
    // requests fail with request_timeout, the others written with connection_lost (as after
    // any loss), and the requests not yet written go out on the next connection.
    bool written_timed_out = false;
    for (std::size_t i = 0; i < ring_size_; ++i) {
        op_base* op = ring_at(i).op;
        if (!op || !op->has_deadline_) {
            continue;
        }
        if (op->deadline_ > now) {
            break;
        }
        ring_at(i).op = nullptr;
        written_timed_out = true;
        op->state_ = op_base::state::done;
        op->complete(error_code, 0, false);
        if (state_ == conn_state::closed) {
            return;
        }
    }
    if (written_timed_out) {
        ++stats_.timeout_disconnects;
        fail(error_code, false);
        if (state_ == conn_state::closed) {
            return;
        }
    }
    // Requests not yet written: never sent.
    for (bool again = true; again;) {
        again = false;
        for (auto& op : pending_) {
            if (!op.has_deadline_) {
                continue;
            }
            if (op.deadline_ <= now) {
                pending_.erase(pending_.iterator_to(op));
                op.state_ = op_base::state::done;
                op.complete(error_code, 0, false);
                if (state_ == conn_state::closed) {
                    return;
                }
                again = true;
            }
            break;
        }
    }
    // Re-arm for the oldest request left.
    for (std::size_t i = 0; i < ring_size_; ++i) {
        if (op_base* op = ring_at(i).op; op && op->has_deadline_) {
            arm_timeout(op->deadline_);
            break;
        }
    }
    for (auto& op : pending_) {
        if (op.has_deadline_) {
            arm_timeout(op.deadline_);
            break;
        }
    }
}

void connection_impl::arm_health() {
    if (cfg_.health_check_interval.count() == 0 || health_armed_) {
        return;
    }
    health_armed_ = true;
    health_timer_.expires_at(last_activity_ + cfg_.health_check_interval);
    auto self = shared_from_this();
    const std::uint64_t gen = gen_;
    health_timer_.async_wait(
        [self, gen](boost::system::error_code ec) { self->on_health(ec, gen); });
}

void connection_impl::on_health(boost::system::error_code ec, std::uint64_t) {
    health_armed_ = false;
    if (ec || state_ != conn_state::ready) {
        return;
    }
    const auto now = clock::now();
    if (now - last_activity_ < cfg_.health_check_interval) {
        arm_health();
        return;
    }
    if (ping_outstanding_) {
        fail(make_error_code(error::connection_lost), true); // nothing since the PING
        return;
    }
    if (ping_op_.state_ == op_base::state::idle) {
        ping_op_.req_ = &ping_op_.req;
        ping_op_.resp_ = &ping_op_.resp;
        ping_op_.resp.clear();
        ping_op_.replies_ = push_handler_ ? 0 : 1; // subscribed: the answer is a push
        start_internal(ping_op_);
        ++stats_.health_pings;
    }
    ping_outstanding_ = true;
    health_armed_ = true;
    health_timer_.expires_at(now + cfg_.health_check_interval);
    auto self = shared_from_this();
    health_timer_.async_wait([self](boost::system::error_code e) { self->on_health(e, 0); });
}

void connection_impl::ring_push(op_base* op, std::size_t replies) {
    if (ring_size_ == ring_.size()) {
        std::vector<record> bigger(std::max<std::size_t>(16, ring_.size() * 2));
        for (std::size_t i = 0; i < ring_size_; ++i) {
            bigger[i] = ring_at(i);
        }
        ring_.swap(bigger);
        ring_head_ = 0;
    }
    ring_at(ring_size_) = {op, replies};
    ++ring_size_;
}

void connection_impl::load_libraries(const op_base& op) {
    for (const auto& call : op.req_->script_calls()) {
        if (!call.library || std::any_of(libraries_.begin(), libraries_.end(),
                                         [&](const auto& l) { return l.first == call.library; })) {
            continue;
        }
        // Ahead of the op in the same write: the connection's commands run in order, so
        // every FCALL behind it finds the library. Its reply is dropped: "already exists"
        // (another connection, or another program of the same version, loaded it) is the
        // common answer, and a real failure (no FUNCTION before Redis 7.0, OOM, a Lua error)
        // shows in the FCALL's own reply, "Function not found" or "unknown command".
        const auto& body = call.library->body();
        write_buffer_.append("*3\r\n$8\r\nFUNCTION\r\n$4\r\nLOAD\r\n$");
        write_buffer_.append(std::to_string(body.size()));
        write_buffer_.append("\r\n");
        write_buffer_.append(body);
        write_buffer_.append("\r\n");
        libraries_.emplace_back(call.library, ring_head_seq_ + ring_size_);
        ring_push(nullptr, 1);
        ++stats_.function_loads;
    }
}

void connection_impl::forget_library(const redis::library* lib, std::uint64_t seq) {
    const auto it = std::find_if(libraries_.begin(), libraries_.end(),
                                 [&](const auto& l) { return l.first == lib; });
    if (it != libraries_.end() && it->second < seq) {
        libraries_.erase(it);
    }
}

void connection_impl::ring_pop() noexcept {
    ring_head_ = (ring_head_ + 1) & (ring_.size() - 1);
    --ring_size_;
    ++ring_head_seq_;
}

} // namespace timewheel::redis::detail
