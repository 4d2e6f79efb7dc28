//
// src/dq/sqlite/schema.cpp
//
// Opening the database: what the engine's guarantees rest on (the file held by this store
// alone, PATH-lock, while other processes may still read it: WAL with shared memory;
// synchronous FULL unless fsync is off), the tables and indexes (below),
// and the schema version, which refuses a file written by a newer library. The counts by
// state that trimming and count_tasks read start here, from the file.
//
// Schema (version 3):
//   tasks  one row per task, its state a number (0 delayed, 1 prefetched, 2 running,
//          3 finished, 4 dead, 5 cancelled); a claimed task's lease (token, expiry, attempt,
//          start, worker) in nullable columns. Partial indexes make each question the store
//          asks an index range: delayed by (due, id), claimed by lease expiry, done (finished
//          and cancelled) by age for trimming, and finished, cancelled and dead each by
//          (age, id) for listing (query_ops.cpp). Version 2 (issue 29's listing) made the
//          delayed index (due, id), for keyset pages in (due, id) order and id_prefix filters
//          read from the index alone, and added the finished and cancelled ones: without them
//          a page of one would read every row of the other. An older file gains them when
//          opened (the old delayed index is dropped).
//   log    one row per attempt, by task; a task's rows go when the task is forgotten.
//   schedules  one row per recurring schedule: its spec (rule and rest, encoded as
//          detail::encode_spec does), paused, times, cursor, the index entry `next` (its
//          next occurrence as last computed, NULL when the rule has ended), the last task,
//          counters and revision. A partial index on `next` of those not paused is the
//          materialiser's question. Added in version 1 (CREATE IF NOT EXISTS: an older file
//          gains it when opened).
//   queues one row per named queue (docs/design/queues-and-flow-control.md): its settings
//          as detail::encode_queue_spec spells them, generation and times. Version 3 added
//          it, and tasks.queue (NULL: the default queue, so that nothing changes for a task
//          that names none) with a partial index on it: the question delete_queue asks (any
//          task of this queue that can still run?) is an index range. An older file gains
//          the column when opened (ALTER TABLE ADD COLUMN: its rows read as the default
//          queue's, nothing rewritten).
//   meta   schema_version.
//

#include "engine.hpp"

#include <boost/system/system_error.hpp>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <limits>
#include <thread>

namespace timewheel::dq::detail {

using namespace sqlite;

namespace {

constexpr std::int64_t schema_version = 3;

const char* const schema_sql = R"sql(
CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY NOT NULL, value INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS tasks(
  id BLOB NOT NULL UNIQUE,
  state INTEGER NOT NULL,
  due INTEGER NOT NULL,
  attempt INTEGER NOT NULL,
  created INTEGER NOT NULL,
  updated INTEGER NOT NULL,
  max_attempts INTEGER NOT NULL,
  base INTEGER NOT NULL,
  cap INTEGER NOT NULL,
  last_error BLOB NOT NULL,
  payload BLOB NOT NULL,
  token BLOB,
  lease_until INTEGER,
  lease_attempt INTEGER,
  started INTEGER,
  worker BLOB,
  queue BLOB);
DROP INDEX IF EXISTS tasks_delayed;
CREATE INDEX IF NOT EXISTS tasks_due ON tasks(due, id) WHERE state = 0;
CREATE INDEX IF NOT EXISTS tasks_leased ON tasks(lease_until) WHERE state IN (1, 2);
CREATE INDEX IF NOT EXISTS tasks_done ON tasks(updated) WHERE state IN (3, 5);
CREATE INDEX IF NOT EXISTS tasks_finished ON tasks(updated, id) WHERE state = 3;
CREATE INDEX IF NOT EXISTS tasks_cancelled ON tasks(updated, id) WHERE state = 5;
CREATE INDEX IF NOT EXISTS tasks_dead ON tasks(updated, id) WHERE state = 4;
CREATE TABLE IF NOT EXISTS log(
  seq INTEGER PRIMARY KEY,
  id BLOB NOT NULL,
  attempt INTEGER NOT NULL,
  worker BLOB NOT NULL,
  started INTEGER NOT NULL,
  ended INTEGER NOT NULL,
  outcome TEXT NOT NULL,
  error BLOB NOT NULL);
CREATE INDEX IF NOT EXISTS log_by_id ON log(id, seq);
CREATE TABLE IF NOT EXISTS schedules(
  id BLOB PRIMARY KEY NOT NULL,
  rule BLOB NOT NULL,
  rest BLOB NOT NULL,
  paused INTEGER NOT NULL,
  created INTEGER NOT NULL,
  updated INTEGER NOT NULL,
  cursor INTEGER NOT NULL,
  next INTEGER,
  last_task BLOB NOT NULL,
  occurrences INTEGER NOT NULL,
  triggers INTEGER NOT NULL,
  skipped_misfire INTEGER NOT NULL,
  skipped_overlap INTEGER NOT NULL,
  revision INTEGER NOT NULL);
CREATE INDEX IF NOT EXISTS schedules_due ON schedules(next) WHERE paused = 0;
CREATE TABLE IF NOT EXISTS queues(
  name BLOB PRIMARY KEY NOT NULL,
  spec BLOB NOT NULL,
  generation INTEGER NOT NULL,
  created INTEGER NOT NULL,
  updated INTEGER NOT NULL);
)sql";

// After schema_sql, when tasks has its queue column (an older file gains it first).
const char* const queue_index_sql =
    "CREATE INDEX IF NOT EXISTS tasks_queue ON tasks(queue, state) WHERE queue IS NOT NULL";

} // namespace

