//
// timewheeld/service/metrics.hpp
//
// A small metrics registry that renders the Prometheus text format (version 0.0.4), shared
// by both sides of timewheeld: the API counts submits, cancels, requests and store round
// trips; the callback side fills the firing, outcome, lateness and latency metrics, whose
// names are registered here (service_metrics) so that /metrics shows them from the start.
//
// Updates are lock-free (atomics on metrics whose address never changes); looking a series
// up by name and labels, and rendering, take the registry's mutex. Hot paths keep the
// reference a lookup returned.
//
#ifndef TIMEWHEELD_SERVICE_METRICS_HPP
#define TIMEWHEELD_SERVICE_METRICS_HPP

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace timewheeld::service {

/// Label names and values of one series, e.g. {{"route", "GET /v1/tasks/{id}"}}.
using metric_labels = std::vector<std::pair<std::string, std::string>>;

/// A monotonic count.
class counter {
public:
    void inc(std::uint64_t n = 1) noexcept { value_.fetch_add(n, std::memory_order_relaxed); }
    std::uint64_t value() const noexcept { return value_.load(std::memory_order_relaxed); }

private:
    std::atomic<std::uint64_t> value_{0};
};

/// A value that goes up and down.
class gauge {
public:
    void set(double v) noexcept { value_.store(v, std::memory_order_relaxed); }
    void add(double v) noexcept { value_.fetch_add(v, std::memory_order_relaxed); }
    void sub(double v) noexcept { value_.fetch_sub(v, std::memory_order_relaxed); }
    double value() const noexcept { return value_.load(std::memory_order_relaxed); }

private:
    std::atomic<double> value_{0};
};

/// Observations counted in buckets of fixed upper bounds (in seconds for durations).
class histogram {
public:
    /// `bounds` ascending; the +Inf bucket is implied.
    explicit histogram(std::vector<double> bounds);

    void observe(double v) noexcept;
    template <typename Rep, typename Period>
    void observe(std::chrono::duration<Rep, Period> d) noexcept {
        observe(std::chrono::duration<double>(d).count());
    }

    const std::vector<double>& bounds() const noexcept { return bounds_; }
    /// Observations in bucket i alone (not cumulative); i == bounds().size() is +Inf.
    std::uint64_t bucket(std::size_t i) const noexcept {
        return counts_[i].load(std::memory_order_relaxed);
    }
    std::uint64_t count() const noexcept { return count_.load(std::memory_order_relaxed); }
    double sum() const noexcept { return sum_.load(std::memory_order_relaxed); }

    /// Bounds from 0.5 ms to 10 s, for latencies and round trips.
    static std::vector<double> latency_bounds();

private:
    std::vector<double> bounds_;
    std::unique_ptr<std::atomic<std::uint64_t>[]> counts_;
    std::atomic<std::uint64_t> count_{0};
    std::atomic<double> sum_{0};
};

/// Named families of counters, gauges and histograms, rendered as Prometheus text.
/**
 * A family has one name, one type and one help text; its series differ by labels. Asking
 * for an existing series returns the same object; asking for a name with another type
 * throws std::logic_error (a programming error, found by the first test that renders).
 *
 * @par Thread Safety
 * Every member may be called from any thread.
 */
class metrics_registry {
public:
    metrics_registry();
    ~metrics_registry();
    metrics_registry(const metrics_registry&) = delete;
    metrics_registry& operator=(const metrics_registry&) = delete;

    service::counter& counter(std::string_view name, std::string_view help,
                              const metric_labels& labels = {});
    service::gauge& gauge(std::string_view name, std::string_view help,
                          const metric_labels& labels = {});
    service::histogram& histogram(std::string_view name, std::string_view help,
                                  std::vector<double> bounds, const metric_labels& labels = {});

    /// Every family, sorted by name, in the text exposition format.
    std::string render() const;

private:
    enum class kind { counter, gauge, histogram };
    struct series;
    struct family;
    series& find(std::string_view name, std::string_view help, kind k, const metric_labels& labels,
                 std::vector<double>* bounds);

    mutable std::mutex mutex_;
    std::map<std::string, std::unique_ptr<family>, std::less<>> families_;
};

/// The metrics of timewheeld, registered at once so that every name shows in /metrics.
/**
 * The API side fills: submitted, cancelled, requests (by route and status), store round
 * trip (by operation). The callback side fills: fired, succeeded, retried, dead, in flight,
 * lateness (due time to first byte sent), callback latency. Read from the store (at most
 * every settings::metrics_store_interval): the tasks by state, those due now, the oldest
 * due age. Both: store errors (by operation) where no answer shows them.
 */
struct service_metrics {
    explicit service_metrics(metrics_registry& r);

    metrics_registry& registry;
    service::counter& submitted;    ///< tasks created by POST /v1/tasks (not the "exists" answers)
    service::counter& cancelled;    ///< tasks cancelled by DELETE /v1/tasks/{id}
    service::counter& fired;        ///< callback attempts started
    service::counter& succeeded;    ///< callbacks that succeeded
    service::counter& retried;      ///< callback attempts that will be retried
    service::counter& dead;         ///< tasks that became dead letters
    service::counter& deferred;     ///< due tasks held back by the client's flow control
    service::counter& wakeups;      ///< wake-ups this node's workers received from the store
    service::gauge& in_flight;      ///< callbacks running now
    service::gauge& awaiting;       ///< attempts that answered 202, waiting for their result
    service::gauge& oldest_due_age; ///< seconds since the due time of the oldest due task
    /// Tasks by state, in dq::task_state's order (delayed, prefetched, running, finished,
    /// dead, cancelled): timewheeld_tasks{state="..."}.
    std::array<service::gauge*, 6> tasks;
    service::gauge& tasks_due_now;        ///< delayed tasks due by now, waiting for a worker
    service::histogram& lateness;         ///< seconds from due time to the callback's first byte
    service::histogram& callback_latency; ///< seconds from first byte sent to the response

    /// Counts one answered request.
    void request(std::string_view route, unsigned status);
    /// Times one store operation ("submit", "status"...).
    service::histogram& store_round_trip(std::string_view op);
    /// Counts a store operation that failed where no request answers it: a worker's ("claim",
    /// "start", "acknowledge", "renew", "release", "wait_wakeup") or the gauges' read
    /// ("count_tasks"). The API's own store failures show as its 503 answers.
    void store_error(std::string_view op);
};

} // namespace timewheeld::service

#endif // TIMEWHEELD_SERVICE_METRICS_HPP
