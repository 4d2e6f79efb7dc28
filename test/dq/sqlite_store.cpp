//
// test/dq/sqlite_store.cpp
//
// dq::sqlite_store on a database file of its own: the suite every store passes
// (support/store_cases.hpp), the randomized differential test against the model
// (support/differential.hpp), then what is SQLite's own: everything survives a reopen, group
// commit, done and dead trimming, and a clear error for a path that cannot be opened, a file
// that is not a database, a file another store holds, and a newer schema; which commits wait
// for fsync (counted by a VFS that wraps the default one).
//

#include <timewheel/dq/sqlite_store.hpp>

#define BOOST_TEST_MODULE dq_sqlite_store
#include <boost/test/unit_test.hpp>

#include <test/dq/support/differential.hpp>
#include <test/dq/support/sqlite_file.hpp>
#include <test/dq/support/store_cases.hpp>
#include <test/support/stopped_thread.hpp>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/system/system_error.hpp>

#include <sqlite3.h>
#include <unistd.h>

#include <atomic>

#include <chrono>
#include <fstream>
#include <future>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace dq = timewheel::dq;
using namespace std::chrono_literals;
using boost::system::error_code;
using timewheel::test::make;

namespace {

struct fixture : timewheel::test::store_fixture {
    timewheel::test::temp_dir dir;
    dq::sqlite_store_options opt;

    explicit fixture(dq::limits limits = {}) {
        opt.path = dir.file("q.db");
        opt.limits = limits;
        open();
    }

    void open() { store = std::make_unique<dq::sqlite_store>(io.get_executor(), opt); }
    dq::sqlite_store& sqlite() { return static_cast<dq::sqlite_store&>(*store); }

    // Rows in the file, read behind the store's back (closed meanwhile, then reopened).
    long long rows(const std::string& table) {
        store.reset();
        const auto n = timewheel::test::sqlite_scalar(opt.path, "SELECT count(*) FROM " + table);
        open();
        return n;
    }
    long long task_keys() override { return rows("tasks") + rows("log"); }

    std::unique_ptr<dq::store> another_store() override {
        return std::make_unique<dq::sqlite_store>(io.get_executor(), sqlite());
    }
};

std::unique_ptr<timewheel::test::store_fixture> make_fixture(dq::limits limits) {
    return std::make_unique<fixture>(limits);
}

// The default VFS with its files' xSync counted: made the default while it lives, so that
// the stores opened meanwhile use it (each opens its file through the default VFS).
class counting_vfs {
public:
    counting_vfs() {
        base_ = sqlite3_vfs_find(nullptr);
        BOOST_REQUIRE(base_);
        vfs_ = *base_;
        vfs_.zName = "tw-counting";
        vfs_.szOsFile = static_cast<int>(sizeof(file)) + base_->szOsFile;
        vfs_.pAppData = this;
        vfs_.xOpen = &open;
        BOOST_REQUIRE(sqlite3_vfs_register(&vfs_, 1) == SQLITE_OK);
    }
    ~counting_vfs() {
        sqlite3_vfs_register(base_, 1);
        sqlite3_vfs_unregister(&vfs_);
    }
    counting_vfs(const counting_vfs&) = delete;
    counting_vfs& operator=(const counting_vfs&) = delete;

    // The syncs since the last call.
    long take() { return syncs_.exchange(0); }

private:
    // Our header, then the base VFS's file object.
    struct file {
        sqlite3_file header;
        counting_vfs* owner;
        sqlite3_io_methods methods;
        sqlite3_file* base() { return reinterpret_cast<sqlite3_file*>(this + 1); }
    };

