// Consumer of timewheel through add_subdirectory(): arms two entries, advances the wheel
// and checks that both fired, in deadline order. Exits 0 on success, 1 on failure.

#include <timewheel/wheel.hpp>

#include <cstdio>

int main() {
    timewheel::wheel w;
    timewheel::wheel_entry early;
    timewheel::wheel_entry late;
    w.arm(late, 200);
    w.arm(early, 10);

    int order = 0;
    int early_pos = 0;
    int late_pos = 0;
    const std::size_t fired = w.advance(
        1000, [&](timewheel::wheel_entry& e) { (&e == &early ? early_pos : late_pos) = ++order; });

    const bool ok = fired == 2 && early_pos == 1 && late_pos == 2 && w.empty();
    std::puts(ok ? "timewheel consumer_subdirectory: OK"
                 : "timewheel consumer_subdirectory: FAILED");
    return ok ? 0 : 1;
}