void sqlite_engine::open_failed(int rc, const std::string& what) {
    std::string msg = "dq::sqlite_store: cannot open '" + opt_.path + "': " + what;
    if (db_.get()) {
        msg += std::string(" (") + sqlite3_errmsg(db_.get()) + ")";
        db_.close();
    }
    throw boost::system::system_error(sqlite_error(rc), msg);
}

void sqlite_engine::open() {
    int rc = db_.open(opt_.path.c_str(),
                      SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX);
    if (rc != SQLITE_OK) {
        open_failed(rc, sqlite3_errstr(rc));
    }
    sqlite3_extended_result_codes(db_.get(), 1);
    // Another connection's lock (a process still closing the file) is waited for this
    // long before the open fails; afterwards this one holds the file alone.
    const auto busy_ms = std::chrono::duration_cast<std::chrono::milliseconds>(timeout_).count();
    sqlite3_busy_timeout(db_.get(), static_cast<int>(std::min<std::int64_t>(
                                        busy_ms, std::numeric_limits<int>::max())));
    // No other store (of this process or another) may write behind this one's back: its
    // lock is waited for as long as SQLite's busy timeout, then the open fails.
    const std::string lock_path = opt_.path + "-lock";
    if (!lock_.open(lock_path)) {
        open_failed(SQLITE_CANTOPEN, "cannot open " + lock_path + ": " + std::strerror(errno));
    }
    const auto give_up = std::chrono::steady_clock::now() + std::chrono::milliseconds(busy_ms);
    while (!lock_.try_lock()) {
        if (std::chrono::steady_clock::now() >= give_up) {
            open_failed(SQLITE_BUSY, "another store holds the file (" + lock_path + ")");
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    try {
        {
            statement s(db_.get(), "PRAGMA journal_mode = WAL");
            query q(s);
            if (!q.step() || q.text(0) != "wal") {
                open_failed(SQLITE_ERROR, "the journal cannot be put in WAL mode");
            }
        }
        exec(opt_.fsync ? "PRAGMA synchronous = FULL" : "PRAGMA synchronous = NORMAL");
        synced_ = opt_.fsync;
        exec("BEGIN IMMEDIATE");
        exec(schema_sql);
        {
            // Version 3's column, on a file of an older version (a new file has it).
            bool has_queue = false;
            statement s(db_.get(), "SELECT name FROM pragma_table_info('tasks')");
            query q(s);
            while (q.step()) {
                has_queue = has_queue || q.text(0) == "queue";
            }
            if (!has_queue) {
                exec("ALTER TABLE tasks ADD COLUMN queue BLOB");
            }
        }
        exec(queue_index_sql);
        std::optional<std::int64_t> version;
        {
            statement s(db_.get(), "SELECT value FROM meta WHERE key = 'schema_version'");
            query q(s);
            if (q.step()) {
                version = q.integer(0);
            }
        }
        if (!version) {
            exec("INSERT INTO meta(key, value) VALUES ('schema_version', 3)");
        } else if (*version < schema_version) {
            exec("UPDATE meta SET value = 3 WHERE key = 'schema_version'");
        } else if (*version > schema_version) {
            exec("ROLLBACK");
            std::string what = "schema version ";
            what += std::to_string(*version);
            what += " is newer than this library's (";
            what += std::to_string(schema_version);
            what += ")";
            open_failed(SQLITE_ERROR, what);
        }
        exec("COMMIT");
        // Each from its partial index (the leased one holds both claimed states).
        counts_[delayed] = count("SELECT count(*) FROM tasks WHERE state = 0");
        counts_[prefetched] =
            count("SELECT count(*) FROM tasks WHERE state IN (1, 2) AND state = 1");
        counts_[running] = count("SELECT count(*) FROM tasks WHERE state IN (1, 2) AND state = 2");
        counts_[finished] = count("SELECT count(*) FROM tasks WHERE state = 3");
        counts_[dead] = count("SELECT count(*) FROM tasks WHERE state = 4");
        counts_[cancelled] = count("SELECT count(*) FROM tasks WHERE state = 5");
    } catch (const sqlite_failure& f) {
        open_failed(f.rc, sqlite3_errstr(f.rc));
    }
}

std::int64_t sqlite_engine::count(const char* sql) {
    statement s(db_.get(), sql);
    query q(s);
    return q.step() ? q.integer(0) : 0;
}

} // namespace timewheel::dq::detail
