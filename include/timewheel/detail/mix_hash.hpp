//
// timewheel/detail/mix_hash.hpp
//
// The hash finaliser of the features' hash tables.
//

#ifndef TIMEWHEEL_DETAIL_MIX_HASH_HPP
#define TIMEWHEEL_DETAIL_MIX_HASH_HPP

#include <cstddef>
#include <cstdint>

namespace timewheel {
namespace detail {

// MurmurHash3's 64-bit finaliser: moves every input bit into the low bits that a
// power-of-two table keeps, so that std::hash's identity on integers does not cluster.
inline std::size_t mix_hash(std::size_t h) noexcept {
    std::uint64_t x = h;
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ULL;
    x ^= x >> 33;
    return static_cast<std::size_t>(x);
}

} // namespace detail
} // namespace timewheel

#endif // TIMEWHEEL_DETAIL_MIX_HASH_HPP
