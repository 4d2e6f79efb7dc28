//
// src/redis/script.cpp
//
// The SHA1 of a script body (Boost.Uuid's SHA1, the same digest Redis computes), and a
// function library's name from the SHA1 of its code.
//

#include <timewheel/redis/script.hpp>

#include <boost/uuid/detail/sha1.hpp>

namespace timewheel::redis {

namespace {

void sha1_hex(std::string_view text, char (&out)[40]) {
    boost::uuids::detail::sha1 hash;
    hash.process_bytes(text.data(), text.size());
    boost::uuids::detail::sha1::digest_type digest;
    hash.get_digest(digest);
    static constexpr char hex[] = "0123456789abcdef";
    for (int word = 0; word < 5; ++word) {
        for (int nibble = 0; nibble < 8; ++nibble) {
            out[word * 8 + nibble] = hex[(digest[word] >> (28 - 4 * nibble)) & 0xf];
        }
    }
}

} // namespace

script::script(std::string body)
    : body_(std::move(body)) {
    sha1_hex(body_, sha1_);
}

library::library(std::string_view prefix, std::string_view code) {
    char sha1[40];
    sha1_hex(code, sha1);
    name_.append(prefix).append("_").append(sha1, 12);
    body_.append("#!lua name=").append(name_).append("\nlocal LIBRARY = '");
    body_.append(name_).append("'\n").append(code);
}

std::string library::function_name(std::string_view function) const {
    std::string n = name_;
    n.append("_").append(function);
    return n;
}

} // namespace timewheel::redis
