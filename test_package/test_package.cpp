// Smoke test of an installed timewheel: arms a few entries, advances the wheel and checks
// that each fired exactly once, at its deadline; then waits on a wheel_timer in an io_context
// (Boost.Asio, so the platform threads must be linked as the package declares). Exits 0 on
// success, 1 on failure.

#include <timewheel/wheel.hpp>
#include <timewheel/wheel_timer.hpp>

#include <boost/asio/io_context.hpp>

#include <chrono>
#include <cstdio>
#include <vector>

namespace {

struct timer {
    timewheel::wheel_entry entry;
    timewheel::tick_type fired_at = 0;
    int fired = 0;
};

} // namespace

int main() {
    timewheel::wheel w; // defined in the library: this links against libtimewheel

    std::vector<timer> timers(4);
    const timewheel::tick_type deadlines[] = {1, 64, 5000, 300000}; // levels 0, 1, 2, 3
    for (std::size_t i = 0; i < timers.size(); ++i) {
        w.arm(timers[i].entry, deadlines[i]);
    }

    auto on_expiry = [&](timewheel::wheel_entry& e) {
        for (auto& t : timers) {
            if (&t.entry == &e) {
                ++t.fired;
                t.fired_at = w.now();
            }
        }
    };

    bool ok = w.advance(0, on_expiry) == 0; // nothing is due yet
    ok = ok && w.advance(4999, on_expiry) == 2;
    ok = ok && w.advance(1000000, on_expiry) == 2 && w.empty();
    for (std::size_t i = 0; i < timers.size(); ++i) {
        if (timers[i].fired != 1 || timers[i].fired_at != deadlines[i]) {
            ok = false;
        }
    }

    boost::asio::io_context io;
    timewheel::wheel_timer timer(io, std::chrono::milliseconds(1));
    bool waited = false;
    timer.async_wait([&](boost::system::error_code ec) { waited = !ec; });
    io.run();
    ok = ok && waited;

    std::puts(ok ? "timewheel test_package: OK" : "timewheel test_package: FAILED");
    return ok ? 0 : 1;
}
