// A consumer of a layer of the package, timewheel::dq_sqlite (and, through it, timewheel::dq,
// timewheel::redis, timewheel::cron and their libraries): Conan's test_package builds it when
// the package has the layer (-o timewheel/*:dq_sqlite=True, or server=True). It opens the
// embedded store on a file of its own and asks it the time, so that SQLite is not only linked
// but run. Exits 0 on success, 1 on failure.

#include <timewheel/dq/sqlite_store.hpp>

#include <boost/asio/io_context.hpp>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <string>
#include <unistd.h>

int main() {
    namespace dq = timewheel::dq;
    const auto path = std::filesystem::temp_directory_path() /
                      ("timewheel-test-package-" + std::to_string(::getpid()) + ".db");
    bool ok = false;
    {
        boost::asio::io_context io;
        dq::sqlite_store_options opt;
        opt.path = path.string();
        dq::sqlite_store store(io.get_executor(), opt);
        // The store's clock is the system's: an answer within a day of it is the store's.
        store.now([&](boost::system::error_code ec, dq::time_point t) {
            const auto off = t - std::chrono::time_point_cast<std::chrono::milliseconds>(
                                     std::chrono::system_clock::now());
            ok = !ec && off < std::chrono::hours(24) && off > -std::chrono::hours(24);
            store.close();
        });
        io.run();
    }
    std::error_code ignored;
    for (const char* suffix : {"", "-wal", "-shm", "-journal"}) {
        std::filesystem::remove(path.string() + suffix, ignored);
    }
    std::puts(ok ? "timewheel test_package (dq_sqlite): OK"
                 : "timewheel test_package (dq_sqlite): FAILED");
    return ok ? 0 : 1;
}
