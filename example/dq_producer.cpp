//
// example/dq_producer.cpp
//
// Submits delayed tasks to a durable queue on Redis, then shows what the queue knows of one.
//
// Each task gets an id of its own (an idempotency key: submitting the same id again answers
// "exists" and changes nothing), a payload, and a due time spread over --spread from now,
// measured on Redis's clock (a relative delay is turned into an absolute time by the
// store, never by this machine's clock). Run dq_worker against the same queue to run them.
//
//   dq_producer [--host 127.0.0.1] [--port 6379 | --socket PATH] [--queue demo]
//               [--count 20] [--spread-ms 2000] [--prefix task]
//
// Try it (with a local redis-server):
//   ./dq_producer --count 100 --spread-ms 5000
//   ./dq_worker --exit-after 100
//

#include <timewheel/dq/queue.hpp>
#include <timewheel/dq/redis_store.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>
#include <string_view>

namespace dq = timewheel::dq;
namespace net = boost::asio;

namespace {

struct settings {
    timewheel::redis::config redis;
    std::string queue = "demo";
    int count = 20;
    int spread_ms = 2000;
    std::string prefix = "task";
};

settings parse(int argc, char** argv) {
    settings s;
    for (int i = 1; i < argc; ++i) {
        const std::string_view a = argv[i];
        auto value = [&]() -> std::string {
            if (i + 1 >= argc) {
                std::fprintf(stderr, "dq_producer: %s needs a value\n", argv[i]);
                std::exit(2);
            }
            return argv[++i];
        };
        if (a == "--host") {
            s.redis.host = value();
        } else if (a == "--port") {
            s.redis.port = static_cast<std::uint16_t>(std::stoi(value()));
        } else if (a == "--socket") {
            s.redis.unix_socket = value();
        } else if (a == "--queue") {
            s.queue = value();
        } else if (a == "--count") {
            s.count = std::stoi(value());
        } else if (a == "--spread-ms") {
            s.spread_ms = std::stoi(value());
        } else if (a == "--prefix") {
            s.prefix = value();
        } else {
            std::fprintf(stderr,
                         "usage: dq_producer [--host H] [--port P | --socket PATH] [--queue Q] "
                         "[--count N] [--spread-ms MS] [--prefix P]\n");
            std::exit(2);
        }
    }
    s.redis.request_timeout = std::chrono::seconds(5);
    return s;
}

net::awaitable<int> produce(dq::queue& q, const settings& s) {
    int created = 0;
    for (int i = 0; i < s.count; ++i) {
        dq::task t;
        t.id = s.prefix + "-" + std::to_string(i);
        t.due = std::chrono::milliseconds(s.count > 1 ? s.spread_ms * i / (s.count - 1) : 0);
        t.payload = "hello from task " + std::to_string(i);
        t.retry = {.max_attempts = 3,
                   .base = std::chrono::milliseconds(200),
                   .cap = std::chrono::seconds(5)};
        auto [ec, result, id] =
            co_await q.async_submit(std::move(t), net::as_tuple(net::use_awaitable));
        if (ec) {
            std::fprintf(stderr, "dq_producer: submit failed: %s\n", ec.message().c_str());
            co_return 1;
        }
        created += result == dq::submit_result::created;
    }
    std::printf("submitted %d tasks (%d new) to queue '%s', due over %d ms\n", s.count, created,
                s.queue.c_str(), s.spread_ms);

    // What the queue knows of the last one.
    auto [ec, st] = co_await q.async_status(s.prefix + "-" + std::to_string(s.count - 1),
                                            net::as_tuple(net::use_awaitable));
    if (!ec) {
        std::printf("%s: %s, attempt %u, due in %lld ms\n", st.id.c_str(), to_string(st.state),
                    st.attempt, static_cast<long long>((st.due - st.created).count()));
    }
    co_return 0;
}

} // namespace

int main(int argc, char** argv) {
    const settings s = parse(argc, argv);
    net::io_context io;
    dq::redis_store_options queue_options;
    queue_options.name = s.queue;
    dq::redis_store store(io.get_executor(), s.redis, queue_options);
    dq::queue q(store);
    int status = 1;
    net::co_spawn(io, produce(q, s), [&](std::exception_ptr e, int rc) {
        status = e ? 1 : rc;
        store.close();
    });
    io.run();
    return status;
}
