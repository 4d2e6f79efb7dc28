//
// src/redis/cluster.cpp
//
// The Cluster client's requests and refreshes, as coroutines on the cluster's executor. A
// request is run in rounds: its unfinished commands are grouped per master and sent, one
// pipeline per master, all masters at once; the replies that are redirections (MOVED, ASK) or
// asks to wait (TRYAGAIN, CLUSTERDOWN) put their command back for the next round; the others
// are final. The final replies are then put together in the caller's order.
//

#include <timewheel/redis/cluster.hpp>

// GCC 12 at -O1 sees Asio's coroutine frames, allocated with aligned_alloc and released with
// the frame's own operator delete (which calls free), as a mismatch: a false positive.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
#endif

#include <timewheel/redis/detail/cluster_command_keys.hpp>
#include <timewheel/redis/detail/cluster_commands.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/deferred.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/error.hpp>
#include <boost/asio/experimental/parallel_group.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <algorithm>
#include <charconv>
#include <exception>
#include <functional>
#include <span>
#include <tuple>
#include <unordered_set>

namespace timewheel::redis {

namespace {

class cluster_category_impl : public boost::system::error_category {
public:
    char const* name() const noexcept override { return "timewheel.redis.cluster"; }

    std::string message(int ev) const override {
        switch (static_cast<cluster_error>(ev)) {
        case cluster_error::cross_slot:
            return "the keys of a command hash to different Cluster slots (nothing was sent; "
                   "give the keys a common hash tag, e.g. {tag}key)";
        case cluster_error::too_many_redirections:
            return "a command was redirected (MOVED/ASK) more times than "
                   "cluster_config::max_redirections allows";
        case cluster_error::no_slot_map:
            return "no Cluster node answered CLUSTER SLOTS with a slot map";
        case cluster_error::too_many_nodes:
            return "a MOVED or ASK named a new node, or a slot map more masters, than "
                   "cluster_config::max_nodes allows";
        }
        return "unknown timewheel.redis.cluster error";
    }
};

} // namespace

boost::system::error_category const& cluster_category() noexcept {
    static cluster_category_impl const category;
    return category;
}

namespace detail {

namespace net = boost::asio;
using boost::system::error_code;

namespace {

constexpr auto use_tuple = net::as_tuple(net::use_awaitable);

// WAIT and WAITAOF count the replicas that acknowledged the writes of the connection they
// run on: they belong with the command before them (see cluster.hpp, "WAIT").
bool follows_its_write(std::vector<std::string_view> const& args) {
    auto const is = [](std::string_view a, std::string_view b) {
        return a.size() == b.size() &&
               std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
                   return (x >= 'a' && x <= 'z' ? static_cast<char>(x - 'a' + 'A') : x) == y;
               });
    };
    return !args.empty() && (is(args[0], "WAIT") || is(args[0], "WAITAOF"));
}

// The first error of a round of requests, cancellation first: a cancelled request reports
// operation_aborted rather than whatever its siblings saw.
error_code first_error(std::vector<error_code> const& errors) {
    error_code first;
    for (auto const& ec : errors) {
        if (ec == net::error::operation_aborted)
            return ec;
        if (ec && !first)
            first = ec;
    }
    return first;
}

} // namespace

