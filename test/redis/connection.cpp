//
// test/redis/connection.cpp
//
// redis::connection against a real redis-server: every reply type, binary-safe arguments and
// a 64 MiB value, 100k pipelined requests answered in order, server errors with their text,
// cancellation before and after the write, timeouts on a stalled server, unix sockets with
// AUTH/SELECT/CLIENT SETNAME, scripts with NOSCRIPT, function libraries loaded ahead of their
// first FCALL and again after FUNCTION FLUSH, and the completion tokens.
//

#include <timewheel/redis/connection.hpp>

#define BOOST_TEST_MODULE redis_connection
#include <test/redis/support/redis_fixture.hpp>

#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/deferred.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/use_future.hpp>
#include <boost/test/unit_test.hpp>

#include <string>
#include <thread>
#include <vector>

namespace net = boost::asio;
namespace redis = timewheel::redis;
using timewheel::test::redis_available;
using timewheel::test::redis_server;
using timewheel::test::run_for;
using timewheel::test::run_until;
using namespace std::chrono_literals;

namespace {

struct result {
    boost::system::error_code ec;
    std::size_t n = 0;
    bool done = false;
};

// The watchdog is generous: 64 MiB through ASan on a loaded machine takes a while.
result exec(net::io_context& io, redis::connection& conn, const redis::request& req,
            redis::response& resp) {
    result r;
    conn.async_exec(req, resp, [&](boost::system::error_code ec, std::size_t n) {
        r = {ec, n, true};
    });
    BOOST_REQUIRE(run_until(
        io, [&] { return r.done; }, std::chrono::seconds(240)));
    return r;
}

// Sends one request and checks it succeeded.
redis::response must(net::io_context& io, redis::connection& conn, const redis::request& req) {
    redis::response resp;
    auto r = exec(io, conn, req, resp);
    BOOST_REQUIRE_MESSAGE(!r.ec, r.ec.message());
    BOOST_REQUIRE_EQUAL(r.n, req.size());
    BOOST_REQUIRE_EQUAL(resp.size(), req.size());
    return resp;
}

} // namespace

BOOST_AUTO_TEST_SUITE(connection, *boost::unit_test::precondition(redis_available()))

