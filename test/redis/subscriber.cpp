//
// test/redis/subscriber.cpp
//
// redis::subscriber against a real redis-server: SUBSCRIBE, PSUBSCRIBE and SSUBSCRIBE
// messages through async_receive, unsubscribing, cancellation of a receive, the
// subscriptions sent again after the server is killed and restarted, a locator that says
// where to connect, and a peer on 127.0.0.1 that is not Redis: pushes of the wrong shape
// dropped, an sunsubscribe of a held shard channel and a MOVED answer followed elsewhere.
//

#include <timewheel/redis/subscriber.hpp>

#define BOOST_TEST_MODULE redis_subscriber
#include <test/redis/support/redis_fixture.hpp>

#include <timewheel/redis/connection.hpp>

#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/read_until.hpp>
#include <boost/asio/streambuf.hpp>
#include <boost/asio/write.hpp>
#include <boost/test/unit_test.hpp>

#include <optional>
#include <string>
#include <thread>

#include <sys/socket.h>
#include <vector>

namespace net = boost::asio;
namespace redis = timewheel::redis;
using timewheel::test::redis_available;
using timewheel::test::redis_server;
using timewheel::test::run_for;
using timewheel::test::run_until;
using namespace std::chrono_literals;

namespace {

// Publishes `payload` on `channel` and returns the number of receivers.
std::int64_t publish(net::io_context& io, redis::connection& conn, std::string_view command,
                     std::string_view channel, std::string_view payload) {
    redis::request req;
    req.push(command, channel, payload);
    redis::response resp;
    bool done = false;
    conn.async_exec(req, resp, [&](boost::system::error_code ec, std::size_t) {
        BOOST_TEST(!ec);
        done = true;
    });
    BOOST_REQUIRE(run_until(io, [&] { return done; }));
    return resp[0].as_integer();
}

// A peer on 127.0.0.1 that accepts one connection, reads the first command's first line,
// writes `script`, then holds the connection until the client closes it.
class scripted_peer {
public:
    explicit scripted_peer(std::string script)
        : acceptor_(io_, {net::ip::make_address("127.0.0.1"), 0}) {
        thread_ = std::thread([this, script = std::move(script)] {
            net::ip::tcp::socket s(io_);
            net::streambuf in;
            boost::system::error_code ec;
            acceptor_.accept(s, ec);
            if (ec) {
                return; // never connected: shut down by the destructor
            }
            net::read_until(s, in, "\r\n", ec);
            net::write(s, net::buffer(script), ec);
            while (!ec) {
                net::read(s, in, net::transfer_at_least(1), ec);
            }
        });
    }
    ~scripted_peer() {
        ::shutdown(acceptor_.native_handle(), SHUT_RDWR); // ends an accept still waiting
        thread_.join();
    }
    std::uint16_t port() const { return acceptor_.local_endpoint().port(); }

private:
    net::io_context io_;
    net::ip::tcp::acceptor acceptor_;
    std::thread thread_;
};

// A locator that names `ports` in turn, the last one again and again; counts its calls.
struct port_list {
    std::vector<std::uint16_t> ports;
    std::size_t calls = 0;
    redis::subscriber::locator locator() {
        return [this](auto done) {
            const auto p = ports[std::min(calls, ports.size() - 1)];
            ++calls;
            done(boost::system::error_code(), redis::host_port{"127.0.0.1", p});
        };
    }
};

std::optional<redis::message> receive(net::io_context& io, redis::subscriber& sub) {
    std::optional<redis::message> got;
    bool done = false;
    sub.async_receive([&](boost::system::error_code ec, redis::message m) {
        if (!ec) {
            got = std::move(m);
        }
        done = true;
    });
    BOOST_REQUIRE(run_until(io, [&] { return done; }));
    return got;
}

} // namespace

BOOST_AUTO_TEST_SUITE(subscriber, *boost::unit_test::precondition(redis_available()))

