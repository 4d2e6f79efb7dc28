// scheduled_work: repeating and keyed work on one io_context, which finishes by itself
// after about three seconds.
//
//  * Sessions (keyed_timers<std::string, session>) expire after 0.6 to 1.6 s of silence. Two of
//    them keep talking: each message pushes their deadline back (move_timer, O(1), found by a
//    std::string_view without building a string). The others expire and are logged.
//  * A heartbeat (repeating_task) runs every 250 ms, eight times, detached: it frees itself.
//  * A sweep runs every 400 ms with the `skip` policy. At 1 s a handler blocks the thread
//    for 900 ms: the sweep runs once, late, and keeps its phase (no burst of missed sweeps);
//    the keyed_timers fires the sessions that came due meanwhile, in deadline order.
//  * Timers named by ids (timer_registry, tao's API): a poll every 300 ms, cancelled by a
//    one-shot timer at 2 s.
//  * Four tasks created together with `spread` get their first runs spread over their
//    interval instead of firing at once.

#include <timewheel/keyed_timers.hpp>
#include <timewheel/repeating_task.hpp>
#include <timewheel/timer_registry.hpp>

#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>

#include <chrono>
#include <cstdio>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

namespace {

using namespace std::chrono_literals;
using clock_type = std::chrono::steady_clock;

const clock_type::time_point start = clock_type::now();

long long ms_since_start() {
    return std::chrono::duration_cast<std::chrono::milliseconds>(clock_type::now() - start).count();
}

struct session {
    std::string user;
};

} // namespace

int main() {
    boost::asio::io_context io;

    // --- Keyed timers: session expiry ----------------------------------------------------
    int expired = 0;
    int messages = 0;
    timewheel::keyed_timers<std::string, session> sessions(
        io, [&](const std::string& id, session& s) {
            ++expired;
            std::printf("%5lld ms  session %s (%s) expired\n", ms_since_start(), id.c_str(),
                        s.user.c_str());
        });
    const std::vector<std::string> users{"ada", "bob", "cy", "dee", "eve"};
    for (std::size_t i = 0; i < users.size(); ++i) {
        sessions.set_timer("session-" + std::to_string(i), session{users[i]},
                           600ms + static_cast<int>(i) * 250ms);
    }

    // Sessions 0 and 1 send a message every 200 ms until 1.6 s.
    timewheel::repeating_task chatter = timewheel::repeat_every(
        io, 200ms,
        [&] {
            for (std::string_view id :
                 {std::string_view("session-0"), std::string_view("session-1")}) {
                messages += sessions.move_timer(id, 600ms); // false once expired: no reinsert
            }
        },
        {.count = 8});

    // --- Repeating tasks -----------------------------------------------------------------
    timewheel::repeat_every(io, 250ms,
                            [](const timewheel::repeat_run& run) {
                                std::printf("%5lld ms  heartbeat %llu\n", ms_since_start(),
                                            static_cast<unsigned long long>(run.index + 1));
                            },
                            {.count = 8})
        .detach();

    timewheel::repeating_task sweep = timewheel::repeat_every(
        io, 400ms,
        [](const timewheel::repeat_run& run) {
            const auto late =
                std::chrono::duration_cast<std::chrono::milliseconds>(run.started - run.scheduled);
            std::printf(
                "%5lld ms  sweep %llu (due at %lld ms, %lld ms late)\n", ms_since_start(),
                static_cast<unsigned long long>(run.index + 1),
                static_cast<long long>(
                    std::chrono::duration_cast<std::chrono::milliseconds>(run.scheduled - start)
                        .count()),
                static_cast<long long>(late.count()));
        },
        {.count = 5, .missed = timewheel::missed_tick_policy::skip});

    timewheel::timer_registry timers(io);
    timers.add_timer(1s, 0s, [] {
        std::printf("%5lld ms  blocking the io thread for 900 ms\n", ms_since_start());
        std::this_thread::sleep_for(900ms);
    });

    // --- Timers named by ids -------------------------------------------------------------
    int polls = 0;
    const auto poll = timers.add_timer(300ms, 300ms, [&](timewheel::timer_registry::timer_id id) {
        std::printf("%5lld ms  poll %d (timer %llu)\n", ms_since_start(), ++polls,
                    static_cast<unsigned long long>(id));
    });
    timers.add_timer(2s, 0s, [&] {
        const bool cancelled = timers.cancel(poll);
        std::printf("%5lld ms  cancel poll: %s; %zu timers left\n", ms_since_start(),
                    cancelled ? "yes" : "no", timers.size());
    });

    // --- Spread --------------------------------------------------------------------------
    std::vector<timewheel::repeating_task> spread;
    for (int i = 0; i < 4; ++i) {
        spread.push_back(timewheel::repeat_every(
            io, 400ms, [i] { std::printf("%5lld ms  spread task %d runs\n", ms_since_start(), i); },
            {.count = 1, .spread = true}));
    }

    io.run(); // returns when nothing is left: every task counted, every session expired
    std::printf("%5lld ms  done: %d sessions expired, %d messages, %d polls, %llu sweeps\n",
                ms_since_start(), expired, messages, polls,
                static_cast<unsigned long long>(sweep.runs()));
    return expired == static_cast<int>(users.size()) ? 0 : 1;
}
