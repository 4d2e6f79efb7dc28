//
// wheel_timer_coroutine: idle timeouts for coroutine sessions with timewheel::wheel_timer.
//
// A server usually gives every connection an idle timeout: if the peer says nothing for a
// while, the connection is closed. With Asio coroutines this is a race between "read the
// next message" and "the idle timer expires", written with awaitable_operators' ||.
//
// Here four simulated sessions each receive a few messages (a "read" is just a wheel_timer
// wait that stands in for a socket read), with an idle timeout of 300 ms:
//
//   alice  talks every 100 ms, then closes the connection herself;
//   bob    sends three messages, then goes quiet and is timed out;
//   carol  never says anything and is timed out after 300 ms;
//   dave   slows down; his last gap (500 ms) is longer than the timeout.
//
// The point to notice: each message pushes the idle timeout back with reschedule_after(),
// which keeps the pending idle wait as it is. With a steady_timer you would call
// expires_after(), which completes the pending wait with operation_aborted, and you would
// then have to start a new wait; reschedule_after() runs no handler, allocates nothing and,
// since the new deadline is later, costs one store.
//
// The program checks what it prints: each session ends the way its plan says, and no idle
// timeout fires before 300 ms of silence. It returns 0 if so, 1 otherwise, in about 1 s.
//

#include <timewheel/wheel_timer.hpp>

#include <boost/asio/awaitable.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <chrono>
#include <cstdio>
#include <exception>
#include <variant>
#include <vector>

namespace net = boost::asio;
using namespace boost::asio::experimental::awaitable_operators; // for ||
using namespace std::chrono_literals;
using clock_type = std::chrono::steady_clock;

namespace {

constexpr auto idle_timeout = 300ms;

// What a simulated peer does, and how its session should end.
struct session_plan {
    const char* name;
    std::vector<std::chrono::milliseconds> gaps; // the silence before each message
    int expected_messages;                       // messages read before the session ends
    bool expect_timeout;                         // ended by the idle timeout, not by the peer
};

const clock_type::time_point program_start = clock_type::now();

long long elapsed_ms() {
    return std::chrono::duration_cast<std::chrono::milliseconds>(clock_type::now() - program_start)
        .count();
}

// Reads the peer's messages until it closes the connection (runs out of gaps). Every
// message pushes the idle timeout back. Returns the number of messages read.
net::awaitable<int> read_messages(const session_plan& plan, timewheel::wheel_timer& idle,
                                  clock_type::time_point& last_activity) {
    // The stand-in for a socket: waiting `gap` is "receiving the next message".
    timewheel::wheel_timer socket(co_await net::this_coro::executor);
    int messages = 0;
    for (const auto gap : plan.gaps) {
        socket.expires_after(gap);
        co_await socket.async_wait(net::use_awaitable); // throws if the session is cancelled
        ++messages;
        last_activity = clock_type::now();
        // The idle wait in watch_idle() stays pending; only its deadline moves.
        idle.reschedule_after(idle_timeout);
        std::printf("%5lld ms  %-6s message %d\n", elapsed_ms(), plan.name, messages);
    }
    co_return messages;
}

// Completes when the idle timer expires, that is after idle_timeout of silence.
net::awaitable<void> watch_idle(timewheel::wheel_timer& idle) {
    co_await idle.async_wait(net::use_awaitable);
}

// One session: the reader races the idle timer. Whichever finishes first wins, and ||
// cancels the other one (its pending wait completes with operation_aborted).
net::awaitable<void> session(const session_plan& plan, int& failures) {
    clock_type::time_point last_activity = clock_type::now();
    timewheel::wheel_timer idle(co_await net::this_coro::executor, last_activity + idle_timeout);

    const std::variant<int, std::monostate> outcome =
        co_await (read_messages(plan, idle, last_activity) || watch_idle(idle));

    bool as_planned = false;
    if (outcome.index() == 0) {
        const int messages = std::get<0>(outcome);
        std::printf("%5lld ms  %-6s closed by the peer after %d messages\n", elapsed_ms(),
                    plan.name, messages);
        as_planned = !plan.expect_timeout && messages == plan.expected_messages;
    } else {
        // The idle timer never fires early: at least idle_timeout of silence has passed.
        const auto silence = std::chrono::duration_cast<std::chrono::milliseconds>(
            clock_type::now() - last_activity);
        std::printf("%5lld ms  %-6s idle timeout after %lld ms of silence\n", elapsed_ms(),
                    plan.name, static_cast<long long>(silence.count()));
        as_planned = plan.expect_timeout && silence >= idle_timeout;
    }
    if (!as_planned) {
        std::printf("           %-6s did NOT end as planned\n", plan.name);
        ++failures;
    }
}

} // namespace

int main() {
    const std::vector<session_plan> plans = {
        {"alice", {100ms, 100ms, 100ms, 100ms, 100ms}, 5, false},
        {"bob", {100ms, 100ms, 100ms, 1000ms}, 3, true},
        {"carol", {1000ms}, 0, true},
        {"dave", {100ms, 150ms, 200ms, 500ms}, 3, true},
    };

    net::io_context io;
    int failures = 0;
    for (const session_plan& plan : plans) {
        // Start the session; the lambda runs when it ends, with the exception it threw, if any.
        net::co_spawn(io, session(plan, failures), [&failures, &plan](std::exception_ptr e) {
            if (e) {
                std::printf("           %-6s failed with an exception\n", plan.name);
                ++failures;
            }
        });
    }

    // Runs until every session has ended: a pending wait keeps the io_context busy, and an
    // empty wheel leaves it nothing to do.
    io.run();

    // All these timers lived in one timing wheel, driven by a single steady_timer.
    const auto& wheel = net::use_service<timewheel::wheel_service>(io);
    std::printf("done in %lld ms: %d session(s) not as planned; the wheel woke up %llu times\n",
                elapsed_ms(), failures, static_cast<unsigned long long>(wheel.wakeups()));
    return failures == 0 ? 0 : 1;
}