BOOST_AUTO_TEST_CASE(every_reply_type) {
    redis_server server;
    net::io_context io;
    redis::connection conn(io, server.config());
    redis::request req;
    req.push("SET", "k", "v");                            // status
    req.push("GET", "k");                                 // bulk string
    req.push("GET", "missing");                           // nil
    req.push("INCRBY", "n", 41);                          // integer
    req.push("INCRBYFLOAT", "f", 0.5);                    // bulk (double argument)
    req.push("RPUSH", "l", "a", "b", "c");                // integer
    req.push("LRANGE", "l", 0, -1);                       // array
    req.push("LRANGE", "nolist", 0, -1);                  // empty array
    req.push("EVAL", "return {1, {2, 'x', {}}, 'y'}", 0); // nested arrays
    req.push("INCR", "k");                                // error reply
    req.push("BLPOP", "nolist", "0.01");                  // nil array
    auto resp = must(io, conn, req);

    BOOST_TEST(resp[0].type() == redis::reply_type::status);
    BOOST_TEST(resp[0].as_string() == "OK");
    BOOST_TEST(resp[1].type() == redis::reply_type::string);
    BOOST_TEST(resp[1].as_string() == "v");
    BOOST_TEST(resp[2].is_nil());
    BOOST_TEST(!resp[2].as_optional_string().has_value());
    BOOST_TEST(resp[3].as_integer() == 41);
    BOOST_TEST(resp[4].as_string() == "0.5");
    BOOST_TEST(resp[5].as_integer() == 3);
    BOOST_REQUIRE(resp[6].is_array());
    BOOST_REQUIRE_EQUAL(resp[6].size(), 3u);
    BOOST_TEST(resp[6][0].as_string() == "a");
    BOOST_TEST(resp[6][2].as_string() == "c");
    BOOST_TEST(resp[7].is_array());
    BOOST_TEST(resp[7].size() == 0u);
    auto nested = resp[8];
    BOOST_REQUIRE_EQUAL(nested.size(), 3u);
    BOOST_TEST(nested[0].as_integer() == 1);
    BOOST_REQUIRE_EQUAL(nested[1].size(), 3u);
    BOOST_TEST(nested[1][0].as_integer() == 2);
    BOOST_TEST(nested[1][1].as_string() == "x");
    BOOST_TEST(nested[1][2].size() == 0u);
    BOOST_TEST(nested[2].as_string() == "y"); // after a nested subtree: `next` skips it
    BOOST_TEST(resp[9].is_error());
    BOOST_TEST(resp[9].error_message().starts_with("ERR value is not an integer"));
    BOOST_TEST(resp[10].is_nil());
    BOOST_TEST(resp.has_error());

    // Typed reads name what is wrong.
    BOOST_CHECK_EXCEPTION(
        resp[9].as_integer(), redis::server_error, [](const redis::server_error& e) {
            return e.server_message().starts_with("ERR value is not") &&
                   std::string(e.what()).find("ERR value is not") != std::string::npos &&
                   e.code() == redis::error::server_error;
        });
    BOOST_CHECK_EXCEPTION(resp[1].as_integer(), boost::system::system_error,
                          [](const auto& e) { return e.code() == redis::error::unexpected_type; });
    BOOST_CHECK_EXCEPTION(resp[2].as_string(), boost::system::system_error,
                          [](const auto& e) { return e.code() == redis::error::nil_reply; });
    BOOST_CHECK_EXCEPTION(resp.at(11), boost::system::system_error, [](const auto& e) {
        return e.code() == redis::error::index_out_of_range;
    });
    BOOST_CHECK_EXCEPTION(resp[6][3], boost::system::system_error, [](const auto& e) {
        return e.code() == redis::error::index_out_of_range;
    });
    BOOST_CHECK_THROW(resp.throw_if_error(), redis::server_error);
    BOOST_TEST(redis::make_error_code(redis::error::connection_lost).message().find("lost") !=
               std::string::npos);

    // response::append copies a reply with its elements (how the Cluster client reorders
    // replies): the copies read as the originals, in the new order.
    redis::response copy;
    for (std::size_t i = resp.size(); i-- > 0;) {
        copy.append(resp[i]);
    }
    BOOST_REQUIRE_EQUAL(copy.size(), resp.size());
    BOOST_TEST(copy[0].is_nil());
    BOOST_TEST(copy[1].error_message().starts_with("ERR value is not an integer"));
    BOOST_REQUIRE_EQUAL(copy[2].size(), 3u);
    BOOST_TEST(copy[2][1][1].as_string() == "x");
    BOOST_TEST(copy[2][2].as_string() == "y");
    BOOST_TEST(copy[4][2].as_string() == "c");
    BOOST_TEST(copy[9].as_string() == "v");
    BOOST_TEST(copy[10].as_string() == "OK");
    copy.append(copy[2]); // a reply of the response itself
    BOOST_REQUIRE_EQUAL(copy.size(), resp.size() + 1);
    BOOST_TEST(copy[11][1][1].as_string() == "x");
    BOOST_TEST(copy[11][2].as_string() == "y");
}

BOOST_AUTO_TEST_CASE(errors_carry_the_server_text) {
    redis_server server;
    net::io_context io;
    redis::connection conn(io, server.config());
    redis::request req;
    req.push("NOSUCHCOMMAND", "x");
    req.push("SET", "only-key");
    req.push("PING");
    auto resp = must(io, conn, req);
    BOOST_TEST(resp[0].error_message().starts_with("ERR unknown command 'NOSUCHCOMMAND'"));
    BOOST_TEST(resp[1].error_message().find("wrong number of arguments") != std::string::npos);
    BOOST_TEST(resp[2].as_string() == "PONG"); // one error does not disturb the next reply
}

