//
// server/dispatch/src/result_router.cpp
//
#include <timewheeld/dispatch/dispatcher.hpp>
#include <timewheeld/dispatch/result_router.hpp>

#include <timewheeld/service/task_json.hpp>

#include <timewheel/redis/cluster.hpp>
#include <timewheel/redis/connection.hpp>
#include <timewheel/redis/subscriber.hpp>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>

#include <unistd.h>

#include <cstdio>
#include <optional>
#include <random>
#include <stdexcept>
#include <thread>
#include <utility>

namespace timewheeld::dispatch {

namespace net = boost::asio;
namespace dq = timewheel::dq;
namespace json = boost::json;
namespace redis = timewheel::redis;
using boost::system::error_code;

namespace {

using result_handler = net::any_completion_handler<void(service::deliver_result)>;

// The body of POST /v1/tasks/{id}/result for `o`: what travels between nodes is what the
// API accepted, read back with the API's own parser.
json::object report_body(std::uint32_t attempt, const dq::outcome& o) {
    json::object b;
    b["attempt"] = attempt;
    switch (o.what) {
    case dq::outcome::kind::success:
        b["outcome"] = "success";
        break;
    case dq::outcome::kind::retry:
    case dq::outcome::kind::defer: // (never reported: the API takes no deferral)
        b["outcome"] = "retry";
        if (o.retry_after) {
            b["retry_after_ms"] = o.retry_after->count();
        }
        break;
    case dq::outcome::kind::failure:
        b["outcome"] = "failure";
        break;
    }
    if (!o.error.empty()) {
        b["error"] = o.error;
    }
    return b;
}

std::string_view result_name(service::deliver_result r) {
    switch (r) {
    case service::deliver_result::accepted:
        return "accepted";
    case service::deliver_result::wrong_attempt:
        return "wrong_attempt";
    default:
        return "not_pending";
    }
}

// A name no other node of the queue has: the process and 64 random bits.
std::string node_name() {
    std::random_device rd;
    const auto r = (static_cast<std::uint64_t>(rd()) << 32) ^ rd();
    char buf[32];
    std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(r));
    return std::to_string(::getpid()) + "-" + buf;
}

} // namespace

struct result_router::forwarder {
    // A report sent to the other nodes, waiting for their replies.
    struct pending_report {
        pending_report(net::io_context& io, result_handler h)
            : timer(io)
            , handler(std::move(h)) {}
        std::int64_t expected = -1; // receivers, once PUBLISH has answered
        std::int64_t not_here = 0;  // replies "nothing waits here"
        net::steady_timer timer;
        result_handler handler;
    };

    // On one server (or its Sentinels' master): PUBLISH and SUBSCRIBE on `cfg`. On a
    // Cluster (`ccfg`): SPUBLISH and SSUBSCRIBE on the master of the channels' slot, which
    // their hash tag (the queue's name) picks, followed through failovers; every node
    // subscribes there, so SPUBLISH's count is every node's subscriber whatever seed each
    // names.
    forwarder(result_router& router, redis::config cfg, std::optional<redis::cluster_config> ccfg,
              std::string queue, std::chrono::milliseconds reply_within)
        : router(router)
        , channel(ccfg ? "{" + queue + "}:results" : queue + ":results")
        , node(node_name())
        , reply_channel(channel + ":" + node)
        , reply_within(reply_within)
        , guard(io.get_executor())
        , sub(io.get_executor(), cfg) {
        if (ccfg) {
            cluster = std::make_unique<redis::cluster>(io.get_executor(), std::move(*ccfg));
            sub.set_locator(cluster->shard_locator(channel));
        } else {
            pub = std::make_unique<redis::connection>(io.get_executor(), cfg);
        }
        net::post(io, [this] {
            if (cluster) {
                sub.ssubscribe({channel, reply_channel});
            } else {
                sub.subscribe({channel, reply_channel});
            }
            receive();
        });
        thread = std::thread([this] { io.run(); });
    }