    static int open(sqlite3_vfs* v, const char* name, sqlite3_file* f, int flags, int* out) {
        auto* self = static_cast<counting_vfs*>(v->pAppData);
        auto* ours = reinterpret_cast<file*>(f);
        ours->header.pMethods = nullptr;
        const int rc = self->base_->xOpen(self->base_, name, ours->base(), flags, out);
        if (rc != SQLITE_OK || !ours->base()->pMethods) {
            return rc;
        }
        ours->owner = self;
        ours->methods = *ours->base()->pMethods;
        // Every method forwards to the base file; xSync counts first.
        ours->methods.xClose = [](sqlite3_file* f) {
            return base_of(f)->pMethods->xClose(base_of(f));
        };
        ours->methods.xRead = [](sqlite3_file* f, void* p, int n, sqlite3_int64 o) {
            return base_of(f)->pMethods->xRead(base_of(f), p, n, o);
        };
        ours->methods.xWrite = [](sqlite3_file* f, const void* p, int n, sqlite3_int64 o) {
            return base_of(f)->pMethods->xWrite(base_of(f), p, n, o);
        };
        ours->methods.xTruncate = [](sqlite3_file* f, sqlite3_int64 n) {
            return base_of(f)->pMethods->xTruncate(base_of(f), n);
        };
        ours->methods.xSync = [](sqlite3_file* f, int flags) {
            ++reinterpret_cast<file*>(f)->owner->syncs_;
            return base_of(f)->pMethods->xSync(base_of(f), flags);
        };
        ours->methods.xFileSize = [](sqlite3_file* f, sqlite3_int64* n) {
            return base_of(f)->pMethods->xFileSize(base_of(f), n);
        };
        ours->methods.xLock = [](sqlite3_file* f, int l) {
            return base_of(f)->pMethods->xLock(base_of(f), l);
        };
        ours->methods.xUnlock = [](sqlite3_file* f, int l) {
            return base_of(f)->pMethods->xUnlock(base_of(f), l);
        };
        ours->methods.xCheckReservedLock = [](sqlite3_file* f, int* r) {
            return base_of(f)->pMethods->xCheckReservedLock(base_of(f), r);
        };
        ours->methods.xFileControl = [](sqlite3_file* f, int op, void* a) {
            return base_of(f)->pMethods->xFileControl(base_of(f), op, a);
        };
        ours->methods.xSectorSize = [](sqlite3_file* f) {
            return base_of(f)->pMethods->xSectorSize(base_of(f));
        };
        ours->methods.xDeviceCharacteristics = [](sqlite3_file* f) {
            return base_of(f)->pMethods->xDeviceCharacteristics(base_of(f));
        };
        ours->methods.xShmMap = [](sqlite3_file* f, int pg, int sz, int ext, void volatile** p) {
            return base_of(f)->pMethods->xShmMap(base_of(f), pg, sz, ext, p);
        };
        ours->methods.xShmLock = [](sqlite3_file* f, int off, int n, int flags) {
            return base_of(f)->pMethods->xShmLock(base_of(f), off, n, flags);
        };
        ours->methods.xShmBarrier = [](sqlite3_file* f) {
            base_of(f)->pMethods->xShmBarrier(base_of(f));
        };
        ours->methods.xShmUnmap = [](sqlite3_file* f, int del) {
            return base_of(f)->pMethods->xShmUnmap(base_of(f), del);
        };
        ours->methods.xFetch = [](sqlite3_file* f, sqlite3_int64 o, int n, void** p) {
            return base_of(f)->pMethods->xFetch(base_of(f), o, n, p);
        };
        ours->methods.xUnfetch = [](sqlite3_file* f, sqlite3_int64 o, void* p) {
            return base_of(f)->pMethods->xUnfetch(base_of(f), o, p);
        };
        ours->header.pMethods = &ours->methods;
        return rc;
    }
    static sqlite3_file* base_of(sqlite3_file* f) { return reinterpret_cast<file*>(f)->base(); }

    sqlite3_vfs* base_ = nullptr;
    sqlite3_vfs vfs_{};
    std::atomic<long> syncs_{0};
};

} // namespace

BOOST_AUTO_TEST_SUITE(sqlite_store)

DQ_TEST_STORE_CASES(make_fixture)

BOOST_AUTO_TEST_CASE(matches_the_model) {
    const auto seed = timewheel::test::seed_from_environment("dq_sqlite_store differential", 6);
    fixture f;
    // More steps than on Redis (each is cheaper here): a cancel that finds its task still
    // delayed or prefetched is rare, and the run must meet one.
    timewheel::test::differential(f.io, *f.store, seed, timewheel::test::differential_steps(1500));
}

