//
// timewheel/redis/key_slot.hpp
//
// The Redis Cluster hash slot of a key: CRC16-XMODEM of the key (or of its hash tag) modulo
// 16384, exactly as the Redis Cluster specification defines it.
//

#ifndef TIMEWHEEL_REDIS_KEY_SLOT_HPP
#define TIMEWHEEL_REDIS_KEY_SLOT_HPP

#include <array>
#include <cstddef>
#include <cstdint>
#include <string_view>

namespace timewheel::redis {

/// The number of hash slots of a Redis Cluster.
inline constexpr std::uint16_t hash_slot_count = 16384;

namespace detail {

/// The lookup table of CRC16-XMODEM (polynomial 0x1021, initial value 0, no reflection).
inline constexpr std::array<std::uint16_t, 256> crc16_table = [] {
    std::array<std::uint16_t, 256> table{};
    for (unsigned byte = 0; byte < 256; ++byte) {
        unsigned crc = byte << 8;
        for (int bit = 0; bit < 8; ++bit)
            crc = (crc & 0x8000u) ? (crc << 1) ^ 0x1021u : crc << 1;
        table[byte] = static_cast<std::uint16_t>(crc);
    }
    return table;
}();

} // namespace detail

/// CRC16-XMODEM of @p bytes, the checksum Redis Cluster hashes keys with.
/// `crc16("123456789") == 0x31C3`.
constexpr std::uint16_t crc16(std::string_view bytes) noexcept {
    std::uint16_t crc = 0;
    for (char c : bytes) {
        auto const index = static_cast<std::uint8_t>((crc >> 8) ^ static_cast<unsigned char>(c));
        crc = static_cast<std::uint16_t>((crc << 8) ^ detail::crc16_table[index]);
    }
    return crc;
}

/// The part of @p key that Redis Cluster hashes: the hash tag if the key has one, otherwise the
/// whole key.
///
/// A hash tag is what lies between the first `{` of the key and the first `}` after it, if
/// that is not empty. So `{user1000}.following` and `{user1000}.followers` share the slot of
/// `user1000`; `foo{}{bar}` has no tag (the first braces are empty) and hashes whole;
/// `foo{{bar}}zap` hashes `{bar`.
constexpr std::string_view hashed_part(std::string_view key) noexcept {
    auto const open = key.find('{');
    if (open == std::string_view::npos)
        return key;
    auto const close = key.find('}', open + 1);
    if (close == std::string_view::npos || close == open + 1)
        return key;
    return key.substr(open + 1, close - open - 1);
}

/// The hash slot (0 to 16383) of @p key, honouring hash tags (see hashed_part()).
///
/// @par Example
/// @code
/// static_assert(timewheel::redis::key_slot("foo") == 12182);
/// static_assert(timewheel::redis::key_slot("{user1000}.following") ==
///               timewheel::redis::key_slot("{user1000}.followers"));
/// @endcode
constexpr std::uint16_t key_slot(std::string_view key) noexcept {
    return static_cast<std::uint16_t>(crc16(hashed_part(key)) & (hash_slot_count - 1));
}

} // namespace timewheel::redis

#endif // TIMEWHEEL_REDIS_KEY_SLOT_HPP
