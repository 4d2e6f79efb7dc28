//
// test/redis/hostile_server.cpp
//
// redis::connection against a server that is not Redis, or a hostile one: a raw TCP peer on
// 127.0.0.1 that answers the first request with a bulk string announced at a terabyte and
// then streamed without end, or with an array of endless small elements. The reply's budget
// (config::max_reply_bytes) ends it: the request fails with protocol_error long before the
// flood ends, the connection closes instead of holding what is sent, and a reply within the
// budget still goes through. And a server that skips a reply: the request that timed out
// closes the connection, so no later request takes another's reply.
//

#include <timewheel/redis/cluster.hpp>
#include <timewheel/redis/connection.hpp>
#include <timewheel/redis/key_slot.hpp>

#define BOOST_TEST_MODULE redis_hostile_server
#include <test/redis/support/redis_fixture.hpp>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/read_until.hpp>
#include <boost/asio/streambuf.hpp>
#include <boost/asio/write.hpp>
#include <boost/test/unit_test.hpp>

#include <atomic>
#include <istream>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace net = boost::asio;
namespace redis = timewheel::redis;
using tcp = net::ip::tcp;
using timewheel::test::run_until;
using namespace std::chrono_literals;

namespace {

constexpr std::size_t flood_bytes = std::size_t(256) << 20;

// A peer that answers the first request with `head`, then writes `filler` again and again
// until `flood_bytes` are sent or the client closes. Counts what it sent.
class hostile_peer {
public:
    hostile_peer(std::string head, std::string filler)
        : acceptor_(io_, {net::ip::make_address("127.0.0.1"), 0}) {
        thread_ = std::thread([this, head = std::move(head), filler = std::move(filler)] {
            tcp::socket s(io_);
            acceptor_.accept(s);
            net::streambuf in;
            net::read_until(s, in, "\r\n"); // the first line of the request
            boost::system::error_code ec;
            sent_ += net::write(s, net::buffer(head), ec);
            while (!ec && sent_ < flood_bytes) {
                sent_ += net::write(s, net::buffer(filler), ec);
            }
        });
    }
    ~hostile_peer() { thread_.join(); }

    std::uint16_t port() const { return acceptor_.local_endpoint().port(); }
    std::size_t sent() const { return sent_; }

private:
    net::io_context io_;
    tcp::acceptor acceptor_;
    std::atomic<std::size_t> sent_{0};
    std::thread thread_;
};

// Sends GET k through a connection to `peer` with a reply budget of 1 MiB, which does not
// reconnect; returns why the connection failed once the request completed (with
// error::closed: the connection gave up).
boost::system::error_code ask(hostile_peer& peer, redis::response& resp) {
    net::io_context io;
    redis::config cfg;
    cfg.port = peer.port();
    cfg.reconnect = false;
    cfg.max_reply_bytes = 1 << 20;
    redis::connection conn(io, cfg);
    redis::request req;
    req.push("GET", "k");
    std::optional<boost::system::error_code> result;
    conn.async_exec(req, resp, [&](boost::system::error_code ec, std::size_t) { result = ec; });
    BOOST_TEST_REQUIRE(run_until(
        io, [&] { return result.has_value(); }, 60s));
    BOOST_TEST(*result == redis::error::closed, result->message());
    const auto why = conn.last_error();
    conn.close();
    return why;
}

} // namespace

BOOST_AUTO_TEST_CASE(a_bulk_string_streamed_without_end_fails_the_reply) {
    hostile_peer peer("$1000000000000\r\n", std::string(64 * 1024, 'x'));
    redis::response resp;
    const auto ec = ask(peer, resp);
    BOOST_TEST(ec == redis::error::protocol_error, ec.message());
    BOOST_TEST(peer.sent() < flood_bytes / 4, peer.sent() << " bytes were taken");
}

BOOST_AUTO_TEST_CASE(an_array_of_endless_elements_fails_the_reply) {
    std::string elements;
    for (int i = 0; i < 16 * 1024; ++i) {
        elements += ":1\r\n";
    }
    hostile_peer peer("*2000000000\r\n", elements);
    redis::response resp;
    const auto ec = ask(peer, resp);
    BOOST_TEST(ec == redis::error::protocol_error, ec.message());
    BOOST_TEST(peer.sent() < flood_bytes / 4, peer.sent() << " bytes were taken");
    BOOST_TEST(resp.nodes().size() * 32 + resp.data().size() <= std::size_t(1) << 20);
}

