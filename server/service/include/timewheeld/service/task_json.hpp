//
// timewheeld/service/task_json.hpp
//
// The JSON of the API: what a client sends (a task to submit, a new due time, a result
// report), validated field by field into the durable queue's types, and what it gets back
// (a task's status, a page of dead letters, an error). Validation fails with
// invalid_field, which names the field ("callback.url", "retry.cap_ms"...): the API answers
// 400 with that name, and nothing has been stored. It is the service's, not the API's
// alone: a result report forwarded from another node reaches the worker side
// (dispatch::result_router), which reads it with the same parse_result().
//
// The payload of a dq::task is the callback object, validated by the callback side's one
// parser (timewheeld/callback/payload.hpp, callback::parse_callback) and stored as it
// serializes it (callback::to_json): the worker reads it back with the same parser and the
// same limits. Its errors become invalid_field "callback.<field>".
//
#ifndef TIMEWHEELD_SERVICE_TASK_JSON_HPP
#define TIMEWHEELD_SERVICE_TASK_JSON_HPP

#include <timewheeld/callback/payload.hpp>

#include <timewheel/dq/task.hpp>

#include <boost/json/object.hpp>
#include <boost/json/value.hpp>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace timewheeld::service {

namespace dq = timewheel::dq;

/// A field of a request that is missing, malformed, contradictory or out of range.
class invalid_field : public std::invalid_argument {
public:
    invalid_field(std::string field, const std::string& message,
                  std::optional<std::size_t> position = std::nullopt)
        : std::invalid_argument(field + ": " + message)
        , field_(std::move(field))
        , message_(message)
        , position_(position) {}

    /// The field's path, e.g. "callback.headers" ("body": the body as a whole).
    const std::string& field() const noexcept { return field_; }
    /// What is wrong with it.
    const std::string& message() const noexcept { return message_; }
    /// Where in the field's text the fault starts (a cron expression's offset), when known.
    std::optional<std::size_t> position() const noexcept { return position_; }

private:
    std::string field_;
    std::string message_;
    std::optional<std::size_t> position_;
};

/// What the validation accepts.
struct validation_limits {
    std::size_t max_id_bytes = 256;             ///< a task id (the store's limit)
    callback::payload_limits callback;          ///< the callback (the worker's limits too)
    std::size_t max_payload_bytes = 512 * 1024; ///< the serialized callback (the store's limit)
    std::uint32_t max_attempts = 1000;          ///< retry.attempts
    std::int64_t max_backoff_ms = 7LL * 24 * 3600 * 1000; ///< retry.base_ms and retry.cap_ms
    friend bool operator==(const validation_limits&, const validation_limits&) = default;
};

/// A result reported by POST /v1/tasks/{id}/result for an attempt that answered 202.
struct result_report {
    std::uint32_t attempt = 0; ///< the attempt it reports on (the callback's attempt header)
    dq::outcome outcome;
};

/// Parses the body of POST /v1/tasks. Its id may not end with notice_suffix, and with
/// completion notices (callback.on_success, on_failure) must leave room for it within
/// max_id_bytes (notice.hpp). Its optional "on_conflict" (what a submit whose id
/// exists does) becomes dq::task::replace and max_delay: "keep" (the default: nothing),
/// "replace" (replace), "debounce" (replace, capped at "max_delay_ms" from the first
/// submit: required with it, refused without it). @throws invalid_field
/// Its optional "queue" (a queue's name, checked: "queue") becomes dq::task::queue; whether
/// it gave "retry" goes to `*gives_retry` (the route applies the queue's policy otherwise).
dq::task parse_submit(std::string_view body, const validation_limits& limits,
                      bool* gives_retry = nullptr);

/// parse_submit() of one JSON value (a body, or an item of a batch): the fields it names are
/// relative to that value, and `whole` names the value itself (when it is no object).
/// @throws invalid_field
dq::task parse_submit_value(const boost::json::value& v, const validation_limits& limits,
                            std::string_view whole = "body", bool* gives_retry = nullptr);

/// A queue's name (dq::detail::check_queue_name). @throws invalid_field naming `field`
void check_queue_name(std::string_view name, const std::string& field);

/// Parses the body of POST /v1/queues: {"id", "retry"}. The settings of the design not built
/// yet (rate_per_s, concurrency, flow, signing_secrets, paused) are refused by name.
/// @throws invalid_field
dq::queue_spec parse_queue(std::string_view body, const validation_limits& limits);