BOOST_AUTO_TEST_CASE(everything_survives_a_reopen) {
    fixture f;
    auto c = make("custom", 1h, std::string("a\0b", 3));
    c.retry = {7, 3ms, 9000ms};
    BOOST_TEST(!std::get<0>(f.submit(c)));
    BOOST_TEST(!std::get<0>(f.submit(make("dead", 0ms))));
    BOOST_TEST(!std::get<0>(f.submit(make("done", 0ms))));
    auto r = f.claim_ok();
    BOOST_REQUIRE_EQUAL(r.tasks.size(), 2u);
    for (const auto& t : r.tasks) {
        BOOST_TEST(f.ack_one(t, t.id == "dead" ? dq::outcome::failure("bad")
                                               : dq::outcome::success()) == dq::ack_result::ok);
    }
    const auto before = f.status_ok("custom");
    f.store.reset();
    f.open();
    const auto after = f.status_ok("custom");
    BOOST_TEST(after.payload == c.payload);
    BOOST_TEST(after.retry == c.retry);
    BOOST_TEST(after.due == before.due);
    BOOST_TEST(after.state == dq::task_state::delayed);
    BOOST_TEST(f.status_ok("dead").state == dq::task_state::dead);
    BOOST_TEST(f.status_ok("dead").log.size() == 1u);
    auto done = f.status_ok("done");
    BOOST_TEST(done.state == dq::task_state::finished);
    BOOST_REQUIRE_EQUAL(done.log.size(), 1u);
    BOOST_TEST(done.log[0].outcome == "success");
    auto [ec, page] = f.list_dead("", 10);
    BOOST_REQUIRE(!ec);
    BOOST_REQUIRE_EQUAL(page.entries.size(), 1u);
    BOOST_TEST(page.entries[0].last_error == "bad");
    BOOST_TEST(timewheel::test::sqlite_scalar(f.opt.path, "SELECT 1") ==
               1); // (closed by status: no)
}

BOOST_AUTO_TEST_CASE(submits_in_flight_together_share_transactions) {
    fixture f;
    constexpr int n = 2000;
    int done = 0;
    for (int i = 0; i < n; ++i) {
        f.store->submit(make(std::string("g") + std::to_string(i), 1h),
                        [&](error_code ec, dq::submit_result r, std::string) {
                            BOOST_TEST(!ec);
                            BOOST_TEST((r == dq::submit_result::created));
                            ++done;
                        });
    }
    BOOST_REQUIRE(timewheel::test::run_until(
        f.io, [&] { return done == n; }, 60s));
    const auto s = f.sqlite().stats();
    BOOST_TEST(s.operations == std::uint64_t(n));
    BOOST_TEST(s.transactions < s.operations);
    BOOST_TEST_MESSAGE(n << " submits in " << s.transactions << " transactions");
    BOOST_TEST(f.rows("tasks") == n);
}

// What a caller was promised waits for fsync; the worker's transitions do not, unless
// fsync_worker (sqlite_store_options).
BOOST_AUTO_TEST_CASE(promised_writes_wait_for_fsync_and_the_workers_transitions_do_not) {
    counting_vfs vfs;
    for (const bool fsync_worker : {false, true}) {
        BOOST_TEST_CONTEXT("fsync_worker " << fsync_worker) {
            fixture f;
            f.store.reset();
            f.opt.fsync_worker = fsync_worker;
            f.open();
            vfs.take();
            BOOST_TEST(!std::get<0>(f.submit(make("a", 0ms))));
            BOOST_TEST(!std::get<0>(f.submit(make("b", 0ms))));
            BOOST_TEST(vfs.take() >= 2); // each submit's commit
            dq::claim_options o;
            o.start_due = 0; // claimed, then started by a call of its own
            const auto claimed = f.claim_ok(o).tasks;
            BOOST_REQUIRE_EQUAL(claimed.size(), 2u);
            auto [sec, started] = f.start({{claimed[0].id, claimed[0].token}});
            BOOST_REQUIRE(!sec);
            BOOST_TEST((started == std::vector{dq::start_result::started}));
            BOOST_TEST(f.ack_one(claimed[0], dq::outcome::success()) == dq::ack_result::ok);
            BOOST_TEST(!f.release({{claimed[1].id, claimed[1].token}}));
            const auto worker_syncs = vfs.take();
            if (fsync_worker) {
                BOOST_TEST(worker_syncs >= 4); // claim, start, ack, release
            } else {
                BOOST_TEST(worker_syncs == 0);
            }
            // A cancel is promised again: on disk with everything before it.
            auto [cec, cancelled] = f.cancel("b");
            BOOST_TEST(!cec);
            BOOST_TEST((cancelled == dq::cancel_result::cancelled));
            BOOST_TEST(vfs.take() >= 1);
            // Nothing the worker wrote without fsync is lost to a close and reopen.
            f.store.reset();
            f.open();
            BOOST_TEST(f.status_ok("a").state == dq::task_state::finished);
            BOOST_TEST(f.status_ok("b").state == dq::task_state::cancelled);
        }
    }
}