BOOST_AUTO_TEST_CASE(a_reply_within_the_budget_goes_through) {
    // A peer that sends one reply of 512 KiB, whole, then waits for the client to close.
    class whole_peer {
    public:
        whole_peer()
            : acceptor_(io_, {net::ip::make_address("127.0.0.1"), 0}) {
            thread_ = std::thread([this] {
                tcp::socket s(io_);
                acceptor_.accept(s);
                net::streambuf in;
                net::read_until(s, in, "\r\n");
                const std::string reply = "$" + std::to_string(512 * 1024) + "\r\n" +
                                          std::string(512 * 1024, 'y') + "\r\n";
                boost::system::error_code ec;
                net::write(s, net::buffer(reply), ec);
                char byte;
                s.read_some(net::buffer(&byte, 1), ec); // until the client closes
            });
        }
        ~whole_peer() { thread_.join(); }
        std::uint16_t port() const { return acceptor_.local_endpoint().port(); }

    private:
        net::io_context io_;
        tcp::acceptor acceptor_;
        std::thread thread_;
    } peer;
    net::io_context io;
    redis::config cfg;
    cfg.port = peer.port();
    cfg.reconnect = false;
    cfg.max_reply_bytes = 1 << 20;
    redis::connection conn(io, cfg);
    redis::request req;
    req.push("GET", "k");
    redis::response resp;
    std::optional<boost::system::error_code> result;
    conn.async_exec(req, resp, [&](boost::system::error_code ec, std::size_t) { result = ec; });
    BOOST_TEST_REQUIRE(run_until(
        io, [&] { return result.has_value(); }, 60s));
    BOOST_TEST(!*result, result->message());
    BOOST_TEST(resp[0].as_string().size() == 512u * 1024u);
    conn.close();
}

BOOST_AUTO_TEST_CASE(a_zero_budget_is_refused) {
    net::io_context io;
    redis::config cfg;
    cfg.max_reply_bytes = 0;
    BOOST_CHECK_THROW((redis::connection{io, cfg}), std::invalid_argument);
}

namespace {

// Reads one command (a RESP array of bulk strings) from @p s; empty at the end or on error.
std::vector<std::string> read_command(tcp::socket& s, net::streambuf& in) {
    std::istream is(&in);
    std::string line;
    boost::system::error_code ec;
    if (!net::read_until(s, in, "\r\n", ec)) {
        return {};
    }
    std::getline(is, line); // *N\r
    std::vector<std::string> args(std::stoul(line.substr(1)));
    for (auto& arg : args) {
        if (!net::read_until(s, in, "\r\n", ec)) {
            return {};
        }
        std::getline(is, line); // $len\r
        const std::size_t len = std::stoul(line.substr(1));
        if (in.size() < len + 2 &&
            !net::read(s, in, net::transfer_exactly(len + 2 - in.size()), ec)) {
            return {};
        }
        arg.resize(len);
        is.read(arg.data(), static_cast<std::streamsize>(len));
        is.ignore(2);
    }
    return args;
}

// A peer that reads commands and answers each with its last argument as a bulk string,
// except the first command of all, which it swallows: a server that skips a reply. Serves
// one connection after another until the client stops.
class skipping_peer {
public:
    skipping_peer()
        : acceptor_(io_, {net::ip::make_address("127.0.0.1"), 0}) {
        thread_ = std::thread([this] {
            bool swallowed = false;
            while (!stop_) {
                tcp::socket s(io_);
                boost::system::error_code ec;
                acceptor_.accept(s, ec);
                if (ec || stop_) {
                    return;
                }
                ++connections_;
                net::streambuf in;
                for (auto args = read_command(s, in); !args.empty(); args = read_command(s, in)) {
                    if (!swallowed) {
                        swallowed = true;
                        continue;
                    }
                    const std::string reply =
                        "$" + std::to_string(args.back().size()) + "\r\n" + args.back() + "\r\n";
                    net::write(s, net::buffer(reply), ec);
                }
            }
        });
    }
    ~skipping_peer() {
        stop_ = true;
        tcp::socket wake(io_); // unblocks accept()
        boost::system::error_code ec;
        wake.connect(acceptor_.local_endpoint(), ec);
        thread_.join();
    }
    std::uint16_t port() const { return acceptor_.local_endpoint().port(); }
    int connections() const { return connections_; }

private:
    net::io_context io_;
    tcp::acceptor acceptor_;
    std::atomic<bool> stop_{false};
    std::atomic<int> connections_{0};
    std::thread thread_;
};

} // namespace