BOOST_AUTO_TEST_CASE(binary_safe_keys_and_values) {
    redis_server server;
    net::io_context io;
    redis::connection conn(io, server.config());
    std::string key("k\0\r\n$*\xff", 8);
    std::string value;
    for (int i = 0; i < 256; ++i) {
        value.push_back(static_cast<char>(i));
    }
    value += std::string("\r\n*3\r\n", 6);
    redis::request req;
    req.push("SET", key, value);
    req.push("GET", key);
    req.push("STRLEN", key);
    req.push("GET", std::string_view(key.data(), 1)); // "k": a different key
    auto resp = must(io, conn, req);
    BOOST_TEST(resp[1].as_string() == value);
    BOOST_TEST(resp[2].as_integer() == static_cast<std::int64_t>(value.size()));
    BOOST_TEST(resp[3].is_nil());

    // A 64 MiB value, there and back, with a pattern that shows a shifted byte.
    std::string big(64u << 20, '\0');
    for (std::size_t i = 0; i < big.size(); ++i) {
        big[i] = static_cast<char>((i * 131) >> 3);
    }
    redis::request set;
    set.push("SET", "big", big);
    must(io, conn, set);
    redis::request get;
    get.push("GET", "big");
    get.push("STRLEN", "big");
    auto got = must(io, conn, get);
    BOOST_TEST(got[1].as_integer() == static_cast<std::int64_t>(big.size()));
    BOOST_TEST((got[0].as_string() == big));
}

BOOST_AUTO_TEST_CASE(pipelined_100k_in_order) {
    redis_server server;
    net::io_context io;
    redis::connection conn(io, server.config());
    redis::request ping;
    ping.push("PING");
    must(io, conn, ping); // connected: the first request below is written at once
    constexpr int count = 100000;
    redis::request incr;
    incr.push("INCR", "counter");
    std::vector<redis::response> responses(count);
    std::vector<std::int64_t> seen;
    seen.reserve(count);
    int failures = 0;
    for (int i = 0; i < count; ++i) {
        conn.async_exec(incr, responses[i], [&, i](boost::system::error_code ec, std::size_t) {
            if (ec) {
                ++failures;
                return;
            }
            // Completion order is issue order, and reply i is the (i+1)-th INCR.
            seen.push_back(responses[i][0].as_integer());
        });
    }
    BOOST_REQUIRE(run_until(
        io, [&] { return seen.size() + failures == count; }, 120s));
    BOOST_TEST(failures == 0);
    bool in_order = true;
    for (int i = 0; i < count; ++i) {
        in_order = in_order && seen[i] == i + 1;
    }
    BOOST_TEST(in_order);
    // Coalescing: far fewer writes than requests.
    BOOST_TEST(conn.stats().writes < static_cast<std::uint64_t>(count) / 10);
    BOOST_TEST_MESSAGE("100k requests in " << conn.stats().writes << " writes");
}

