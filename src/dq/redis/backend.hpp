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
    virtual redis::subscriber::locator locator(std::string channel) = 0;
};

// A backend on a client with async_exec and close: redis::connection or redis::cluster. On
// a Cluster, a subscriber connects to the master that serves its channel's slot, asked of
// the cluster before every connection (redis::cluster::shard_locator).
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
    redis::subscriber::locator locator(std::string channel) override {
        if constexpr (std::is_same_v<Client, redis::cluster>) {
            return client_.shard_locator(channel);
        } else {
            (void)channel; // one server: the configured one
            return {};
        }
    }

private:
    Client client_;
};

using connection_backend = client_backend<redis::connection>;
using cluster_backend = client_backend<redis::cluster>;

} // namespace timewheel::dq::detail

#endif // TIMEWHEEL_DQ_REDIS_BACKEND_HPP
