//
// bench/support/handler_poll.hpp
//
// When the benchmarks run the handlers that their operations queue (the operation_aborted
// handlers of cancelled or re-armed waits): the one method of every timer benchmark, so
// that steady_timer and wheel_timer pay the same way in every file.
//
// A cancelled wait's handler runs in a real program too, soon after the cancel: a server
// cancels a timer from a handler, and the io_context runs the aborted handler after the
// handlers already ready, between two passes of the reactor (Asio's epoll reactor takes
// up to 128 events per epoll_wait). So the benchmarks poll the io_context every
// `poll_every` operations, inside the timed region, and at the end of each batch. Running
// them only once per batch of N/10 instead (100,000 queued handlers at 1,000,000 timers)
// measures a mass cancellation whose operations have left the cache before their handlers
// run: steady_timer's cancel then costs about twice as much (1,045 against 577 ns in the
// run of 2026-11-23), which no steady state of a server pays.
//

#ifndef TIMEWHEEL_BENCH_SUPPORT_HANDLER_POLL_HPP
#define TIMEWHEEL_BENCH_SUPPORT_HANDLER_POLL_HPP

#include <boost/asio/io_context.hpp>

#include <cstddef>

namespace timewheel_bench {

/// Operations between two polls of the io_context.
inline constexpr std::size_t poll_every = 128;

/// Runs an io_context's ready handlers every poll_every operations, and on flush().
class handler_poll {
public:
    explicit handler_poll(boost::asio::io_context& io) noexcept
        : io_(io) {}

    /// Call after each operation.
    void after_op() {
        if (--countdown_ == 0) {
            flush();
        }
    }

    /// Runs every ready handler now (at the end of a batch).
    void flush() {
        io_.restart();
        io_.poll();
        countdown_ = poll_every;
    }

private:
    boost::asio::io_context& io_;
    std::size_t countdown_ = poll_every;
};

} // namespace timewheel_bench

#endif // TIMEWHEEL_BENCH_SUPPORT_HANDLER_POLL_HPP
