//
// timewheel/dq/schedule.hpp
//
// The vocabulary of durable recurring schedules: what a producer stores (a rule, cron or a
// fixed interval, and the template of the task each occurrence becomes), what the store
// reports of one, and what the materialiser (dq::scheduler) reads and commits.
//
// Each occurrence becomes an ordinary task whose id is derived from the schedule's id and the
// occurrence's instant (occurrence_id()), created exactly once by one atomic step in the
// store that compares the schedule's cursor and revision, creates the tasks and advances the
// cursor: any number of nodes may try, one succeeds, and a crash between steps leaves
// nothing half done. Docs: docs/dq.md, "Schedules".
//
#ifndef TIMEWHEEL_DQ_SCHEDULE_HPP
#define TIMEWHEEL_DQ_SCHEDULE_HPP

#include <timewheel/dq/task.hpp>

#include <timewheel/cron/schedule.hpp>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

namespace timewheel::dq {

/// What happens to occurrences missed by more than scheduler_options::grace (no node ran, or
/// the store was down).
enum class misfire_policy : std::uint8_t {
    run_latest, ///< the latest missed occurrence runs once, now; the others are skipped
    skip,       ///< none of them runs
    run_all,    ///< each runs, at most schedule_spec::misfire_limit of them (the latest ones)
};

/// Whether an occurrence may run while the previous one has not finished.
enum class overlap_policy : std::uint8_t {
    allow,  ///< always create the occurrence's task
    forbid, ///< skip (and count) the occurrence when the previous occurrence's task is
            ///< still delayed, claimed or running when the occurrence is materialised
};

/// A schedule, as a producer stores it.
struct schedule_spec {
    /// The schedule's id, chosen by the caller: 1 to limits::max_schedule_id_bytes bytes,
    /// no NUL, no '{' or '}' (an occurrence's task id carries it as a hash tag).
    std::string id;
    /// A cron expression (cron::schedule::parse) read in `zone`; or empty, and `every` set.
    std::string cron;
    /// A fixed interval (> 0) from start_at (or the schedule's creation); or 0, and `cron` set.
    duration every{0};
    /// The IANA time zone of a cron expression ("UTC" for an interval).
    std::string zone = "UTC";
    /// The payload of each occurrence's task.
    std::string payload;
    /// The retry policy of each occurrence's task.
    retry_policy retry;
    /// Occurrences before start_at do not run.
    std::optional<time_point> start_at;
    /// Occurrences at or after end_at do not run (the schedule ends).
    std::optional<time_point> end_at;
    /// A paused schedule materialises nothing; resuming restarts it from now.
    bool paused = false;
    misfire_policy misfire = misfire_policy::run_latest;
    /// For misfire_policy::run_all: at most this many missed occurrences run (at least 1).
    std::uint32_t misfire_limit = 100;
    overlap_policy overlap = overlap_policy::allow;

