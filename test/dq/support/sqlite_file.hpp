//
// test/dq/support/sqlite_file.hpp
//
// What the dq::sqlite_store tests share: a fresh directory for a database file (removed at
// the end), and SQL run on a database file behind the store's back (with no store open on
// it: the store holds its file exclusively).
//
#ifndef TIMEWHEEL_TEST_DQ_SUPPORT_SQLITE_FILE_HPP
#define TIMEWHEEL_TEST_DQ_SUPPORT_SQLITE_FILE_HPP

#include <sqlite3.h>

#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <stdexcept>
#include <string>

namespace dq_test {

/// A directory of its own under the system's temporary directory, removed with its files.
class temp_dir {
public:
    temp_dir() {
        static std::atomic<int> counter{0};
        std::string name = "timewheel-dq-sqlite-";
        name += std::to_string(::getpid());
        name += '-';
        name += std::to_string(counter++);
        path_ = std::filesystem::temp_directory_path() / name;
        std::filesystem::remove_all(path_);
        std::filesystem::create_directories(path_);
    }
    ~temp_dir() {
        std::error_code ec;
        std::filesystem::remove_all(path_, ec);
    }
    temp_dir(const temp_dir&) = delete;
    temp_dir& operator=(const temp_dir&) = delete;

    const std::filesystem::path& path() const noexcept { return path_; }
    std::string file(const std::string& name) const { return (path_ / name).string(); }

private:
    std::filesystem::path path_;
};

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

} // namespace dq_test

#endif // TIMEWHEEL_TEST_DQ_SUPPORT_SQLITE_FILE_HPP