// CLUSTER SLOTS: [[first, last, [host, port, id...], replicas...], ...]. What a node sends
// is not trusted: at most one entry a slot (a longer reply is refused before it is walked,
// and the walk is linear: reply::operator[] is not), each slot once, a host name of at most
// 255 bytes.
bool parse_cluster_slots(reply const& r, std::string_view asked_host,
                         std::vector<cluster_slot_range>& out) {
    out.clear();
    if (!r.is_array() || r.size() > hash_slot_count)
        return false;
    std::vector<bool> seen(hash_slot_count);
    for (auto const& entry : r.elements()) {
        if (!entry.is_array() || entry.size() < 3)
            return false;
        auto const fields = entry.elements();
        auto const first = fields[0], last = fields[1], master = fields[2];
        if (!first.is_integer() || !last.is_integer() || !master.is_array() || master.size() < 2)
            return false;
        auto const address = master.elements();
        if (!address[0].is_string() || !address[1].is_integer())
            return false;
        auto const lo = first.as_integer(), hi = last.as_integer(), port = address[1].as_integer();
        if (lo < 0 || hi < lo || hi >= hash_slot_count || port <= 0 || port > 65535)
            return false;
        auto const name = address[0].as_string();
        if (name.size() > 255)
            return false;
        for (auto s = lo; s <= hi; ++s) {
            if (seen[static_cast<std::size_t>(s)])
                return false; // a slot served twice: no map at all rather than a guess
            seen[static_cast<std::size_t>(s)] = true;
        }
        std::string host(name);
        if (host.empty() || host == "?")
            host = asked_host; // the node does not know its own address: the one we used
        out.push_back({static_cast<std::uint16_t>(lo),
                       static_cast<std::uint16_t>(hi),
                       {std::move(host), static_cast<std::uint16_t>(port)}});
    }
    return !out.empty();
}

struct cluster_impl::command_state {
    cluster_command command;
    script const* script_ = nullptr;   // EVALSHA's, for EVAL after NOSCRIPT
    library const* library_ = nullptr; // FCALL's, loaded by the node's connection
    std::uint16_t node = 0;
    std::uint16_t slot = 0; // a keyed command's
    bool keyed = false;
    bool asking = false;
    bool done = false;
    std::size_t redirections = 0;
    std::size_t retries = 0;
    // A WAIT's: the command it follows (the one before it), or none.
    std::optional<std::size_t> leader;
    response const* reply_in = nullptr; // where the final reply is
    std::size_t reply_at = 0;
};

// One master's share of a round.
struct cluster_impl::attempt {
    std::uint16_t node = 0;
    std::string host;                  // the node's, kept: a refresh may forget the node meanwhile
    std::vector<std::size_t> commands; // indices into the request
    request req;
    response resp;
};

cluster_impl::cluster_impl(executor_type const& ex, cluster_config cfg)
    : executor_(ex)
    , config_(std::move(cfg))
    , refresh_timer_(ex) {
    // The seeds are the first nodes, so that the first map can be asked of them; they are
    // never forgotten, and max_nodes counts the nodes beyond them.
    map_.node_index({config_.node.host, config_.node.port});
    for (auto const& [host, port] : config_.seeds)
        map_.node_index({host, port});
    seed_count_ = map_.nodes().size();
    map_.set_limit(seed_count_ + std::min(config_.max_nodes, cluster_slot_map::max_limit));
}

cluster_impl::~cluster_impl() {
    close();
}

std::size_t cluster_impl::master_count() const noexcept {
    return masters_.size();
}

void cluster_impl::close() {
    closed_ = true;
    refresh_timer_.cancel();
    for (auto& c : connections_)
        if (c)
            c->close();
}

config cluster_impl::node_config(std::uint16_t node) const {
    config cfg = config_.node;
    cfg.unix_socket.clear();
    cfg.host = map_.nodes()[node].host;
    cfg.port = map_.nodes()[node].port;
    return cfg;
}

std::shared_ptr<connection> cluster_impl::connection_to(std::uint16_t node) {
    if (connections_.size() < map_.nodes().size())
        connections_.resize(map_.nodes().size());
    auto& c = connections_[node];
    if (!c)
        c = std::make_shared<connection>(executor_, node_config(node));
    return c;
}

