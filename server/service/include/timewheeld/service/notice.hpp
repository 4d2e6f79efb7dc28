//
// timewheeld/service/notice.hpp
//
// Completion notices: a task whose callback names `on_success` or `on_failure` gets one POST
// to the one that fits, once, when it has finished or died, with its final state and its
// execution log. The notice is a task of its own, made durable before the task's end is
// reported (dispatch/dispatcher.cpp says when), under an id derived from the task's that no
// client may take: "<task id>~notice". A store submit that keeps what exists is then the
// "once": a task that ends twice (a crash between the notice and the report, a dead letter
// retried) finds its notice already there. When the notice runs, it reads the task's state
// from the store (the report may not be applied yet: it waits) and posts what it finds.
//
// This file is the one home of the notice's shapes: its id, the payload its task carries,
// and the body the receiver gets (the fields of GET /v1/tasks/{id}, written by
// status_to_json()).
//
#ifndef TIMEWHEELD_SERVICE_NOTICE_HPP
#define TIMEWHEELD_SERVICE_NOTICE_HPP

#include <timewheeld/callback/payload.hpp>

#include <timewheel/dq/task.hpp>

#include <boost/json/object.hpp>

#include <optional>
#include <string>
#include <string_view>

namespace timewheeld::service {

namespace dq = timewheel::dq;

/// The end of a notice task's id, "<task id>~notice": a submitted id may not end with it,
/// and a task with notices keeps room for it within max_id_bytes.
inline constexpr std::string_view notice_suffix = "~notice";

/// The id of the notice of task `task_id`.
std::string notice_id(std::string_view task_id);

/// Whether `id` is a notice's id (ends with notice_suffix).
bool is_notice_id(std::string_view id) noexcept;

/// What a notice task carries: the task it is about, when the notice was made (on the
/// store's clock: how long it has waited for the task's end), and where it goes.
struct notice {
    std::string task_id;
    dq::time_point since{};
    std::optional<callback::notice_target> on_success;
    std::optional<callback::notice_target> on_failure;
};

/// The payload of a notice task (JSON: {"task_id", "since_ms", "on_success"?,
/// "on_failure"?}).
std::string notice_payload(const notice& n);

/// A notice task's payload read back, its targets with callback::parse_notice_target().
/// @throws callback::payload_error naming the field
notice parse_notice(std::string_view payload, const callback::payload_limits& limits);

/// A notice task's payload (parsed JSON) as GET /v1/tasks/{id} shows it, under "notice":
/// {"task_id", "on_success"?, "on_failure"?} (since_ms is taken out).
void show_notice(boost::json::object& payload);

/// The body a notice posts: {"task_id", "state", "attempts", "last_error", "ended_at",
/// "log"}, each as GET /v1/tasks/{id} shows it ("ended_at" is its "updated_at").
boost::json::object notice_body(const dq::task_status& s);

} // namespace timewheeld::service

#endif // TIMEWHEELD_SERVICE_NOTICE_HPP
