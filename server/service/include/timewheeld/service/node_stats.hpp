//
// timewheeld/service/node_stats.hpp
//
// What this node's callbacks did over the last minutes, for GET /v1/stats and the dashboard:
// attempts fired, succeeded and failed per 10 s bucket, the lateness of each attempt (from
// its due time to the start of its callback) as a histogram of fixed bounds, and per
// destination (the "host:port" of the callback URL) the calls in flight now, the tasks held
// back by its back-off now, the attempts that succeeded and failed, and its last error.
// The store knows none of this: it is this node's own view, kept in memory and lost with
// the process (every node of a cluster has its own).
//
// The worker side records, the API reads. Recording costs a few increments under a mutex
// nobody else holds but a reader (each of the service's threads records into a shard of its
// own; the destinations are one table, bounded), and allocates nothing once a destination
// is known. Reading merges the shards.
//
// The window is a ring of buckets advanced lazily: a bucket is cleared when time reaches it
// again, so that a node with no callback for an hour costs nothing and shows zeros. The
// destinations are at most max_hosts: a new one takes the place of the one used least
// recently (never of one with a call under way), so that a tenant with a million hosts
// cannot make the table grow.
//
#ifndef TIMEWHEELD_SERVICE_NODE_STATS_HPP
#define TIMEWHEELD_SERVICE_NODE_STATS_HPP

#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace timewheeld::service {

/// The upper bounds, in milliseconds, of the lateness histogram's buckets; one bucket more
/// holds what is beyond the last.
inline constexpr std::array<std::uint32_t, 16> lateness_bounds_ms = {
    1, 2, 5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10000, 30000, 60000, 300000};

/// The shape of the window and the bounds of the destination table.
struct node_stats_options {
    std::chrono::seconds bucket{10};   ///< the width of one bucket
    std::size_t buckets = 30;          ///< the window is bucket * buckets (300 s)
    std::size_t max_hosts = 1000;      ///< destinations kept, the least recently used evicted
    std::size_t max_error_bytes = 200; ///< a destination's last error, cut (UTF-8 kept whole)
};

/// The figures of the window, merged over the threads (node_stats::read()).
struct node_figures {
    struct bucket {
        std::chrono::system_clock::time_point at; ///< the start of the bucket
        std::uint64_t fired = 0;                  ///< attempts that ended in it
        std::uint64_t succeeded = 0;
        std::uint64_t failed = 0; ///< failed attempts (to be retried, or dead)
    };
    struct host {
        std::string name;            ///< "host:port" ("[::1]:8080" for IPv6)
        std::uint64_t in_flight = 0; ///< calls under way now (waiting for a connection too)
        /// Tasks held back now by its flow control (a 429's back-off, the rate limit, no
        /// connection slot): deferred since its current back-off began, while it lasts.
        std::uint64_t backing_off = 0;
        std::uint64_t succeeded = 0;           ///< within the window
        std::uint64_t failed = 0;              ///< within the window
        std::optional<std::string> last_error; ///< of its last failed attempt, if any is kept
    };

    std::chrono::seconds window{0};
    std::vector<bucket> throughput; ///< the window's buckets, oldest first
    /// Attempts fired per second over the window (or since the start, when more recent).
    double callbacks_per_second = 0;
    /// Attempts per lateness bucket (not cumulative), lateness_bounds_ms then beyond.
    std::array<std::uint64_t, lateness_bounds_ms.size() + 1> lateness{};
    std::uint64_t lateness_count = 0;
    std::chrono::milliseconds lateness_max{0};
    /// Destinations with anything to show (a call now, a back-off now, an attempt within
    /// the window), the most failed first (then the most in flight, then by name).
    std::vector<host> hosts;

    /// The q-quantile (0 < q <= 1) of the lateness: the upper bound of the bucket it falls
    /// in, at most lateness_max (which it is beyond the last bound); 0 with no attempt.
    std::chrono::milliseconds lateness_quantile(double q) const noexcept;
};

