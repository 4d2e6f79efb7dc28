//
// server/service/src/notice.cpp
//
// The notice's id, payload and body. The payload is read back with the callback side's
// parser of a target (callback::parse_notice_target), under the same limits as the
// callback it came from; the body is GET's JSON of the task, cut to what a notice needs.
//
#include <timewheeld/service/notice.hpp>

#include <timewheeld/service/task_json.hpp>

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>

#include <initializer_list>
#include <utility>

namespace timewheeld::service {

namespace json = boost::json;

std::string notice_id(std::string_view task_id) {
    std::string id;
    id.reserve(task_id.size() + notice_suffix.size());
    id += task_id;
    id += notice_suffix;
    return id;
}

bool is_notice_id(std::string_view id) noexcept {
    return id.ends_with(notice_suffix);
}

std::string notice_payload(const notice& n) {
    json::object o;
    o["task_id"] = n.task_id;
    o["since_ms"] = n.since.time_since_epoch().count();
    if (n.on_success) {
        o["on_success"] = callback::to_json(*n.on_success);
    }
    if (n.on_failure) {
        o["on_failure"] = callback::to_json(*n.on_failure);
    }
    return json::serialize(o);
}

notice parse_notice(std::string_view payload, const callback::payload_limits& limits) {
    boost::system::error_code ec;
    const json::value v = json::parse(payload, ec);
    if (ec || !v.is_object()) {
        throw callback::payload_error("notice", "is not a JSON object");
    }
    const auto& o = v.get_object();
    notice n;
    const auto* id = o.if_contains("task_id");
    if (!id || !id->is_string()) {
        throw callback::payload_error("task_id", "must be a string");
    }
    n.task_id = id->get_string();
    if (const auto* since = o.if_contains("since_ms"); since && since->is_int64()) {
        n.since = dq::time_point(dq::duration(since->get_int64()));
    }
    if (const auto* t = o.if_contains("on_success")) {
        n.on_success = callback::parse_notice_target(*t, limits, "on_success");
    }
    if (const auto* t = o.if_contains("on_failure")) {
        n.on_failure = callback::parse_notice_target(*t, limits, "on_failure");
    }
    return n;
}

void show_notice(json::object& payload) {
    payload.erase("since_ms");
}

json::object notice_body(const dq::task_status& s) {
    auto full = status_to_json(s);
    json::object o;
    o["task_id"] = std::move(full["id"]);
    for (const std::string_view key : {"state", "attempts", "last_error"}) {
        o[key] = std::move(full[key]);
    }
    o["ended_at"] = std::move(full["updated_at"]);
    o["log"] = std::move(full["log"]);
    return o;
}

} // namespace timewheeld::service
