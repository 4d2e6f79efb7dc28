//
// test/redis/sentinel.cpp
//
// redis::connection finding its server: through Sentinels (config::sentinels) and by host
// name. The Sentinels here are fakes on 127.0.0.1, on the test's io_context, because what
// is tested is what a real Sentinel never sends: silence, a flood, a reply of the wrong
// type, a port out of range, a replica's address. The servers they point at are real
// redis-servers. A real Sentinel group, and a real failover, are in
// test/redis_ha/sentinel_failover.py.
//

#include <timewheel/redis/connection.hpp>

#define BOOST_TEST_MODULE redis_sentinel
#include <test/redis/support/redis_fixture.hpp>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/write.hpp>
#include <boost/test/unit_test.hpp>

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace net = boost::asio;
namespace redis = timewheel::redis;
using tcp = net::ip::tcp;
using timewheel::test::redis_available;
using timewheel::test::redis_server;
using timewheel::test::run_until;
using namespace std::chrono_literals;

namespace {

// A Sentinel that answers every request with `answer` (nothing at all when empty), on `io`.
class fake_sentinel {
public:
    fake_sentinel(net::io_context& io, std::string reply)
        : answer(std::move(reply))
        , acceptor_(io, {net::ip::make_address("127.0.0.1"), 0}) {
        accept();
    }

    redis::host_port address() const { return {"127.0.0.1", acceptor_.local_endpoint().port()}; }

    std::string answer;
    int asked = 0;

private:
    void accept() {
        acceptor_.async_accept([this](boost::system::error_code ec, tcp::socket s) {
            if (ec) {
                return;
            }
            auto peer = std::make_shared<tcp::socket>(std::move(s));
            peers_.push_back(peer); // kept open: a silent Sentinel stays connected
            peer->async_read_some(
                net::buffer(buf_), [this, peer](boost::system::error_code e, std::size_t) {
                    if (e) {
                        return;
                    }
                    ++asked;
                    if (!answer.empty()) {
                        auto out = std::make_shared<std::string>(answer);
                        net::async_write(*peer, net::buffer(*out),
                                         [out](boost::system::error_code, std::size_t) {});
                    }
                });
            accept();
        });
    }

    tcp::acceptor acceptor_;
    std::vector<std::shared_ptr<tcp::socket>> peers_;
    char buf_[4096];
};

std::string address_reply(const std::string& host, std::uint16_t port) {
    const auto p = std::to_string(port);
    return "*2\r\n$" + std::to_string(host.size()) + "\r\n" + host + "\r\n$" +
           std::to_string(p.size()) + "\r\n" + p + "\r\n";
}

// PING through `conn`; the error it completed with.
boost::system::error_code ping(net::io_context& io, redis::connection& conn) {
    redis::request req;
    req.push("PING");
    redis::response resp;
    std::optional<boost::system::error_code> result;
    conn.async_exec(req, resp, [&](boost::system::error_code ec, std::size_t) { result = ec; });
    BOOST_TEST_REQUIRE(run_until(io, [&] { return result.has_value(); }));
    if (!*result) {
        BOOST_TEST(resp[0].as_string() == "PONG");
    }
    return *result;
}

redis::config sentinel_config(std::vector<redis::host_port> sentinels) {
    redis::config cfg;
    cfg.sentinels = std::move(sentinels);
    cfg.master_name = "tw";
    cfg.connect_timeout = 500ms; // a silent Sentinel is skipped after this
    cfg.reconnect_min_delay = 10ms;
    cfg.reconnect_max_delay = 50ms;
    return cfg;
}

} // namespace