BOOST_AUTO_TEST_CASE(finished_and_dead_tasks_are_forgotten_beyond_their_count) {
    fixture f;
    f.opt.done_max = 3;
    f.opt.dead_max = 2;
    f.store.reset();
    f.open();
    auto finish = [&](const std::string& id, dq::outcome o) {
        BOOST_TEST(!std::get<0>(f.submit(make(id, 0ms))));
        auto r = f.claim_ok();
        BOOST_REQUIRE_EQUAL(r.tasks.size(), 1u);
        BOOST_TEST(f.ack_one(r.tasks[0], std::move(o)) == dq::ack_result::ok);
    };
    for (int i = 0; i < 5; ++i) {
        finish(std::string("ok") + std::to_string(i), dq::outcome::success());
        finish(std::string("bad") + std::to_string(i), dq::outcome::failure("x"));
    }
    BOOST_TEST(std::get<0>(f.status("ok0")) == error_code(dq::error::not_found));
    BOOST_TEST(std::get<0>(f.status("ok1")) == error_code(dq::error::not_found));
    BOOST_TEST(f.status_ok("ok2").state == dq::task_state::finished);
    BOOST_TEST(f.status_ok("ok4").state == dq::task_state::finished);
    BOOST_TEST(std::get<0>(f.status("bad2")) == error_code(dq::error::not_found));
    BOOST_TEST(f.status_ok("bad3").state == dq::task_state::dead);
    // A forgotten task's log goes with it, and its id may be used again.
    BOOST_TEST(f.rows("log") == 5);
    BOOST_TEST((std::get<1>(f.submit(make("ok0", 1h))) == dq::submit_result::created));
    BOOST_TEST((std::get<1>(f.submit(make("ok3", 1h))) == dq::submit_result::exists));
}

BOOST_AUTO_TEST_CASE(a_path_that_cannot_be_opened_is_a_clear_error) {
    boost::asio::io_context io;
    timewheel::test::temp_dir dir;
    dq::sqlite_store_options o;
    o.path = dir.file("missing/dir/q.db");
    try {
        dq::sqlite_store s(io.get_executor(), o);
        BOOST_FAIL("opened a file in a missing directory");
    } catch (const boost::system::system_error& e) {
        BOOST_TEST_MESSAGE(e.what());
        BOOST_TEST(std::string(e.what()).find(o.path) != std::string::npos);
        BOOST_TEST(&e.code().category() == &dq::sqlite_category());
    }
    o.path.clear();
    BOOST_CHECK_THROW(dq::sqlite_store(io.get_executor(), o), std::invalid_argument);
}

BOOST_AUTO_TEST_CASE(a_file_that_is_not_a_database_is_a_clear_error) {
    boost::asio::io_context io;
    timewheel::test::temp_dir dir;
    dq::sqlite_store_options o;
    o.path = dir.file("garbage.db");
    {
        std::ofstream out(o.path, std::ios::binary);
        for (int i = 0; i < 512; ++i) {
            out << "this is not a database ";
        }
    }
    try {
        dq::sqlite_store s(io.get_executor(), o);
        BOOST_FAIL("opened a file that is not a database");
    } catch (const boost::system::system_error& e) {
        BOOST_TEST_MESSAGE(e.what());
        BOOST_TEST(std::string(e.what()).find("not a database") != std::string::npos);
    }
}

BOOST_AUTO_TEST_CASE(a_file_another_store_holds_is_refused) {
    fixture f;
    BOOST_TEST(!std::get<0>(f.submit(make("a", 1h))));
    BOOST_CHECK_THROW(dq::sqlite_store(f.io.get_executor(), f.opt), boost::system::system_error);
    BOOST_TEST(f.status_ok("a").state == dq::task_state::delayed);
}

