// Tests of the Cluster client's internals that need no server: the slot map (assign from
// CLUSTER SLOTS ranges, MOVED updates, node indices that stay valid), the parsing of MOVED /
// ASK / TRYAGAIN / CLUSTERDOWN errors, and reading a request's RESP payload back into
// commands.

#define BOOST_TEST_MODULE cluster_slot_map
#include <timewheel/redis/detail/cluster_slot_map.hpp>

#include <timewheel/redis/detail/cluster_commands.hpp>

#include <boost/test/unit_test.hpp>

#include <string>
#include <vector>

namespace td = timewheel::redis::detail;

BOOST_AUTO_TEST_CASE(assign_and_move) {
    td::cluster_slot_map map;
    BOOST_TEST(!map.complete());
    BOOST_TEST(map.owner(0) == td::cluster_slot_map::unknown);
    std::vector<td::cluster_slot_range> ranges{{0, 5460, {"127.0.0.1", 7000}},
                                               {5461, 10922, {"127.0.0.1", 7001}},
                                               {10923, 16383, {"127.0.0.1", 7002}}};
    map.assign(ranges);
    BOOST_TEST(map.complete());
    BOOST_TEST(map.nodes().size() == 3u);
    BOOST_TEST(map.nodes()[map.owner(0)].port == 7000);
    BOOST_TEST(map.nodes()[map.owner(5460)].port == 7000);
    BOOST_TEST(map.nodes()[map.owner(5461)].port == 7001);
    BOOST_TEST(map.nodes()[map.owner(16383)].port == 7002);

    // MOVED changes one slot and nothing else.
    auto const n = map.set_owner(42, {"127.0.0.1", 7002});
    BOOST_TEST(map.nodes()[n].port == 7002);
    BOOST_TEST(map.owner(42) == n);
    BOOST_TEST(map.nodes()[map.owner(41)].port == 7000);
    BOOST_TEST(map.nodes().size() == 3u);

    // A new master gets a new index; old indices keep their meaning.
    auto const before = map.owner(0);
    auto const fresh = map.set_owner(1, {"127.0.0.1", 7003});
    BOOST_TEST(fresh == 3);
    BOOST_TEST(map.owner(0) == before);

    // A refresh with a gap leaves the gap unknown; a master without slots is kept, unused.
    map.assign(std::vector<td::cluster_slot_range>{{0, 100, {"127.0.0.1", 7001}}});
    BOOST_TEST(!map.complete());
    BOOST_TEST(map.owner(101) == td::cluster_slot_map::unknown);
    BOOST_TEST(map.nodes().size() == 4u);
    BOOST_TEST(!map.serves_any(0));
    BOOST_TEST(map.serves_any(1));
}

BOOST_AUTO_TEST_CASE(a_bounded_list_of_nodes) {
    td::cluster_slot_map map;
    map.set_limit(3);
    BOOST_TEST(map.node_index({"127.0.0.1", 7000}) == 0);
    BOOST_TEST(map.set_owner(1, {"127.0.0.1", 7001}) == 1);
    BOOST_TEST(map.set_owner(2, {"127.0.0.1", 7002}) == 2);
    // A fourth node is refused and changes nothing.
    BOOST_TEST(map.set_owner(2, {"127.0.0.1", 7003}) == td::cluster_slot_map::unknown);
    BOOST_TEST(map.node_index({"127.0.0.1", 7003}) == td::cluster_slot_map::unknown);
    BOOST_TEST(map.owner(2) == 2);
    BOOST_TEST(map.live_count() == 3u);
    // A node forgotten loses its slots and frees its index for the next new node.
    map.forget(1);
    BOOST_TEST(!map.live(1));
    BOOST_TEST(map.owner(1) == td::cluster_slot_map::unknown);
    BOOST_TEST(map.live_count() == 2u);
    BOOST_TEST(map.set_owner(5, {"127.0.0.1", 7003}) == 1);
    BOOST_TEST(map.nodes()[1].port == 7003);
    BOOST_TEST(map.nodes().size() == 3u);
    // The limit never exceeds what a 16-bit index can name.
    map.set_limit(1u << 20);
    BOOST_TEST(map.limit() == td::cluster_slot_map::max_limit);
}

BOOST_AUTO_TEST_CASE(redirections) {
    auto r = td::parse_redirection("MOVED 3999 127.0.0.1:6381");
    BOOST_TEST_REQUIRE(r.has_value());
    BOOST_TEST(r->kind == td::cluster_redirection::moved);
    BOOST_TEST(r->slot == 3999);
    BOOST_TEST(r->target.host == "127.0.0.1");
    BOOST_TEST(r->target.port == 6381);

    r = td::parse_redirection("ASK 16383 ::1:7000");
    BOOST_TEST_REQUIRE(r.has_value());
    BOOST_TEST(r->kind == td::cluster_redirection::ask);
    BOOST_TEST(r->slot == 16383);
    BOOST_TEST(r->target.host == "::1");
    BOOST_TEST(r->target.port == 7000);

    r = td::parse_redirection("MOVED 7 :7001"); // unknown endpoint: same host
    BOOST_TEST_REQUIRE(r.has_value());
    BOOST_TEST(r->target.host.empty());

    for (char const* bad : {"ERR MOVED 1 h:1", "MOVED", "MOVED 16384 h:1", "MOVED 1 h:0",
                            "MOVED 1 h:99999", "MOVED x h:1", "ASK 1 host", "MOVED 1"})
        BOOST_TEST(!td::parse_redirection(bad).has_value(), bad);

    BOOST_TEST(td::is_retry_later("TRYAGAIN Multiple keys request during rehashing of slot"));
    BOOST_TEST(td::is_retry_later("CLUSTERDOWN The cluster is down"));
    BOOST_TEST(!td::is_retry_later("ERR unknown command"));
}

BOOST_AUTO_TEST_CASE(read_commands_back) {
    using namespace std::string_literals;
    std::string const payload = "*2\r\n$3\r\nGET\r\n$3\r\nfoo\r\n"
                                "*3\r\n$3\r\nSET\r\n$5\r\na\r\nb\0\r\n$0\r\n\r\n"s;
    td::cluster_command c;
    BOOST_TEST_REQUIRE(td::read_command(payload, 0, c));
    BOOST_TEST(c.args.size() == 2u);
    BOOST_TEST(c.args[1] == "foo");
    BOOST_TEST_REQUIRE(td::read_command(payload, c.end, c));
    BOOST_TEST(c.args.size() == 3u);
    BOOST_TEST(c.args[1] == std::string_view("a\r\nb\0", 5)); // binary-safe
    BOOST_TEST(c.args[2].empty());
    BOOST_TEST(c.end == payload.size());

    for (std::string const bad :
         {"", "*1\r\n", "*1\r\n$5\r\nab\r\n", "+OK\r\n", "*x\r\n", "*1\r\n$2\r\nabXY"})
        BOOST_TEST(!td::read_command(bad, 0, c));
}
