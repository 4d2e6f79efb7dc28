//
// src/dq/sqlite/connection.hpp
//
// The RAII wrappers over SQLite's C API that the engine is written with: the connection
// (the sqlite3 handle and its cache of prepared statements, closed with it), a prepared
// statement, and one use of it (bind, step, read; reset when the use ends). A failed call
// throws sqlite_failure, which the engine turns into the operation's (or the group's)
// error_code, so that the queries read as straight-line code.
//
// A private header of timewheel::dq_sqlite: SQLite is a private dependency, never seen by
// users of dq::sqlite_store. Its names are in detail::sqlite, apart from the rest of dq's
// internals.
//

#ifndef TIMEWHEEL_SRC_DQ_SQLITE_CONNECTION_HPP
#define TIMEWHEEL_SRC_DQ_SQLITE_CONNECTION_HPP

#include <timewheel/dq/error.hpp>
#include <timewheel/dq/sqlite_store.hpp>

#include <sqlite3.h>

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>

namespace timewheel::dq::detail::sqlite {

// A failed SQLite call inside an operation: the operation's savepoint is rolled back.
struct sqlite_failure {
    int rc;
};

inline boost::system::error_code sqlite_error(int rc) {
    if ((rc & 0xff) == SQLITE_FULL) {
        return error::store_full;
    }
    return {rc, sqlite_category()};
}

// The one-store-per-file lock: flock() on a file of its own next to the database
// (PATH-lock), held while the store is open. Not SQLite's locking_mode=EXCLUSIVE, which
// would also keep every other process from reading the file (`timewheeld backup` reads it
// while the store runs), and not a lock on the database file itself: closing any other
// descriptor of that file drops the POSIX locks SQLite holds on it in this process.
class file_lock {
public:
    file_lock() = default;
    ~file_lock() {
        if (fd_ >= 0) {
            ::close(fd_); // releases the flock
        }
    }
    file_lock(const file_lock&) = delete;
    file_lock& operator=(const file_lock&) = delete;

    // Creates the file if missing; false with errno set when it cannot be opened.
    bool open(const std::string& path) {
        fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
        return fd_ >= 0;
    }
    // Without waiting: false when another store (of any process) holds it.
    bool try_lock() noexcept { return ::flock(fd_, LOCK_EX | LOCK_NB) == 0; }

private:
    int fd_ = -1;
};

// A prepared statement, reset (and its bindings kept until rebound) when a use ends.
class statement {
public:
    statement(sqlite3* db, const char* sql) {
        const int rc = sqlite3_prepare_v3(db, sql, -1, SQLITE_PREPARE_PERSISTENT, &s_, nullptr);
        if (rc != SQLITE_OK) {
            throw sqlite_failure{rc};
        }
    }
    ~statement() { sqlite3_finalize(s_); }
    statement(const statement&) = delete;
    statement& operator=(const statement&) = delete;
    sqlite3_stmt* get() const noexcept { return s_; }

private:
    sqlite3_stmt* s_ = nullptr;
};

// One use of a statement: bind, step, read the columns; reset at the end.
class query {
public:
    explicit query(statement& s)
        : s_(s.get()) {}
    ~query() { sqlite3_reset(s_); }
    query(const query&) = delete;
    query& operator=(const query&) = delete;

    query& bind(int i, std::int64_t v) {
        check(sqlite3_bind_int64(s_, i, v));
        return *this;
    }
    // As a BLOB: ids, payloads and errors are bytes, compared with memcmp.
    query& bind(int i, std::string_view v) {
        static const char empty = 0;
        check(sqlite3_bind_blob(s_, i, v.empty() ? &empty : v.data(), static_cast<int>(v.size()),
                                SQLITE_STATIC));
        return *this;
    }
    query& bind_null(int i) {
        check(sqlite3_bind_null(s_, i));
        return *this;
    }
    // true: a row is there to read; false: done.
    bool step() {
        const int rc = sqlite3_step(s_);
        if (rc == SQLITE_ROW) {
            return true;
        }
        if (rc == SQLITE_DONE) {
            return false;
        }
        throw sqlite_failure{rc};
    }
    void run() {
        while (step()) {
        }
    }
    std::int64_t integer(int i) const { return sqlite3_column_int64(s_, i); }
    bool is_null(int i) const { return sqlite3_column_type(s_, i) == SQLITE_NULL; }
    std::string text(int i) const {
        const void* p = sqlite3_column_blob(s_, i);
        const int n = sqlite3_column_bytes(s_, i);
        return p ? std::string(static_cast<const char*>(p), static_cast<std::size_t>(n))
                 : std::string();
    }

private:
    static void check(int rc) {
        if (rc != SQLITE_OK) {
            throw sqlite_failure{rc};
        }
    }
    sqlite3_stmt* s_;
};

// The database handle and the statements prepared on it, finalized before it closes.
class connection {
public:
    connection() = default;
    ~connection() { close(); }
    connection(const connection&) = delete;
    connection& operator=(const connection&) = delete;

    // SQLite's result code; on failure the handle (if SQLite made one) is kept for its
    // message until close().
    int open(const char* path, int flags) { return sqlite3_open_v2(path, &db_, flags, nullptr); }

    void close() noexcept {
        stmts_.clear();
        sqlite3_close_v2(db_);
        db_ = nullptr;
    }

    sqlite3* get() const noexcept { return db_; }

    void exec(const char* sql) {
        const int rc = sqlite3_exec(db_, sql, nullptr, nullptr, nullptr);
        if (rc != SQLITE_OK) {
            throw sqlite_failure{rc};
        }
    }

    // Prepared once, on first use, and kept: `sql` is a literal, its address the key.
    statement& stmt(const char* sql) {
        auto& s = stmts_[sql];
        if (!s) {
            s = std::make_unique<statement>(db_, sql);
        }
        return *s;
    }

private:
    sqlite3* db_ = nullptr;
    std::unordered_map<const char*, std::unique_ptr<statement>> stmts_;
};

} // namespace timewheel::dq::detail::sqlite

#endif // TIMEWHEEL_SRC_DQ_SQLITE_CONNECTION_HPP
