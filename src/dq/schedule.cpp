//
// src/dq/schedule.cpp
//
// What both stores and the materialiser share about schedules, so that it has one home: the
// derived task ids of occurrences and triggers, a spec's rule and its next occurrence, the
// checks of a spec (dq::store's fronts call them), and the encoding the stores keep a spec in.
//

#include <timewheel/dq/detail/input_checks.hpp>

#include <timewheel/dq/schedule.hpp>

#include <charconv>
#include <cstdio>
#include <stdexcept>

namespace timewheel::dq {

namespace {

// Howard Hinnant's days_from_civil inverse: the civil date of a day count since 1970-01-01.
void civil_from_days(std::int64_t z, std::int64_t& y, unsigned& m, unsigned& d) {
    z += 719468;
    const std::int64_t era = (z >= 0 ? z : z - 146096) / 146097;
    const auto doe = static_cast<unsigned>(z - era * 146097);
    const unsigned yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    y = static_cast<std::int64_t>(yoe) + era * 400;
    const unsigned doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    const unsigned mp = (5 * doy + 2) / 153;
    d = doy - (153 * mp + 2) / 5 + 1;
    m = mp < 10 ? mp + 3 : mp - 9;
    y += m <= 2;
}

} // namespace

std::string occurrence_id(std::string_view schedule_id, time_point at) {
    const std::int64_t ms = at.time_since_epoch().count();
    const std::int64_t day_ms = 86400000;
    std::int64_t days = ms / day_ms;
    std::int64_t rem = ms % day_ms;
    if (rem < 0) {
        rem += day_ms;
        --days;
    }
    std::int64_t y = 0;
    unsigned mo = 0;
    unsigned d = 0;
    civil_from_days(days, y, mo, d);
    char buf[40];
    const int n = std::snprintf(buf, sizeof buf, "%04lld-%02u-%02uT%02d:%02d:%02d.%03dZ",
                                static_cast<long long>(y), mo, d, static_cast<int>(rem / 3600000),
                                static_cast<int>(rem / 60000 % 60),
                                static_cast<int>(rem / 1000 % 60), static_cast<int>(rem % 1000));
    std::string id;
    id.reserve(schedule_id.size() + 3 + static_cast<std::size_t>(n));
    id.append("{").append(schedule_id).append("}@").append(buf, static_cast<std::size_t>(n));
    return id;
}

std::string trigger_id(std::string_view schedule_id, std::uint64_t n) {
    std::string id;
    id.append("{").append(schedule_id).append("}@trigger-").append(std::to_string(n));
    return id;
}

cron::schedule schedule_rule(const schedule_spec& spec, time_point created) {
    if (spec.cron.empty() == (spec.every.count() == 0) || spec.every.count() < 0) {
        throw std::invalid_argument(
            "a schedule needs exactly one of a cron expression and an interval (every) > 0");
    }
    if (!spec.cron.empty()) {
        return cron::schedule::parse(spec.cron, spec.zone);
    }
    if (spec.zone != "UTC") {
        throw cron::unknown_zone("an interval schedule runs in UTC; its zone must be \"UTC\"");
    }
    return cron::schedule::every(spec.every, spec.start_at.value_or(created));
}

std::optional<time_point> next_occurrence(const cron::schedule& rule, const schedule_spec& spec,
                                          time_point after) {
    if (spec.start_at && after < *spec.start_at - duration(1)) {
        after = *spec.start_at - duration(1);
    }
    auto next = rule.next_after(after);
    if (next && ((spec.end_at && *next >= *spec.end_at) || *next > max_due)) {
        next.reset();
    }
    return next;
}

namespace detail {

using boost::system::error_code;

error_code check_schedule_id(std::string_view id, const limits& lim) {
    if (id.empty()) {
        return error::empty_id;
    }
    if (id.size() > lim.max_schedule_id_bytes) {
        return error::id_too_long;
    }
    if (id.find('\0') != std::string_view::npos) {
        return error::invalid_id;
    }
    if (id.find_first_of("{}") != std::string_view::npos) {
        return error::invalid_schedule_id;
    }
    return {};
}

error_code check_schedule(const schedule_spec& spec, const limits& lim) {
    if (auto ec = check_schedule_id(spec.id, lim)) {
        return ec;
    }
    if (spec.cron.empty() == (spec.every.count() == 0) || spec.every.count() < 0 ||
        spec.every > duration(max_backoff_ms)) {
        return error::invalid_rule;
    }
    const auto in_range = [](const std::optional<time_point>& t) {
        return !t || (*t >= time_point{} && *t <= max_due);
    };
    if (!in_range(spec.start_at) || !in_range(spec.end_at) ||
        (spec.start_at && spec.end_at && *spec.end_at <= *spec.start_at)) {
        return error::invalid_window;
    }
    try {
        (void)schedule_rule(spec, time_point{});
    } catch (const cron::parse_error&) {
        return error::invalid_cron;
    } catch (const cron::unknown_zone&) {
        return error::unknown_zone;
    } catch (const std::exception&) {
        return error::invalid_rule;
    }
    if (spec.payload.size() > lim.max_payload_bytes) {
        return error::payload_too_large;
    }
    if (auto ec = check_policy(spec.retry)) {
        return ec;
    }
    if (spec.misfire_limit == 0 || spec.misfire > misfire_policy::run_all ||
        spec.overlap > overlap_policy::forbid) {
        return error::invalid_argument;
    }
    return {};
}

// The encoding: fields in a fixed order, each "<decimal length>:<bytes>". Text, so that it
// reads in redis-cli and sqlite3; lengths, so that any byte may be in a field.
namespace {

void put(std::string& out, std::string_view field) {
    out.append(std::to_string(field.size())).append(":").append(field);
}

void put(std::string& out, std::int64_t v) {
    put(out, std::to_string(v));
}

void put(std::string& out, const std::optional<time_point>& t) {
    put(out, t ? std::to_string(t->time_since_epoch().count()) : std::string());
}

bool get(std::string_view& in, std::string_view& field) {
    const auto colon = in.find(':');
    std::size_t n = 0;
    if (colon == std::string_view::npos ||
        std::from_chars(in.data(), in.data() + colon, n).ptr != in.data() + colon ||
        in.size() - colon - 1 < n) {
        return false;
    }
    field = in.substr(colon + 1, n);
    in.remove_prefix(colon + 1 + n);
    return true;
}

bool get(std::string_view& in, std::int64_t& v) {
    std::string_view f;
    return get(in, f) &&
           std::from_chars(f.data(), f.data() + f.size(), v).ptr == f.data() + f.size() &&
           !f.empty();
}

bool get(std::string_view& in, std::optional<time_point>& t) {
    std::string_view f;
    if (!get(in, f)) {
        return false;
    }
    if (f.empty()) {
        t.reset();
        return true;
    }
    std::int64_t v = 0;
    if (std::from_chars(f.data(), f.data() + f.size(), v).ptr != f.data() + f.size()) {
        return false;
    }
    t = time_point(duration(v));
    return true;
}

} // namespace

encoded_spec encode_spec(const schedule_spec& spec) {
    encoded_spec e;
    put(e.rule, spec.cron);
    put(e.rule, spec.every.count());
    put(e.rule, spec.zone);
    put(e.rule, spec.start_at);
    put(e.rule, spec.end_at);
    put(e.rest, static_cast<std::int64_t>(spec.retry.max_attempts));
    put(e.rest, spec.retry.base.count());
    put(e.rest, spec.retry.cap.count());
    put(e.rest, static_cast<std::int64_t>(spec.misfire));
    put(e.rest, static_cast<std::int64_t>(spec.misfire_limit));
    put(e.rest, static_cast<std::int64_t>(spec.overlap));
    put(e.rest, spec.payload);
    return e;
}

bool decode_spec(std::string_view rule, std::string_view rest, schedule_spec& out) {
    std::string_view cron_expr;
    std::string_view zone;
    std::string_view payload;
    std::int64_t every = 0;
    std::int64_t attempts = 0;
    std::int64_t base = 0;
    std::int64_t cap = 0;
    std::int64_t misfire = 0;
    std::int64_t limit = 0;
    std::int64_t overlap = 0;
    if (!get(rule, cron_expr) || !get(rule, every) || !get(rule, zone) ||
        !get(rule, out.start_at) || !get(rule, out.end_at) || !rule.empty() ||
        !get(rest, attempts) || !get(rest, base) || !get(rest, cap) || !get(rest, misfire) ||
        !get(rest, limit) || !get(rest, overlap) || !get(rest, payload) || !rest.empty() ||
        misfire < 0 || misfire > 2 || overlap < 0 || overlap > 1 || attempts < 0 || limit < 0) {
        return false;
    }
    out.cron.assign(cron_expr);
    out.every = duration(every);
    out.zone.assign(zone);
    out.retry = {static_cast<std::uint32_t>(attempts), duration(base), duration(cap)};
    out.misfire = static_cast<misfire_policy>(misfire);
    out.misfire_limit = static_cast<std::uint32_t>(limit);
    out.overlap = static_cast<overlap_policy>(overlap);
    out.payload.assign(payload);
    return true;
}

} // namespace detail

} // namespace timewheel::dq
