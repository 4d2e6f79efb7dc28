// The umbrella header: every public header compiles together with every other, and the
// features share one io_context's wheel.
#define BOOST_TEST_MODULE umbrella
#include <timewheel.hpp>

#include <boost/asio/io_context.hpp>
#include <boost/test/unit_test.hpp>

#include <chrono>
#include <string>

using namespace std::chrono_literals;

BOOST_AUTO_TEST_CASE(features_share_one_wheel) {
    boost::asio::io_context io;
    int fired = 0;
    timewheel::wheel_timer timer(io, 1ms);
    timer.async_wait([&](boost::system::error_code ec) { fired += !ec; });
    timewheel::callback_timer callback(io, [&] { ++fired; });
    callback.expires_after(2ms);
    timewheel::keyed_timers<std::string, int> keyed(
        io, [&](const std::string&, int& value) { fired += value; });
    keyed.set_timer("key", 1, 3ms);
    timewheel::ttl_cache<std::string, int> cache(io, 1h);
    cache.set("cached", 7);

    auto& service = boost::asio::use_service<timewheel::wheel_service>(io);
    BOOST_TEST(service.size() == 4u); // the wait, the callback, the key and the cache entry
    cache.clear();
    io.run();
    BOOST_TEST(fired == 3);
    BOOST_TEST(service.size() == 0u);
}
