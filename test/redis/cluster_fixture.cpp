// Tests of the Cluster test fixture itself (support/cluster_fixture.hpp), with redis-cli only:
// three masters that agree on a full slot map, keys served by the master that owns their slot,
// and the servers gone after the fixture.

#define BOOST_TEST_MODULE cluster_fixture
#include <test/redis/support/cluster_fixture.hpp>

#include <timewheel/redis/key_slot.hpp>

#include <boost/test/unit_test.hpp>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <set>
#include <string>

using timewheel::redis::key_slot;
using timewheel::test::cluster_available;
using timewheel::test::cluster_fixture;

namespace {

bool listening(std::uint16_t port) {
    int const fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = htons(port);
    bool const ok = ::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
    ::close(fd);
    return ok;
}

} // namespace

BOOST_AUTO_TEST_SUITE(fixture, *boost::unit_test::precondition(cluster_available{}))

BOOST_AUTO_TEST_CASE(three_masters_share_all_slots) {
    std::array<std::uint16_t, 3> ports{};
    {
        cluster_fixture cluster;
        ports = cluster.ports;
        std::set<std::string> ids;
        for (auto p : cluster.ports) {
            auto const info = cluster.cli(p, {"CLUSTER", "INFO"});
            BOOST_TEST(info.find("cluster_state:ok") != std::string::npos);
            BOOST_TEST(info.find("cluster_slots_assigned:16384") != std::string::npos);
            BOOST_TEST(info.find("cluster_known_nodes:3") != std::string::npos);
            ids.insert(cluster.node_id(p));
        }
        BOOST_TEST(ids.size() == 3u);

        // "foo" lives in slot 12182: its owner stores it, another master redirects.
        auto const owner = cluster.owner_port(key_slot("foo"));
        BOOST_TEST(cluster.cli(owner, {"SET", "foo", "bar"}).find("OK") != std::string::npos);
        for (auto p : cluster.ports)
            if (p != owner)
                BOOST_TEST(cluster.cli(p, {"GET", "foo"}).find("MOVED 12182") != std::string::npos);
    }
    // Stopped: nobody listens on those ports any more.
    for (auto p : ports)
        BOOST_TEST(!listening(p));
}

BOOST_AUTO_TEST_SUITE_END()