BOOST_AUTO_TEST_CASE(cancel_before_write_is_never_sent) {
    redis_server server;
    net::io_context io;
    redis::connection conn(io, server.config());
    // Not connected yet: the request waits in the queue, and is cancelled there.
    redis::request set;
    set.push("SET", "cancelled", "1");
    redis::response resp;
    net::cancellation_signal signal;
    result r;
    conn.async_exec(set, resp,
                    net::bind_cancellation_slot(signal.slot(),
                                                [&](boost::system::error_code ec, std::size_t n) {
                                                    r = {ec, n, true};
                                                }));
    BOOST_TEST(!r.done); // never from inside async_exec
    signal.emit(net::cancellation_type::total);
    BOOST_REQUIRE(run_until(io, [&] { return r.done; }));
    BOOST_TEST(r.ec == net::error::operation_aborted);

    // While a write is in flight, a second request waits; cancelled, it is never sent.
    redis::request first;
    first.push("SET", "first", "1");
    redis::response first_resp;
    result fr;
    conn.async_exec(first, first_resp, [&](auto ec, std::size_t n) { fr = {ec, n, true}; });
    BOOST_REQUIRE(run_until(io, [&] { return conn.is_connected(); }));
    redis::request second;
    second.push("SET", "second", "1");
    redis::response second_resp;
    result sr;
    net::cancellation_signal signal2;
    conn.async_exec(second, second_resp,
                    net::bind_cancellation_slot(signal2.slot(), [&](auto ec, std::size_t n) {
                        sr = {ec, n, true};
                    }));
    signal2.emit(net::cancellation_type::terminal);
    BOOST_REQUIRE(run_until(io, [&] { return fr.done && sr.done; }));
    BOOST_TEST(!fr.ec);
    BOOST_TEST(sr.ec == net::error::operation_aborted);

    redis::request check;
    check.push("EXISTS", "cancelled");
    check.push("EXISTS", "first");
    check.push("EXISTS", "second");
    auto c = must(io, conn, check);
    BOOST_TEST(c[0].as_integer() == 0);
    BOOST_TEST(c[1].as_integer() == 1);
    BOOST_TEST(c[2].as_integer() == 0);
}

BOOST_AUTO_TEST_CASE(cancel_after_write_is_answered_and_discarded) {
    redis_server server;
    net::io_context io;
    redis::connection conn(io, server.config());
    redis::request ping;
    ping.push("PING");
    must(io, conn, ping);

    redis::request sleep;
    sleep.push("DEBUG", "SLEEP", "0.5");
    redis::response sleep_resp;
    result slept;
    conn.async_exec(sleep, sleep_resp, [&](auto ec, std::size_t n) { slept = {ec, n, true}; });
    run_for(io, 50ms); // written; the server sleeps
    redis::request set;
    set.push("SET", "after", "written");
    redis::response set_resp;
    net::cancellation_signal signal;
    result cancelled;
    conn.async_exec(set, set_resp,
                    net::bind_cancellation_slot(signal.slot(), [&](auto ec, std::size_t n) {
                        cancelled = {ec, n, true};
                    }));
    run_for(io, 50ms); // written too
    signal.emit(net::cancellation_type::terminal);
    BOOST_REQUIRE(run_until(io, [&] { return cancelled.done; }));
    BOOST_TEST(cancelled.ec == net::error::operation_aborted);
    BOOST_TEST(!slept.done); // completed at once, not when its reply came

    // The next request gets its own reply, not the discarded one; the SET did run.
    redis::request get;
    get.push("GET", "after");
    auto g = must(io, conn, get);
    BOOST_TEST(g[0].as_string() == "written");
    BOOST_TEST(slept.done);
    BOOST_TEST(!slept.ec);
}

BOOST_AUTO_TEST_CASE(request_timeout_on_a_stalled_server) {
    redis_server server;
    net::io_context io;
    auto cfg = server.config();
    cfg.request_timeout = 300ms;
    redis::connection conn(io, cfg);
    redis::request sleep;
    sleep.push("DEBUG", "SLEEP", "1");
    redis::response resp;
    auto r = exec(io, conn, sleep, resp);
    BOOST_TEST(r.ec == redis::error::request_timeout);
    BOOST_TEST(r.ec.message().find("timed out") != std::string::npos);
    // The connection was closed under the written request (a server that skipped a reply
    // would otherwise shift every later one); the next request goes out on a new one and
    // gets its own reply, once the server wakes up.
    run_for(io, 1500ms);
    redis::request echo;
    echo.push("ECHO", "mine");
    auto e = must(io, conn, echo);
    BOOST_TEST(e[0].as_string() == "mine");
    BOOST_TEST(conn.stats().disconnects == 1u);
    BOOST_TEST(conn.stats().timeout_disconnects == 1u);
    BOOST_TEST(conn.stats().connects == 2u);
}

