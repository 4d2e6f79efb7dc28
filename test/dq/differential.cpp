//
// test/dq/differential.cpp
//
// The randomized differential test of support/differential.hpp (random operations checked
// against the reference model of support/model.hpp after every step) on dq::redis_store, on
// a standalone redis-server and on a three-master Cluster.
//
// TIMEWHEEL_SEED replays a run (the seed is printed); TIMEWHEEL_OPS sets the number of steps.
//

#include <timewheel/dq/redis_store.hpp>

#define BOOST_TEST_MODULE dq_differential
#include <boost/test/unit_test.hpp>

#include <test/dq/support/differential.hpp>
#include <test/dq/support/store_calls.hpp>
#include <test/redis/support/cluster_fixture.hpp>
#include <test/redis/support/redis_fixture.hpp>
#include <test/support/seed.hpp>

#include <boost/asio/io_context.hpp>

#include <chrono>
#include <memory>

namespace dq = timewheel::dq;
namespace redis = timewheel::redis;
using namespace std::chrono_literals;
using boost::system::error_code;
using timewheel::test::differential;
using timewheel::test::differential_steps;

BOOST_AUTO_TEST_CASE(standalone_matches_the_model,
                     *boost::unit_test::precondition(timewheel::test::redis_available())) {
    const auto seed =
        timewheel::test::seed_from_environment("dq_differential standalone", 20261123);
    timewheel::test::redis_server server;
    boost::asio::io_context io;
    dq::redis_store_options o;
    o.name = "diff";
    o.shards = 4;
    o.buckets = 4;
    dq::redis_store store(io.get_executor(), server.config(), o);
    differential(io, store, seed, differential_steps());
}

BOOST_AUTO_TEST_CASE(cluster_matches_the_model,
                     *boost::unit_test::precondition(timewheel::test::cluster_available())) {
    const auto seed = timewheel::test::seed_from_environment("dq_differential cluster", 20261124);
    timewheel::test::cluster_fixture cluster;
    boost::asio::io_context io;
    redis::cluster_config cfg;
    cfg.node.port = cluster.ports[1];
    dq::redis_store_options o;
    o.name = "diff";
    o.shards = 16; // spread over the three masters
    o.buckets = 4;
    {
        dq::redis_store store(io.get_executor(), cfg, o);
        differential(io, store, seed, differential_steps());
    }
    timewheel::test::run_for(io, 50ms); // let the cluster close on the io_context's thread
}
