//
// test/redis/allocation.cpp
//
// The steady-state request path allocates nothing: a request and a response reused in a
// loop, one at a time (with the default recycling allocator) and pipelined 16 deep (with
// handlers that carry an allocator of their own, so that what is counted is the client's
// own allocations). Counted with a replaced global operator new and aligned_alloc (which
// Asio's recycling allocator calls when its per-thread cache misses), from inside the
// handlers: requests are issued from completions, as a server issues them.
//

#include <timewheel/redis/connection.hpp>

#define BOOST_TEST_MODULE redis_allocation
#include <test/redis/support/redis_fixture.hpp>

#include <boost/asio/bind_allocator.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/test/unit_test.hpp>

#include <test/support/allocation_counter.hpp>

#include <functional>
#include <vector>

namespace net = boost::asio;
namespace redis = timewheel::redis;
using timewheel::test::redis_available;
using timewheel::test::redis_server;
using timewheel::test::run_until;

namespace {

// A fixed pool of blocks for the handlers' own allocations (one per request in flight).
struct pool {
    static constexpr std::size_t block = 1024;
    static constexpr std::size_t blocks = 64;
    alignas(std::max_align_t) unsigned char storage[block * blocks];
    void* free_[blocks];
    std::size_t nfree = 0;
    pool() {
        for (std::size_t i = 0; i < blocks; ++i) {
            free_[nfree++] = storage + i * block;
        }
    }
};

template <typename T>
struct pool_allocator {
    using value_type = T;
    pool* p;
    explicit pool_allocator(pool* q) noexcept
        : p(q) {}
    template <typename U>
    pool_allocator(const pool_allocator<U>& o) noexcept
        : p(o.p) {}
    T* allocate(std::size_t n) {
        if (n * sizeof(T) > pool::block || p->nfree == 0) {
            throw std::bad_alloc();
        }
        return static_cast<T*>(p->free_[--p->nfree]);
    }
    void deallocate(T* t, std::size_t) noexcept { p->free_[p->nfree++] = t; }
    template <typename U>
    bool operator==(const pool_allocator<U>& o) const noexcept {
        return p == o.p;
    }
};

} // namespace

BOOST_AUTO_TEST_SUITE(allocation, *boost::unit_test::precondition(redis_available()))

BOOST_AUTO_TEST_CASE(one_request_at_a_time_allocates_nothing) {
    redis_server server;
    net::io_context io;
    auto cfg = server.config();
    cfg.request_timeout = std::chrono::seconds(30); // the timeout path is part of it
    redis::connection conn(io, cfg);
    redis::request req;
    req.push("SET", "key", "a value of some length");
    req.push("GET", "key");
    req.push("INCR", "n");
    redis::response resp;
    std::size_t done = 0;
    std::size_t limit = 0;
    // The allocations are read from inside the handlers, at the first and the last completion
    // of a round: what runs in between is the io_context's own work, as in a server. (The
    // test's post() that starts a round, from outside, goes through the heap.)
    std::size_t first = 0;
    std::size_t at_first = 0;
    std::size_t at_last = 0;
    // Each completion issues the next request, from inside the io_context, as a server's
    // handlers do (Asio's recycling allocator serves only its own thread's handlers).
    std::function<void()> issue = [&] {
        conn.async_exec(req, resp, [&](boost::system::error_code ec, std::size_t) {
            BOOST_TEST(!ec);
            ++done;
            if (done == first) {
                at_first = timewheel::test::all_allocations_so_far();
            }
            if (done < limit) {
                issue();
            } else {
                at_last = timewheel::test::all_allocations_so_far();
            }
        });
    };
    auto round = [&](std::size_t rounds) {
        first = done + 1;
        limit = done + rounds;
        net::post(io, issue);
        BOOST_REQUIRE(run_until(io, [&] { return done == limit; }));
    };
    round(2000); // warm: buffers, rings, recycled operation memory
    round(5000);
    BOOST_TEST(resp[1].as_string() == "a value of some length");
    BOOST_TEST_MESSAGE("allocations in 5000 requests: " << at_last - at_first);
    BOOST_TEST(at_last - at_first == 0u);
}

BOOST_AUTO_TEST_CASE(pipelined_requests_allocate_nothing) {
    redis_server server;
    net::io_context io;
    redis::connection conn(io, server.config());
    constexpr std::size_t depth = 16;
    std::vector<redis::request> reqs(depth);
    std::vector<redis::response> resps(depth);
    for (auto& r : reqs) {
        r.push("SET", "key", "value");
    }
    pool handler_memory;
    std::size_t done = 0;
    std::size_t issued = 0;
    std::size_t limit = 0;
    std::size_t target = 0;
    // Read from inside the handlers, at the first and the last completion of a run (the
    // first `depth` requests of a run are issued from outside the io_context).
    std::size_t first = 0;
    std::size_t at_first = 0;
    std::size_t at_last = 0;
    // Each completion issues the next request: always `depth` in flight.
    std::function<void(std::size_t)> issue = [&](std::size_t slot) {
        ++issued;
        conn.async_exec(reqs[slot], resps[slot],
                        net::bind_allocator(pool_allocator<void>(&handler_memory),
                                            [&, slot](boost::system::error_code ec, std::size_t) {
                                                BOOST_TEST(!ec);
                                                if (++done == first) {
                                                    at_first =
                                                        timewheel::test::all_allocations_so_far();
                                                }
                                                if (issued < limit) {
                                                    issue(slot);
                                                }
                                                if (done == target) {
                                                    at_last =
                                                        timewheel::test::all_allocations_so_far();
                                                }
                                            }));
    };
    auto run = [&](std::size_t count) {
        limit = issued + count;
        first = done + 1;
        target = done + count;
        for (std::size_t s = 0; s < depth; ++s) {
            issue(s);
        }
        BOOST_REQUIRE(run_until(io, [&] { return done == target; }));
    };
    run(5000);
    run(20000);
    BOOST_TEST_MESSAGE("allocations in 20000 pipelined requests: "
                       << at_last - at_first << " in " << conn.stats().writes << " writes in all");
    BOOST_TEST(at_last - at_first == 0u);
}

BOOST_AUTO_TEST_SUITE_END()