BOOST_AUTO_TEST_CASE(connect_timeout_and_health_check) {
    redis_server server;
    net::io_context io;
    // A frozen server accepts TCP (the kernel does) but never answers the handshake.
    auto cfg = server.config();
    cfg.client_name = "frozen";
    cfg.connect_timeout = 300ms;
    cfg.reconnect_max_delay = 200ms;
    server.freeze();
    redis::connection conn(io, cfg);
    conn.run();
    BOOST_REQUIRE(run_until(io, [&] { return conn.stats().connect_failures >= 1; }));
    BOOST_TEST(conn.last_error() == redis::error::connect_timeout);
    server.thaw();
    redis::request ping;
    ping.push("CLIENT", "GETNAME");
    auto r = must(io, conn, ping);
    BOOST_TEST(r[0].as_string() == "frozen");

    // Health check: a server that stops answering is declared dead; the request written
    // to it fails with connection_lost, and the connection comes back when it thaws.
    auto hcfg = server.config();
    hcfg.health_check_interval = 200ms;
    redis::connection watched(io, hcfg);
    must(io, watched, ping);
    server.freeze();
    redis::response resp;
    auto lost = exec(io, watched, ping, resp);
    BOOST_TEST(lost.ec == redis::error::connection_lost);
    BOOST_TEST(watched.stats().health_pings >= 1u);
    server.thaw();
    must(io, watched, ping);
    BOOST_TEST(watched.stats().connects >= 2u);
}

BOOST_AUTO_TEST_CASE(unix_socket_auth_select_setname) {
    redis_server server({.unix_socket = true, .args = {"--requirepass", "s3cret"}});
    net::io_context io;
    auto cfg = server.config();
    cfg.password = "s3cret";
    cfg.database = 3;
    cfg.client_name = "timewheel-test";
    redis::connection conn(io, cfg);
    redis::request req;
    req.push("SET", "in3", "yes");
    req.push("CLIENT", "GETNAME");
    req.push("ACL", "SETUSER", "alice", "on", ">pw", "~*", "+@all");
    auto r = must(io, conn, req);
    BOOST_TEST(r[1].as_string() == "timewheel-test");
    BOOST_TEST(r[2].as_string() == "OK");

    // The key is in database 3 only.
    auto other = server.config();
    other.password = "s3cret";
    redis::connection db0(io, other);
    redis::request exists;
    exists.push("EXISTS", "in3");
    BOOST_TEST(must(io, db0, exists)[0].as_integer() == 0);

    // An ACL user.
    auto acl = server.config();
    acl.username = "alice";
    acl.password = "pw";
    acl.database = 3;
    redis::connection alice(io, acl);
    redis::request whoami;
    whoami.push("ACL", "WHOAMI");
    whoami.push("GET", "in3");
    auto w = must(io, alice, whoami);
    BOOST_TEST(w[0].as_string() == "alice");
    BOOST_TEST(w[1].as_string() == "yes");

    // A wrong password: the handshake fails, names why, and requests time out unsent.
    auto bad = server.config();
    bad.password = "wrong";
    bad.request_timeout = 500ms;
    bad.reconnect_min_delay = 100ms;
    redis::connection refused(io, bad);
    redis::response resp;
    auto f = exec(io, refused, exists, resp);
    BOOST_TEST(f.ec == redis::error::request_timeout);
    BOOST_TEST(refused.last_error() == redis::error::handshake_failed);
}

