//
// server/service/src/backup.cpp
//
// The online backup of the embedded store (backup.hpp). The store's own lock (PATH-lock,
// taken by dq::sqlite_store) is left alone: this is a reader like any other, in WAL mode
// with shared memory, so the running service neither waits for it nor notices it. The copy
// is made in one sqlite3_backup_step(-1), one read transaction: a copy made in steps would
// start over at every write of the service, and a busy store might never let it finish.
//
#include <timewheeld/service/backup.hpp>

#include <stdexcept>

#ifdef TIMEWHEELD_HAVE_SQLITE
#include <sqlite3.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <memory>
#include <thread>
#endif

namespace timewheeld::service {

#ifdef TIMEWHEELD_HAVE_SQLITE

namespace {

struct close_db {
    void operator()(sqlite3* db) const noexcept { sqlite3_close_v2(db); }
};
using db_ptr = std::unique_ptr<sqlite3, close_db>;

std::string errno_text() {
    return std::strerror(errno);
}

db_ptr open_db(const std::string& path, int flags, const char* role) {
    sqlite3* raw = nullptr;
    const int rc = sqlite3_open_v2(path.c_str(), &raw, flags, nullptr);
    db_ptr db(raw);
    if (rc != SQLITE_OK) {
        throw std::invalid_argument(std::string(role) + " '" + path +
                                    "': cannot open: " + (db ? sqlite3_errmsg(db.get()) : "?"));
    }
    return db;
}

// One text value of `sql` (a pragma, a count), or what SQLite said went wrong.
std::string one_value(sqlite3* db, const char* sql, int& rc) {
    sqlite3_stmt* s = nullptr;
    rc = sqlite3_prepare_v2(db, sql, -1, &s, nullptr);
    std::string out;
    if (rc == SQLITE_OK) {
        rc = sqlite3_step(s);
        if (rc == SQLITE_ROW) {
            const auto* text = sqlite3_column_text(s, 0);
            out = text ? reinterpret_cast<const char*>(text) : "";
            rc = SQLITE_OK;
        } else if (rc == SQLITE_DONE) {
            rc = SQLITE_NOTFOUND;
        }
    }
    if (rc != SQLITE_OK && rc != SQLITE_NOTFOUND) {
        out = sqlite3_errmsg(db);
    }
    sqlite3_finalize(s);
    return out;
}

// The temporary copy and SQLite's journal of it, removed unless kept.
struct temporary_file {
    std::string path;
    bool keep = false;
    ~temporary_file() {
        if (!keep && !path.empty()) {
            ::unlink(path.c_str());
            ::unlink((path + "-journal").c_str());
        }
    }
};

std::string directory_of(const std::string& path) {
    const auto slash = path.rfind('/');
    if (slash == std::string::npos) {
        return ".";
    }
    return slash == 0 ? "/" : path.substr(0, slash);
}

} // namespace

backup_summary backup_store(std::string_view store_url, const std::string& destination,
                            const backup_options& opt) {
    if (store_url.starts_with("redis://")) {
        throw std::invalid_argument(
            "backup: the store is redis://, which timewheeld does not back up: use Redis's "
            "own (BGSAVE and its RDB file, or a replica)");
    }
    if (!store_url.starts_with("sqlite:") || store_url.size() == 7) {
        throw std::invalid_argument("backup: --store must be sqlite:PATH, not '" +
                                    std::string(store_url) + "'");
    }
    const std::string source(store_url.substr(7));
    if (destination.empty()) {
        throw std::invalid_argument("backup: the destination PATH is empty");
    }
    struct stat st {};
    if (::stat(source.c_str(), &st) != 0) {
        throw std::invalid_argument("backup: no store at '" + source + "': " + errno_text());
    }
    if (!opt.force && ::lstat(destination.c_str(), &st) == 0) {
        throw std::invalid_argument("backup: '" + destination + "' exists (--force replaces it)");
    }

    // Read-only: a missing file is not created, and nothing of the store is changed.
    auto src = open_db(source, SQLITE_OPEN_READONLY, "backup: the store");
    sqlite3_busy_timeout(src.get(), static_cast<int>(opt.busy_timeout.count()));
    int rc = SQLITE_OK;
    const auto version =
        one_value(src.get(), "SELECT value FROM meta WHERE key = 'schema_version'", rc);
    if (rc != SQLITE_OK) {
        throw std::invalid_argument("backup: '" + source + "' is not a timewheeld store (" +
                                    (rc == SQLITE_NOTFOUND ? "no schema version" : version) + ")");
    }

    // Next to the destination, so that the rename below is atomic; mode 0600 (mkstemp's):
    // tasks hold callback secrets.
    temporary_file tmp{destination + ".tmp-XXXXXX"};
    const int fd = ::mkstemp(tmp.path.data());
    if (fd < 0) {
        const auto why = errno_text();
        tmp.path.clear();
        throw std::invalid_argument("backup: cannot write in '" + directory_of(destination) +
                                    "': " + why);
    }
    ::close(fd);
    {
        auto dst = open_db(tmp.path, SQLITE_OPEN_READWRITE, "backup: the copy");
        sqlite3_backup* b = sqlite3_backup_init(dst.get(), "main", src.get(), "main");
        if (!b) {
            throw std::runtime_error(std::string("backup: ") + sqlite3_errmsg(dst.get()));
        }
        // The busy handler covers the source's lock; a destination lock cannot happen
        // (the file is ours), and a locked source past the timeout fails the backup.
        rc = sqlite3_backup_step(b, -1);
        const int finished = sqlite3_backup_finish(b);
        if (rc != SQLITE_DONE || finished != SQLITE_OK) {
            throw std::runtime_error("backup: copying '" + source + "' failed: " +
                                     sqlite3_errstr(rc == SQLITE_DONE ? finished : rc));
        }
        // The copy's header says WAL, as the store's does; a rollback journal makes it one
        // file, whole without a -wal (timewheeld puts it back in WAL when it opens it).
        const auto mode = one_value(dst.get(), "PRAGMA journal_mode = DELETE", rc);
        if (rc != SQLITE_OK || mode != "delete") {
            throw std::runtime_error("backup: the copy's journal mode: " + mode);
        }
        const auto check = one_value(dst.get(), "PRAGMA integrity_check", rc);
        if (rc != SQLITE_OK || check != "ok") {
            throw std::runtime_error("backup: the copy fails integrity_check: " + check);
        }
    }
    auto copy = open_db(tmp.path, SQLITE_OPEN_READONLY, "backup: the copy");
    backup_summary summary;
    summary.tasks = std::stoll(one_value(copy.get(), "SELECT count(*) FROM tasks", rc));
    copy.reset();
    if (::stat(tmp.path.c_str(), &st) == 0) {
        summary.bytes = st.st_size;
    }

    // link() refuses an existing name atomically (a file made since the check above);
    // rename() replaces it.
    if (opt.force) {
        if (::rename(tmp.path.c_str(), destination.c_str()) != 0) {
            throw std::invalid_argument("backup: cannot write '" + destination +
                                        "': " + errno_text());
        }
        tmp.keep = true;
    } else {
        if (::link(tmp.path.c_str(), destination.c_str()) != 0) {
            throw std::invalid_argument("backup: cannot write '" + destination +
                                        "': " + errno_text());
        }
    }
    // The new name survives a crash too.
    if (const int dir = ::open(directory_of(destination).c_str(), O_RDONLY | O_DIRECTORY);
        dir >= 0) {
        ::fsync(dir);
        ::close(dir);
    }
    return summary;
}

#else

backup_summary backup_store(std::string_view, const std::string&, const backup_options&) {
    throw std::invalid_argument("backup: this timewheeld was built without SQLite");
}

#endif

} // namespace timewheeld::service