BOOST_AUTO_TEST_CASE(a_skipped_reply_does_not_shift_the_later_ones) {
    skipping_peer peer;
    net::io_context io;
    redis::config cfg;
    cfg.port = peer.port();
    cfg.request_timeout = 300ms;
    cfg.reconnect_min_delay = 10ms;
    cfg.reconnect_max_delay = 20ms;
    redis::connection conn(io, cfg);

    struct result {
        std::optional<boost::system::error_code> ec;
        redis::response resp;
    };
    auto issue = [&](redis::request const& req, result& r) {
        conn.async_exec(req, r.resp,
                        [&r](boost::system::error_code ec, std::size_t) { r.ec = ec; });
    };
    redis::request a, b, c;
    a.push("GET", "a");
    b.push("GET", "b");
    c.push("GET", "c");

    // The first request is written and never answered: it times out.
    result ra;
    issue(a, ra);
    BOOST_TEST_REQUIRE(run_until(
        io, [&] { return ra.ec.has_value(); }, 30s));
    BOOST_TEST(*ra.ec == redis::error::request_timeout, ra.ec->message());

    // Two more, pipelined: each gets its own reply. Before, the first's place was kept and
    // the reply to b dropped in its stead, so that c's reply went to b.
    result rb, rc;
    issue(b, rb);
    issue(c, rc);
    BOOST_TEST_REQUIRE(run_until(
        io, [&] { return rb.ec.has_value() && rc.ec.has_value(); }, 30s));
    BOOST_TEST(!*rb.ec, rb.ec->message());
    BOOST_TEST(!*rc.ec, rc.ec->message());
    // Never another's reply, whatever else happens.
    if (!*rb.ec) {
        BOOST_TEST(rb.resp[0].as_string() == "b");
    }
    if (!*rc.ec) {
        BOOST_TEST(rc.resp[0].as_string() == "c");
    }
    BOOST_TEST(conn.stats().timeout_disconnects == 1u);
    BOOST_TEST(conn.last_error() == redis::error::request_timeout);
    BOOST_TEST(peer.connections() == 2);
    conn.close();
}

namespace {

// A Cluster node that is hostile: it answers CLUSTER SLOTS with a map naming its first
// port's node for every slot, and every other command with MOVED to the next of its ports,
// so that a client following it learns a new node at each step. Listens on `count` ports of
// 127.0.0.1, one thread each, serving one connection after another.
class moving_node {
public:
    // map_masters: how many of its ports CLUSTER SLOTS names as masters, slots split evenly.
    explicit moving_node(std::size_t count, std::size_t map_masters = 1)
        : map_masters_(map_masters) {
        for (std::size_t i = 0; i < count; ++i) {
            acceptors_.push_back(std::make_unique<tcp::acceptor>(
                io_, tcp::endpoint{net::ip::make_address("127.0.0.1"), 0}));
        }
        for (std::size_t i = 0; i < count; ++i) {
            threads_.emplace_back([this, i] { serve(i); });
        }
    }
    ~moving_node() {
        stop_ = true;
        for (auto& a : acceptors_) {
            tcp::socket wake(io_); // unblocks accept()
            boost::system::error_code ec;
            wake.connect(a->local_endpoint(), ec);
        }
        for (auto& t : threads_) {
            t.join();
        }
    }
    std::uint16_t port(std::size_t i) const { return acceptors_[i]->local_endpoint().port(); }

private:
    void serve(std::size_t i) {
        while (!stop_) {
            tcp::socket s(io_);
            boost::system::error_code ec;
            acceptors_[i]->accept(s, ec);
            if (ec || stop_) {
                return;
            }
            net::streambuf in;
            for (auto args = read_command(s, in); !args.empty(); args = read_command(s, in)) {
                std::string reply;
                if (args[0] == "CLUSTER") {
                    reply = "*" + std::to_string(map_masters_) + "\r\n";
                    const std::size_t share = redis::hash_slot_count / map_masters_;
                    for (std::size_t m = 0; m < map_masters_; ++m) {
                        const std::size_t last = m + 1 == map_masters_ ? redis::hash_slot_count - 1
                                                                       : (m + 1) * share - 1;
                        reply +=
                            "*3\r\n:" + std::to_string(m * share) + "\r\n:" + std::to_string(last) +
                            "\r\n*2\r\n$9\r\n127.0.0.1\r\n:" + std::to_string(port(m)) + "\r\n";
                    }
                } else {
                    const auto slot = args.size() > 1 ? redis::key_slot(args[1]) : 0;
                    reply = "-MOVED " + std::to_string(slot) +
                            " 127.0.0.1:" + std::to_string(port((i + 1) % acceptors_.size())) +
                            "\r\n";
                }
                net::write(s, net::buffer(reply), ec);
            }
        }
    }

