//
// src/dq/redis/backend.hpp
//
// Where dq::redis_store's requests go: one server (redis::connection) or a Cluster
// (redis::cluster), behind one small interface, so that the store builds the same requests
// for both and picks the backend once, in its constructor. Every request of the store names
// keys of one shard per script, and a shard's keys share a hash slot, so the cluster backend
// needs nothing more than the cluster client's own routing (a WAIT too: it goes with the
// script before it, redis::cluster "WAIT").
//
#ifndef TIMEWHEEL_DQ_REDIS_BACKEND_HPP
#define TIMEWHEEL_DQ_REDIS_BACKEND_HPP

#include <timewheel/dq/store.hpp>

#include <timewheel/redis/cluster.hpp>
#include <timewheel/redis/connection.hpp>
#include <timewheel/redis/subscriber.hpp>

#include <boost/asio/any_completion_handler.hpp>

#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>

namespace timewheel::dq::detail {

using exec_handler =
    boost::asio::any_completion_handler<void(boost::system::error_code, std::size_t)>;

class backend {
public:
    virtual ~backend() = default;
    virtual void exec(const redis::request& req, redis::response& resp, exec_handler h) = 0;
    virtual void close() = 0;
    // A Cluster: a request's scripts may go to different masters.
    virtual bool cluster() const noexcept = 0;
    /// Where a subscriber to `channel` connects on each attempt; empty: the configured
    /// server.
    virtual redis::subscriber::locator locator(std::string) { return {}; }
};

// A backend on a client with async_exec and close: redis::connection or redis::cluster.
template <typename Client>
class client_backend final : public backend {
public:
    template <typename Config>
    client_backend(const store::executor_type& ex, Config cfg)
        : client_(ex, std::move(cfg)) {}
    void exec(const redis::request& req, redis::response& resp, exec_handler h) override {
        client_.async_exec(req, resp, std::move(h));
    }
    void close() override { client_.close(); }
    bool cluster() const noexcept override { return std::is_same_v<Client, redis::cluster>; }

private:
    Client client_;
};

using connection_backend = client_backend<redis::connection>;

// On a Cluster, a subscriber connects to the master that serves its channel's slot, the map
// learnt again first: it asks after a connection was lost, when the map may name a master
// that died.
class cluster_backend final : public backend {
public:
    cluster_backend(const store::executor_type& ex, redis::cluster_config cfg)
        : client_(ex, std::move(cfg)) {}
    ~cluster_backend() override { *alive_ = false; }
    cluster_backend(const cluster_backend&) = delete;
    cluster_backend& operator=(const cluster_backend&) = delete;
    void exec(const redis::request& req, redis::response& resp, exec_handler h) override {
        client_.async_exec(req, resp, std::move(h));
    }
    void close() override { client_.close(); }
    bool cluster() const noexcept override { return true; }
    redis::subscriber::locator locator(std::string channel) override {
        return cluster_locator(client_, alive_, std::move(channel));
    }

    // A locator on `c`, asked only while `*alive` (the owner of `c` clears it as it goes:
    // an answer may come after).
    static redis::subscriber::locator
    cluster_locator(redis::cluster& c, std::shared_ptr<bool> alive, std::string channel) {
        using done_type = std::function<void(boost::system::error_code, redis::host_port)>;
        return [&c, alive = std::move(alive), channel = std::move(channel)](done_type done) {
            if (!*alive) {
                done(make_error_code(redis::error::closed), {});
                return;
            }
            c.async_refresh([&c, alive, channel,
                             done = std::move(done)](boost::system::error_code) mutable {
                // A failed refresh leaves the last map: its owner may still be right.
                if (!*alive) {
                    done(make_error_code(redis::error::closed), {});
                    return;
                }
                c.async_node_config(channel, [done = std::move(done)](boost::system::error_code ec,
                                                                      redis::config node) {
                    done(ec, redis::host_port{std::move(node.host), node.port});
                });
            });
        };
    }

private:
    redis::cluster client_;
    std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
};

} // namespace timewheel::dq::detail

#endif // TIMEWHEEL_DQ_REDIS_BACKEND_HPP