BOOST_AUTO_TEST_CASE(sentinels_that_are_silent_flood_or_answer_no_address_are_skipped_for_the_next,
                     *boost::unit_test::precondition(redis_available())) {
    redis_server master;
    net::io_context io;
    fake_sentinel silent(io, "");
    fake_sentinel flood(io, "$100000000\r\n" + std::string(64 * 1024, 'x'));
    fake_sentinel wrong_type(io, "+OK\r\n");
    fake_sentinel bad_port(io, address_reply("127.0.0.1", 0) + address_reply("x", 1));
    fake_sentinel port_too_big(io, "*2\r\n$9\r\n127.0.0.1\r\n$5\r\n99999\r\n");
    fake_sentinel unknown_master(io, "*-1\r\n");
    fake_sentinel good(io, address_reply("127.0.0.1", master.port()));
    redis::connection conn(io,
                           sentinel_config({silent.address(), flood.address(), wrong_type.address(),
                                            bad_port.address(), port_too_big.address(),
                                            unknown_master.address(), good.address()}));
    const auto ec = ping(io, conn);
    BOOST_TEST(!ec, ec.message());
    BOOST_TEST(silent.asked == 1);
    BOOST_TEST(flood.asked == 1);
    BOOST_TEST(unknown_master.asked == 1);
    BOOST_TEST(good.asked == 1);
    BOOST_TEST(conn.stats().sentinel_queries == 7u);
    BOOST_TEST(conn.stats().connects == 1u);
    conn.close();
}

// As redis-py and Jedis do: the Sentinel that answered is asked first next time, one that
// failed after the others. Each reconnection is forced by killing the client on the master.
BOOST_AUTO_TEST_CASE(the_sentinel_that_answered_is_asked_first_and_a_failed_one_last,
                     *boost::unit_test::precondition(redis_available())) {
    redis_server master;
    net::io_context io;
    fake_sentinel silent(io, "");
    fake_sentinel second(io, address_reply("127.0.0.1", master.port()));
    fake_sentinel third(io, address_reply("127.0.0.1", master.port()));
    redis::connection conn(io,
                           sentinel_config({silent.address(), second.address(), third.address()}));
    BOOST_TEST_REQUIRE(!ping(io, conn));
    BOOST_TEST(silent.asked == 1);
    BOOST_TEST(second.asked == 1);
    BOOST_TEST(third.asked == 0);
    const auto reconnect = [&](std::uint64_t connects) {
        master.command(timewheel::test::resp_command({"CLIENT", "KILL", "TYPE", "normal"}));
        BOOST_TEST_REQUIRE(run_until(io, [&] { return conn.stats().connects == connects; }));
        BOOST_TEST_REQUIRE(!ping(io, conn));
    };
    // Order now: second, third, silent. The second answers again at once.
    reconnect(2);
    BOOST_TEST(second.asked == 2);
    BOOST_TEST(silent.asked == 1);
    BOOST_TEST(third.asked == 0);
    // The second knows no master now: it goes last, and the third, which answers, first.
    second.answer = "*-1\r\n";
    reconnect(3);
    BOOST_TEST(second.asked == 3);
    BOOST_TEST(third.asked == 1);
    BOOST_TEST(silent.asked == 1); // after the third, which answered
    // Order: third, silent, second. The third is asked first.
    reconnect(4);
    BOOST_TEST(third.asked == 2);
    BOOST_TEST(silent.asked == 1);
    BOOST_TEST(second.asked == 3);
    BOOST_TEST(conn.stats().sentinel_queries == 6u);
    conn.close();
}

// The order is shared by the connections given the same Sentinels (timewheeld has one a
// thread, a subscriber and a result forwarder): a dead Sentinel found by one is asked last by
// the next, so it costs one connect timeout and not one a connection.
BOOST_AUTO_TEST_CASE(connections_given_the_same_sentinels_share_their_order,
                     *boost::unit_test::precondition(redis_available())) {
    redis_server master;
    net::io_context io;
    fake_sentinel silent(io, "");
    fake_sentinel good(io, address_reply("127.0.0.1", master.port()));
    redis::connection first(io, sentinel_config({silent.address(), good.address()}));
    BOOST_TEST_REQUIRE(!ping(io, first));
    BOOST_TEST(silent.asked == 1);
    BOOST_TEST(good.asked == 1);
    redis::connection second(io, sentinel_config({silent.address(), good.address()}));
    BOOST_TEST_REQUIRE(!ping(io, second));
    BOOST_TEST(silent.asked == 1); // not asked again
    BOOST_TEST(good.asked == 2);
    BOOST_TEST(second.stats().sentinel_queries == 1u);
    // Another list has its own order: the silent Sentinel, first in it, is asked.
    fake_sentinel also_good(io, address_reply("127.0.0.1", master.port()));
    redis::connection other(io, sentinel_config({silent.address(), also_good.address()}));
    BOOST_TEST_REQUIRE(!ping(io, other));
    BOOST_TEST(silent.asked == 2);
    BOOST_TEST(also_good.asked == 1);
    first.close();
    second.close();
    other.close();
}

