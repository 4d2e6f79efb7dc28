// test/redis/support/cluster_run.hpp
//
// Runs one request of a redis::cluster to completion on an io_context (with run_until of
// redis_fixture.hpp: its connections keep timers armed, so run() alone would not return).

#ifndef TIMEWHEEL_TEST_REDIS_SUPPORT_CLUSTER_RUN_HPP
#define TIMEWHEEL_TEST_REDIS_SUPPORT_CLUSTER_RUN_HPP

#include <timewheel/redis/cluster.hpp>

#include <test/redis/support/redis_fixture.hpp>

#include <boost/asio/io_context.hpp>

#include <chrono>
#include <cstddef>
#include <stdexcept>

namespace timewheel::test {

/// cluster.async_exec(req, resp), run to completion; returns its error code.
inline boost::system::error_code exec(boost::asio::io_context& io, redis::cluster& c,
                                      redis::request const& req, redis::response& resp) {
    bool done = false;
    boost::system::error_code result;
    std::size_t replies = 0;
    c.async_exec(req, resp, [&](boost::system::error_code ec, std::size_t n) {
        result = ec;
        replies = n;
        done = true;
    });
    if (!run_until(
            io, [&] { return done; }, std::chrono::seconds(60)))
        throw std::runtime_error("cluster::async_exec did not complete within 60 s");
    if (replies != resp.size())
        throw std::logic_error("cluster::async_exec reported a wrong reply count");
    return result;
}

} // namespace timewheel::test

#endif // TIMEWHEEL_TEST_REDIS_SUPPORT_CLUSTER_RUN_HPP
