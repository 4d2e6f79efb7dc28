//
// test/support/seed.hpp
//
// The seed of a randomised test: TIMEWHEEL_SEED when it is set, so that any run can be
// replayed, and printed, so that a failed run says how to replay it. Also the other numbers
// such tests read from the environment (TIMEWHEEL_OPS), checked. test/CMakeLists.txt runs
// each *_differential test once per seed of TIMEWHEEL_DIFFERENTIAL_SEEDS this way.
//

#ifndef TIMEWHEEL_TEST_SUPPORT_SEED_HPP
#define TIMEWHEEL_TEST_SUPPORT_SEED_HPP

#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <iostream>
#include <optional>
#include <stdexcept>
#include <string>

namespace timewheel::test {

// The environment variable `name` as a decimal number, or nullopt if it is unset or empty.
// Throws std::invalid_argument, naming the variable and its text, if it is not a number.
inline std::optional<std::uint64_t> env_number(const char* name) {
    const char* text = std::getenv(name);
    if (text == nullptr || *text == '\0') {
        return std::nullopt;
    }
    char* end = nullptr;
    errno = 0;
    const std::uint64_t value = std::strtoull(text, &end, 10);
    if (*end != '\0' || errno != 0 || *text == '-' || *text == '+' || *text == ' ') {
        throw std::invalid_argument(std::string(name) + " must be a decimal number, got '" + text +
                                    "'");
    }
    return value;
}

// TIMEWHEEL_SEED if it is set, `fallback` otherwise; prints "<test>: TIMEWHEEL_SEED=<seed>".
inline std::uint64_t seed_from_environment(const char* test, std::uint64_t fallback) {
    const std::uint64_t seed = env_number("TIMEWHEEL_SEED").value_or(fallback);
    std::cout << test << ": TIMEWHEEL_SEED=" << seed << std::endl;
    return seed;
}

} // namespace timewheel::test

#endif // TIMEWHEEL_TEST_SUPPORT_SEED_HPP
