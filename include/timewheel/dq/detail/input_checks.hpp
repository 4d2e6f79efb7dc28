//
// timewheel/dq/detail/input_checks.hpp
//
// What every store checks before it writes anything: ids, due times, retry policies and
// leases, each failing with the dq::error that names what was wrong; and the generated ids.
// One home, so that the Redis and SQLite stores refuse exactly the same input.
//
#ifndef TIMEWHEEL_DQ_DETAIL_INPUT_CHECKS_HPP
#define TIMEWHEEL_DQ_DETAIL_INPUT_CHECKS_HPP

#include <timewheel/dq/store.hpp>

#include <boost/system/error_code.hpp>

#include <cstddef>
#include <cstdint>
#include <random>
#include <string>
#include <string_view>
#include <vector>

namespace timewheel::dq::detail {

/// The most leases or acks in one call (Redis's Lua unpack() takes about 8000 values).
inline constexpr std::size_t max_batch = 4000;
/// The largest backoff cap or retry delay, in ms (the stores keep times in 48 bits).
inline constexpr std::int64_t max_backoff_ms = (std::int64_t(1) << 48) - 1;

/// empty_id, id_too_long (over lim.max_id_bytes) or invalid_id (a NUL byte).
boost::system::error_code check_id(std::string_view id, const limits& lim);

/// due_out_of_range, or the due time as kind ('a' absolute, 'r' relative) and ms.
boost::system::error_code check_due(const due_time& due, char& kind, std::int64_t& value);

/// zero_attempts or invalid_backoff.
boost::system::error_code check_policy(const retry_policy& p);

/// invalid_argument (too many, or a token empty or over 64 bytes), or an id's error.
boost::system::error_code check_leases(const std::vector<lease_ref>& leases, const limits& lim);

/// A generated task id: 12 characters of [0-9A-Za-z] (71 random bits).
std::string generate_id(std::mt19937_64& rng);

} // namespace timewheel::dq::detail

#endif // TIMEWHEEL_DQ_DETAIL_INPUT_CHECKS_HPP