    ~forwarder() {
        net::post(io, [this] {
            sub.close();
            if (pub) {
                pub->close();
            }
            if (cluster) {
                cluster->close();
            }
            pending.clear(); // their handlers dropped: the API has stopped
            io.stop();
        });
        thread.join();
    }

    // From any thread.
    void forward(std::string id, std::uint32_t attempt, dq::outcome o, result_handler h) {
        net::post(io, [this, id = std::move(id), attempt, o = std::move(o),
                       h = std::move(h)]() mutable {
            const auto n = ++sequence;
            pending.emplace(n, std::make_unique<pending_report>(io, std::move(h)));
            json::object m;
            m["from"] = node;
            m["req"] = n;
            m["id"] = id;
            m["report"] = report_body(attempt, o);
            publish(channel, json::serialize(m), [this, n](error_code ec, std::int64_t receivers) {
                const auto it = pending.find(n);
                if (it == pending.end()) {
                    return;
                }
                if (ec) {
                    finish(n, service::deliver_result::unavailable);
                    return;
                }
                it->second->expected = receivers;
                // From now on the receivers answer within reply_within, or the report
                // stays forwarded without a word.
                it->second->timer.expires_after(reply_within);
                it->second->timer.async_wait([this, n](error_code ec) {
                    if (!ec) {
                        finish(n, service::deliver_result::forwarded);
                    }
                });
                settle(n);
            });
        });
    }

    template <typename Handler>
    void publish(const std::string& to, std::string payload, Handler h) {
        struct exchange {
            redis::request req;
            redis::response resp;
        };
        auto x = std::make_shared<exchange>();
        auto done = [x, h = std::move(h)](error_code ec, std::size_t) mutable {
            if (!ec && (x->resp.has_error() || !x->resp[0].is_integer())) {
                ec = net::error::operation_not_supported;
            }
            h(ec, ec ? 0 : x->resp[0].as_integer());
        };
        if (cluster) {
            x->req.push("SPUBLISH", to, payload);
            cluster->async_exec(x->req, x->resp, std::move(done));
        } else {
            x->req.push("PUBLISH", to, payload);
            pub->async_exec(x->req, x->resp, std::move(done));
        }
    }

    void receive() {
        sub.async_receive([this](error_code ec, redis::message m) {
            if (ec) {
                return; // closed
            }
            if (m.channel == channel) {
                on_report(m.payload);
            } else if (m.channel == reply_channel) {
                on_reply(m.payload);
            }
            receive();
        });
    }

    // A report from a node (this one included): to our attempts, and the sender told.
    void on_report(std::string_view payload) {
        error_code ec;
        const auto v = json::parse(payload, ec);
        const auto* o = v.if_object();
        if (ec || !o) {
            return;
        }
        const auto* from = o->if_contains("from");
        const auto* req = o->if_contains("req");
        const auto* id = o->if_contains("id");
        const auto* body = o->if_contains("report");
        if (!from || !from->is_string() || !req || !req->is_int64() || !id || !id->is_string() ||
            !body) {
            return;
        }
        service::result_report r;
        try {
            r = service::parse_result(json::serialize(*body));
        } catch (const std::exception&) {
            return; // not from a timewheeld of this version
        }
        router.deliver_here(std::string(id->as_string()), r.attempt, std::move(r.outcome),
                            [this, to = channel + ":" + std::string(from->as_string()),
                             n = req->as_int64()](service::deliver_result result) {
                                net::post(io, [this, to, n, result] {
                                    json::object reply;
                                    reply["req"] = n;
                                    reply["result"] = result_name(result);
                                    publish(to, json::serialize(reply),
                                            [](error_code, std::int64_t) {});
                                });
                            });
    }