// Takes a slot map for the client's: refused (too_many_nodes) when it names more masters
// than max_nodes allows besides the seeds; otherwise the nodes it does not name, which serve
// no slot now, are forgotten first (their connections close once the requests holding them
// are done), so that the map always fits.
cluster_impl::error_code_type cluster_impl::use_map(std::vector<cluster_slot_range> const& ranges) {
    auto const name = [](cluster_address const& a) {
        return a.host + ':' + std::to_string(a.port);
    };
    std::unordered_set<std::string> named;
    for (auto const& r : ranges)
        named.insert(name(r.master));
    std::size_t beyond_seeds = named.size();
    for (std::size_t n = 0; n < seed_count_; ++n)
        if (named.count(name(map_.nodes()[n])) != 0)
            --beyond_seeds;
    if (beyond_seeds > map_.limit() - seed_count_)
        return cluster_error::too_many_nodes;
    for (std::size_t n = seed_count_; n < map_.nodes().size(); ++n) {
        auto const node = static_cast<std::uint16_t>(n);
        if (!map_.live(node) || named.count(name(map_.nodes()[n])) != 0)
            continue;
        map_.forget(node);
        if (n < connections_.size())
            connections_[n].reset();
        ++stats_.forgotten;
    }
    map_.assign(ranges);
    masters_.clear();
    for (auto const& r : ranges) {
        auto const m = map_.node_index(r.master);
        if (std::find(masters_.begin(), masters_.end(), m) == masters_.end())
            masters_.push_back(m);
    }
    return {};
}

std::uint16_t cluster_impl::any_master() {
    if (masters_.empty())
        return 0;
    return masters_[next_master_++ % masters_.size()];
}

net::awaitable<error_code> cluster_impl::refresh() {
    last_refresh_ = std::chrono::steady_clock::now();
    // Ask the masters of the last map first, then every other node known (the seeds).
    std::vector<std::uint16_t> order = masters_;
    for (std::uint16_t n = 0; n < map_.nodes().size(); ++n)
        if (std::find(order.begin(), order.end(), n) == order.end())
            order.push_back(n);
    // A node whose connection is down (a master killed) last: each waits its connect timeout,
    // and a live one knows who took over its slots.
    std::stable_partition(order.begin(), order.end(), [this](std::uint16_t n) {
        if (!map_.live(n))
            return false;
        return n >= connections_.size() || !connections_[n] || connections_[n]->is_connected();
    });

    request req;
    req.push("CLUSTER", "SLOTS");
    response resp;
    std::vector<cluster_slot_range> ranges;
    net::steady_timer timer(executor_);
    error_code why = cluster_error::no_slot_map;
    for (auto const node : order) {
        if (closed_)
            co_return error::closed;
        if (!map_.live(node))
            continue; // forgotten by another refresh meanwhile
        auto const conn = connection_to(node);
        auto const host = map_.nodes()[node].host;
        // A node that is down would keep the request queued while its connection retries:
        // give each node the connect timeout, then ask the next.
        timer.expires_after(config_.node.connect_timeout);
        auto [order_done, exec_ec, n, timer_ec] =
            co_await net::experimental::make_parallel_group(
                conn->async_exec(req, resp, net::deferred), timer.async_wait(net::deferred))
                .async_wait(net::experimental::wait_for_one(), net::use_awaitable);
        (void)n;
        (void)timer_ec;
        if (exec_ec == net::error::operation_aborted && order_done[0] == 0)
            co_return exec_ec; // cancelled by our caller, not by the timer
        auto const& cs = co_await net::this_coro::cancellation_state;
        if (cs.cancelled() != net::cancellation_type::none)
            co_return net::error::operation_aborted;
        if (exec_ec || resp.size() != 1)
            continue;
        if (!detail::parse_cluster_slots(resp[0], host, ranges))
            continue;
        if (auto ec = use_map(ranges)) {
            why = ec; // another node may know a map that fits
            continue;
        }
        ++stats_.refreshes;
        co_return error_code{};
    }
    co_return why;
}

void cluster_impl::refresh_in_background(std::shared_ptr<cluster_impl> const& self) {
    if (refreshing_ || closed_)
        return;
    // At most one refresh per refresh_interval: one too early waits for its turn, so that the
    // map is always refreshed after the last of a burst of MOVED.
    refreshing_ = true;
    refresh_timer_.expires_at(last_refresh_ + config_.refresh_interval);
    net::co_spawn(
        executor_,
        [self]() -> net::awaitable<void> {
            auto [ec] = co_await self->refresh_timer_.async_wait(use_tuple);
            if (!ec && !self->closed_)
                co_await self->refresh();
            self->refreshing_ = false;
        },
        net::detached);
}