BOOST_AUTO_TEST_CASE(no_sentinel_with_an_address_fails_the_attempt_with_no_master,
                     *boost::unit_test::precondition(redis_available())) {
    net::io_context io;
    fake_sentinel unknown_master(io, "*-1\r\n");
    auto cfg = sentinel_config({unknown_master.address()});
    redis::connection conn(io, cfg);
    conn.run();
    BOOST_TEST_REQUIRE(run_until(io, [&] { return conn.stats().connect_failures >= 2; }));
    BOOST_TEST(conn.last_error() == redis::error::no_master, conn.last_error().message());
    BOOST_TEST(unknown_master.asked >= 2); // asked again on every attempt
    conn.close();
}

BOOST_AUTO_TEST_CASE(a_replica_named_by_a_sentinel_is_not_used_until_a_master_is_named,
                     *boost::unit_test::precondition(redis_available())) {
    redis_server master;
    redis_server replica({.args = {"--replicaof", "127.0.0.1", std::to_string(master.port())}});
    net::io_context io;
    fake_sentinel sentinel(io, address_reply("127.0.0.1", replica.port()));
    redis::connection conn(io, sentinel_config({sentinel.address()}));
    conn.run();
    BOOST_TEST_REQUIRE(run_until(io, [&] { return conn.stats().connect_failures >= 3; }));
    BOOST_TEST(conn.last_error() == redis::error::not_master, conn.last_error().message());
    BOOST_TEST(conn.stats().connects == 0u);
    // The failover is over: the Sentinel names the master, and the next attempt uses it.
    sentinel.answer = address_reply("127.0.0.1", master.port());
    const auto ec = ping(io, conn);
    BOOST_TEST(!ec, ec.message());
    BOOST_TEST(conn.stats().connects == 1u);
    conn.close();
}

BOOST_AUTO_TEST_CASE(a_host_name_is_resolved_again_on_every_attempt,
                     *boost::unit_test::precondition(redis_available())) {
    redis_server server;
    server.stop(); // its port free: attempts fail until it is back
    net::io_context io;
    redis::config cfg;
    cfg.host = "localhost";
    cfg.port = server.port();
    cfg.reconnect_min_delay = 10ms;
    cfg.reconnect_max_delay = 50ms;
    redis::connection conn(io, cfg);
    conn.run();
    BOOST_TEST_REQUIRE(run_until(io, [&] { return conn.stats().connect_failures >= 3; }));
    server.start();
    const auto ec = ping(io, conn);
    BOOST_TEST(!ec, ec.message());
    // One resolution per attempt, the failed ones and the one that connected: an address
    // kept from the first would have made this 1.
    BOOST_TEST(conn.stats().resolves == conn.stats().connect_failures + 1);
    conn.close();
}

BOOST_AUTO_TEST_CASE(a_name_that_does_not_resolve_fails_the_attempt_and_is_tried_again) {
    net::io_context io;
    redis::config cfg;
    cfg.host = "no-such-host.invalid"; // RFC 6761: never resolves
    cfg.reconnect_min_delay = 10ms;
    cfg.reconnect_max_delay = 50ms;
    redis::connection conn(io, cfg);
    conn.run();
    BOOST_TEST_REQUIRE(run_until(io, [&] { return conn.stats().connect_failures >= 2; }));
    BOOST_TEST(conn.stats().resolves >= 2u);
    BOOST_TEST(!conn.is_connected());
    conn.close();
}

BOOST_AUTO_TEST_CASE(sentinels_without_a_master_name_are_refused) {
    net::io_context io;
    redis::config cfg;
    cfg.sentinels = {{"127.0.0.1", 26379}};
    BOOST_CHECK_THROW((redis::connection{io, cfg}), std::invalid_argument);
    cfg.master_name = "tw";
    cfg.sentinels = {{"127.0.0.1", 0}};
    BOOST_CHECK_THROW((redis::connection{io, cfg}), std::invalid_argument);
}