    std::size_t map_masters_;
    net::io_context io_;
    std::vector<std::unique_ptr<tcp::acceptor>> acceptors_;
    std::atomic<bool> stop_{false};
    std::vector<std::thread> threads_;
};

} // namespace

BOOST_AUTO_TEST_CASE(a_cluster_node_moving_to_ever_new_nodes_is_bounded) {
    moving_node node(12);
    net::io_context io;
    redis::cluster_config cfg;
    cfg.node.port = node.port(0);
    cfg.max_nodes = 4;
    cfg.max_redirections = 16;
    cfg.refresh_interval = 1h; // the test refreshes, not the background
    redis::cluster cluster(io, cfg);
    redis::request get;
    get.push("GET", "k");

    for (int round = 0; round < 3; ++round) {
        // One request follows MOVED from node to node: four new nodes, then the fifth is
        // refused with a named error instead of grown into.
        redis::response resp;
        std::optional<boost::system::error_code> result;
        cluster.async_exec(get, resp,
                           [&](boost::system::error_code ec, std::size_t) { result = ec; });
        BOOST_TEST_REQUIRE(run_until(
            io, [&] { return result.has_value(); }, 30s));
        BOOST_TEST(*result == boost::system::error_code(redis::cluster_error::too_many_nodes),
                   result->message());
        BOOST_TEST(cluster.node_count() == 5u); // the seed and max_nodes more

        // A refresh learns that only the seed serves slots: the others are forgotten.
        std::optional<boost::system::error_code> refreshed;
        cluster.async_refresh([&](boost::system::error_code ec) { refreshed = ec; });
        BOOST_TEST_REQUIRE(run_until(
            io, [&] { return refreshed.has_value(); }, 30s));
        BOOST_TEST(!*refreshed, refreshed->message());
        BOOST_TEST(cluster.node_count() == 1u);
        BOOST_TEST(cluster.master_count() == 1u);
        BOOST_TEST(cluster.stats().forgotten == 4u * (round + 1u));
    }
    BOOST_TEST(cluster.stats().moved == 3u * 5u);
    cluster.close();
}

BOOST_AUTO_TEST_CASE(a_slot_map_naming_too_many_masters_is_refused) {
    moving_node node(6, 6);
    net::io_context io;
    redis::cluster_config cfg;
    cfg.node.port = node.port(0);
    cfg.max_nodes = 4; // the seed is one of the six: five more
    redis::cluster cluster(io, cfg);
    std::optional<boost::system::error_code> refreshed;
    cluster.async_refresh([&](boost::system::error_code ec) { refreshed = ec; });
    BOOST_TEST_REQUIRE(run_until(
        io, [&] { return refreshed.has_value(); }, 30s));
    BOOST_TEST(*refreshed == boost::system::error_code(redis::cluster_error::too_many_nodes),
               refreshed->message());
    BOOST_TEST(cluster.node_count() == 1u);
    BOOST_TEST(cluster.master_count() == 0u);
    cluster.close();
}
