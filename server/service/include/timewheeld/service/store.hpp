//
// timewheeld/service/store.hpp
//
// The store selection of timewheeld: a URL names where tasks live; a store_source reads
// it once, and gives each of the service's threads its own dq::store on that thread's
// executor.
//
// Schemes:
//   redis://[user:password@]host[:port][/queue][?wait=N[&wait_timeout_ms=T]]
//                                                 dq::redis_store, standalone (port 6379,
//                                                 queue "timewheeld" by default): one
//                                                 connection per thread; a host name is
//                                                 resolved on every connect
//   redis+sentinel://[user:password@]host[:port][,host[:port]...][/queue]?master=NAME
//                  [&sentinel_user=U][&sentinel_password=P][&wait=N[&wait_timeout_ms=T]]
//                                                 the same, the master asked from these
//                                                 Sentinels (port 26379) on every connect
//   redis+cluster://[user:password@]host[:port][,host[:port]...][/queue][?wait=...]
//                                                 dq::redis_store on a Redis Cluster: the
//                                                 hosts are seeds (names resolved on every
//                                                 connect; one that answers is enough), the
//                                                 masters come from the slot map; one
//                                                 redis::cluster per thread
//   wait=N: every write is followed by WAIT N T (T 1000 ms by default; on a Cluster, on
//   the master of each shard written); fewer than N replicas acknowledging fails it with
//   dq::error::not_replicated (503)
//   shards=N: a new queue's shard count (64 by default; 1..16384); a queue keeps the count
//   it was created with, and a store given another fails with dq::error::not_configured
//   sqlite:PATH                                   dq::sqlite_store in the file PATH (created
//                                                 if missing, relative to the working
//                                                 directory): one database, one writer
//                                                 thread and group commit shared by the
//                                                 threads, each completing on its own
//                                                 executor
//
#ifndef TIMEWHEELD_SERVICE_STORE_HPP
#define TIMEWHEELD_SERVICE_STORE_HPP

#include <timewheel/dq/store.hpp>
#include <timewheel/redis/cluster_config.hpp>
#include <timewheel/redis/config.hpp>

#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

namespace timewheeld::service {

/// An open store, and how to close it (its connections keep the io_context busy until then).
struct store_handle {
    std::unique_ptr<timewheel::dq::store> store;
    std::function<void()> close;
};

/// What make_store() needs besides the URL.
struct store_options {
    /// How long one operation may take before it fails (a store that does not answer).
    std::chrono::milliseconds operation_timeout{5000};
    /// The worker's name in the store's execution log, and the connection's client name.
    std::string client_name = "timewheeld";
};

/// Where a redis://, redis+sentinel:// or redis+cluster:// store points: the server's
/// config, the queue's name, the durability asked (dq::redis_store_options::wait_replicas),
/// and for a cluster, the cluster's config.
struct redis_location {
    /// The server; for a cluster, its first seed (and `cluster` the seeds and settings).
    timewheel::redis::config config;
    std::string queue;
    std::size_t wait_replicas = 0;
    std::chrono::milliseconds wait_timeout{1000};
    /// The queue's shard count (dq::redis_store_options::shards): fixed when the queue is
    /// first used, a store given another count then fails with dq::error::not_configured.
    std::size_t shards = 64;
    std::optional<timewheel::redis::cluster_config> cluster;
};

/// Where the Redis store `url` points (as make_store() reads it); nothing for the other
/// schemes. For what shares the store's Redis besides the store, such as the forwarding of
/// reported results between nodes.
/** @throws std::invalid_argument as make_store() does for a malformed Redis URL. */
std::optional<redis_location> redis_location_of(std::string_view url,
                                                const store_options& opt = {});

/// What `--check-config` says of the store `url` names, checked without changing it (nor
/// contacting a Redis server): a sqlite: file is a database (its header) that can be read and
/// written, or is missing in a directory where it can be created; a Redis URL is well
/// formed and its hosts resolve now.
/** @throws std::invalid_argument naming what is wrong ("--store: ..."). */
std::string check_store(std::string_view url);

/// Where the service's stores come from: the URL read once.
/**
 * @par Thread Safety
 * Use from one thread (the service opens every thread's store before running them).
 */
class store_source {
public:
    /// @throws std::invalid_argument naming what is wrong with the URL (an unknown scheme,
    /// a malformed port...).
    explicit store_source(std::string_view url, store_options opt = {});
    ~store_source();

    store_source(const store_source&) = delete;
    store_source& operator=(const store_source&) = delete;

    /// A store whose operations complete on `ex`. Redis: a connection of its own,
    /// connecting in the background (an unreachable store fails operations, it does not
    /// throw here). SQLite: the first call opens the file, later ones share it.
    /** @throws std::invalid_argument when the SQLite file cannot be opened. */
    store_handle open(const timewheel::dq::store::executor_type& ex);

private:
    struct impl;
    std::unique_ptr<impl> impl_;
};

/// One store that `url` names, on `ex` (store_source(url, opt).open(ex)).
/** @throws std::invalid_argument as store_source and open() do. */
store_handle make_store(std::string_view url, const timewheel::dq::store::executor_type& ex,
                        const store_options& opt = {});

} // namespace timewheeld::service

#endif // TIMEWHEELD_SERVICE_STORE_HPP