    void on_reply(std::string_view payload) {
        error_code ec;
        const auto v = json::parse(payload, ec);
        const auto* o = v.if_object();
        if (ec || !o) {
            return;
        }
        const auto* req = o->if_contains("req");
        const auto* result = o->if_contains("result");
        if (!req || !req->is_int64() || !result || !result->is_string()) {
            return;
        }
        const auto n = static_cast<std::uint64_t>(req->as_int64());
        const auto it = pending.find(n);
        if (it == pending.end()) {
            return;
        }
        if (result->as_string() == "accepted") {
            finish(n, service::deliver_result::accepted);
        } else if (result->as_string() == "wrong_attempt") {
            finish(n, service::deliver_result::wrong_attempt);
        } else {
            ++it->second->not_here;
            settle(n);
        }
    }

    // Every receiver said nothing waits there.
    void settle(std::uint64_t n) {
        const auto it = pending.find(n);
        if (it != pending.end() && it->second->expected >= 0 &&
            it->second->not_here >= it->second->expected) {
            finish(n, service::deliver_result::not_pending);
        }
    }

    void finish(std::uint64_t n, service::deliver_result r) {
        const auto it = pending.find(n);
        if (it == pending.end()) {
            return;
        }
        // Constructed from, never assigned: Boost 1.81's move assignment of
        // any_completion_handler recurses.
        result_handler h(std::move(it->second->handler));
        pending.erase(it);
        std::move(h)(r);
    }

    result_router& router;
    const std::string channel;
    const std::string node;
    const std::string reply_channel;
    const std::chrono::milliseconds reply_within;
    net::io_context io;
    net::executor_work_guard<net::io_context::executor_type> guard;
    std::unique_ptr<redis::connection> pub;  // one server
    std::unique_ptr<redis::cluster> cluster; // or a Cluster
    redis::subscriber sub;
    std::uint64_t sequence = 0;
    std::unordered_map<std::uint64_t, std::unique_ptr<pending_report>> pending;
    std::thread thread;
};

result_router::result_router() = default;

result_router::~result_router() = default;

void result_router::forward_over_redis(redis::config cfg, std::string queue,
                                       std::chrono::milliseconds reply_within) {
    if (forwarder_) {
        throw std::logic_error("result_router: already forwarding");
    }
    forwarder_ = std::make_unique<forwarder>(*this, std::move(cfg), std::nullopt, std::move(queue),
                                             reply_within);
}

void result_router::forward_over_redis(redis::cluster_config cfg, std::string queue,
                                       std::chrono::milliseconds reply_within) {
    if (forwarder_) {
        throw std::logic_error("result_router: already forwarding");
    }
    auto node = cfg.node;
    forwarder_ = std::make_unique<forwarder>(*this, std::move(node), std::move(cfg),
                                             std::move(queue), reply_within);
}

void result_router::add(const std::string& id, dispatcher* d) {
    std::lock_guard lock(mutex_);
    waiting_[id] = d;
}

void result_router::remove(const std::string& id, dispatcher* d) {
    std::lock_guard lock(mutex_);
    if (const auto it = waiting_.find(id); it != waiting_.end() && it->second == d) {
        waiting_.erase(it);
    }
}

void result_router::deliver(std::string id, std::uint32_t attempt, dq::outcome outcome,
                            result_handler handler) {
    bool here = false;
    {
        std::lock_guard lock(mutex_);
        here = waiting_.contains(id);
    }
    if (here || !forwarder_) {
        deliver_here(std::move(id), attempt, std::move(outcome), std::move(handler));
        return;
    }
    forwarder_->forward(std::move(id), attempt, std::move(outcome), std::move(handler));
}

void result_router::deliver_here(std::string id, std::uint32_t attempt, dq::outcome outcome,
                                 result_handler handler) {
    dispatcher* d = nullptr;
    {
        std::lock_guard lock(mutex_);
        if (const auto it = waiting_.find(id); it != waiting_.end()) {
            d = it->second;
        }
    }
    if (!d) {
        std::move(handler)(service::deliver_result::not_pending);
        return;
    }
    // The waiting attempt belongs to its thread: deliver there (it may have ended since).
    net::post(d->io(), [d, id = std::move(id), attempt, o = std::move(outcome),
                        h = std::move(handler)]() mutable {
        std::move(h)(d->deliver(id, attempt, std::move(o)));
    });
}

} // namespace timewheeld::dispatch
