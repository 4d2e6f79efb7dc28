// Tests of key_slot.hpp and of the Cluster command-key table: the CRC16 and slot test vectors
// of the Redis Cluster specification, the hash-tag rule, and which arguments of a command are
// keys (ranges, MSET's step, EVAL's numkeys, XREAD's STREAMS, unknown commands).

#define BOOST_TEST_MODULE key_slot
#include <timewheel/redis/key_slot.hpp>

#include <timewheel/redis/detail/cluster_command_keys.hpp>

#include <boost/test/unit_test.hpp>

#include <string>
#include <string_view>
#include <vector>

namespace tr = timewheel::redis;
namespace td = timewheel::redis::detail;

// The vectors hold at compile time too.
static_assert(tr::crc16("123456789") == 0x31C3);
static_assert(tr::key_slot("foo") == 12182);

BOOST_AUTO_TEST_CASE(crc16_vectors) {
    BOOST_TEST(tr::crc16("123456789") == 0x31C3);
    BOOST_TEST(tr::crc16("") == 0);
    // Bytes above 0x7f must not sign-extend.
    BOOST_TEST(tr::crc16(std::string_view("\xff", 1)) == 0x1EF0);
}

BOOST_AUTO_TEST_CASE(slots_of_plain_keys) {
    BOOST_TEST(tr::key_slot("foo") == 12182);
    BOOST_TEST(tr::key_slot("bar") == 5061);
    BOOST_TEST(tr::key_slot("") == 0);
    for (std::string const k : {"a", "key:1", "somewhat longer key with spaces"})
        BOOST_TEST(tr::key_slot(k) < tr::hash_slot_count);
}

BOOST_AUTO_TEST_CASE(hash_tags) {
    BOOST_TEST(tr::key_slot("{user1000}.following") == tr::key_slot("{user1000}.followers"));
    BOOST_TEST(tr::key_slot("{user1000}.following") == tr::key_slot("user1000"));
    BOOST_TEST(tr::hashed_part("foo{}{bar}") == "foo{}{bar}");
    BOOST_TEST(tr::key_slot("foo{}{bar}") == tr::crc16("foo{}{bar}") % 16384);
    BOOST_TEST(tr::hashed_part("foo{{bar}}zap") == "{bar");
    BOOST_TEST(tr::key_slot("foo{{bar}}zap") == tr::key_slot("{bar"));
    BOOST_TEST(tr::hashed_part("foo{bar}{zap}") == "bar");
    BOOST_TEST(tr::hashed_part("foo{bar") == "foo{bar");
    BOOST_TEST(tr::hashed_part("foo}bar{") == "foo}bar{");
    BOOST_TEST(tr::key_slot("{q:7}:due") == tr::key_slot("{q:7}:lease"));
}

namespace {

std::vector<std::string> keys_of(std::vector<std::string_view> args, bool* fits = nullptr) {
    std::vector<std::string> keys;
    bool const ok = td::for_each_command_key(std::span<std::string_view const>(args),
                                             [&](std::string_view k) { keys.emplace_back(k); });
    if (fits)
        *fits = ok;
    return keys;
}

using strings = std::vector<std::string>;

} // namespace

BOOST_AUTO_TEST_CASE(command_keys) {
    BOOST_TEST(keys_of({"GET", "k"}) == strings{"k"});
    BOOST_TEST(keys_of({"set", "k", "v", "PX", "10"}) == strings{"k"}); // any case
    BOOST_TEST(keys_of({"DEL", "a", "b", "c"}) == (strings{"a", "b", "c"}));
    BOOST_TEST(keys_of({"MSET", "a", "1", "b", "2"}) == (strings{"a", "b"}));
    BOOST_TEST(keys_of({"HMGET", "h", "f1", "f2"}) == strings{"h"});
    BOOST_TEST(keys_of({"ZRANGESTORE", "dst", "src", "0", "-1"}) == (strings{"dst", "src"}));
    BOOST_TEST(keys_of({"EVALSHA", "abc", "2", "k1", "k2", "arg"}) == (strings{"k1", "k2"}));
    BOOST_TEST(keys_of({"EVAL", "return 1", "0", "arg"}).empty());
    BOOST_TEST(keys_of({"FCALL", "f", "1", "k"}) == strings{"k"});
    BOOST_TEST(keys_of({"XREAD", "COUNT", "2", "STREAMS", "s1", "s2", "0", "0"}) ==
               (strings{"s1", "s2"}));
    BOOST_TEST(keys_of({"XREADGROUP", "GROUP", "g", "c", "streams", "s", ">"}) == strings{"s"});
    BOOST_TEST(keys_of({"SPUBLISH", "chan", "msg"}) == strings{"chan"});
    BOOST_TEST(keys_of({"PUBLISH", "chan", "msg"}).empty());
    BOOST_TEST(keys_of({"PING"}).empty());
    BOOST_TEST(keys_of({"NOSUCHCOMMAND", "x"}).empty());
}

BOOST_AUTO_TEST_CASE(malformed_commands) {
    bool fits = true;
    keys_of({"GET"}, &fits);
    BOOST_TEST(!fits);
    keys_of({"EVALSHA", "abc", "3", "k1"}, &fits);
    BOOST_TEST(!fits);
    keys_of({"EVALSHA", "abc", "x1", "k1"}, &fits);
    BOOST_TEST(!fits);
    keys_of({"EVALSHA", "abc", "-1"}, &fits);
    BOOST_TEST(!fits);
    keys_of({"XREAD", "STREAMS", "s1", "s2", "0"}, &fits);
    BOOST_TEST(!fits);
    keys_of({"XREAD", "COUNT", "1"}, &fits);
    BOOST_TEST(!fits);
}

BOOST_AUTO_TEST_CASE(routes) {
    using route = td::command_route;
    auto route_of = [](std::vector<std::string_view> args) {
        return td::route_command(std::span<std::string_view const>(args));
    };
    BOOST_TEST(route_of({"PING"}).kind == route::keyless);
    auto r = route_of({"GET", "foo"});
    BOOST_TEST(r.kind == route::keyed);
    BOOST_TEST(r.slot == 12182);
    r = route_of({"MGET", "{u}a", "{u}b"});
    BOOST_TEST(r.kind == route::keyed);
    BOOST_TEST(r.slot == tr::key_slot("u"));
    BOOST_TEST(route_of({"MGET", "foo", "bar"}).kind == route::cross_slot);
    BOOST_TEST(route_of({"EVALSHA", "s", "2", "{a}1", "{b}2"}).kind == route::cross_slot);
    BOOST_TEST(route_of({"EVALSHA", "s", "5", "k"}).kind == route::malformed);
}

BOOST_AUTO_TEST_CASE(table_lookup) {
    BOOST_TEST(td::find_command_key_spec("zrangebyscore") != nullptr);
    BOOST_TEST(td::find_command_key_spec("") == nullptr);
    BOOST_TEST(td::find_command_key_spec(std::string(100, 'A')) == nullptr);
}
