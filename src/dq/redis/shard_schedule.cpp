//
// src/dq/redis/shard_schedule.cpp
//
// The next-due cache of dq::redis_store's claims (see shard_schedule.hpp for why it exists
// and why it is never later than the truth).
//

#include "shard_schedule.hpp"

#include "replies.hpp"

#include <algorithm>
#include <utility>

namespace timewheel::dq::detail {

shard_schedule::shard_schedule(std::size_t shards)
    : next_due_(shards, unknown_due) {}

void shard_schedule::saw_wakeup(std::string_view payload, std::int64_t due) {
    const auto close = payload.rfind('}');
    const auto colon = close == std::string_view::npos ? close : payload.rfind(':', close);
    if (colon == std::string_view::npos) {
        // Not ours to read: trust nothing until the next full visit.
        std::fill(next_due_.begin(), next_due_.end(), unknown_due);
        return;
    }
    const auto s =
        static_cast<std::size_t>(replies::to_int(payload.substr(colon + 1, close - colon - 1)));
    if (s < next_due_.size() && due < next_due_[s]) {
        next_due_[s] = due;
    }
}

void shard_schedule::forget(std::size_t shard) {
    next_due_[shard] = unknown_due;
}

void shard_schedule::saw_next_due(std::size_t shard, std::int64_t due) {
    if (shard < next_due_.size()) {
        next_due_[shard] = due >= 0 ? due : no_due;
    }
}

std::int64_t shard_schedule::estimated_now() const {
    const auto elapsed = std::chrono::steady_clock::now() - server_seen_at_;
    return server_ms_ + std::chrono::duration_cast<std::chrono::milliseconds>(elapsed).count();
}

std::vector<std::size_t> shard_schedule::shards_to_visit(std::int64_t horizon_ms, std::size_t batch,
                                                         bool subscribed) {
    const std::size_t n = next_due_.size();
    std::vector<std::size_t> visit;
    const auto now = std::chrono::steady_clock::now();
    if (!subscribed || now - last_full_visit_ >= full_visit_interval) {
        last_full_visit_ = now;
        visit.reserve(n);
        for (std::size_t i = 0; i < n; ++i) {
            visit.push_back((rotation_ + i) % n);
        }
        rotation_ = (rotation_ + 1) % n;
        // The batch goes to the first shards of the list (claim() spreads it in order): the
        // earliest due first (unknown ones before all), the rotation among equals. A batch
        // smaller than the shard count otherwise went round the shards in turn, and a claim
        // found nothing while a task was due in a shard whose turn had not come.
        std::stable_sort(visit.begin(), visit.end(), [this](std::size_t a, std::size_t b) {
            return next_due_[a] < next_due_[b];
        });
        return visit;
    }
    const std::int64_t limit = estimated_now() + horizon_ms;
    std::vector<std::pair<std::int64_t, std::size_t>> due;
    for (std::size_t i = 0; i < n; ++i) {
        const std::size_t s = (rotation_ + i) % n;
        if (next_due_[s] <= limit) {
            due.emplace_back(next_due_[s], s);
        }
    }
    rotation_ = (rotation_ + 1) % n;
    // Earliest first (unknown ones before all), so that no due shard waits behind later
    // ones: each claim takes the m earliest, and claiming moves their next-due on.
    const std::size_t m = std::min(due.size(), std::max<std::size_t>(1, batch / tasks_per_visit));
    std::partial_sort(due.begin(), due.begin() + static_cast<std::ptrdiff_t>(m), due.end(),
                      [](const auto& a, const auto& b) { return a.first < b.first; });
    visit.reserve(m);
    for (std::size_t i = 0; i < m; ++i) {
        visit.push_back(due[i].second);
    }
    return visit;
}

std::int64_t shard_schedule::next_due() const {
    std::int64_t best = no_due;
    for (auto d : next_due_) {
        best = std::min(best, d == unknown_due ? server_ms_ : d);
    }
    return best == no_due ? -1 : best;
}

void shard_schedule::saw_server_time(std::int64_t ms) {
    if (ms >= server_ms_) {
        server_ms_ = ms;
        server_seen_at_ = std::chrono::steady_clock::now();
    }
}

} // namespace timewheel::dq::detail
