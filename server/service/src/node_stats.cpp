//
// server/service/src/node_stats.cpp
//
// Both rings (a shard's buckets, a destination's) advance the same lazy way: writing at
// bucket index n clears the buckets between the newest written and n (at most the ring),
// so a bucket holds its own index's counts whenever it is within a ring of the newest; a
// reader takes a bucket only when its index is in that range. A clock that steps back
// writes into the newest bucket: counts are never lost, at worst placed late.
//
#include <timewheeld/service/node_stats.hpp>

#include <timewheeld/callback/utf8.hpp>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <stdexcept>

namespace timewheeld::service {

namespace {

using std::chrono::system_clock;

// The slot of bucket index `n` in a ring of `size` whose newest written bucket is `head`,
// clearing what time has passed over (see the top of this file).
template <typename Slot>
Slot& advance(std::vector<Slot>& ring, std::int64_t& head, std::int64_t n) {
    const auto size = static_cast<std::int64_t>(ring.size());
    if (n <= head) {
        return ring[static_cast<std::size_t>(head % size)];
    }
    const auto from = std::max(head + 1, n - size + 1);
    for (auto k = from; k <= n; ++k) {
        ring[static_cast<std::size_t>(k % size)] = Slot{};
    }
    head = n;
    return ring[static_cast<std::size_t>(n % size)];
}

// The slot of bucket index `n` as a reader sees it: nothing when it was never written or
// has been passed over.
template <typename Slot>
const Slot* slot_at(const std::vector<Slot>& ring, std::int64_t head, std::int64_t n) {
    const auto size = static_cast<std::int64_t>(ring.size());
    if (head < 0 || n > head || n <= head - size || n < 0) {
        return nullptr;
    }
    return &ring[static_cast<std::size_t>(n % size)];
}

std::size_t lateness_bucket(std::chrono::milliseconds lateness) noexcept {
    const auto ms = lateness.count();
    return static_cast<std::size_t>(
        std::lower_bound(lateness_bounds_ms.begin(), lateness_bounds_ms.end(), ms,
                         [](std::uint32_t bound, std::int64_t v) { return bound < v; }) -
        lateness_bounds_ms.begin());
}

// `s` cut to at most `n` bytes, never inside a UTF-8 sequence.
std::string_view cut_utf8(std::string_view s, std::size_t n) noexcept {
    if (s.size() <= n) {
        return s;
    }
    while (n > 0 && (static_cast<unsigned char>(s[n]) & 0xC0) == 0x80) {
        --n;
    }
    return s.substr(0, n);
}

} // namespace

// --- The destination of a callback ---------------------------------------------------------

bool destination_of(std::string_view url, std::string& out) {
    auto starts_with_ci = [&](std::string_view prefix) {
        return url.size() >= prefix.size() &&
               std::equal(prefix.begin(), prefix.end(), url.begin(), [](char a, char b) {
                   return a == std::tolower(static_cast<unsigned char>(b));
               });
    };
    std::string_view port;
    if (starts_with_ci("https://")) {
        url.remove_prefix(8);
        port = "443";
    } else if (starts_with_ci("http://")) {
        url.remove_prefix(7);
        port = "80";
    } else {
        return false;
    }
    auto authority = url.substr(0, url.find_first_of("/?#"));
    if (authority.find('@') != std::string_view::npos) {
        return false; // user info: callback::parse_url refuses it
    }
    std::string_view host;
    if (authority.starts_with('[')) {
        const auto close = authority.find(']');
        if (close == std::string_view::npos) {
            return false;
        }
        host = authority.substr(0, close + 1);
        authority.remove_prefix(close + 1);
    } else {
        host = authority.substr(0, authority.find(':'));
        authority.remove_prefix(host.size());
    }
    if (!authority.empty()) {
        if (authority.front() != ':') {
            return false;
        }
        authority.remove_prefix(1);
        if (!authority.empty()) {
            port = authority;
        }
    }
    if (host.empty() || host == "[]" ||
        !std::all_of(port.begin(), port.end(), [](char c) { return c >= '0' && c <= '9'; })) {
        return false;
    }
    while (port.size() > 1 && port.front() == '0') {
        port.remove_prefix(1);
    }
    out.clear();
    for (const char c : host) {
        out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    }
    out += ':';
    out += port;
    return true;
}

// --- Shards --------------------------------------------------------------------------------

node_stats::shard::shard(std::size_t buckets, std::chrono::seconds width)
    : width_(width)
    , ring_(buckets) {}

void node_stats::shard::attempt(bool succeeded, std::chrono::milliseconds lateness,
                                system_clock::time_point now) noexcept {
    const auto n = std::chrono::floor<std::chrono::seconds>(now.time_since_epoch()) / width_;
    lateness = std::max(lateness, std::chrono::milliseconds(0));
    std::lock_guard lock(mutex_);
    auto& s = advance(ring_, head_, n);
    ++s.fired;
    ++(succeeded ? s.succeeded : s.failed);
    ++s.lateness[lateness_bucket(lateness)];
    s.lateness_max_ms =
        std::max<std::uint64_t>(s.lateness_max_ms, static_cast<std::uint64_t>(lateness.count()));
}

// --- Destinations --------------------------------------------------------------------------

struct node_stats::host_entry {
    struct slot {
        std::uint32_t succeeded = 0;
        std::uint32_t failed = 0;
    };
    std::string name;
    std::uint32_t pins = 0; // calls between call_started() and their outcome
    std::uint32_t in_flight = 0;
    std::uint64_t touched = 0; // node_stats::touches_ when last used
    std::vector<slot> ring;
    std::int64_t head = -1;
    // The current back-off: deferrals since it began, and when it ends.
    std::uint64_t deferred = 0;
    system_clock::time_point backoff_until{};
    std::string last_error; // capacity max_error_bytes, reserved once
    bool has_error = false;
};

node_stats::node_stats(std::size_t shards, node_stats_options opt, system_clock::time_point start)
    : opt_(opt)
    , start_(start) {
    if (shards == 0 || opt_.buckets == 0 || opt_.bucket.count() <= 0 || opt_.max_hosts == 0 ||
        opt_.max_hosts >= host_ref::npos) {
        throw std::invalid_argument("node_stats: shards, buckets, bucket and max_hosts must be "
                                    "positive");
    }
    for (std::size_t i = 0; i < shards; ++i) {
        shards_.push_back(std::unique_ptr<shard>(new shard(opt_.buckets, opt_.bucket)));
    }
}

node_stats::~node_stats() = default;

std::int64_t node_stats::index_of(system_clock::time_point t) const noexcept {
    return std::chrono::floor<std::chrono::seconds>(t.time_since_epoch()) / opt_.bucket;
}

node_stats::host_entry* node_stats::entry(host_ref h) noexcept {
    return h && h.slot < hosts_.size() ? hosts_[h.slot].get() : nullptr;
}

node_stats::host_ref node_stats::call_started(std::string_view host) {
    std::lock_guard lock(hosts_mutex_);
    std::uint32_t slot = 0;
    if (const auto it = host_index_.find(host); it != host_index_.end()) {
        slot = it->second;
    } else if (hosts_.size() < opt_.max_hosts) {
        slot = static_cast<std::uint32_t>(hosts_.size());
        auto e = std::make_unique<host_entry>();
        e->ring.resize(opt_.buckets);
        e->last_error.reserve(opt_.max_error_bytes);
        hosts_.push_back(std::move(e));
        host_index_.emplace(std::string(host), slot);
        hosts_[slot]->name = host;
    } else {
        // Full: the least recently used destination no call holds makes room.
        host_entry* victim = nullptr;
        for (std::size_t i = 0; i < hosts_.size(); ++i) {
            auto& e = *hosts_[i];
            if (e.pins == 0 && (!victim || e.touched < victim->touched)) {
                victim = &e;
                slot = static_cast<std::uint32_t>(i);
            }
        }
        if (!victim) {
            return {};
        }
        host_index_.erase(victim->name);
        host_index_.emplace(std::string(host), slot);
        victim->name = host;
        std::fill(victim->ring.begin(), victim->ring.end(), host_entry::slot{});
        victim->head = -1;
        victim->in_flight = 0;
        victim->deferred = 0;
        victim->backoff_until = {};
        victim->last_error.clear();
        victim->has_error = false;
    }
    auto& e = *hosts_[slot];
    ++e.pins;
    ++e.in_flight;
    e.touched = ++touches_;
    return {slot};
}

void node_stats::call_ended(host_ref h) noexcept {
    std::lock_guard lock(hosts_mutex_);
    if (auto* e = entry(h); e && e->in_flight > 0) {
        --e->in_flight;
    }
}

void node_stats::host_outcome(host_ref h, bool succeeded, std::string_view error,
                              system_clock::time_point now) noexcept {
    const auto n = index_of(now);
    std::lock_guard lock(hosts_mutex_);
    auto* e = entry(h);
    if (!e) {
        return;
    }
    auto& s = advance(e->ring, e->head, n);
    if (succeeded) {
        ++s.succeeded;
    } else {
        ++s.failed;
        // Within the capacity reserved at creation: no allocation.
        e->last_error.assign(cut_utf8(error, opt_.max_error_bytes));
        e->has_error = true;
    }
    e->pins -= e->pins > 0 ? 1 : 0;
    e->touched = ++touches_;
}

void node_stats::host_deferred(host_ref h, std::chrono::milliseconds wait,
                               system_clock::time_point now) noexcept {
    std::lock_guard lock(hosts_mutex_);
    auto* e = entry(h);
    if (!e) {
        return;
    }
    if (e->backoff_until <= now) {
        e->deferred = 0; // a new back-off
    }
    ++e->deferred;
    e->backoff_until = std::max(e->backoff_until, now + wait);
    e->pins -= e->pins > 0 ? 1 : 0;
    e->touched = ++touches_;
}

// --- Reading -------------------------------------------------------------------------------

std::chrono::milliseconds node_figures::lateness_quantile(double q) const noexcept {
    if (lateness_count == 0) {
        return std::chrono::milliseconds(0);
    }
    const auto rank = std::max<std::uint64_t>(
        1, static_cast<std::uint64_t>(std::ceil(q * static_cast<double>(lateness_count))));
    std::uint64_t cumulative = 0;
    for (std::size_t i = 0; i < lateness_bounds_ms.size(); ++i) {
        cumulative += lateness[i];
        if (cumulative >= rank) {
            return std::min(std::chrono::milliseconds(lateness_bounds_ms[i]), lateness_max);
        }
    }
    return lateness_max;
}

node_figures node_stats::read(system_clock::time_point now) const {
    node_figures f;
    const auto buckets = static_cast<std::int64_t>(opt_.buckets);
    f.window = opt_.bucket * buckets;
    const auto newest = index_of(now);
    const auto oldest = newest - buckets + 1;
    f.throughput.resize(opt_.buckets);
    for (std::int64_t k = oldest; k <= newest; ++k) {
        f.throughput[static_cast<std::size_t>(k - oldest)].at = system_clock::time_point(
            std::chrono::duration_cast<system_clock::duration>(opt_.bucket * k));
    }
    std::uint64_t fired = 0;
    for (const auto& sh : shards_) {
        std::lock_guard lock(sh->mutex_);
        for (std::int64_t k = oldest; k <= newest; ++k) {
            const auto* s = slot_at(sh->ring_, sh->head_, k);
            if (!s) {
                continue;
            }
            auto& b = f.throughput[static_cast<std::size_t>(k - oldest)];
            b.fired += s->fired;
            b.succeeded += s->succeeded;
            b.failed += s->failed;
            fired += s->fired;
            for (std::size_t i = 0; i < s->lateness.size(); ++i) {
                f.lateness[i] += s->lateness[i];
                f.lateness_count += s->lateness[i];
            }
            f.lateness_max =
                std::max(f.lateness_max,
                         std::chrono::milliseconds(static_cast<std::int64_t>(s->lateness_max_ms)));
        }
    }
    // Over the window, or the time since the start when that is shorter (a node up for 30 s
    // that fired 300 callbacks fires 10 a second, not 1).
    const auto covered = std::clamp(std::chrono::duration<double>(now - start_).count(), 1.0,
                                    std::chrono::duration<double>(f.window).count());
    f.callbacks_per_second = static_cast<double>(fired) / covered;

    {
        std::lock_guard lock(hosts_mutex_);
        for (const auto& e : hosts_) {
            node_figures::host h;
            for (std::int64_t k = oldest; k <= newest; ++k) {
                if (const auto* s = slot_at(e->ring, e->head, k)) {
                    h.succeeded += s->succeeded;
                    h.failed += s->failed;
                }
            }
            h.in_flight = e->in_flight;
            h.backing_off = e->backoff_until > now ? e->deferred : 0;
            if (h.in_flight == 0 && h.backing_off == 0 && h.succeeded == 0 && h.failed == 0) {
                continue; // nothing within the window
            }
            h.name = e->name;
            if (e->has_error) {
                h.last_error = callback::valid_utf8(e->last_error, opt_.max_error_bytes);
            }
            f.hosts.push_back(std::move(h));
        }
    }
    std::sort(f.hosts.begin(), f.hosts.end(), [](const auto& a, const auto& b) {
        if (a.failed != b.failed) {
            return a.failed > b.failed;
        }
        if (a.in_flight + a.backing_off != b.in_flight + b.backing_off) {
            return a.in_flight + a.backing_off > b.in_flight + b.backing_off;
        }
        return a.name < b.name;
    });
    return f;
}

} // namespace timewheeld::service
