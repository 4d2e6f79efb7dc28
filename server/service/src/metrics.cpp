//
// server/service/src/metrics.cpp
//
// The registry keeps each series behind a stable pointer (counters and gauges are atomics,
// updated from any thread without a lock); only registering and rendering take the lock.
//
#include <timewheeld/service/metrics.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <stdexcept>
#include <variant>

namespace timewheeld::service {

histogram::histogram(std::vector<double> bounds)
    : bounds_(std::move(bounds))
    , counts_(new std::atomic<std::uint64_t>[bounds_.size() + 1]) {
    if (!std::is_sorted(bounds_.begin(), bounds_.end())) {
        throw std::invalid_argument("histogram: bounds must be ascending");
    }
    for (std::size_t i = 0; i <= bounds_.size(); ++i) {
        counts_[i].store(0, std::memory_order_relaxed);
    }
}

void histogram::observe(double v) noexcept {
    const auto i = static_cast<std::size_t>(std::lower_bound(bounds_.begin(), bounds_.end(), v) -
                                            bounds_.begin());
    counts_[i].fetch_add(1, std::memory_order_relaxed);
    count_.fetch_add(1, std::memory_order_relaxed);
    sum_.fetch_add(v, std::memory_order_relaxed);
}

std::vector<double> histogram::latency_bounds() {
    return {0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10};
}

struct metrics_registry::series {
    metric_labels labels;
    std::variant<service::counter, service::gauge, service::histogram> metric;
    template <typename... Args>
    explicit series(metric_labels l, Args&&... args)
        : labels(std::move(l))
        , metric(std::forward<Args>(args)...) {}
};

struct metrics_registry::family {
    std::string help;
    kind type;
    std::vector<std::unique_ptr<series>> members;
};

metrics_registry::series& metrics_registry::find(std::string_view name, std::string_view help,
                                                 kind k, const metric_labels& labels,
                                                 std::vector<double>* bounds) {
    std::lock_guard lock(mutex_);
    auto it = families_.find(name);
    if (it == families_.end()) {
        it = families_
                 .emplace(std::string(name),
                          std::make_unique<family>(family{std::string(help), k, {}}))
                 .first;
    } else if (it->second->type != k) {
        throw std::logic_error("metrics: " + std::string(name) + " has another type");
    }
    for (auto& s : it->second->members) {
        if (s->labels == labels) {
            return *s;
        }
    }
    std::unique_ptr<series> s;
    switch (k) {
    case kind::counter:
        s = std::make_unique<series>(labels, std::in_place_type<service::counter>);
        break;
    case kind::gauge:
        s = std::make_unique<series>(labels, std::in_place_type<service::gauge>);
        break;
    case kind::histogram:
        s = std::make_unique<series>(labels, std::in_place_type<service::histogram>,
                                     std::move(*bounds));
        break;
    }
    it->second->members.push_back(std::move(s));
    return *it->second->members.back();
}

metrics_registry::metrics_registry() = default;
metrics_registry::~metrics_registry() = default;

counter& metrics_registry::counter(std::string_view name, std::string_view help,
                                   const metric_labels& labels) {
    return std::get<service::counter>(find(name, help, kind::counter, labels, nullptr).metric);
}

gauge& metrics_registry::gauge(std::string_view name, std::string_view help,
                               const metric_labels& labels) {
    return std::get<service::gauge>(find(name, help, kind::gauge, labels, nullptr).metric);
}

histogram& metrics_registry::histogram(std::string_view name, std::string_view help,
                                       std::vector<double> bounds, const metric_labels& labels) {
    return std::get<service::histogram>(find(name, help, kind::histogram, labels, &bounds).metric);
}

namespace {

std::string number(double v) {
    if (std::isinf(v)) {
        return v > 0 ? "+Inf" : "-Inf";
    }
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.17g", v);
    return buf;
}

// Label values escape backslash, double quote and newline.
void append_labels(std::string& out, const metric_labels& labels, std::string_view extra_name = {},
                   std::string_view extra_value = {}) {
    if (labels.empty() && extra_name.empty()) {
        return;
    }
    out += '{';
    bool first = true;
    auto one = [&](std::string_view n, std::string_view v) {
        if (!first) {
            out += ',';
        }
        first = false;
        out += n;
        out += "=\"";
        for (char c : v) {
            if (c == '\\' || c == '"') {
                out += '\\';
                out += c;
            } else if (c == '\n') {
                out += "\\n";
            } else {
                out += c;
            }
        }
        out += '"';
    };
    for (const auto& [n, v] : labels) {
        one(n, v);
    }
    if (!extra_name.empty()) {
        one(extra_name, extra_value);
    }
    out += '}';
}

} // namespace

std::string metrics_registry::render() const {
    std::lock_guard lock(mutex_);
    std::string out;
    for (const auto& [name, f] : families_) {
        static constexpr const char* types[] = {"counter", "gauge", "histogram"};
        out += "# HELP " + name + ' ' + f->help + '\n';
        out += "# TYPE " + name + ' ' + types[static_cast<int>(f->type)] + '\n';
        for (const auto& s : f->members) {
            if (const auto* c = std::get_if<service::counter>(&s->metric)) {
                out += name;
                append_labels(out, s->labels);
                out += ' ' + std::to_string(c->value()) + '\n';
            } else if (const auto* g = std::get_if<service::gauge>(&s->metric)) {
                out += name;
                append_labels(out, s->labels);
                out += ' ' + number(g->value()) + '\n';
            } else {
                const auto& h = std::get<service::histogram>(s->metric);
                std::uint64_t cumulative = 0;
                for (std::size_t i = 0; i <= h.bounds().size(); ++i) {
                    cumulative += h.bucket(i);
                    out += name + "_bucket";
                    append_labels(out, s->labels, "le",
                                  i < h.bounds().size() ? number(h.bounds()[i]) : "+Inf");
                    out += ' ' + std::to_string(cumulative) + '\n';
                }
                out += name + "_sum";
                append_labels(out, s->labels);
                out += ' ' + number(h.sum()) + '\n';
                out += name + "_count";
                append_labels(out, s->labels);
                out += ' ' + std::to_string(h.count()) + '\n';
            }
        }
    }
    return out;
}

namespace {

counter& store_errors(metrics_registry& r, std::string_view op) {
    return r.counter("timewheeld_store_errors_total",
                     "Store operations that failed outside a request: the workers' and the "
                     "gauges' reads, by operation.",
                     {{"op", std::string(op)}});
}

} // namespace

service_metrics::service_metrics(metrics_registry& r)
    : registry(r)
    , submitted(r.counter("timewheeld_tasks_submitted_total", "Tasks created by POST /v1/tasks."))
    , cancelled(r.counter("timewheeld_tasks_cancelled_total", "Tasks cancelled through the API."))
    , fired(r.counter("timewheeld_callbacks_fired_total", "Callback attempts started."))
    , succeeded(r.counter("timewheeld_callbacks_succeeded_total", "Callbacks that succeeded."))
    , retried(r.counter("timewheeld_callbacks_retried_total",
                        "Callback attempts that failed and will be retried."))
    , dead(r.counter("timewheeld_tasks_dead_total", "Tasks that became dead letters."))
    , deferred(r.counter("timewheeld_callbacks_deferred_total",
                         "Due tasks held back by the callback client's flow control (a 429 "
                         "back-off, the rate limit, no connection slot): delayed, no attempt "
                         "counted."))
    , wakeups(r.counter("timewheeld_store_wakeups_total",
                        "Wake-ups received by this node's workers from the store (a task "
                        "submitted or made due sooner than they knew): none while tasks are "
                        "submitted means that the workers find them by their poll only."))
    , in_flight(r.gauge("timewheeld_callbacks_in_flight", "Callbacks running now."))
    , awaiting(r.gauge("timewheeld_callbacks_awaiting_result",
                       "Attempts whose callback answered 202, waiting for their result."))
    , oldest_due_age(r.gauge("timewheeld_oldest_due_age_seconds",
                             "Seconds since the due time of the oldest task still due."))
    , tasks{}
    , tasks_due_now(r.gauge("timewheeld_tasks_due_now",
                            "Delayed tasks whose due time has come, waiting for a worker."))
    , lateness(r.histogram("timewheeld_lateness_seconds",
                           "From a task's due time to the first byte of its callback.",
                           histogram::latency_bounds()))
    , callback_latency(r.histogram("timewheeld_callback_latency_seconds",
                                   "From a callback's first byte sent to its response.",
                                   histogram::latency_bounds())) {
    store_round_trip("submit");
    // Shown at 0 from the start: an alert on their increase sees the first error too.
    for (const char* op :
         {"claim", "start", "acknowledge", "renew", "release", "wait_wakeup", "count_tasks"}) {
        store_errors(r, op);
    }
    static constexpr const char* states[] = {"delayed",  "prefetched", "running",
                                             "finished", "dead",       "cancelled"};
    for (std::size_t i = 0; i < tasks.size(); ++i) {
        tasks[i] = &r.gauge("timewheeld_tasks",
                            "Tasks in the store by state (finished and cancelled as the store "
                            "keeps them).",
                            {{"state", states[i]}});
    }
}

void service_metrics::request(std::string_view route, unsigned status) {
    registry
        .counter("timewheeld_http_requests_total", "API requests answered, by route and status.",
                 {{"route", std::string(route)}, {"status", std::to_string(status)}})
        .inc();
}

void service_metrics::store_error(std::string_view op) {
    store_errors(registry, op).inc();
}

histogram& service_metrics::store_round_trip(std::string_view op) {
    return registry.histogram("timewheeld_store_round_trip_seconds",
                              "Round trips of the API's store operations, by operation.",
                              histogram::latency_bounds(), {{"op", std::string(op)}});
}

} // namespace timewheeld::service
