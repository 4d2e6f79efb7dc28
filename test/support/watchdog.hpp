//
// test/support/watchdog.hpp
//
// Turning a hang into a failure: a watchdog stops an io_context that runs past its time
// limit, and run() runs one until it has no work left, failing the test if it had to be
// stopped.
//
//     timewheel::test::run(io);   // io.run(), at most 30 s, then a failed check
//

#ifndef TIMEWHEEL_TEST_SUPPORT_WATCHDOG_HPP
#define TIMEWHEEL_TEST_SUPPORT_WATCHDOG_HPP

#include <boost/asio/io_context.hpp>
#include <boost/test/unit_test.hpp>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>

namespace timewheel::test {

// Stops `io` if it is still alive `limit` after construction. A thread of its own waits for
// the limit or for the destructor, whichever comes first.
class watchdog {
public:
    explicit watchdog(boost::asio::io_context& io,
                      std::chrono::seconds limit = std::chrono::seconds(30))
        : thread_([this, &io, limit] {
            std::unique_lock<std::mutex> lock(mutex_);
            if (!done_cv_.wait_for(lock, limit, [this] { return done_; })) {
                fired_ = true;
                io.stop();
            }
        }) {}

    watchdog(const watchdog&) = delete;
    watchdog& operator=(const watchdog&) = delete;

    ~watchdog() {
        {
            std::lock_guard<std::mutex> lock(mutex_);
            done_ = true;
        }
        done_cv_.notify_one();
        thread_.join();
    }

    // Whether the limit passed and the io_context was stopped.
    bool fired() const noexcept { return fired_; }

private:
    std::mutex mutex_;
    std::condition_variable done_cv_;
    bool done_ = false;
    std::atomic<bool> fired_{false};
    std::thread thread_; // last: starts once the members it uses exist
};

// Runs `io` (after restart()) until it has no work, failing the test if that takes longer
// than `limit`.
inline void run(boost::asio::io_context& io,
                std::chrono::seconds limit = std::chrono::seconds(30)) {
    io.restart();
    watchdog dog(io, limit);
    io.run();
    BOOST_TEST(!dog.fired(), "io_context::run() did not return within " << limit.count() << " s");
}

} // namespace timewheel::test

#endif // TIMEWHEEL_TEST_SUPPORT_WATCHDOG_HPP
