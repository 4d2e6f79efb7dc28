// A consumer of the installed timewheel::cron: compiles against the installed headers, links
// the installed library and the date library, and reads the system's tz database.
#include <timewheel/cron/cron_task.hpp>
#include <timewheel/cron/schedule.hpp>

#include <chrono>
#include <iostream>

int main() {
    namespace cron = timewheel::cron;
    using namespace std::chrono;
    const auto s = cron::schedule::parse("30 2 * * *", "Europe/Berlin");
    // 2026-03-29 02:30 does not exist in Berlin: it runs at 03:00 CEST, 01:00 UTC.
    const auto t = s.next_after(cron::time_point{sys_days{year{2026} / 3 / 28} + hours{12}});
    if (!t || s.local_time(*t) != "2026-03-29T03:00:00+02:00") {
        std::cerr << "consumer_cron: unexpected " << (t ? s.local_time(*t) : "none") << '\n';
        return 1;
    }
    std::cout << "consumer_cron: timewheel::cron links\n";
    return 0;
}
