// The entry point of the one benchmark binary; each file in bench/ registers its own cases.
#include <benchmark/benchmark.h>

BENCHMARK_MAIN();