BOOST_AUTO_TEST_CASE(a_newer_schema_is_refused_and_left_alone) {
    fixture f;
    BOOST_TEST(!std::get<0>(f.submit(make("a", 1h))));
    f.store.reset();
    timewheel::test::sqlite_scalar(f.opt.path,
                                   "UPDATE meta SET value = 99 WHERE key = 'schema_version'");
    try {
        dq::sqlite_store s(f.io.get_executor(), f.opt);
        BOOST_FAIL("opened a file of a newer schema");
    } catch (const boost::system::system_error& e) {
        BOOST_TEST_MESSAGE(e.what());
        BOOST_TEST(std::string(e.what()).find("schema version 99") != std::string::npos);
    }
    BOOST_TEST(timewheel::test::sqlite_scalar(f.opt.path, "SELECT count(*) FROM tasks") == 1);
}

BOOST_AUTO_TEST_CASE(a_closed_store_aborts_operations_and_the_wait) {
    fixture f;
    std::optional<error_code> waited;
    f.store->wait_wakeup([&](error_code ec, dq::time_point) { waited = ec; });
    f.sqlite().close();
    auto [ec, r, id] = f.submit(make("a"));
    BOOST_TEST(ec == error_code(boost::asio::error::operation_aborted));
    BOOST_REQUIRE(timewheel::test::run_until(
        f.io, [&] { return waited.has_value(); }, 10s));
    BOOST_TEST(*waited == error_code(boost::asio::error::operation_aborted));
}

BOOST_AUTO_TEST_CASE(stores_sharing_a_database_complete_on_their_own_threads) {
    timewheel::test::temp_dir dir;
    // Two io_contexts, each run by a thread of its own, as timewheeld's threads are.
    boost::asio::io_context io1;
    boost::asio::io_context io2;
    auto work1 = boost::asio::make_work_guard(io1);
    auto work2 = boost::asio::make_work_guard(io2);
    std::thread t1([&] { io1.run(); });
    std::thread t2([&] { io2.run(); });
    auto first = std::make_unique<dq::sqlite_store>(
        io1.get_executor(), dq::sqlite_store_options{.path = dir.file("q.db")});
    auto second = std::make_unique<dq::sqlite_store>(io2.get_executor(), *first);
    // A call made on a store's executor, waited for here: where its completion ran.
    auto submit_on = [](boost::asio::io_context& io, dq::store& s, std::string id) {
        std::promise<std::pair<error_code, bool>> done;
        boost::asio::post(io, [&, id] {
            s.submit(make(id, 1h), [&](error_code ec, dq::submit_result, std::string) {
                done.set_value({ec, io.get_executor().running_in_this_thread()});
            });
        });
        return done.get_future().get();
    };
    // Both wait for a wake-up; a submit through one wakes both.
    std::promise<dq::time_point> woke1;
    std::promise<dq::time_point> woke2;
    boost::asio::post(io1, [&] {
        first->wait_wakeup([&](error_code, dq::time_point t) { woke1.set_value(t); });
    });
    boost::asio::post(io2, [&] {
        second->wait_wakeup([&](error_code, dq::time_point t) { woke2.set_value(t); });
    });
    const auto [ec1, on1] = submit_on(io2, *second, "a");
    BOOST_TEST(!ec1);
    BOOST_TEST(on1);
    const auto w1 = woke1.get_future().get();
    BOOST_TEST((w1 == woke2.get_future().get()));
    // The other store sees it, and answers on its own thread.
    const auto [ec2, on2] = submit_on(io1, *first, "a");
    BOOST_TEST(!ec2);
    BOOST_TEST(on2);
    // The first closed, the second goes on with the same file.
    boost::asio::post(io1, [&] { first.reset(); });
    const auto [ec3, on3] = submit_on(io2, *second, "b");
    BOOST_TEST(!ec3);
    BOOST_TEST(on3);
    std::promise<void> closed;
    boost::asio::post(io2, [&] {
        second.reset();
        closed.set_value();
    });
    closed.get_future().get();
    work1.reset();
    work2.reset();
    t1.join();
    t2.join();
    // Closed for good: the file is free, and holds both tasks.
    BOOST_TEST(timewheel::test::sqlite_scalar(dir.file("q.db"), "SELECT count(*) FROM tasks") == 2);
}

