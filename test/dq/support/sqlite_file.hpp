//
// test/dq/support/sqlite_file.hpp
//
// What the dq::sqlite_store tests share: SQL run on a database file behind the store's back
// (with no store open on it: the store holds its file exclusively). The file's directory is
// a temp_dir (test/support/temp_dir.hpp).
//
#ifndef TIMEWHEEL_TEST_DQ_SUPPORT_SQLITE_FILE_HPP
#define TIMEWHEEL_TEST_DQ_SUPPORT_SQLITE_FILE_HPP

#include <test/support/temp_dir.hpp>

#include <sqlite3.h>

#include <stdexcept>
#include <string>

namespace timewheel::test {

/// The first column of the first row of `sql` on the database at `path`, as an integer.
inline long long sqlite_scalar(const std::string& path, const std::string& sql) {
    sqlite3* db = nullptr;
    if (sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READWRITE, nullptr) != SQLITE_OK) {
        const std::string msg = db ? sqlite3_errmsg(db) : "out of memory";
        sqlite3_close(db);
        throw std::runtime_error("cannot open " + path + ": " + msg);
    }
    sqlite3_stmt* st = nullptr;
    long long out = 0;
    int rc = sqlite3_prepare_v2(db, sql.c_str(), -1, &st, nullptr);
    if (rc == SQLITE_OK) {
        rc = sqlite3_step(st);
        if (rc == SQLITE_ROW) {
            out = sqlite3_column_int64(st, 0);
            rc = SQLITE_OK;
        } else if (rc == SQLITE_DONE) {
            rc = SQLITE_OK;
        }
    }
    const std::string msg = sqlite3_errmsg(db);
    sqlite3_finalize(st);
    sqlite3_close(db);
    if (rc != SQLITE_OK) {
        throw std::runtime_error(sql + ": " + msg);
    }
    return out;
}

} // namespace timewheel::test

#endif // TIMEWHEEL_TEST_DQ_SUPPORT_SQLITE_FILE_HPP
