//
// timewheeld/service/backup.hpp
//
// `timewheeld backup PATH`: a consistent copy of the embedded store (sqlite:PATH) taken
// while a timewheeld runs on it, with SQLite's online backup API. The store is read in one
// read transaction (WAL: the running service's writes go on meanwhile, and the copy is the
// database as of the copy's start); the copy is written to a temporary file next to PATH,
// checked (PRAGMA integrity_check), made a single self-contained file (no -wal), and only
// then renamed to PATH, so that PATH is either the whole backup or not there at all.
// Restoring is documented in docs/server.md ("Backup and restore"): stop, replace, start.
//
#ifndef TIMEWHEELD_SERVICE_BACKUP_HPP
#define TIMEWHEELD_SERVICE_BACKUP_HPP

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>

namespace timewheeld::service {

/// What backup_store() needs besides the store and the destination.
struct backup_options {
    bool force = false; ///< replace an existing destination (refused otherwise)
    /// How long to wait for the running service's lock on the file (it holds one only
    /// while it checkpoints its WAL).
    std::chrono::milliseconds busy_timeout{5000};
};

/// What backup_store() copied.
struct backup_summary {
    std::int64_t tasks = 0; ///< rows in the copy's tasks table
    std::int64_t bytes = 0; ///< the copy's size
};

/// Copies the store `store_url` names (sqlite:PATH only) to the file `destination`.
/**
 * @throws std::invalid_argument naming what is wrong: a store that is not sqlite:, a
 * missing store or one that is not timewheeld's, an existing destination without `force`,
 * a destination whose directory cannot be written. std::runtime_error when the copy
 * itself fails. Either way nothing is left at `destination` (nor a temporary file).
 */
backup_summary backup_store(std::string_view store_url, const std::string& destination,
                            const backup_options& opt = {});

} // namespace timewheeld::service

#endif // TIMEWHEELD_SERVICE_BACKUP_HPP
