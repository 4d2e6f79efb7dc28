//
// server/service/src/schedule_json.cpp
//
// A schedule's JSON, field by field: the task template by the tasks' own parser, the rule by
// the cron engine's (its words are the answer's), the rest here. A create and a PATCH end in
// the same check (check_spec), so that no change can make a schedule a create would refuse.
//
#include <timewheeld/service/schedule_json.hpp>

#include "json_fields.hpp"

#include <timewheeld/callback/payload.hpp>

#include <timewheel/dq/store.hpp>

#include <boost/json/parse.hpp>

#include <algorithm>

namespace timewheeld::service {

namespace json = boost::json;
namespace cron = timewheel::cron;
using namespace detail;

namespace {

std::optional<dq::time_point> optional_time(const json::value& v, const std::string& field,
                                            bool nullable) {
    if (v.is_null() && nullable) {
        return std::nullopt;
    }
    if (!v.is_string()) {
        throw invalid_field(field, nullable ? "must be an RFC 3339 time or null"
                                            : "must be an RFC 3339 time");
    }
    try {
        return parse_rfc3339(v.get_string());
    } catch (const std::invalid_argument& e) {
        throw invalid_field(field, e.what());
    }
}

// A schedule's id: a task id's checks, shorter (an occurrence's task id is "{<id>}@" and
// its instant), and without braces (that id's hash tag on Redis).
void check_schedule_id(std::string_view id, const validation_limits& limits) {
    check_id(id, limits);
    const auto max = std::min(limits.max_id_bytes, timewheel::dq::limits{}.max_schedule_id_bytes);
    if (id.size() > max) {
        throw invalid_field("id", "longer than " + std::to_string(max) +
                                      " bytes (an occurrence's task id adds its instant)");
    }
    if (id.find_first_of("{}") != std::string_view::npos) {
        throw invalid_field("id", "must not contain { or }");
    }
}

void read_misfire(const json::value& v, dq::schedule_spec& s) {
    const auto& o = as_object(v, "misfire");
    only_known(o, "misfire", {"policy", "limit"});
    if (const auto* p = o.if_contains("policy")) {
        const std::string_view name = as_string(*p, "misfire.policy");
        if (name == "run_latest") {
            s.misfire = dq::misfire_policy::run_latest;
        } else if (name == "skip") {
            s.misfire = dq::misfire_policy::skip;
        } else if (name == "run_all") {
            s.misfire = dq::misfire_policy::run_all;
        } else {
            throw invalid_field("misfire.policy", "must be run_latest, skip or run_all");
        }
    }
    if (const auto* l = o.if_contains("limit")) {
        if (s.misfire != dq::misfire_policy::run_all) {
            throw invalid_field("misfire.limit", "only with policy run_all");
        }
        s.misfire_limit =
            static_cast<std::uint32_t>(as_integer(*l, "misfire.limit", 1, max_misfire_limit));
    }
}

void read_overlap(const json::value& v, dq::schedule_spec& s) {
    const std::string_view name = as_string(v, "overlap");
    if (name == "allow") {
        s.overlap = dq::overlap_policy::allow;
    } else if (name == "forbid") {
        s.overlap = dq::overlap_policy::forbid;
    } else {
        throw invalid_field("overlap", "must be allow or forbid");
    }
}

// The rule's fields of `o` into `s`: cron or every_ms (exactly one once merged with what `s`
// had, see check_spec), time_zone, start_at and end_at (null clears them when `patch`).
void read_rule(const json::object& o, dq::schedule_spec& s, bool patch) {
    const auto* c = o.if_contains("cron");
    const auto* e = o.if_contains("every_ms");
    if (c && e) {
        throw invalid_field("cron", "give cron or every_ms, not both");
    }
    if (c) {
        s.cron = as_string(*c, "cron");
        if (s.cron.empty()) {
            throw invalid_field("cron", "must not be empty");
        }
        if (s.cron.size() > max_cron_bytes) {
            throw invalid_field("cron", "longer than " + std::to_string(max_cron_bytes) + " bytes");
        }
        s.every = dq::duration(0);
    }
    if (e) {
        s.every = dq::duration(as_integer(*e, "every_ms", min_every_ms, max_every_ms));
        s.cron.clear();
    }
    if (const auto* z = o.if_contains("time_zone")) {
        s.zone = as_string(*z, "time_zone");
    } else if (e && !c && patch) {
        // An interval is counted in UTC: a PATCH to every_ms leaves the cron's zone behind.
        s.zone = "UTC";
    }
    if (const auto* a = o.if_contains("start_at")) {
        s.start_at = optional_time(*a, "start_at", patch);
    }
    if (const auto* a = o.if_contains("end_at")) {
        s.end_at = optional_time(*a, "end_at", patch);
    }
}

// What every schedule must be, however it was reached (a create, a PATCH, a preview).
void check_spec(const dq::schedule_spec& s) {
    if (s.cron.empty() && s.every.count() == 0) {
        throw invalid_field("cron", "one of cron (an expression) or every_ms is required");
    }
    if (s.zone.empty()) {
        throw invalid_field("time_zone", "must not be empty");
    }
    if (s.cron.empty() && s.zone != "UTC") {
        throw invalid_field("time_zone",
                            "only with cron: an interval (every_ms) is counted in UTC");
    }
    if (s.start_at && s.end_at && *s.end_at <= *s.start_at) {
        throw invalid_field("end_at", "must be after start_at");
    }
    (void)rule_of(s, dq::time_point{});
}

} // namespace

cron::schedule rule_of(const dq::schedule_spec& spec, dq::time_point created) {
    try {
        return dq::schedule_rule(spec, created);
    } catch (const cron::unknown_zone& e) {
        throw invalid_field("time_zone", e.what());
    } catch (const cron::parse_error& e) {
        throw invalid_field("cron", e.what(), e.position());
    } catch (const std::invalid_argument& e) {
        // check_spec() refuses what dq::schedule_rule would (neither or both of cron and
        // every_ms): only the expression is left.
        throw invalid_field("cron", e.what());
    }
}

dq::schedule_spec parse_schedule(std::string_view body, const validation_limits& limits) {
    const json::value v = parse_body(body);
    const auto& o = as_object(v, "body");
    only_known(o, "",
               {"id", "cron", "every_ms", "time_zone", "callback", "retry", "start_at", "end_at",
                "paused", "misfire", "overlap"});
    dq::schedule_spec s;
    const auto* id = o.if_contains("id");
    if (!id) {
        throw invalid_field("id", "is required (the schedule's idempotency key)");
    }
    s.id = as_string(*id, "id");
    check_schedule_id(s.id, limits);
    read_rule(o, s, false);
    parse_task_template(o, limits, s.payload, s.retry);
    if (const auto* p = o.if_contains("paused")) {
        if (!p->is_bool()) {
            throw invalid_field("paused", "must be true or false");
        }
        s.paused = p->get_bool();
    }
    if (const auto* m = o.if_contains("misfire")) {
        read_misfire(*m, s);
    }
    if (const auto* ov = o.if_contains("overlap")) {
        read_overlap(*ov, s);
    }
    check_spec(s);
    return s;
}

dq::schedule_spec parse_schedule_patch(std::string_view body, dq::schedule_spec s,
                                       const validation_limits& limits) {
    const json::value v = parse_body(body);
    const auto& o = as_object(v, "body");
    only_known(o, "",
               {"cron", "every_ms", "time_zone", "callback", "retry", "start_at", "end_at",
                "paused", "misfire", "overlap"});
    read_rule(o, s, true);
    if (o.contains("callback")) {
        // A new template: its retry policy starts from the defaults unless given with it.
        s.retry = dq::retry_policy{};
        parse_task_template(o, limits, s.payload, s.retry);
    } else if (o.contains("retry")) {
        throw invalid_field("retry", "give the callback with it (the template is replaced whole)");
    }
    if (const auto* p = o.if_contains("paused")) {
        if (!p->is_bool()) {
            throw invalid_field("paused", "must be true or false");
        }
        s.paused = p->get_bool();
    }
    if (const auto* m = o.if_contains("misfire")) {
        // A policy given anew: its limit too.
        s.misfire = dq::misfire_policy::run_latest;
        s.misfire_limit = dq::schedule_spec{}.misfire_limit;
        read_misfire(*m, s);
    }
    if (const auto* ov = o.if_contains("overlap")) {
        read_overlap(*ov, s);
    }
    check_spec(s);
    return s;
}

preview_request parse_preview(std::string_view body) {
    const json::value v = parse_body(body);
    const auto& o = as_object(v, "body");
    only_known(o, "", {"cron", "every_ms", "time_zone", "start_at", "end_at", "after", "count"});
    preview_request r;
    read_rule(o, r.spec, false);
    if (const auto* a = o.if_contains("after")) {
        r.after = optional_time(*a, "after", false);
    }
    if (const auto* n = o.if_contains("count")) {
        r.count = static_cast<std::size_t>(
            as_integer(*n, "count", 1, static_cast<std::int64_t>(max_next_count)));
    }
    check_spec(r.spec);
    return r;
}

std::vector<dq::time_point> next_occurrences(const cron::schedule& rule,
                                             const dq::schedule_spec& spec, dq::time_point after,
                                             std::size_t count) {
    std::vector<dq::time_point> out;
    while (out.size() < count) {
        const auto next = dq::next_occurrence(rule, spec, after);
        if (!next) {
            break;
        }
        out.push_back(*next);
        after = *next;
    }
    return out;
}

json::object occurrences_to_json(const cron::schedule& rule,
                                 const std::vector<dq::time_point>& at) {
    json::array list;
    for (const auto t : at) {
        list.push_back(json::object{{"at", format_rfc3339(t)}, {"local", rule.local_time(t)}});
    }
    return json::object{{"time_zone", rule.zone()}, {"occurrences", std::move(list)}};
}

json::object schedule_to_json(const dq::schedule_status& st) {
    const auto& s = st.spec;
    json::object o;
    o["id"] = shown(s.id);
    if (s.cron.empty()) {
        o["every_ms"] = s.every.count();
    } else {
        o["cron"] = shown(s.cron);
    }
    o["time_zone"] = shown(s.zone);
    boost::system::error_code ec;
    json::value cb = json::parse(s.payload, ec);
    if (!ec && cb.is_object()) {
        callback::redact(cb.get_object());
        o["callback"] = std::move(cb);
    } else {
        // Not created through the API (a dq producer's opaque payload).
        o["payload"] = shown(s.payload);
    }
    o["retry"] = {{"attempts", s.retry.max_attempts},
                  {"base_ms", s.retry.base.count()},
                  {"cap_ms", s.retry.cap.count()}};
    o["start_at"] = s.start_at ? json::value(format_rfc3339(*s.start_at)) : json::value(nullptr);
    o["end_at"] = s.end_at ? json::value(format_rfc3339(*s.end_at)) : json::value(nullptr);
    o["paused"] = s.paused;
    json::object m{{"policy", dq::to_string(s.misfire)}};
    if (s.misfire == dq::misfire_policy::run_all) {
        m["limit"] = s.misfire_limit;
    }
    o["misfire"] = std::move(m);
    o["overlap"] = dq::to_string(s.overlap);
    json::value next = nullptr;
    if (st.next) {
        json::object n{{"at", format_rfc3339(*st.next)}};
        try {
            n["local"] = rule_of(s, st.created).local_time(*st.next);
        } catch (const invalid_field&) {
            // A zone gone from the tz database since: the instant alone.
        }
        next = std::move(n);
    }
    o["next_occurrence"] = std::move(next);
    o["last_task_id"] = st.last_task.empty() ? json::value(nullptr) : shown(st.last_task);
    o["created_at"] = format_rfc3339(st.created);
    o["updated_at"] = format_rfc3339(st.updated);
    o["counts"] = {{"occurrences", st.occurrences},
                   {"triggers", st.triggers},
                   {"skipped_misfire", st.skipped_misfire},
                   {"skipped_overlap", st.skipped_overlap}};
    return o;
}

json::object schedule_page_to_json(const dq::schedule_page& p) {
    json::array entries;
    for (const auto& st : p.entries) {
        entries.push_back(schedule_to_json(st));
    }
    json::object o;
    o["entries"] = std::move(entries);
    o["next_cursor"] = p.cursor.empty() ? json::value(nullptr) : json::value(p.cursor);
    return o;
}

} // namespace timewheeld::service
