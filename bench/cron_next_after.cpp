//
// bench/cron_next_after.cpp
//
// cron::schedule::next_after, the call a materialiser makes once per occurrence (issue 28:
// 100,000 schedules firing every minute are 1,700 calls a second). A program of its own,
// cron_bench, so that timewheel_bench does not link the date library. Names:
//
//   cron/next_after/daily_berlin      `0 9 * * *` in Europe/Berlin (named hours: the
//                                     wall-clock search and one zone lookup per candidate)
//   cron/next_after/every_15_berlin   `*/15 * * * *` in Europe/Berlin (every hour: the search
//                                     within the zone's span of constant offset)
//   cron/next_after/every_15_utc      `*/15 * * * *` in UTC
//   cron/next_after/feb_29            `0 0 29 2 *` in UTC: a search across years
//
// Each iteration asks for the occurrence after the previous one, starting from
// 2026-01-01, so the calls walk a year and cross both of Berlin's transitions.
//
#include <timewheel/cron/schedule.hpp>

#include <benchmark/benchmark.h>

#include <chrono>

namespace {

namespace cron = timewheel::cron;
using namespace std::chrono;

void run(benchmark::State& state, const char* expression, const char* zone) {
    const auto s = cron::schedule::parse(expression, zone);
    const cron::time_point start{sys_days{year{2026} / 1 / 1}};
    auto t = start;
    for (auto _ : state) {
        auto n = s.next_after(t);
        benchmark::DoNotOptimize(n);
        t = n && *n < start + years{50} ? *n : start;
    }
}

} // namespace

BENCHMARK_CAPTURE(run, daily_berlin, "0 9 * * *", "Europe/Berlin")
    ->Name("cron/next_after/daily_berlin");
BENCHMARK_CAPTURE(run, every_15_berlin, "*/15 * * * *", "Europe/Berlin")
    ->Name("cron/next_after/every_15_berlin");
BENCHMARK_CAPTURE(run, every_15_utc, "*/15 * * * *", "UTC")->Name("cron/next_after/every_15_utc");
BENCHMARK_CAPTURE(run, feb_29, "0 0 29 2 *", "UTC")->Name("cron/next_after/feb_29");

BENCHMARK_MAIN();
