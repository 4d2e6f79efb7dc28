// Helpers shared by the Cluster tests: run one operation of a redis::cluster to completion on
// an io_context (whose connections keep timers armed, so run() alone would not return), and
// read the values a response holds.

#ifndef TIMEWHEEL_TEST_REDIS_SUPPORT_CLUSTER_RUN_HPP
#define TIMEWHEEL_TEST_REDIS_SUPPORT_CLUSTER_RUN_HPP

#include <timewheel/redis/cluster.hpp>

#include <boost/asio/io_context.hpp>

#include <chrono>
#include <cstddef>
#include <stdexcept>
#include <string>
#include <utility>

namespace timewheel::redis::test {

/// Runs @p io until @p done is true; fails after @p limit (a hung test, not a timing check).
template <typename Done>
void run_until(boost::asio::io_context& io, Done done,
               std::chrono::seconds limit = std::chrono::seconds(60)) {
    auto const give_up = std::chrono::steady_clock::now() + limit;
    io.restart();
    while (!done()) {
        io.run_one_for(std::chrono::milliseconds(100));
        if (std::chrono::steady_clock::now() > give_up)
            throw std::runtime_error("the operation did not complete in time");
    }
}

/// Runs cluster.async_exec(req, resp) to completion.
inline boost::system::error_code exec(boost::asio::io_context& io, cluster& c, request const& req,
                                      response& resp) {
    bool done = false;
    boost::system::error_code result;
    c.async_exec(req, resp, [&](boost::system::error_code ec, std::size_t n) {
        result = ec;
        done = true;
        if (!ec && n != resp.size())
            throw std::logic_error("async_exec reported a wrong reply count");
    });
    run_until(io, [&] { return done; });
    return result;
}

} // namespace timewheel::redis::test

#endif // TIMEWHEEL_TEST_REDIS_SUPPORT_CLUSTER_RUN_HPP