net::awaitable<cluster_impl::exec_result> cluster_impl::exec(std::shared_ptr<cluster_impl> self,
                                                             request const* req, response* resp,
                                                             std::optional<std::string> key) {
    co_await net::this_coro::throw_if_cancelled(false);
    error_code ec;
    try {
        ec = co_await self->run(*req, *resp, key);
    } catch (boost::system::system_error const& e) {
        ec = e.code();
    }
    if (ec)
        resp->clear();
    co_return exec_result{ec, resp->size()};
}

net::awaitable<std::tuple<error_code>>
cluster_impl::refresh_op(std::shared_ptr<cluster_impl> self) {
    co_await net::this_coro::throw_if_cancelled(false);
    co_return std::tuple<error_code>{co_await self->refresh()};
}

net::awaitable<std::tuple<error_code, config>>
cluster_impl::node_config_op(std::shared_ptr<cluster_impl> self, std::uint16_t slot) {
    co_await net::this_coro::throw_if_cancelled(false);
    if (self->masters_.empty() || self->map_.owner(slot) == cluster_slot_map::unknown) {
        if (auto ec = co_await self->refresh())
            co_return std::tuple<error_code, config>{ec, config{}};
    }
    auto const owner = self->map_.owner(slot);
    if (owner == cluster_slot_map::unknown)
        co_return std::tuple<error_code, config>{cluster_error::no_slot_map, config{}};
    co_return std::tuple<error_code, config>{error_code{}, self->node_config(owner)};
}

