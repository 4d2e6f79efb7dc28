// cache_lookup: a ttl_cache in front of a slow asynchronous lookup.
//
// A pretend user database answers after 100 ms (a wheel_timer stands in for the network).
// Clients ask for users through ttl_cache::async_take: concurrent requests for the same user
// share one query (singleflight), later requests are served from the cache until the entry
// expires (1 s, ±5% jitter), a failed query reaches every waiter and is not cached, and the
// cache keeps at most four users, evicting the least recently used. The cache prints its
// statistics every 400 ms, in the manner of go-zero's minutely log line. The program ends by
// itself after about two seconds.

#include <timewheel/ttl_cache.hpp>
#include <timewheel/wheel_timer.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <chrono>
#include <cstdio>
#include <memory>
#include <string>
#include <utility>

namespace net = boost::asio;
using namespace std::chrono_literals;
using boost::system::error_code;

namespace {

const auto start = std::chrono::steady_clock::now();

long long elapsed_ms() {
    return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() -
                                                                 start)
        .count();
}

// The slow lookup: void(error_code, std::string) after 100 ms; user 13 does not exist.
class user_database {
public:
    explicit user_database(net::io_context& io)
        : io_(io) {}

    template <typename Handler>
    void async_find(int id, Handler handler) {
        ++queries_;
        std::printf("%5lld ms  database: query for user %d\n", elapsed_ms(), id);
        auto latency = std::make_shared<timewheel::wheel_timer>(io_, 100ms);
        latency->async_wait([latency, id, h = std::move(handler)](error_code) mutable {
            if (id == 13) {
                std::move(h)(make_error_code(boost::system::errc::no_such_file_or_directory),
                             std::string());
            } else {
                std::move(h)(error_code{}, "user-" + std::to_string(id));
            }
        });
    }

    int queries() const { return queries_; }

private:
    net::io_context& io_;
    int queries_ = 0;
};

using user_cache = timewheel::ttl_cache<int, std::string>;

// One client: asks for a user and says where the answer came from.
net::awaitable<void> client(user_cache& cache, user_database& db, const char* who, int id) {
    const long long asked = elapsed_ms();
    const bool cached = cache.contains(id);
    auto [ec, name] = co_await cache.async_take(
        id, [&db](const int& key, auto handler) { db.async_find(key, std::move(handler)); },
        net::as_tuple(net::use_awaitable));
    std::printf("%5lld ms  %-8s user %2d -> %-10s (%s, waited %lld ms)\n", elapsed_ms(), who, id,
                ec ? ec.message().c_str() : name.c_str(), cached ? "cached" : "fetched",
                elapsed_ms() - asked);
}

net::awaitable<void> scenario(user_cache& cache, user_database& db) {
    auto ex = co_await net::this_coro::executor;
    timewheel::wheel_timer pause(ex);
    const auto at = [&](std::chrono::milliseconds t) {
        pause.expires_at(std::chrono::steady_clock::time_point(start) + t);
        return pause.async_wait(net::use_awaitable);
    };

    std::puts("-- five clients ask for user 1 at once, two for user 2: two queries");
    for (const char* who : {"alice", "bob", "carol", "dave", "erin"}) {
        net::co_spawn(ex, client(cache, db, who, 1), net::detached);
    }
    net::co_spawn(ex, client(cache, db, "frank", 2), net::detached);
    net::co_spawn(ex, client(cache, db, "grace", 2), net::detached);

    co_await at(200ms);
    std::puts("-- later: served from the cache");
    co_await client(cache, db, "heidi", 1);
    co_await client(cache, db, "ivan", 2);

    co_await at(300ms);
    std::puts("-- user 13 does not exist: both waiters get the error, nothing is cached");
    net::co_spawn(ex, client(cache, db, "judy", 13), net::detached);
    co_await client(cache, db, "mallory", 13);

    std::puts("-- users 3 to 5 fill the cache past its limit of four: user 1, the least "
              "recently used, is evicted");
    for (int id = 3; id <= 5; ++id) {
        co_await client(cache, db, "oscar", id);
    }

    co_await at(1300ms);
    std::puts("-- a second after it was stored, user 2 has expired: fetched again");
    co_await client(cache, db, "peggy", 2);
    co_await client(cache, db, "trent", 3);

    co_await at(2000ms);
    cache.stop_stats_report();
    std::printf("%5lld ms  done: %d database queries; %s\n", elapsed_ms(), db.queries(),
                timewheel::to_string(cache.stats()).c_str());
    cache.clear(); // nothing left armed: io.run() returns
}

} // namespace

int main() {
    net::io_context io;
    user_database db(io);

    timewheel::ttl_cache_options options;
    options.name = "users";
    options.limit = 4;
    user_cache cache(io, 1s, options);
    cache.on_removal([](const int& id, std::string& name, timewheel::ttl_cache_removal why) {
        std::printf("%5lld ms  cache: user %d (%s) %s\n", elapsed_ms(), id, name.c_str(),
                    why == timewheel::ttl_cache_removal::expired ? "expired" : "evicted");
    });
    cache.report_stats(400ms, [](const timewheel::ttl_cache_stats& s) {
        std::printf("%5lld ms  %s\n", elapsed_ms(), timewheel::to_string(s).c_str());
    });

    net::co_spawn(io, scenario(cache, db), net::detached);
    io.run();
    return db.queries() == 7 ? 0 : 1;
}
