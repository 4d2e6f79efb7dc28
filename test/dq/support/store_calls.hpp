//
// test/dq/support/store_calls.hpp
//
// Calls a dq::store's asynchronous operations to completion on an io_context, for tests:
//   auto [ec, result, id] = timewheel::test::call<dq::submit_result, std::string>(
//       io, [&](auto h) { store.submit(t, std::move(h)); });
// and the server-side checks the store tests share (DBSIZE, a raw command's reply).
//
#ifndef TIMEWHEEL_TEST_DQ_SUPPORT_STORE_CALLS_HPP
#define TIMEWHEEL_TEST_DQ_SUPPORT_STORE_CALLS_HPP

#include <timewheel/dq/store.hpp>

#include <test/redis/support/redis_fixture.hpp>

#include <boost/asio/io_context.hpp>
#include <boost/system/error_code.hpp>
#include <boost/test/unit_test.hpp>

#include <chrono>
#include <optional>
#include <stdexcept>
#include <tuple>
#include <utility>

// Boost.Test prints the values of failed checks; libstdc++ 12 cannot print a sys_time.
BOOST_TEST_DONT_PRINT_LOG_VALUE(timewheel::dq::time_point)

namespace timewheel::test {

/// Starts an operation with `start(handler)` and runs `io` until it completes (60 s at most).
template <typename... R, typename Start>
std::tuple<boost::system::error_code, R...> call(boost::asio::io_context& io, Start start) {
    std::optional<std::tuple<boost::system::error_code, R...>> out;
    start([&out](boost::system::error_code ec, R... r) { out.emplace(ec, std::move(r)...); });
    if (!timewheel::test::run_until(
            io, [&] { return out.has_value(); }, std::chrono::seconds(60))) {
        throw std::runtime_error("a dq::store operation did not complete within 60 s");
    }
    return std::move(*out);
}

} // namespace timewheel::test

#endif // TIMEWHEEL_TEST_DQ_SUPPORT_STORE_CALLS_HPP
