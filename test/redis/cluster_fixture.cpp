// Tests of the Cluster test fixture itself (support/cluster_fixture.hpp), with redis-cli only:
// three masters that agree on a full slot map, keys served by the master that owns their slot,
// and the servers gone after the fixture.

#define BOOST_TEST_MODULE cluster_fixture
#include "support/cluster_fixture.hpp"

#include <timewheel/redis/key_slot.hpp>

#include <boost/test/unit_test.hpp>

#include <set>
#include <string>

using timewheel::redis::key_slot;
using timewheel::redis::test::cluster_fixture;

BOOST_AUTO_TEST_SUITE(fixture, *boost::unit_test::precondition(cluster_fixture::servers_installed))

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
    // Killed: nobody listens on those ports any more.
    for (auto p : ports)
        BOOST_TEST(!cluster_fixture::can_connect(p));
}

BOOST_AUTO_TEST_SUITE_END()
