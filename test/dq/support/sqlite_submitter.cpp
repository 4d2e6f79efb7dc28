//
// test/dq/support/sqlite_submitter.cpp
//
// The child process of test/dq/sqlite_crash.cpp: submits tasks k0, k1, ... (due now) to a
// dq::sqlite_store on the file given as argv[1], 64 at a time in flight, and writes each id
// on its own line to stdout once the store has acknowledged it (its transaction is
// durable), until killed.
//

#include <timewheel/dq/sqlite_store.hpp>

#include <boost/asio/io_context.hpp>

#include <unistd.h>

#include <cstdio>
#include <string>

namespace dq = timewheel::dq;

namespace {

struct submitter {
    dq::sqlite_store& store;
    long next = 0;

    void submit_one() {
        dq::task t;
        t.id = "k";
        t.id += std::to_string(next++);
        t.payload = "payload of ";
        t.payload += t.id;
        store.submit(std::move(t),
                     [this](boost::system::error_code ec, dq::submit_result, std::string id) {
                         if (ec) {
                             std::fprintf(stderr, "submit failed: %s\n", ec.message().c_str());
                             std::_Exit(2);
                         }
                         // One write(2) a line: a kill -9 leaves whole lines only.
                         id += '\n';
                         if (::write(1, id.data(), id.size()) != static_cast<ssize_t>(id.size())) {
                             std::_Exit(3);
                         }
                         submit_one();
                     });
    }
};

} // namespace

int main(int argc, char** argv) {
    if (argc != 2) {
        std::fprintf(stderr, "usage: %s <database file>\n", argv[0]);
        return 1;
    }
    boost::asio::io_context io;
    dq::sqlite_store_options o;
    o.path = argv[1];
    dq::sqlite_store store(io.get_executor(), o);
    submitter s{store};
    for (int i = 0; i < 64; ++i) {
        s.submit_one();
    }
    io.run();
    return 0;
}
