//
// test/dq/sqlite_worker.cpp
//
// dq::worker on dq::sqlite_store: the worker cases every store runs
// (support/worker_cases.hpp): a task runs once and never early, many random due times run in
// order, a cancel or a reschedule reaches a prefetched task, retries go to the dead letters
// and back.
//

#include <timewheel/dq/sqlite_store.hpp>
#include <timewheel/dq/worker.hpp>

#define BOOST_TEST_MODULE dq_sqlite_worker
#include <boost/test/unit_test.hpp>

#include <test/dq/support/sqlite_file.hpp>
#include <test/dq/support/worker_cases.hpp>

#include <memory>

namespace dq = timewheel::dq;

namespace {

struct fixture : timewheel::test::worker_fixture {
    timewheel::test::temp_dir dir;

    fixture() {
        dq::sqlite_store_options o;
        o.path = dir.file("w.db");
        store = std::make_unique<dq::sqlite_store>(io.get_executor(), o);
    }
    ~fixture() override { store.reset(); }
};

std::unique_ptr<timewheel::test::worker_fixture> make_fixture() {
    return std::make_unique<fixture>();
}

} // namespace

BOOST_AUTO_TEST_SUITE(sqlite_worker)

DQ_TEST_WORKER_CASES(make_fixture)

BOOST_AUTO_TEST_SUITE_END()
