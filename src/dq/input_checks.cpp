//
// src/dq/input_checks.cpp
//
// The input checks every store makes (include/timewheel/dq/detail/input_checks.hpp).
//

#include <timewheel/dq/detail/input_checks.hpp>

#include <timewheel/dq/error.hpp>

namespace timewheel::dq::detail {

using boost::system::error_code;

error_code check_id(std::string_view id, const limits& lim) {
    if (id.empty()) {
        return error::empty_id;
    }
    if (id.size() > lim.max_id_bytes) {
        return error::id_too_long;
    }
    if (id.find('\0') != std::string_view::npos) {
        return error::invalid_id;
    }
    return {};
}

error_code check_due(const due_time& due, char& kind, std::int64_t& value) {
    if (const auto* tp = std::get_if<time_point>(&due)) {
        kind = 'a';
        value = tp->time_since_epoch().count();
        if (value < 0 || *tp > max_due) {
            return error::due_out_of_range;
        }
    } else {
        kind = 'r';
        value = std::get<duration>(due).count();
        const auto limit = max_due.time_since_epoch().count();
        if (value > limit || value < -limit) {
            return error::due_out_of_range;
        }
    }
    return {};
}

error_code check_policy(const retry_policy& p) {
    if (p.max_attempts == 0) {
        return error::zero_attempts;
    }
    if (p.base.count() < 0 || p.cap.count() < 0 || p.base > p.cap ||
        p.cap.count() > max_backoff_ms) {
        return error::invalid_backoff;
    }
    return {};
}

error_code check_leases(const std::vector<lease_ref>& leases, const limits& lim) {
    if (leases.size() > max_batch) {
        return error::invalid_argument;
    }
    for (const auto& l : leases) {
        if (auto ec = check_id(l.id, lim)) {
            return ec;
        }
        if (l.token.empty() || l.token.size() > 64) {
            return error::invalid_argument;
        }
    }
    return {};
}

std::string generate_id(std::mt19937_64& rng) {
    static constexpr char digits[] =
        "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
    std::string id(12, '0');
    std::uint64_t a = rng();
    std::uint64_t b = rng();
    for (std::size_t i = 0; i < id.size(); ++i) {
        std::uint64_t& v = i < 6 ? a : b;
        id[i] = digits[v % 62];
        v /= 62;
    }
    return id;
}

} // namespace timewheel::dq::detail