net::awaitable<error_code> cluster_impl::run(request const& req, response& resp,
                                             std::optional<std::string> const& key) {
    resp.clear();
    if (closed_)
        co_return error::closed;
    if (req.empty())
        co_return error_code{};

    // The commands, read back from the request's RESP bytes, and where each goes.
    std::vector<command_state> commands(req.size());
    std::size_t pos = 0;
    for (auto& c : commands) {
        if (!read_command(req.payload(), pos, c.command))
            co_return net::error::invalid_argument;
        pos = c.command.end;
    }
    for (auto const& call : req.script_calls()) {
        commands[call.command].script_ = call.script;
        commands[call.command].library_ = call.library;
    }

    if (masters_.empty()) {
        if (auto ec = co_await refresh())
            co_return ec;
    }

    std::optional<std::uint16_t> pipeline_node; // where keyless commands go
    std::vector<bool> keyless(commands.size());
    for (std::size_t i = 0; i < commands.size(); ++i) {
        auto& c = commands[i];
        command_route route;
        if (key) {
            route.kind = command_route::keyed;
            route.slot = key_slot(*key);
        } else {
            route = route_command(std::span<std::string_view const>(c.command.args));
        }
        if (route.kind == command_route::cross_slot)
            co_return cluster_error::cross_slot;
        if (route.kind != command_route::keyed) {
            keyless[i] = true; // malformed ones too: the server's error reply says why
            continue;
        }
        c.keyed = true;
        c.slot = route.slot;
        auto const owner = map_.owner(route.slot);
        c.node = owner == cluster_slot_map::unknown ? any_master() : owner;
        if (!pipeline_node)
            pipeline_node = c.node;
    }
    if (!pipeline_node)
        pipeline_node = any_master();
    for (std::size_t i = 0; i < commands.size(); ++i) {
        auto& c = commands[i];
        if (keyless[i])
            c.node = *pipeline_node;
        // A WAIT goes to the master of the command before it, in the same pipeline, right
        // after it (the grouping below keeps the request's order).
        if (i > 0 && follows_its_write(c.command.args)) {
            c.leader = i - 1;
            c.node = commands[i - 1].node;
        }
    }

    std::vector<std::unique_ptr<attempt>> attempts; // every round's, alive until the end
    std::chrono::milliseconds delay = config_.retry_min_delay;
    for (bool first_round = true;; first_round = false) {
        // Group the unfinished commands per master, in request order.
        std::vector<attempt*> round;
        for (std::size_t i = 0; i < commands.size(); ++i) {
            auto& c = commands[i];
            if (c.done)
                continue;
            // The node may have been forgotten by a refresh since (its index free, or given
            // to another node): a keyed command goes where the map says now.
            if (!c.asking && c.keyed && map_.owner(c.slot) != cluster_slot_map::unknown)
                c.node = map_.owner(c.slot);
            if (!map_.live(c.node)) {
                c.node = any_master();
                c.asking = false;
            }
            // A WAIT goes where its command goes in this round (routed just before it: the
            // commands are taken in the request's order), not where it went last time.
            if (c.leader)
                c.node = commands[*c.leader].node;
            auto it = std::find_if(round.begin(), round.end(),
                                   [&](attempt* a) { return a->node == c.node; });
            if (it == round.end()) {
                attempts.push_back(std::make_unique<attempt>());
                attempts.back()->node = c.node;
                attempts.back()->host = map_.nodes()[c.node].host;
                round.push_back(attempts.back().get());
                it = round.end() - 1;
            }
            (*it)->commands.push_back(i);
        }
        if (first_round && round.size() > 1)
            ++stats_.split;

        // The common case, one master and no redirection: the caller's request as it is.
        bool const whole = first_round && round.size() == 1;
        if (!whole) {
            for (auto* a : round) {
                for (auto const i : a->commands) {
                    auto const& c = commands[i];
                    if (c.asking)
                        a->req.push("ASKING");
                    auto const args = std::span(c.command.args);
                    std::size_t nkeys = 0;
                    bool const script_call =
                        (c.script_ != nullptr || c.library_ != nullptr) && args.size() >= 3 &&
                        std::from_chars(args[2].data(), args[2].data() + args[2].size(), nkeys)
                                .ec == std::errc{} &&
                        nkeys <= args.size() - 3;
                    if (script_call && c.script_) // keeps the script, for EVAL after NOSCRIPT
                        a->req.push_script_range(*c.script_, args.subspan(3, nkeys),
                                                 args.subspan(3 + nkeys));
                    else if (script_call) // keeps the library, loaded ahead of the call
                        a->req.push_fcall_range(*c.library_, args[1], args.subspan(3, nkeys),
                                                args.subspan(3 + nkeys));
                    else // as given; a bad numkeys gets the server's error
                        a->req.push_range(args[0], args.subspan(1));
                }
            }
        }

        std::vector<error_code> errors;
        if (round.size() == 1) {
            auto* a = round[0];
            auto const conn = connection_to(a->node);
            auto [ec, n] =
                co_await conn->async_exec(whole ? req : a->req, whole ? resp : a->resp, use_tuple);
            (void)n;
            errors.push_back(ec);
        } else {
            using op_type = decltype(std::declval<connection&>().async_exec(
                std::declval<request const&>(), std::declval<response&>(), net::deferred));
            std::vector<op_type> ops;
            std::vector<std::shared_ptr<connection>> held;
            for (auto* a : round) {
                held.push_back(connection_to(a->node));
                ops.push_back(held.back()->async_exec(a->req, a->resp, net::deferred));
            }
            auto [order, ecs, ns] =
                co_await net::experimental::make_parallel_group(std::move(ops))
                    .async_wait(net::experimental::wait_for_all(), net::use_awaitable);
            (void)order;
            (void)ns;
            errors = std::move(ecs);
        }
        if (auto ec = first_error(errors)) {
            // A master that does not answer may be dead, its replica promoted by now: only a
            // new map tells, and no MOVED comes from a dead node. Without this refresh every
            // request for its slots would go on failing against the old address.
            if (ec != error::closed && ec != net::error::operation_aborted)
                refresh_in_background(shared_from_this());
            co_return ec;
        }

        // Sort the replies into final ones and commands to send again.
        bool wait = false;
        for (auto* a : round) {
            response const& got = whole ? resp : a->resp;
            std::size_t at = 0;
            for (auto const i : a->commands) {
                auto& c = commands[i];
                if (c.asking)
                    ++at; // ASKING's own OK
                c.asking = false;
                auto const r = got[at];
                if (r.is_error()) {
                    auto const message = r.error_message();
                    if (auto redirect = parse_redirection(message)) {
                        if (++c.redirections > config_.max_redirections)
                            co_return cluster_error::too_many_redirections;
                        if (redirect->target.host.empty())
                            redirect->target.host = a->host;
                        // A node beyond max_nodes fails the request: a hostile or broken
                        // node naming ever-new addresses must not grow the client.
                        std::uint16_t target = cluster_slot_map::unknown;
                        if (redirect->kind == cluster_redirection::moved) {
                            ++stats_.moved;
                            target = map_.set_owner(redirect->slot, redirect->target);
                            refresh_in_background(shared_from_this());
                        } else {
                            ++stats_.ask;
                            target = map_.node_index(redirect->target);
                            c.asking = true;
                        }
                        if (target == cluster_slot_map::unknown)
                            co_return cluster_error::too_many_nodes;
                        c.node = target;
                        ++at;
                        continue;
                    }
                    if (is_retry_later(message) && c.retries < config_.max_retries) {
                        ++c.retries;
                        ++stats_.retries;
                        wait = true;
                        ++at;
                        continue;
                    }
                }
                c.done = true;
                c.reply_in = &got;
                c.reply_at = at++;
            }
        }
        // A WAIT whose command was redirected or is to be retried answered for the wrong
        // node or too early: it is sent again right after that command, wherever it goes.
        // (In request order, so that a WAIT after a WAIT follows too.)
        for (auto& c : commands) {
            if (!c.leader || commands[*c.leader].done)
                continue;
            c.done = false;
            c.asking = false;
        }
        if (std::all_of(commands.begin(), commands.end(),
                        [](command_state const& c) { return c.done; }))
            break;
        if (wait) {
            net::steady_timer timer(executor_, delay);
            delay = std::min(delay * 2, config_.retry_max_delay);
            auto [ec] = co_await timer.async_wait(use_tuple);
            if (ec)
                co_return ec;
        }
        if (closed_)
            co_return error::closed;
    }

    // The replies in the caller's order; nothing to do when they already are.
    bool in_place = true;
    for (std::size_t i = 0; i < commands.size(); ++i)
        in_place = in_place && commands[i].reply_in == &resp && commands[i].reply_at == i;
    if (!in_place) {
        response ordered;
        for (auto const& c : commands)
            ordered.append((*c.reply_in)[c.reply_at]);
        resp = std::move(ordered);
    }
    co_return error_code{};
}

} // namespace detail

cluster::locator cluster::shard_locator(std::string_view channel) const {
    return [weak = std::weak_ptr<detail::cluster_impl>(impl_), slot = key_slot(channel)](
               std::function<void(boost::system::error_code, host_port)> done) {
        auto self = weak.lock();
        if (!self) {
            done(make_error_code(error::closed), {});
            return;
        }
        boost::asio::co_spawn(
            self->get_executor(),
            [self,
             slot]() -> boost::asio::awaitable<std::tuple<boost::system::error_code, config>> {
                co_await detail::cluster_impl::refresh_op(self); // failed: the last map stays
                co_return co_await detail::cluster_impl::node_config_op(self, slot);
            },
            [done = std::move(done)](std::exception_ptr e,
                                     std::tuple<boost::system::error_code, config> r) mutable {
                auto [ec, node] = std::move(r);
                if (e && !ec) {
                    ec = make_error_code(error::closed);
                }
                done(ec, host_port{std::move(node.host), node.port});
            });
    };
}

} // namespace timewheel::redis