BOOST_AUTO_TEST_CASE(the_probe_is_a_round_trip_to_the_writer_thread) {
    fixture f;
    const auto before = std::chrono::floor<dq::duration>(std::chrono::system_clock::now());
    auto [ec, t] =
        timewheel::test::call<dq::time_point>(f.io, [&](auto h) { f.store->probe(std::move(h)); });
    BOOST_TEST(!ec);
    BOOST_TEST((t >= before));
    // It goes to the thread (where now() reads the clock): a closed store cannot answer it.
    f.sqlite().close();
    auto [closed, t2] =
        timewheel::test::call<dq::time_point>(f.io, [&](auto h) { f.store->probe(std::move(h)); });
    BOOST_TEST(closed == error_code(boost::asio::error::operation_aborted));
}

BOOST_AUTO_TEST_CASE(operations_fail_in_time_while_the_writer_thread_is_stuck) {
    fixture f;
    f.store.reset();
    f.opt.operation_timeout = 300ms;
    f.open();
    BOOST_TEST_REQUIRE(!std::get<0>(f.submit(make("a", 1h))));
    const pid_t writer = timewheel::test::thread_named(::getpid(), "tw-dq-sqlite");
    BOOST_TEST_REQUIRE(writer > 0);
    {
        // As a write or an fsync that does not return: everything queued behind it fails
        // with store_timeout instead of waiting (the 60 s of timewheel::test::call: a hang).
        timewheel::test::stopped_thread_by_child stuck(writer);
        const auto [submitted, r, id] = f.submit(make("b", 1h));
        BOOST_TEST(submitted == error_code(dq::error::store_timeout));
        const auto [probed, t] = timewheel::test::call<dq::time_point>(
            f.io, [&](auto h) { f.store->probe(std::move(h)); });
        BOOST_TEST(probed == error_code(dq::error::store_timeout));
        const auto [read, st] = timewheel::test::call<dq::task_status>(
            f.io, [&](auto h) { f.store->status("a", std::move(h)); });
        BOOST_TEST(read == error_code(dq::error::store_timeout));
    }
    // Running again: what was there still is; the submit that timed out in the queue never
    // ran; new operations work.
    BOOST_TEST(f.status_ok("a").state == dq::task_state::delayed);
    const auto [missing, st] = timewheel::test::call<dq::task_status>(
        f.io, [&](auto h) { f.store->status("b", std::move(h)); });
    BOOST_TEST(missing == error_code(dq::error::not_found));
    BOOST_TEST(!std::get<0>(f.submit(make("c", 1h))));
}

BOOST_AUTO_TEST_CASE(a_store_opened_while_another_holds_the_file_waits_for_it) {
    fixture f;
    BOOST_TEST(!std::get<0>(f.submit(make("a", 1h))));
    auto o = f.opt;
    o.operation_timeout = 60s;
    // SQLite's busy timeout: the open waits for the lock instead of failing at once.
    auto opened = std::async(std::launch::async, [o] {
        boost::asio::io_context io;
        dq::sqlite_store s(io.get_executor(), o);
        return true;
    });
    BOOST_TEST((opened.wait_for(300ms) == std::future_status::timeout));
    f.store.reset(); // lets go of the file
    BOOST_TEST(opened.get());
}

BOOST_AUTO_TEST_CASE(another_connection_reads_a_store_in_use_and_the_store_goes_on) {
    // What `timewheeld backup` rests on: a store keeps other stores out (PATH-lock), not
    // readers of another connection (or process).
    fixture f;
    BOOST_TEST(!std::get<0>(f.submit(make("a", 1h))));
    BOOST_TEST(timewheel::test::sqlite_scalar(f.opt.path, "SELECT count(*) FROM tasks") == 1);
    BOOST_TEST(!std::get<0>(f.submit(make("b", 1h))));
    BOOST_TEST(timewheel::test::sqlite_scalar(f.opt.path, "SELECT count(*) FROM tasks") == 2);
    BOOST_TEST(f.status_ok("a").state == dq::task_state::delayed);
}

BOOST_AUTO_TEST_CASE(a_closed_store_cannot_be_shared) {
    fixture f;
    f.sqlite().close();
    BOOST_CHECK_THROW(dq::sqlite_store(f.io.get_executor(), f.sqlite()), std::invalid_argument);
}

BOOST_AUTO_TEST_SUITE_END()