/// The "host:port" of a callback URL (http or https; the scheme's port when it gives none;
/// the host lower-case, an IPv6 literal in brackets), written into `out` (its capacity
/// reused); false when it is not such a URL. The key of node_stats' destinations, and of the
/// `host` filter of GET /v1/tasks.
bool destination_of(std::string_view url, std::string& out);

/// This node's callback figures over a sliding window (see the top of this file).
/**
 * @par Thread Safety
 * Shard s records from one thread at a time (that shard's dispatcher); the destination
 * members and read() may be called from any thread.
 */
class node_stats {
public:
    /// A destination held by a call, from call_started() to its outcome (so that the
    /// table never evicts it meanwhile). Empty when the table had no room (all in use).
    struct host_ref {
        std::uint32_t slot = npos;
        explicit operator bool() const noexcept { return slot != npos; }
        static constexpr std::uint32_t npos = ~std::uint32_t{0};
    };

    /// One thread's attempts.
    class shard {
    public:
        /// An attempt ended (its callback answered, or failed to): `succeeded` or not,
        /// `lateness` from its due time to the start of its callback.
        void attempt(bool succeeded, std::chrono::milliseconds lateness,
                     std::chrono::system_clock::time_point now) noexcept;

    private:
        friend class node_stats;
        struct slot {
            std::uint64_t fired = 0;
            std::uint64_t succeeded = 0;
            std::uint64_t failed = 0;
            std::array<std::uint64_t, lateness_bounds_ms.size() + 1> lateness{};
            std::uint64_t lateness_max_ms = 0;
        };
        shard(std::size_t buckets, std::chrono::seconds width);

        mutable std::mutex mutex_;
        std::chrono::seconds width_;
        std::vector<slot> ring_;
        std::int64_t head_ = -1; // the index of the newest bucket written
    };

    /// `shards` threads record (node_stats[i] for thread i).
    explicit node_stats(
        std::size_t shards, node_stats_options opt = {},
        std::chrono::system_clock::time_point start = std::chrono::system_clock::now());
    ~node_stats();
    node_stats(const node_stats&) = delete;
    node_stats& operator=(const node_stats&) = delete;

    shard& operator[](std::size_t i) noexcept { return *shards_[i]; }
    const node_stats_options& options() const noexcept { return opt_; }

    /// A call to `host` ("host:port", destination_of()) starts: in flight until
    /// call_ended(), held until host_outcome() or host_deferred().
    host_ref call_started(std::string_view host);
    /// The call no longer runs (it answered, failed, or waits for a reported result).
    void call_ended(host_ref h) noexcept;
    /// The attempt of `h` ended; releases `h`. `error` is kept (cut) when it failed.
    void host_outcome(host_ref h, bool succeeded, std::string_view error,
                      std::chrono::system_clock::time_point now) noexcept;
    /// The call of `h` was held back by the host's flow control, to be tried again after
    /// `wait` (not an attempt); releases `h`.
    void host_deferred(host_ref h, std::chrono::milliseconds wait,
                       std::chrono::system_clock::time_point now) noexcept;

    /// The window ending at `now`, merged over the shards.
    node_figures
    read(std::chrono::system_clock::time_point now = std::chrono::system_clock::now()) const;

private:
    struct host_entry;

    std::int64_t index_of(std::chrono::system_clock::time_point t) const noexcept;
    host_entry* entry(host_ref h) noexcept;

    node_stats_options opt_;
    std::chrono::system_clock::time_point start_;
    std::vector<std::unique_ptr<shard>> shards_;

    struct string_hash {
        using is_transparent = void;
        std::size_t operator()(std::string_view s) const noexcept {
            return std::hash<std::string_view>{}(s);
        }
    };
    mutable std::mutex hosts_mutex_;
    std::vector<std::unique_ptr<host_entry>> hosts_;
    std::unordered_map<std::string, std::uint32_t, string_hash, std::equal_to<>> host_index_;
    std::uint64_t touches_ = 0; // the clock of the least-recently-used eviction
};

} // namespace timewheeld::service

#endif // TIMEWHEELD_SERVICE_NODE_STATS_HPP