BOOST_AUTO_TEST_CASE(messages_of_every_kind) {
    redis_server server;
    net::io_context io;
    redis::subscriber sub(io.get_executor(), server.config());
    redis::connection pub(io, server.config());
    sub.subscribe({"news"});
    sub.psubscribe({"alerts.*"});
    sub.ssubscribe({"shard"});
    BOOST_REQUIRE(run_until(io, [&] { return sub.confirmations() == 3; }));

    BOOST_TEST(publish(io, pub, "PUBLISH", "news", std::string("a\0b", 3)) == 1);
    auto m = receive(io, sub);
    BOOST_REQUIRE(m);
    BOOST_TEST(m->kind == redis::message::kind_type::message);
    BOOST_TEST(m->channel == "news");
    BOOST_TEST(m->payload == std::string("a\0b", 3));

    BOOST_TEST(publish(io, pub, "PUBLISH", "alerts.fire", "hot") == 1);
    m = receive(io, sub);
    BOOST_REQUIRE(m);
    BOOST_TEST(m->kind == redis::message::kind_type::pmessage);
    BOOST_TEST(m->pattern == "alerts.*");
    BOOST_TEST(m->channel == "alerts.fire");
    BOOST_TEST(m->payload == "hot");

    BOOST_TEST(publish(io, pub, "SPUBLISH", "shard", "s1") == 1);
    m = receive(io, sub);
    BOOST_REQUIRE(m);
    BOOST_TEST(m->kind == redis::message::kind_type::smessage);
    BOOST_TEST(m->channel == "shard");
    BOOST_TEST(m->payload == "s1");

    // Unsubscribed: no receiver any more.
    sub.unsubscribe({"news"});
    BOOST_REQUIRE(run_until(io, [&] { return publish(io, pub, "PUBLISH", "news", "x") == 0; }));
}

BOOST_AUTO_TEST_CASE(receive_is_cancellable) {
    redis_server server;
    net::io_context io;
    redis::subscriber sub(io.get_executor(), server.config());
    sub.subscribe({"quiet"});
    net::cancellation_signal signal;
    boost::system::error_code ec;
    bool done = false;
    sub.async_receive(net::bind_cancellation_slot(signal.slot(), [&](auto e, redis::message) {
        ec = e;
        done = true;
    }));
    run_for(io, 50ms);
    BOOST_TEST(!done);
    signal.emit(net::cancellation_type::terminal);
    BOOST_REQUIRE(run_until(io, [&] { return done; }));
    BOOST_TEST(ec == net::experimental::error::channel_cancelled);
}

BOOST_AUTO_TEST_CASE(resubscribes_after_a_reconnect) {
    redis_server server;
    net::io_context io;
    auto cfg = server.config();
    cfg.reconnect_min_delay = 20ms;
    cfg.reconnect_max_delay = 200ms;
    redis::subscriber sub(io.get_executor(), cfg);
    redis::connection pub(io, cfg);
    sub.subscribe({"jobs"});
    sub.psubscribe({"job.*"});
    BOOST_REQUIRE(run_until(io, [&] { return sub.confirmations() == 2; }));
    BOOST_TEST(publish(io, pub, "PUBLISH", "jobs", "before") == 1);
    auto m = receive(io, sub);
    BOOST_REQUIRE(m);
    BOOST_TEST(m->payload == "before");

    server.kill9();
    run_for(io, 100ms);
    server.start();
    // Subscribed again on the new connection (two more confirmations).
    BOOST_REQUIRE(run_until(io, [&] { return sub.confirmations() == 4; }));
    BOOST_TEST(sub.stats().connects == 2u);
    BOOST_TEST(publish(io, pub, "PUBLISH", "jobs", "after") == 1);
    m = receive(io, sub);
    BOOST_REQUIRE(m);
    BOOST_TEST(m->channel == "jobs");
    BOOST_TEST(m->payload == "after");
    BOOST_TEST(publish(io, pub, "PUBLISH", "job.7", "pattern after") == 1);
    m = receive(io, sub);
    BOOST_REQUIRE(m);
    BOOST_TEST(m->pattern == "job.*");
    BOOST_TEST(m->payload == "pattern after");
}

