//
// timewheeld/service/schedule_json.hpp
//
// The JSON of /v1/schedules: what a client sends (a schedule to create, the fields to change,
// an expression to preview), validated field by field, and what it reads back. A schedule's
// task template (its callback and retry policy) is read by the tasks' own parser
// (parse_task_template() of task_json.hpp), so an occurrence's callback is checked exactly as
// a task's is. The expression and the zone are checked by the cron engine itself
// (cron::schedule::parse): its parse_error's words become the 400's message, field "cron",
// with the offset in the expression as the error's "position".
//
#ifndef TIMEWHEELD_SERVICE_SCHEDULE_JSON_HPP
#define TIMEWHEELD_SERVICE_SCHEDULE_JSON_HPP

#include <timewheeld/service/task_json.hpp>

#include <timewheel/cron/schedule.hpp>
#include <timewheel/dq/schedule.hpp>

#include <boost/json/object.hpp>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace timewheeld::service {

/// The bounds of a schedule's values (the store's own are wider).
inline constexpr std::int64_t min_every_ms = 100;
inline constexpr std::int64_t max_every_ms = 366LL * 24 * 3600 * 1000;
inline constexpr std::uint32_t max_misfire_limit = 1000;
inline constexpr std::size_t max_cron_bytes = 256;
/// GET /v1/schedules/{id}/next and POST /v1/schedules:preview: `count` in [1, this].
inline constexpr std::size_t max_next_count = 100;

/// Parses the body of POST /v1/schedules (the expression and the zone checked by
/// cron::schedule::parse; the id required: a create retried without one would make a
/// second schedule, firing for ever). @throws invalid_field
dq::schedule_spec parse_schedule(std::string_view body, const validation_limits& limits);

/// Applies the body of PATCH /v1/schedules/{id} to `current`: the fields given replace
/// theirs (`cron` replaces `every_ms` and the other way round; null clears start_at and
/// end_at); the result is checked as a create's. @throws invalid_field
dq::schedule_spec parse_schedule_patch(std::string_view body, dq::schedule_spec current,
                                       const validation_limits& limits);

/// The body of POST /v1/schedules:preview: an unsaved rule and how many occurrences.
struct preview_request {
    dq::schedule_spec spec;
    std::size_t count = 5;
    std::optional<dq::time_point> after; ///< from this instant (now when absent)
};

/// Parses the body of POST /v1/schedules:preview ({"cron"} or {"every_ms"}, optional
/// "time_zone", "start_at", "end_at", "after", "count"). @throws invalid_field
preview_request parse_preview(std::string_view body);

/// The rule of `spec` (dq::schedule_rule: the interval anchored at start_at, or `created`),
/// its faults as the API names them. @throws invalid_field ("cron" with the position in the
/// expression, "time_zone")
timewheel::cron::schedule rule_of(const dq::schedule_spec& spec, dq::time_point created);

/// The next `count` occurrences of `rule` after `after` within the spec's start_at and
/// end_at (dq::next_occurrence, one after the other).
std::vector<dq::time_point> next_occurrences(const timewheel::cron::schedule& rule,
                                             const dq::schedule_spec& spec, dq::time_point after,
                                             std::size_t count);

/// {"time_zone", "occurrences": [{"at": UTC, "local": the zone's wall clock}]}.
boost::json::object occurrences_to_json(const timewheel::cron::schedule& rule,
                                        const std::vector<dq::time_point>& at);

/// A schedule as every answer shows it: its fields (the callback's secret_headers as
/// "***"), its next occurrence (UTC and local), the last task it created, its counters.
boost::json::object schedule_to_json(const dq::schedule_status& st);

/// A page of schedules as GET /v1/schedules shows it.
boost::json::object schedule_page_to_json(const dq::schedule_page& p);

} // namespace timewheeld::service

#endif // TIMEWHEELD_SERVICE_SCHEDULE_JSON_HPP
