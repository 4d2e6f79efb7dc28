//
// test/redis/request.cpp
//
// redis::request, redis::script and redis::response without a server: the RESP bytes of
// each kind of argument, script calls, clear() keeping the buffer, and the SHA1 of a script.
//

#include <timewheel/redis/request.hpp>

#define BOOST_TEST_MODULE redis_request
#include <boost/test/unit_test.hpp>

#include <timewheel/redis/error.hpp>
#include <timewheel/redis/response.hpp>
#include <timewheel/redis/script.hpp>

#include <limits>
#include <list>
#include <string>
#include <vector>

namespace redis = timewheel::redis;

BOOST_AUTO_TEST_CASE(arguments_are_formatted_binary_safe) {
    redis::request req;
    const std::string bytes("a\0\r\n", 4);
    req.push("SET", bytes, std::string_view("v"));
    static constexpr char expected[] = "*3\r\n$3\r\nSET\r\n$4\r\na\0\r\n\r\n$1\r\nv\r\n";
    BOOST_TEST(req.payload() == std::string_view(expected, sizeof expected - 1));
    req.clear();
    req.push("X", 42, -7, std::numeric_limits<std::int64_t>::min(), 0.5, 1e300, true, 'A');
    BOOST_TEST(req.payload() ==
               "*8\r\n$1\r\nX\r\n$2\r\n42\r\n$2\r\n-7\r\n$20\r\n-9223372036854775808\r\n"
               "$3\r\n0.5\r\n$6\r\n1e+300\r\n$1\r\n1\r\n$2\r\n65\r\n");
    BOOST_TEST(req.size() == 1u);
}

BOOST_AUTO_TEST_CASE(ranges_and_counts) {
    redis::request req;
    std::vector<std::string> items = {"a", "bb"};
    std::list<int> numbers = {1, 2, 3};
    req.push_range("RPUSH", "list", items);
    req.push_range("SADD", numbers);
    req.push("PING");
    BOOST_TEST(req.size() == 3u);
    BOOST_TEST(req.payload() == "*4\r\n$5\r\nRPUSH\r\n$4\r\nlist\r\n$1\r\na\r\n$2\r\nbb\r\n"
                                "*4\r\n$4\r\nSADD\r\n$1\r\n1\r\n$1\r\n2\r\n$1\r\n3\r\n"
                                "*1\r\n$4\r\nPING\r\n");
}

BOOST_AUTO_TEST_CASE(clear_keeps_the_buffer) {
    redis::request req;
    req.push("SET", std::string(1000, 'x'), "v");
    const char* before = req.payload().data();
    req.clear();
    BOOST_TEST(req.empty());
    BOOST_TEST(req.payload().empty());
    req.push("SET", std::string(900, 'y'), "v");
    BOOST_TEST(req.payload().data() == before);
}

BOOST_AUTO_TEST_CASE(scripts) {
    // The SHA1 Redis reports for "return 1" (SCRIPT LOAD).
    redis::script one("return 1");
    BOOST_TEST(one.sha1() == "e0e1f9fabfc9d4800c877a703b823ac0578ff8db");
    redis::script empty("");
    BOOST_TEST(empty.sha1() == "da39a3ee5e6b4b0d3255bfef95601890afd80709");

    redis::request req;
    req.push("PING");
    req.push_script(one, 1, "key", 5);
    BOOST_REQUIRE_EQUAL(req.script_calls().size(), 1u);
    const auto& call = req.script_calls()[0];
    BOOST_TEST(call.command == 1u);
    BOOST_TEST(call.script == &one);
    BOOST_TEST(req.payload().substr(call.begin, call.rest - call.begin) ==
               "*5\r\n$7\r\nEVALSHA\r\n$40\r\ne0e1f9fabfc9d4800c877a703b823ac0578ff8db\r\n");
    BOOST_TEST(req.payload().substr(call.rest, call.end - call.rest) ==
               "$1\r\n1\r\n$3\r\nkey\r\n$1\r\n5\r\n");
    BOOST_TEST(call.end == req.payload().size());
}

BOOST_AUTO_TEST_CASE(function_calls) {
    // The name is the prefix and the first 12 hex digits of the code's SHA1 ("return 1").
    redis::library lib("lib", "return 1");
    BOOST_TEST(lib.name() == "lib_e0e1f9fabfc9");
    BOOST_TEST(lib.body() == "#!lua name=lib_e0e1f9fabfc9\nlocal LIBRARY = 'lib_e0e1f9fabfc9'\n"
                             "return 1");
    BOOST_TEST(lib.function_name("f") == "lib_e0e1f9fabfc9_f");
    BOOST_TEST(redis::library("lib", "return 2").name() != lib.name());

    redis::request req;
    req.push("PING");
    req.push_fcall(lib, "lib_e0e1f9fabfc9_f", 1, "key", 5);
    req.push_fcall_range(lib, "g", std::vector<std::string>{}, std::vector<int>{7});
    BOOST_REQUIRE_EQUAL(req.script_calls().size(), 2u);
    const auto& call = req.script_calls()[0];
    BOOST_TEST(call.command == 1u);
    BOOST_TEST(call.script == nullptr);
    BOOST_TEST(call.library == &lib);
    BOOST_TEST(req.payload().substr(call.begin, call.rest - call.begin) ==
               "*5\r\n$5\r\nFCALL\r\n$18\r\nlib_e0e1f9fabfc9_f\r\n");
    BOOST_TEST(req.payload().substr(call.rest, call.end - call.rest) ==
               "$1\r\n1\r\n$3\r\nkey\r\n$1\r\n5\r\n");
    const auto& second = req.script_calls()[1];
    BOOST_TEST(second.command == 2u);
    BOOST_TEST(req.payload().substr(second.begin) ==
               "*4\r\n$5\r\nFCALL\r\n$1\r\ng\r\n$1\r\n0\r\n$1\r\n7\r\n");
}

BOOST_AUTO_TEST_CASE(errors_name_the_failure) {
    for (auto e :
         {redis::error::connection_lost, redis::error::request_timeout,
          redis::error::connect_timeout, redis::error::handshake_failed,
          redis::error::protocol_error, redis::error::server_error, redis::error::unexpected_type,
          redis::error::nil_reply, redis::error::index_out_of_range, redis::error::closed}) {
        boost::system::error_code ec = e;
        BOOST_TEST(ec.category().name() == std::string("timewheel.redis"));
        BOOST_TEST(ec.message().find("Redis") != std::string::npos);
        BOOST_TEST(ec.message().find("unknown") == std::string::npos);
    }
    redis::server_error err("WRONGTYPE Operation against a key");
    BOOST_TEST(err.server_message() == "WRONGTYPE Operation against a key");
    BOOST_TEST(std::string(err.what()).starts_with("WRONGTYPE Operation against a key"));
    redis::response empty;
    BOOST_TEST(empty.empty());
    BOOST_CHECK_THROW(empty.at(0), boost::system::system_error);
}