BOOST_AUTO_TEST_CASE(close_ends_the_receive) {
    redis_server server;
    net::io_context io;
    redis::subscriber sub(io.get_executor(), server.config());
    sub.subscribe({"c"});
    boost::system::error_code ec;
    bool done = false;
    sub.async_receive([&](auto e, redis::message) {
        ec = e;
        done = true;
    });
    run_for(io, 50ms);
    sub.close();
    BOOST_REQUIRE(run_until(io, [&] { return done; }));
    BOOST_TEST(ec == net::experimental::error::channel_closed);
}

BOOST_AUTO_TEST_CASE(a_locator_says_where_to_connect) {
    redis_server a, b;
    net::io_context io;
    auto cfg = a.config(); // not where the locator points first
    cfg.reconnect_min_delay = 20ms;
    cfg.reconnect_max_delay = 200ms;
    port_list where{{b.port()}};
    redis::subscriber sub(io.get_executor(), cfg);
    sub.set_locator(where.locator());
    redis::connection pub_a(io, a.config()), pub_b(io, b.config());
    sub.ssubscribe({"shard"});
    BOOST_REQUIRE(run_until(io, [&] { return sub.confirmations() == 1; }));
    BOOST_TEST(where.calls == 1u);
    BOOST_TEST(publish(io, pub_a, "SPUBLISH", "shard", "on a") == 0);
    BOOST_TEST(publish(io, pub_b, "SPUBLISH", "shard", "on b") == 1);
    auto m = receive(io, sub);
    BOOST_REQUIRE(m);
    BOOST_TEST(m->payload == "on b");

    // b dies: the locator is asked again, and now names a.
    where.ports = {a.port()};
    where.calls = 0;
    b.kill9();
    BOOST_REQUIRE(run_until(io, [&] { return sub.confirmations() == 2; }));
    BOOST_TEST(where.calls >= 1u);
    BOOST_TEST(publish(io, pub_a, "SPUBLISH", "shard", "on a") == 1);
    m = receive(io, sub);
    BOOST_REQUIRE(m);
    BOOST_TEST(m->payload == "on a");
    BOOST_TEST(sub.relocations() == 0u); // a lost connection is no relocation
}

BOOST_AUTO_TEST_CASE(a_hostile_peer_is_dropped_and_left) {
    // The first peer sends a push whose channel is not a string (dropped, not thrown), a good
    // message, then ends the shard subscription the subscriber holds: it connects where the
    // locator says next, a peer that answers SSUBSCRIBE with MOVED: then to the real server.
    scripted_peer first("*3\r\n$7\r\nmessage\r\n:1\r\n:2\r\n"
                        "*4\r\n$8\r\npmessage\r\n*0\r\n$1\r\nc\r\n$1\r\np\r\n"
                        "*3\r\n$8\r\nsmessage\r\n$5\r\nshard\r\n$2\r\nok\r\n"
                        "*3\r\n$12\r\nsunsubscribe\r\n$5\r\nshard\r\n:0\r\n");
    scripted_peer second("-MOVED 1234 127.0.0.1:1\r\n");
    redis_server real;
    net::io_context io;
    auto cfg = real.config();
    cfg.reconnect_min_delay = 20ms;
    cfg.reconnect_max_delay = 200ms;
    port_list where{{first.port(), second.port(), real.port()}};
    redis::subscriber sub(io.get_executor(), cfg);
    sub.set_locator(where.locator());
    sub.ssubscribe({"shard"});
    auto m = receive(io, sub);
    BOOST_REQUIRE(m);
    BOOST_TEST(m->kind == redis::message::kind_type::smessage);
    BOOST_TEST(m->payload == "ok");
    BOOST_REQUIRE(run_until(io, [&] { return sub.confirmations() == 1; }));
    BOOST_TEST(sub.relocations() == 2u);
    BOOST_TEST(where.calls == 3u);
    redis::connection pub(io, real.config());
    BOOST_TEST(publish(io, pub, "SPUBLISH", "shard", "real") == 1);
    m = receive(io, sub);
    BOOST_REQUIRE(m);
    BOOST_TEST(m->payload == "real");
    sub.close(); // the peers' threads end with their connections
    io.run_for(50ms);
}

BOOST_AUTO_TEST_SUITE_END()