BOOST_AUTO_TEST_CASE(scripts_load_on_noscript) {
    redis_server server;
    net::io_context io;
    redis::connection conn(io, server.config());
    const redis::script add(R"(return redis.call('INCRBY', KEYS[1], ARGV[1]) + 0)");
    const redis::script echo(R"(return ARGV[1])");
    redis::request req;
    req.push_script(add, 1, "sum", 5);
    req.push("PING");
    req.push_script(echo, 0, std::string("bytes\0here", 10));
    req.push_script_range(add, std::vector<std::string>{"sum"}, std::vector<int>{7});
    auto r = must(io, conn, req);
    BOOST_TEST(r[0].as_integer() == 5);
    BOOST_TEST(r[1].as_string() == "PONG");
    BOOST_TEST(r[2].as_string() == std::string("bytes\0here", 10));
    BOOST_TEST(r[3].as_integer() == 12);
    BOOST_TEST(conn.stats().noscript_retries == 3u); // all three: nothing was loaded yet

    // Loaded now: plain EVALSHA.
    must(io, conn, req);
    BOOST_TEST(conn.stats().noscript_retries == 3u);

    // The SHA1 is the server's.
    redis::request load;
    load.push("SCRIPT", "LOAD", add.body());
    BOOST_TEST(must(io, conn, load)[0].as_string() == add.sha1());

    // After SCRIPT FLUSH: loaded again, transparently.
    redis::request flush;
    flush.push("SCRIPT", "FLUSH");
    must(io, conn, flush);
    auto again = must(io, conn, req);
    BOOST_TEST(again[0].as_integer() == 29);
    BOOST_TEST(conn.stats().noscript_retries == 6u);

    // A script error is an error reply with the server's text.
    const redis::script bad("return redis.call('NOSUCH')");
    redis::request b;
    b.push_script(bad, 0);
    auto e = must(io, conn, b);
    BOOST_TEST(e[0].is_error());
    BOOST_TEST(e[0].error_message().find("Unknown Redis command") != std::string::npos);
}

// A library is loaded once per connection, ahead of its first FCALL, however many calls are
// in flight then; after FUNCTION FLUSH the calls that find it gone load it once more and are
// resent; a library already there ("already exists") costs nothing more.
BOOST_AUTO_TEST_CASE(function_libraries_load_once_per_connection) {
    redis_server server;
    net::io_context io;
    redis::connection conn(io, server.config());
    const redis::library lib("test", R"(
redis.register_function(LIBRARY .. '_add', function(keys, args)
  return redis.call('INCRBY', keys[1], args[1]) + 0
end)
redis.register_function{function_name = LIBRARY .. '_echo', flags = {'no-writes'},
  callback = function(keys, args) return args[1] end})");
    BOOST_TEST(lib.name().starts_with("test_"));
    BOOST_TEST(lib.name().size() == 5u + 12u);
    BOOST_TEST(lib.body().starts_with("#!lua name=" + lib.name() + "\n"));
    const auto add = lib.function_name("add");
    const auto echo = lib.function_name("echo");
    auto burst = [&](int n) {
        // n requests of three commands in flight at once, one write.
        std::vector<redis::request> reqs(static_cast<std::size_t>(n));
        std::vector<redis::response> resps(reqs.size());
        int done = 0;
        for (std::size_t i = 0; i < reqs.size(); ++i) {
            reqs[i].push_fcall(lib, add, 1, "sum", 1);
            reqs[i].push("PING");
            reqs[i].push_fcall_range(lib, echo, std::vector<std::string>{},
                                     std::vector<std::string>{std::string("a\0b", 3)});
            conn.async_exec(reqs[i], resps[i], [&](boost::system::error_code ec, std::size_t) {
                BOOST_TEST(!ec, ec.message());
                ++done;
            });
        }
        io.restart();
        while (done < n && io.run_one() > 0) {
        }
        for (auto& r : resps) {
            BOOST_TEST(r[0].is_integer(), (r[0].is_error() ? r[0].error_message() : ""));
            BOOST_TEST(r[1].as_string() == "PONG");
            BOOST_TEST(r[2].as_string() == std::string("a\0b", 3));
        }
    };
    burst(100);
    BOOST_TEST(conn.stats().function_loads == 1u);
    BOOST_TEST(conn.stats().function_retries == 0u);
    redis::request stats;
    stats.push("INFO", "commandstats");
    auto info = std::string(must(io, conn, stats)[0].as_string());
    BOOST_TEST(info.find("cmdstat_function|load:calls=1,") != std::string::npos, info);

    // Flushed: every call of the next burst is answered "Function not found" and resent, but
    // the library is loaded once more, not once a call.
    redis::request flush;
    flush.push("FUNCTION", "FLUSH");
    must(io, conn, flush);
    burst(100);
    BOOST_TEST(conn.stats().function_loads == 2u);
    BOOST_TEST(conn.stats().function_retries == 200u);
    redis::request sum;
    sum.push("GET", "sum");
    BOOST_TEST(must(io, conn, sum)[0].as_string() == "200");

    // Another connection finds it there: its load is answered "already exists", harmlessly.
    redis::connection other(io, server.config());
    redis::request one;
    one.push_fcall(lib, add, 1, "sum", 1);
    auto r = must(io, other, one);
    BOOST_TEST(r[0].as_integer() == 201);
    BOOST_TEST(other.stats().function_loads == 1u);
    BOOST_TEST(other.stats().function_retries == 0u);

    // A function that is not the library's: the server's error, resent once, then given.
    redis::request none;
    none.push_fcall(lib, lib.function_name("none"), 0);
    auto e = must(io, other, none);
    BOOST_TEST(e[0].is_error());
    BOOST_TEST(e[0].error_message().find("Function not found") != std::string::npos);
    BOOST_TEST(other.stats().function_retries == 1u);
}