/// Parses the body of PATCH /v1/queues/{id} over `spec`: "retry" (null: none). @throws
/// invalid_field
dq::queue_spec parse_queue_patch(std::string_view body, dq::queue_spec spec,
                                 const validation_limits& limits);

/// A queue as the API shows it; a page of them.
boost::json::object queue_to_json(const dq::queue_status& q);
boost::json::object queue_page_to_json(const dq::queue_page& p);

/// Parses a task's "retry" object into `retry` (defaults kept for what is not given).
/// @throws invalid_field ("retry.*")
void parse_retry(const boost::json::value& r, const validation_limits& limits,
                 dq::retry_policy& retry);

/// The most tasks in one POST /v1/tasks:batch.
inline constexpr std::size_t max_batch_tasks = 1000;

/// A batch with more than max_batch_tasks tasks (413, not 400: a limit, not a mistake).
class batch_too_large : public invalid_field {
public:
    using invalid_field::invalid_field;
};

/// One item of a batch: its task, or why it was refused (fields relative to the item).
struct batch_item {
    std::optional<dq::task> task;
    std::optional<invalid_field> error;
    bool gives_retry = false; ///< the item gave "retry" (else its queue's policy applies)
};

/// Parses the body of POST /v1/tasks:batch: {"tasks": [...]}, 1 to max_batch_tasks items,
/// each what POST /v1/tasks takes, each validated on its own (a bad item does not refuse
/// the others). @throws invalid_field for the body as a whole ("body", "tasks"), and
/// batch_too_large
std::vector<batch_item> parse_batch(std::string_view body, const validation_limits& limits);

/// Parses the body of PATCH /v1/tasks/{id}: exactly one of due_at and delay_ms.
/// @throws invalid_field
dq::due_time parse_reschedule(std::string_view body);

/// Parses the body of POST /v1/dead/{id}/retry: empty, {}, or one of due_at and delay_ms
/// (now when neither). @throws invalid_field
dq::due_time parse_requeue(std::string_view body);

/// Parses the body of POST /v1/tasks/{id}/result. @throws invalid_field
result_report parse_result(std::string_view body);

/// Parses the task template of a body: its "callback" (required, parse_callback_payload())
/// into `payload` and its optional "retry" into `retry` (defaults kept for what is not
/// given). The one parser of both, for POST /v1/tasks and for a schedule's occurrences.
/// @throws invalid_field ("callback.*", "retry.*")
void parse_task_template(const boost::json::object& o, const validation_limits& limits,
                         std::string& payload, dq::retry_policy& retry);

/// Checks a task id (from a body or a path). @throws invalid_field naming `field`
void check_id(std::string_view id, const validation_limits& limits, std::string_view field = "id");

/// The payload stored for a callback object (see the top of this file).
/// @throws invalid_field ("callback.*")
std::string parse_callback_payload(const boost::json::value& v, const validation_limits& limits);

/// An RFC 3339 time ("2026-11-26T01:02:03.456Z", offsets allowed), in milliseconds
/// (further digits are cut). @throws std::invalid_argument saying what is wrong
dq::time_point parse_rfc3339(std::string_view s);

/// A time as RFC 3339 in UTC with milliseconds: "2026-11-26T01:02:03.456Z".
std::string format_rfc3339(dq::time_point t);

/// A task as GET /v1/tasks/{id} shows it: the values of the callback's secret_headers are
/// "***", and every text the store kept (last_error, the log's errors) is valid UTF-8. A
/// completion notice's task (notice.hpp) shows its payload as "notice", not "callback".
boost::json::object status_to_json(const dq::task_status& s);

/// A page of dead letters as GET /v1/dead shows it (last_error as valid UTF-8).
boost::json::object dead_page_to_json(const dq::dead_page& p);

/// The body of an error answer: {"error": {"code": ..., "field": ..., "message": ...}}
/// ("field" only when one is named; "position", the offset in the field's text where the
/// fault starts, only when known: a cron expression's).
std::string error_body(std::string_view code, std::string_view message, std::string_view field = {},
                       std::optional<std::size_t> position = std::nullopt);

} // namespace timewheeld::service

#endif // TIMEWHEELD_SERVICE_TASK_JSON_HPP
