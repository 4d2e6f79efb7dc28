//
// src/redis/script.cpp
//
// The SHA1 of a script body (Boost.Uuid's SHA1, the same digest Redis computes).
//

#include <timewheel/redis/script.hpp>

#include <boost/uuid/detail/sha1.hpp>

namespace timewheel::redis {

script::script(std::string body)
    : body_(std::move(body)) {
    boost::uuids::detail::sha1 hash;
    hash.process_bytes(body_.data(), body_.size());
    boost::uuids::detail::sha1::digest_type digest;
    hash.get_digest(digest);
    static constexpr char hex[] = "0123456789abcdef";
    for (int word = 0; word < 5; ++word) {
        for (int nibble = 0; nibble < 8; ++nibble) {
            sha1_[word * 8 + nibble] = hex[(digest[word] >> (28 - 4 * nibble)) & 0xf];
        }
    }
}

} // namespace timewheel::redis
