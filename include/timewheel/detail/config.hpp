//
// timewheel/detail/config.hpp
//
// Compiler settings shared by the headers.
//

#ifndef TIMEWHEEL_DETAIL_CONFIG_HPP
#define TIMEWHEEL_DETAIL_CONFIG_HPP

// Forces inlining of the few functions that an arm goes through: at a million cold timers
// every call boundary (saved registers, the return) lengthens the operation, and so shortens
// how many operations' cache misses the processor overlaps.
#if defined(__GNUC__) || defined(__clang__)
#define TIMEWHEEL_ALWAYS_INLINE [[gnu::always_inline]]
#define TIMEWHEEL_NOINLINE [[gnu::noinline]]
#else
#define TIMEWHEEL_ALWAYS_INLINE
#define TIMEWHEEL_NOINLINE
#endif

#endif // TIMEWHEEL_DETAIL_CONFIG_HPP