BOOST_AUTO_TEST_CASE(completion_tokens_and_strands) {
    redis_server server;
    net::io_context io;
    auto strand = net::make_strand(io);
    redis::connection conn(strand, server.config());
    redis::request req;
    req.push("INCR", "t");

    // use_awaitable
    std::int64_t from_coroutine = 0;
    net::co_spawn(
        strand,
        [&]() -> net::awaitable<void> {
            redis::response resp;
            auto n = co_await conn.async_exec(req, resp, net::use_awaitable);
            BOOST_TEST(n == 1u);
            from_coroutine = resp[0].as_integer();
        },
        net::detached);
    BOOST_REQUIRE(run_until(io, [&] { return from_coroutine != 0; }));
    BOOST_TEST(from_coroutine == 1);

    // deferred
    redis::response dresp;
    bool deferred_done = false;
    auto op = conn.async_exec(req, dresp, net::deferred);
    std::move(op)([&](boost::system::error_code ec, std::size_t) { deferred_done = !ec; });
    BOOST_REQUIRE(run_until(io, [&] { return deferred_done; }));
    BOOST_TEST(dresp[0].as_integer() == 2);

    // use_future, with the io_context on another thread
    redis::response fresp;
    auto work = net::make_work_guard(io);
    std::thread runner([&] { io.restart(), io.run(); });
    std::future<std::size_t> f;
    net::dispatch(strand, [&] { f = conn.async_exec(req, fresp, net::use_future); });
    while (!f.valid()) {
        std::this_thread::yield();
    }
    BOOST_TEST(f.get() == 1u);
    BOOST_TEST(fresp[0].as_integer() == 3);
    work.reset();
    net::dispatch(strand, [&] { conn.close(); });
    io.stop();
    runner.join();
}

BOOST_AUTO_TEST_CASE(closed_connection_fails_requests) {
    redis_server server;
    net::io_context io;
    redis::connection conn(io, server.config());
    redis::request req;
    req.push("PING");
    must(io, conn, req);
    conn.close();
    redis::response resp;
    auto r = exec(io, conn, req, resp);
    BOOST_TEST(r.ec == redis::error::closed);
    redis::config no_host; // a name is taken (resolved on every attempt), nothing is not
    no_host.host = "";
    BOOST_CHECK_THROW(redis::connection(io, no_host), std::invalid_argument);
}

BOOST_AUTO_TEST_SUITE_END()
