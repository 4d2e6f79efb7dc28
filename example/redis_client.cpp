//
// example/redis_client.cpp
//
// The Redis client on its own (timewheel::redis, docs/redis.md): one connection that sends
// a request of several commands in one write and gets their replies in order, a second
// request issued while the first is in flight (both go out together: pipelining), and a
// subscriber that receives what the connection publishes.
//
// A request is a list of commands; a response holds one reply per command, in order. An
// error reply (a wrong type, an unknown command) does not fail the operation: it is one
// reply among the others, and the program looks at each. The operation fails only when
// the replies cannot come (the connection lost after the write, a timeout, close()).
//
//   redis_client [--host 127.0.0.1] [--port 6379 | --socket PATH]
//
// Try it (with a local redis-server): ./redis_client
//

#include <timewheel/redis/connection.hpp>
#include <timewheel/redis/subscriber.hpp>

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <iostream>
#include <sstream>
#include <string>
#include <string_view>

namespace redis = timewheel::redis;
namespace net = boost::asio;

int main(int argc, char** argv) {
    redis::config cfg;
    for (int i = 1; i + 1 < argc; i += 2) {
        const std::string_view a = argv[i];
        if (a == "--host") {
            cfg.host = argv[i + 1];
        } else if (a == "--port") {
            cfg.port = static_cast<std::uint16_t>(std::atoi(argv[i + 1]));
        } else if (a == "--socket") {
            cfg.unix_socket = argv[i + 1];
        } else {
            std::fprintf(stderr, "usage: redis_client [--host H] [--port P | --socket PATH]\n");
            return 2;
        }
    }
    // A request that never gets its replies fails after this long instead of waiting.
    cfg.request_timeout = std::chrono::seconds(5);

    net::io_context io;
    redis::connection conn(io, cfg);
    redis::subscriber sub(io.get_executor(), cfg);
    int failures = 0;

    // The subscriber runs on a connection of its own (a subscribed connection takes no
    // other command). A message published before its SUBSCRIBE is confirmed does not reach
    // it: that is pub/sub.
    sub.subscribe({"example:news"});
    sub.run();

    // Three commands in one request: one write, three replies. The key gets a lifetime, so
    // that the example leaves nothing behind.
    redis::request first;
    first.push("SET", "example:greeting", "hello", "PX", "60000");
    first.push("INCRBY", "example:counter", "5");
    first.push("GET", "example:greeting");
    redis::response first_replies;

    // Issued before the first has its replies: it waits in the connection's queue and goes
    // out in the next write. HGET on a string key is an error reply, not a failure.
    redis::request second;
    second.push("PEXPIRE", "example:counter", "60000");
    second.push("HGET", "example:greeting", "field");
    redis::response second_replies;

    conn.async_exec(first, first_replies, [&](boost::system::error_code ec, std::size_t n) {
        if (ec) {
            std::cerr << "first request: " << ec.message() << '\n';
            ++failures;
            return;
        }
        std::cout << n << " replies: SET " << first_replies[0].as_string() << ", counter "
                  << first_replies[1].as_integer() << ", greeting " << first_replies[2].as_string()
                  << '\n';
    });
    conn.async_exec(second, second_replies, [&](boost::system::error_code ec, std::size_t) {
        if (ec) {
            std::cerr << "second request: " << ec.message() << '\n';
            ++failures;
            return;
        }
        std::cout << "HGET on a string: " << (second_replies[1].is_error() ? "error reply " : "")
                  << second_replies[1].error_message() << '\n';
    });

    // PUBLISH answers how many subscribers got the message: 0 until the subscriber's
    // SUBSCRIBE has been confirmed, so publish again 10 ms later until it is 1 (for at most
    // five seconds).
    redis::request publish;
    publish.push("PUBLISH", "example:news", "timewheel says hi");
    redis::response published;
    net::steady_timer retry(io);
    int attempts = 0;
    // The program ends when the message has arrived and the PUBLISH that delivered it has
    // its reply (the replies of the requests before it came first: replies are in order).
    bool received = false;
    bool delivered = false;
    std::string got;
    const auto finish_when_done = [&] {
        if (received && delivered) {
            std::cout << got << '\n';
            sub.close();
            conn.close();
        }
    };
    std::function<void()> publish_once = [&] {
        conn.async_exec(publish, published, [&](boost::system::error_code ec, std::size_t) {
            if (ec || ++attempts == 500) {
                std::cerr << "publish: " << (ec ? ec.message() : "no subscriber") << '\n';
                ++failures;
                sub.close();
                conn.close();
            } else if (published[0].as_integer() == 0) {
                retry.expires_after(std::chrono::milliseconds(10));
                retry.async_wait([&](boost::system::error_code) { publish_once(); });
            } else {
                delivered = true;
                finish_when_done();
            }
        });
    };
    publish_once();
    sub.async_receive([&](boost::system::error_code ec, redis::message m) {
        if (ec) {
            std::cerr << "receive: " << ec.message() << '\n';
            ++failures;
            return;
        }
        std::ostringstream text; // printed at the end, after the replies
        text << m.kind << " on " << m.channel << ": " << m.payload;
        got = text.str();
        received = true;
        finish_when_done();
    });

    io.run();
    std::cout << "done: " << failures << " failure(s)\n";
    return failures == 0 ? 0 : 1;
}
