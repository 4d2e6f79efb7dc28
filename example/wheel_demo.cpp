// wheel_demo: the core wheel at work, on simulated time (1 tick = 1 ms).
//
// Ten "connections" get an idle timeout of 5 s. Some keep talking (each message pushes the
// timeout back, lazily and at O(1)); the quiet ones are reaped 5 s after their last word.
// A few reminders use slack: they accept lateness and fire without cascading.

#include <timewheel/wheel.hpp>

#include <cstdio>
#include <random>
#include <vector>

namespace {

struct connection : timewheel::wheel_entry {
    int id = 0;
    int messages = 0;
};

constexpr timewheel::tick_type idle_timeout = 5'000;

} // namespace

int main() {
    timewheel::wheel wheel;
    std::vector<connection> connections(10);
    for (int i = 0; i < 10; ++i) {
        connections[i].id = i;
        wheel.arm(connections[i], wheel.now() + idle_timeout);
    }

    std::mt19937 random(42);
    int reaped = 0;
    auto on_expiry = [&](timewheel::wheel_entry& entry) {
        auto& c = static_cast<connection&>(entry);
        std::printf("t=%6llu ms  connection %d reaped after %d messages (deadline %llu)\n",
                    static_cast<unsigned long long>(wheel.now()), c.id, c.messages,
                    static_cast<unsigned long long>(c.deadline()));
        ++reaped;
    };

    // Twenty seconds in steps of 100 ms; even-numbered connections talk until t = 12 s.
    for (timewheel::tick_type t = 100; t <= 20'000; t += 100) {
        for (auto& c : connections) {
            if (c.id % 2 == 0 && t <= 12'000 && random() % 4 == 0 && c.armed()) {
                ++c.messages;
                wheel.move(c, t + idle_timeout); // lazy: usually touches nothing but a number
            }
        }
        wheel.advance(t, on_expiry);
    }
    std::printf("%d of %zu connections reaped; wheel empty: %s\n", reaped, connections.size(),
                wheel.empty() ? "yes" : "no");
    const bool connections_ok = reaped == static_cast<int>(connections.size()) && wheel.empty();

    // Slack: a reminder due in 3.3 s that may be up to 4 s late is rounded up to a multiple of
    // 4096 ticks and fires in place.
    connection reminder;
    reminder.id = 100;
    wheel.arm(reminder, wheel.now() + 3'300, 4'095);
    std::printf("reminder armed at t=%llu for %llu with slack 4095; next wakeup at %llu\n",
                static_cast<unsigned long long>(wheel.now()),
                static_cast<unsigned long long>(reminder.deadline()),
                static_cast<unsigned long long>(*wheel.next_expiry()));
    wheel.advance(wheel.now() + 10'000, on_expiry);
    // The reminder is reaped by the same handler: one more than the connections.
    const bool reminder_ok =
        reaped == static_cast<int>(connections.size()) + 1 && !reminder.armed();
    return connections_ok && reminder_ok ? 0 : 1;
}