    friend bool operator==(const schedule_spec&, const schedule_spec&) = default;
};

/// What create_schedule did.
enum class create_schedule_result : std::uint8_t {
    created, ///< a new schedule
    exists,  ///< a schedule with this id and the same spec (paused aside) exists: nothing done
};

/// Everything the store knows of a schedule.
struct schedule_status {
    schedule_spec spec; ///< as stored; spec.paused is the schedule's state now
    time_point created{};
    time_point updated{};
    /// The cursor: every occurrence at or before it has been materialised, skipped or was
    /// before a restart (create, resume, a changed rule).
    time_point cursor{};
    /// The next occurrence not yet materialised (after the cursor, within start_at/end_at);
    /// none when the rule has no more (end_at passed, or a cron that never matches again).
    std::optional<time_point> next;
    /// The id of the last task the schedule created (an occurrence or a trigger); empty if
    /// none yet.
    std::string last_task;
    std::uint64_t occurrences = 0;     ///< tasks created for occurrences
    std::uint64_t triggers = 0;        ///< tasks created by trigger_schedule
    std::uint64_t skipped_misfire = 0; ///< occurrences skipped by the misfire policy
    std::uint64_t skipped_overlap = 0; ///< occurrences skipped by overlap_policy::forbid
    /// Changes with every write to the schedule (the materialiser's compare).
    std::uint64_t revision = 0;
};

/// A page of schedules, in the store's order (stable between pages).
struct schedule_page {
    std::vector<schedule_status> entries; ///< `next` is filled in
    std::string cursor; ///< pass back for the next page; empty when this was the last
};

/// Schedules whose next occurrence is due within the materialiser's window (store::
/// due_schedules). Each status's `next` is the store's index entry: the next occurrence as
/// the last materialisation computed it, or the cursor itself after a restart (create,
/// resume, a changed rule), when no materialiser has computed it yet.
struct due_schedules_result {
    std::vector<schedule_status> schedules;
    time_point now{}; ///< the store's clock when it answered
};

/// One occurrence to create: its instant (the task's due time) and task id.
struct occurrence {
    time_point at{};
    std::string task_id; ///< occurrence_id(schedule id, at)
};

/// One atomic step of the materialiser on one schedule: if the schedule still has
/// `revision` (and is not paused), create `occurrences` (skipping each, under
/// overlap_policy::forbid, whose previous task has not finished), move the cursor to `cursor`
/// and its next occurrence to `next`, add `skipped_misfire`; otherwise change nothing.
struct materialisation {
    std::string schedule_id;
    std::uint64_t revision = 0;
    std::vector<occurrence> occurrences; ///< in instant order, each after the old cursor
    time_point cursor{};                 ///< at or after the last occurrence
    std::optional<time_point> next;      ///< none: the rule has ended
    std::uint64_t skipped_misfire = 0;
    bool forbid_overlap = false;
    std::string payload; ///< of every occurrence's task (the spec's, at `revision`)
    retry_policy retry;
};

/// What one materialisation did.
struct materialise_result {
    bool committed = false;       ///< false: the revision had changed (another node, or a write)
    std::uint32_t created = 0;    ///< tasks created
    std::uint32_t overlapped = 0; ///< occurrences skipped by overlap_policy::forbid
};

/// The task id of a schedule's occurrence: "{<schedule id>}@<instant, ISO 8601 UTC with
/// milliseconds>", e.g. "{report}@2026-03-29T07:00:00.000Z". The braces are a hash tag: on
/// Redis the task lives on its schedule's shard.
std::string occurrence_id(std::string_view schedule_id, time_point at);

/// The task id of a schedule's n-th trigger (n from 1): "{<schedule id>}@trigger-<n>".
std::string trigger_id(std::string_view schedule_id, std::uint64_t n);

/// The rule of a spec, anchored (for an interval) at start_at or else at `created`. Throws
/// cron::parse_error, cron::unknown_zone, or std::invalid_argument (neither or both of cron
/// and every, a zone other than UTC with every, every <= 0).
cron::schedule schedule_rule(const schedule_spec& spec, time_point created);

/// The first occurrence of `rule` after `after` that respects the spec's start_at and end_at;
/// none when there is none.
std::optional<time_point> next_occurrence(const cron::schedule& rule, const schedule_spec& spec,
                                          time_point after);

/// The lower-case names ("run_latest", "forbid", "created"...).
constexpr const char* to_string(misfire_policy p) noexcept {
    constexpr const char* names[] = {"run_latest", "skip", "run_all"};
    return names[static_cast<int>(p)];
}
constexpr const char* to_string(overlap_policy p) noexcept {
    constexpr const char* names[] = {"allow", "forbid"};
    return names[static_cast<int>(p)];
}
constexpr const char* to_string(create_schedule_result r) noexcept {
    constexpr const char* names[] = {"created", "exists"};
    return names[static_cast<int>(r)];
}
inline std::ostream& operator<<(std::ostream& os, misfire_policy p) {
    return os << to_string(p);
}
inline std::ostream& operator<<(std::ostream& os, overlap_policy p) {
    return os << to_string(p);
}
inline std::ostream& operator<<(std::ostream& os, create_schedule_result r) {
    return os << to_string(r);
}

} // namespace timewheel::dq

#endif // TIMEWHEEL_DQ_SCHEDULE_HPP
