//
// test/cron/schedule.cpp
//
// cron::schedule: the parser (valid expressions by their occurrences, invalid ones by their
// exact message, field and position), next_after in UTC, the DST policy in the zones the
// issue names, and cron_task on the local wheel (order, never early, no allocation per run). Every
// expected instant below is written down from the tz database
// (`zdump -v -c 2010,2030 ZONE`, quoted above each case), never computed by the code under
// test. The policy itself is docs/cron.md.
//

#define BOOST_TEST_MODULE cron_schedule
#include <timewheel/cron/cron_task.hpp>
#include <timewheel/cron/schedule.hpp>

#include <boost/asio/io_context.hpp>
#include <boost/test/unit_test.hpp>

#include <date/date.h>

#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include <test/support/allocation_counter.hpp>

namespace cron = timewheel::cron;
using cron::time_point;

namespace {

// "2026-03-29T01:00:00Z" (or with .mmm) as an instant.
time_point at(const std::string& text) {
    using namespace std::chrono;
    int y = 0, mo = 0, d = 0, h = 0, mi = 0, s = 0, ms = 0;
    const int n = std::sscanf(text.c_str(), "%d-%d-%dT%d:%d:%d.%dZ", &y, &mo, &d, &h, &mi, &s, &ms);
    BOOST_REQUIRE_MESSAGE(n >= 6, "bad instant in the test: " << text);
    return cron::time_point{sys_days{year{y} / mo / d}} + hours{h} + minutes{mi} + seconds{s} +
           milliseconds{ms};
}

std::string utc(time_point t) {
    return date::format("%FT%TZ", std::chrono::floor<std::chrono::seconds>(t));
}

// The next `n` occurrences after `from`, as "UTC instant = local time".
std::vector<std::string> next(const std::string& expression, const std::string& zone,
                              const std::string& from, int n) {
    const auto s = cron::schedule::parse(expression, zone);
    std::vector<std::string> out;
    auto t = at(from);
    for (int i = 0; i < n; ++i) {
        const auto o = s.next_after(t);
        if (!o) {
            out.push_back("none");
            break;
        }
        out.push_back(utc(*o) + " = " + s.local_time(*o));
        t = *o;
    }
    return out;
}

using lines = std::vector<std::string>;

// The message, field and position of the parse_error `expression` throws.
std::string fault(const std::string& expression) {
    try {
        cron::schedule::parse(expression);
    } catch (const cron::parse_error& e) {
        return std::to_string(e.field()) + "@" + std::to_string(e.position()) + " " + e.what();
    }
    return "no error";
}

} // namespace

BOOST_AUTO_TEST_SUITE(parser)

BOOST_AUTO_TEST_CASE(five_fields_lists_ranges_and_steps) {
    BOOST_TEST(next("0,30 9-10 * * *", "UTC", "2026-01-01T00:00:00Z", 5) ==
               (lines{"2026-01-01T09:00:00Z = 2026-01-01T09:00:00+00:00",
                      "2026-01-01T09:30:00Z = 2026-01-01T09:30:00+00:00",
                      "2026-01-01T10:00:00Z = 2026-01-01T10:00:00+00:00",
                      "2026-01-01T10:30:00Z = 2026-01-01T10:30:00+00:00",
                      "2026-01-02T09:00:00Z = 2026-01-02T09:00:00+00:00"}));
    BOOST_TEST(next("*/20 0 1 * *", "UTC", "2026-01-31T00:00:00Z", 4) ==
               (lines{"2026-02-01T00:00:00Z = 2026-02-01T00:00:00+00:00",
                      "2026-02-01T00:20:00Z = 2026-02-01T00:20:00+00:00",
                      "2026-02-01T00:40:00Z = 2026-02-01T00:40:00+00:00",
                      "2026-03-01T00:00:00Z = 2026-03-01T00:00:00+00:00"}));
    // a/n runs to the end of the field; a-b/n within the range.
    BOOST_TEST(next("50/5 23 * * *", "UTC", "2026-01-01T00:00:00Z", 3) ==
               (lines{"2026-01-01T23:50:00Z = 2026-01-01T23:50:00+00:00",
                      "2026-01-01T23:55:00Z = 2026-01-01T23:55:00+00:00",
                      "2026-01-02T23:50:00Z = 2026-01-02T23:50:00+00:00"}));
    BOOST_TEST(next("0 1-9/4 * * *", "UTC", "2026-01-01T00:00:00Z", 4) ==
               (lines{"2026-01-01T01:00:00Z = 2026-01-01T01:00:00+00:00",
                      "2026-01-01T05:00:00Z = 2026-01-01T05:00:00+00:00",
                      "2026-01-01T09:00:00Z = 2026-01-01T09:00:00+00:00",
                      "2026-01-02T01:00:00Z = 2026-01-02T01:00:00+00:00"}));
}

BOOST_AUTO_TEST_CASE(six_fields_put_seconds_first) {
    BOOST_TEST(next("*/20 0 12 * * *", "UTC", "2026-01-01T12:00:00Z", 3) ==
               (lines{"2026-01-01T12:00:20Z = 2026-01-01T12:00:20+00:00",
                      "2026-01-01T12:00:40Z = 2026-01-01T12:00:40+00:00",
                      "2026-01-02T12:00:00Z = 2026-01-02T12:00:00+00:00"}));
    // Strictly after: an instant with milliseconds past an occurrence goes to the next one.
    BOOST_TEST(next("*/20 0 12 * * *", "UTC", "2026-01-01T12:00:20.001Z", 1) ==
               (lines{"2026-01-01T12:00:40Z = 2026-01-01T12:00:40+00:00"}));
}

BOOST_AUTO_TEST_CASE(names_of_months_and_days_in_any_case_and_sunday_as_0_or_7) {
    // 2026-01-01 is a Thursday.
    BOOST_TEST(next("0 9 * jan-Feb MON-wed", "UTC", "2026-01-01T00:00:00Z", 3) ==
               (lines{"2026-01-05T09:00:00Z = 2026-01-05T09:00:00+00:00",
                      "2026-01-06T09:00:00Z = 2026-01-06T09:00:00+00:00",
                      "2026-01-07T09:00:00Z = 2026-01-07T09:00:00+00:00"}));
    BOOST_TEST(next("0 0 * * 7", "UTC", "2026-01-01T00:00:00Z", 1) ==
               (lines{"2026-01-04T00:00:00Z = 2026-01-04T00:00:00+00:00"}));
    BOOST_TEST(next("0 0 * * 0", "UTC", "2026-01-01T00:00:00Z", 1) ==
               next("0 0 * * SUN", "UTC", "2026-01-01T00:00:00Z", 1));
    BOOST_TEST(next("0 0 * * 5-7", "UTC", "2026-01-01T00:00:00Z", 4) ==
               (lines{"2026-01-02T00:00:00Z = 2026-01-02T00:00:00+00:00",
                      "2026-01-03T00:00:00Z = 2026-01-03T00:00:00+00:00",
                      "2026-01-04T00:00:00Z = 2026-01-04T00:00:00+00:00",
                      "2026-01-09T00:00:00Z = 2026-01-09T00:00:00+00:00"}));
}

BOOST_AUTO_TEST_CASE(day_of_month_or_day_of_week_as_vixie_cron_does) {
    // Both restricted: either matches (the 13th, or a Friday). 2026-02-06 is a Friday.
    BOOST_TEST(next("0 0 13 * 5", "UTC", "2026-02-01T00:00:00Z", 4) ==
               (lines{"2026-02-06T00:00:00Z = 2026-02-06T00:00:00+00:00",
                      "2026-02-13T00:00:00Z = 2026-02-13T00:00:00+00:00",
                      "2026-02-20T00:00:00Z = 2026-02-20T00:00:00+00:00",
                      "2026-02-27T00:00:00Z = 2026-02-27T00:00:00+00:00"}));
    // One starts with `*` (or `?`): both must match, so the 13th when it is a Friday
    // (2026-03-13, then 2026-11-13).
    BOOST_TEST(next("0 0 */1 * 5", "UTC", "2026-02-01T00:00:00Z", 1) ==
               (lines{"2026-02-06T00:00:00Z = 2026-02-06T00:00:00+00:00"}));
    BOOST_TEST(next("0 0 13 * ?", "UTC", "2026-02-01T00:00:00Z", 1) ==
               (lines{"2026-02-13T00:00:00Z = 2026-02-13T00:00:00+00:00"}));
    BOOST_TEST(next("0 0 1-13 * */5", "UTC", "2026-01-31T00:00:00Z", 3) ==
               (lines{"2026-02-01T00:00:00Z = 2026-02-01T00:00:00+00:00",
                      "2026-02-06T00:00:00Z = 2026-02-06T00:00:00+00:00",
                      "2026-02-08T00:00:00Z = 2026-02-08T00:00:00+00:00"}));
}

BOOST_AUTO_TEST_CASE(macros) {
    const std::string from = "2026-05-15T12:34:00Z";
    BOOST_TEST(next("@yearly", "UTC", from, 1) == next("0 0 1 1 *", "UTC", from, 1));
    BOOST_TEST(next("@annually", "UTC", from, 1) ==
               (lines{"2027-01-01T00:00:00Z = 2027-01-01T00:00:00+00:00"}));
    BOOST_TEST(next("@monthly", "UTC", from, 1) ==
               (lines{"2026-06-01T00:00:00Z = 2026-06-01T00:00:00+00:00"}));
    BOOST_TEST(next("@weekly", "UTC", from, 1) == // 2026-05-17 is a Sunday
               (lines{"2026-05-17T00:00:00Z = 2026-05-17T00:00:00+00:00"}));
    BOOST_TEST(next("@daily", "UTC", from, 1) ==
               (lines{"2026-05-16T00:00:00Z = 2026-05-16T00:00:00+00:00"}));
    BOOST_TEST(next("@MIDNIGHT", "UTC", from, 1) == next("@daily", "UTC", from, 1));
    BOOST_TEST(next("@hourly", "UTC", from, 1) ==
               (lines{"2026-05-15T13:00:00Z = 2026-05-15T13:00:00+00:00"}));
}

BOOST_AUTO_TEST_CASE(last_nearest_weekday_and_nth_weekday) {
    BOOST_TEST(next("0 0 L 2 *", "UTC", "2026-01-01T00:00:00Z", 2) ==
               (lines{"2026-02-28T00:00:00Z = 2026-02-28T00:00:00+00:00",
                      "2027-02-28T00:00:00Z = 2027-02-28T00:00:00+00:00"}));
    BOOST_TEST(next("0 0 L 2 *", "UTC", "2027-03-01T00:00:00Z", 1) ==
               (lines{"2028-02-29T00:00:00Z = 2028-02-29T00:00:00+00:00"}));
    // Last Friday: 2026-01-30, 2026-02-27.
    BOOST_TEST(next("0 0 * * 5L", "UTC", "2026-01-01T00:00:00Z", 2) ==
               (lines{"2026-01-30T00:00:00Z = 2026-01-30T00:00:00+00:00",
                      "2026-02-27T00:00:00Z = 2026-02-27T00:00:00+00:00"}));
    // Second Monday: 2026-01-12, 2026-02-09.
    BOOST_TEST(next("0 0 * * MON#2", "UTC", "2026-01-01T00:00:00Z", 2) ==
               (lines{"2026-01-12T00:00:00Z = 2026-01-12T00:00:00+00:00",
                      "2026-02-09T00:00:00Z = 2026-02-09T00:00:00+00:00"}));
    // 15W: 2026-02-15 is a Sunday -> Monday 16th; 2026-03-15 is a Sunday too -> 16th;
    // 1W: 2026-08-01 is a Saturday -> Monday 3rd (never back into July).
    BOOST_TEST(next("0 0 15W 2,3 *", "UTC", "2026-01-01T00:00:00Z", 2) ==
               (lines{"2026-02-16T00:00:00Z = 2026-02-16T00:00:00+00:00",
                      "2026-03-16T00:00:00Z = 2026-03-16T00:00:00+00:00"}));
    BOOST_TEST(next("0 0 1W 8 *", "UTC", "2026-01-01T00:00:00Z", 1) ==
               (lines{"2026-08-03T00:00:00Z = 2026-08-03T00:00:00+00:00"}));
    // LW: the last weekday; 2026-05-31 is a Sunday -> Friday 29th.
    BOOST_TEST(next("0 0 LW 5 *", "UTC", "2026-01-01T00:00:00Z", 1) ==
               (lines{"2026-05-29T00:00:00Z = 2026-05-29T00:00:00+00:00"}));
}

BOOST_AUTO_TEST_CASE(a_date_that_never_comes_has_no_next_occurrence) {
    BOOST_TEST(next("0 0 30 2 *", "UTC", "2026-01-01T00:00:00Z", 1) == (lines{"none"}));
    BOOST_TEST(next("0 0 31 4,6,9,11 *", "Europe/Berlin", "2026-01-01T00:00:00Z", 1) ==
               (lines{"none"}));
    // 29 February comes every four years, and the search reaches it.
    BOOST_TEST(next("0 0 29 2 *", "UTC", "2026-01-01T00:00:00Z", 1) ==
               (lines{"2028-02-29T00:00:00Z = 2028-02-29T00:00:00+00:00"}));
    // Nothing after year 9999.
    BOOST_TEST(next("0 0 1 1 *", "UTC", "9999-06-01T00:00:00Z", 1) == (lines{"none"}));
}

BOOST_AUTO_TEST_CASE(invalid_expressions_name_the_field_the_position_and_the_fault) {
    BOOST_TEST(fault("0 25 * * *") == "2@2 field 2 (hour): 25 is out of range 0-23");
    BOOST_TEST(fault("0 0 25 * * *") == "3@4 field 3 (hour): 25 is out of range 0-23");
    BOOST_TEST(fault("60 * * * *") == "1@0 field 1 (minute): 60 is out of range 0-59");
    BOOST_TEST(fault("* * 0 * *") == "3@4 field 3 (day-of-month): 0 is out of range 1-31");
    BOOST_TEST(fault("* * * 13 *") == "4@6 field 4 (month): 13 is out of range 1-12");
    BOOST_TEST(fault("* * * * 8") == "5@8 field 5 (day-of-week): 8 is out of range 0-7");
    BOOST_TEST(fault("* * * FOO *") == "4@6 field 4 (month): unknown name \"FOO\"");
    BOOST_TEST(fault("* * * * MON-XYZ") == "5@12 field 5 (day-of-week): unknown name \"XYZ\"");
    BOOST_TEST(fault("* 5-3 * * *") == "2@2 field 2 (hour): range 5-3 is backwards");
    BOOST_TEST(fault("*/0 * * * *") == "1@2 field 1 (minute): step 0 is out of range 1-60");
    BOOST_TEST(fault("*/ * * * *") == "1@2 field 1 (minute): a step is missing after '/'");
    BOOST_TEST(fault("1,,2 * * * *") == "1@2 field 1 (minute): empty list item");
    BOOST_TEST(fault("1, * * * *") == "1@2 field 1 (minute): empty list item");
    BOOST_TEST(fault("1- * * * *") == "1@2 field 1 (minute): a value is missing");
    BOOST_TEST(fault("1x * * * *") == "1@1 field 1 (minute): unexpected character 'x'");
    BOOST_TEST(fault("? * * * *") ==
               "1@0 field 1 (minute): '?' is only allowed in day-of-month and day-of-week");
    BOOST_TEST(fault("* * * * 1#6") ==
               "5@10 field 5 (day-of-week): 6 is out of range 1-5 (the n-th weekday of a month)");
    BOOST_TEST(fault("* * 32W * *") == "3@4 field 3 (day-of-month): 32 is out of range 1-31");
    BOOST_TEST(fault("* * * * \xC3\xA9") ==
               "5@8 field 5 (day-of-week): unexpected character \\xC3");
    BOOST_TEST(fault("99999999999999999999 * * * *") ==
               "1@0 field 1 (minute): 99999999999999999999 is out of range 0-59");
}

BOOST_AUTO_TEST_CASE(faults_of_the_whole_expression_are_field_0) {
    BOOST_TEST(fault("") == "0@0 empty expression");
    BOOST_TEST(fault(" \t ") == "0@0 empty expression");
    BOOST_TEST(fault("* * * *") == "0@0 expected 5 or 6 fields, got 4");
    BOOST_TEST(fault("* * * * * * *") == "0@0 expected 5 or 6 fields, got 7");
    BOOST_TEST(fault("@reboot") == "0@0 unknown macro \"@reboot\"");
    BOOST_TEST(fault("  @daily 5") == "0@9 a macro stands alone, got more after @daily");
    BOOST_TEST(fault(std::string(257, '*')) == "0@256 expression is longer than 256 bytes");
    // 256 bytes are still read (and this one is wrong for another reason).
    BOOST_TEST(fault(std::string(256, ' ')) == "0@0 empty expression");
}

BOOST_AUTO_TEST_CASE(unknown_zones_are_refused_by_name) {
    try {
        cron::schedule::parse("0 0 * * *", "Mars/Olympus");
        BOOST_FAIL("no unknown_zone");
    } catch (const cron::unknown_zone& e) {
        BOOST_TEST(std::string(e.what()) == "unknown time zone \"Mars/Olympus\"");
    }
    BOOST_CHECK_THROW(cron::schedule::parse("0 0 * * *", ""), cron::unknown_zone);
    BOOST_CHECK_THROW(cron::schedule::parse("0 0 * * *", "../../etc/passwd"), cron::unknown_zone);
    // The expression is read first: a bad one is a parse_error whatever the zone.
    BOOST_CHECK_THROW(cron::schedule::parse("0 25 * * *", "Mars/Olympus"), cron::parse_error);
    const auto s = cron::schedule::parse("0 0 * * *");
    BOOST_TEST(s.zone() == "UTC");
    BOOST_TEST(!s.is_interval());
    BOOST_TEST(cron::schedule::parse("0 0 * * *", "Europe/Berlin").zone() == "Europe/Berlin");
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(local_time_and_intervals)

BOOST_AUTO_TEST_CASE(local_time_is_iso_8601_with_the_offset_and_milliseconds_when_not_zero) {
    const auto berlin = cron::schedule::parse("0 0 * * *", "Europe/Berlin");
    BOOST_TEST(berlin.local_time(at("2026-03-29T01:00:00Z")) == "2026-03-29T03:00:00+02:00");
    BOOST_TEST(berlin.local_time(at("2026-01-10T12:00:00.250Z")) ==
               "2026-01-10T13:00:00.250+01:00");
    const auto ny = cron::schedule::parse("0 0 * * *", "America/New_York");
    BOOST_TEST(ny.local_time(at("2026-01-10T12:00:00Z")) == "2026-01-10T07:00:00-05:00");
    const auto kathmandu = cron::schedule::parse("0 0 * * *", "Asia/Kathmandu");
    BOOST_TEST(kathmandu.local_time(at("2026-01-10T12:00:00Z")) == "2026-01-10T17:45:00+05:45");
    const auto every = cron::schedule::every(std::chrono::minutes{1}, at("2026-01-01T00:00:00Z"));
    BOOST_TEST(every.local_time(at("2026-01-10T12:00:00.007Z")) == "2026-01-10T12:00:00.007Z");
    BOOST_TEST(every.is_interval());
    BOOST_TEST(every.zone() == "UTC");
}

BOOST_AUTO_TEST_SUITE_END()

// The DST policy. A schedule that names its hours: each matching wall-clock time once; in a
// gap at the gap's end; in a fold at its first instant. A schedule for every hour: elapsed
// time (both passes of a fold, nothing for the skipped times).
BOOST_AUTO_TEST_SUITE(dst_policy)

// clang-format off
// Europe/Berlin  Sun Mar 29 00:59:59 2026 UT = Sun Mar 29 01:59:59 2026 CET isdst=0 gmtoff=3600
// Europe/Berlin  Sun Mar 29 01:00:00 2026 UT = Sun Mar 29 03:00:00 2026 CEST isdst=1 gmtoff=7200
// Europe/Berlin  Sun Oct 25 00:59:59 2026 UT = Sun Oct 25 02:59:59 2026 CEST isdst=1 gmtoff=7200
// Europe/Berlin  Sun Oct 25 01:00:00 2026 UT = Sun Oct 25 02:00:00 2026 CET isdst=0 gmtoff=3600
// clang-format on
BOOST_AUTO_TEST_CASE(europe_berlin) {
    const std::string z = "Europe/Berlin";
    // Gap: 02:30 does not exist on 29 March; it fires at the gap's end, 03:00 CEST.
    BOOST_TEST(next("30 2 * * *", z, "2026-03-28T12:00:00Z", 2) ==
               (lines{"2026-03-29T01:00:00Z = 2026-03-29T03:00:00+02:00",
                      "2026-03-30T00:30:00Z = 2026-03-30T02:30:00+02:00"}));
    // Three of its times in the gap fire once; 03:00 itself is the same instant.
    BOOST_TEST(next("0,20,40 2 * * *", z, "2026-03-28T12:00:00Z", 2) ==
               (lines{"2026-03-29T01:00:00Z = 2026-03-29T03:00:00+02:00",
                      "2026-03-30T00:00:00Z = 2026-03-30T02:00:00+02:00"}));
    BOOST_TEST(next("0 2,3 * * *", z, "2026-03-28T12:00:00Z", 2) ==
               (lines{"2026-03-29T01:00:00Z = 2026-03-29T03:00:00+02:00",
                      "2026-03-30T00:00:00Z = 2026-03-30T02:00:00+02:00"}));
    // Fold: 02:30 comes twice on 25 October; it fires at the first, CEST.
    BOOST_TEST(next("30 2 * * *", z, "2026-10-24T12:00:00Z", 2) ==
               (lines{"2026-10-25T00:30:00Z = 2026-10-25T02:30:00+02:00",
                      "2026-10-26T01:30:00Z = 2026-10-26T02:30:00+01:00"}));
    // ... also when asked from inside the fold's second pass.
    BOOST_TEST(next("30 2 * * *", z, "2026-10-25T01:10:00Z", 1) ==
               (lines{"2026-10-26T01:30:00Z = 2026-10-26T02:30:00+01:00"}));
    // Every hour: 02:00 and 02:30 CEST do not exist, so no catch-up at 03:00 beyond 03:00's own.
    BOOST_TEST(next("*/30 * * * *", z, "2026-03-29T00:00:00Z", 3) ==
               (lines{"2026-03-29T00:30:00Z = 2026-03-29T01:30:00+01:00",
                      "2026-03-29T01:00:00Z = 2026-03-29T03:00:00+02:00",
                      "2026-03-29T01:30:00Z = 2026-03-29T03:30:00+02:00"}));
    // Every hour in the fold: both passes.
    BOOST_TEST(next("*/30 * * * *", z, "2026-10-25T00:00:00Z", 4) ==
               (lines{"2026-10-25T00:30:00Z = 2026-10-25T02:30:00+02:00",
                      "2026-10-25T01:00:00Z = 2026-10-25T02:00:00+01:00",
                      "2026-10-25T01:30:00Z = 2026-10-25T02:30:00+01:00",
                      "2026-10-25T02:00:00Z = 2026-10-25T03:00:00+01:00"}));
    // A daily schedule outside the transition hours is simply local.
    BOOST_TEST(next("0 9 * * *", z, "2026-03-28T12:00:00Z", 2) ==
               (lines{"2026-03-29T07:00:00Z = 2026-03-29T09:00:00+02:00",
                      "2026-03-30T07:00:00Z = 2026-03-30T09:00:00+02:00"}));
}

// clang-format off
// Australia/Lord_Howe  Sat Apr  4 14:59:59 2026 UT = Sun Apr  5 01:59:59 2026 +11 isdst=1 gmtoff=39600
// Australia/Lord_Howe  Sat Apr  4 15:00:00 2026 UT = Sun Apr  5 01:30:00 2026 +1030 isdst=0 gmtoff=37800
// Australia/Lord_Howe  Sat Oct  3 15:29:59 2026 UT = Sun Oct  4 01:59:59 2026 +1030 isdst=0 gmtoff=37800
// Australia/Lord_Howe  Sat Oct  3 15:30:00 2026 UT = Sun Oct  4 02:30:00 2026 +11 isdst=1 gmtoff=39600
// clang-format on
BOOST_AUTO_TEST_CASE(australia_lord_howe_shifts_by_30_minutes) {
    const std::string z = "Australia/Lord_Howe";
    BOOST_TEST(next("15 2 * * *", z, "2026-10-03T00:00:00Z", 2) ==
               (lines{"2026-10-03T15:30:00Z = 2026-10-04T02:30:00+11:00",
                      "2026-10-04T15:15:00Z = 2026-10-05T02:15:00+11:00"}));
    BOOST_TEST(next("45 1 * * *", z, "2026-04-04T00:00:00Z", 2) ==
               (lines{"2026-04-04T14:45:00Z = 2026-04-05T01:45:00+11:00",
                      "2026-04-05T15:15:00Z = 2026-04-06T01:45:00+10:30"}));
    // Every hour, at :00 :20 :40: 02:00 and 02:20 are skipped; the fold's 01:40 comes twice.
    BOOST_TEST(next("*/20 * * * *", z, "2026-10-03T15:00:00Z", 3) ==
               (lines{"2026-10-03T15:10:00Z = 2026-10-04T01:40:00+10:30",
                      "2026-10-03T15:40:00Z = 2026-10-04T02:40:00+11:00",
                      "2026-10-03T16:00:00Z = 2026-10-04T03:00:00+11:00"}));
    BOOST_TEST(next("*/20 * * * *", z, "2026-04-04T14:30:00Z", 4) ==
               (lines{"2026-04-04T14:40:00Z = 2026-04-05T01:40:00+11:00",
                      "2026-04-04T15:10:00Z = 2026-04-05T01:40:00+10:30",
                      "2026-04-04T15:30:00Z = 2026-04-05T02:00:00+10:30",
                      "2026-04-04T15:50:00Z = 2026-04-05T02:20:00+10:30"}));
}

// clang-format off
// America/Santiago  Sun Apr  5 02:59:59 2026 UT = Sat Apr  4 23:59:59 2026 -03 isdst=1 gmtoff=-10800
// America/Santiago  Sun Apr  5 03:00:00 2026 UT = Sat Apr  4 23:00:00 2026 -04 isdst=0 gmtoff=-14400
// America/Santiago  Sun Sep  6 03:59:59 2026 UT = Sat Sep  5 23:59:59 2026 -04 isdst=0 gmtoff=-14400
// America/Santiago  Sun Sep  6 04:00:00 2026 UT = Sun Sep  6 01:00:00 2026 -03 isdst=1 gmtoff=-10800
// clang-format on
BOOST_AUTO_TEST_CASE(america_santiago_changes_at_midnight) {
    const std::string z = "America/Santiago";
    // Midnight of 6 September does not exist: a daily midnight job runs at 01:00.
    BOOST_TEST(next("0 0 * * *", z, "2026-09-05T12:00:00Z", 2) ==
               (lines{"2026-09-06T04:00:00Z = 2026-09-06T01:00:00-03:00",
                      "2026-09-07T03:00:00Z = 2026-09-07T00:00:00-03:00"}));
    BOOST_TEST(next("30 0 * * *", z, "2026-09-05T12:00:00Z", 2) ==
               (lines{"2026-09-06T04:00:00Z = 2026-09-06T01:00:00-03:00",
                      "2026-09-07T03:30:00Z = 2026-09-07T00:30:00-03:00"}));
    // 23:30 on 4 April comes twice: the first, at -03.
    BOOST_TEST(next("30 23 * * *", z, "2026-04-04T12:00:00Z", 2) ==
               (lines{"2026-04-05T02:30:00Z = 2026-04-04T23:30:00-03:00",
                      "2026-04-06T03:30:00Z = 2026-04-05T23:30:00-04:00"}));
    BOOST_TEST(next("0 * * * *", z, "2026-04-05T01:30:00Z", 3) ==
               (lines{"2026-04-05T02:00:00Z = 2026-04-04T23:00:00-03:00",
                      "2026-04-05T03:00:00Z = 2026-04-04T23:00:00-04:00",
                      "2026-04-05T04:00:00Z = 2026-04-05T00:00:00-04:00"}));
    BOOST_TEST(next("0 * * * *", z, "2026-09-06T02:30:00Z", 3) ==
               (lines{"2026-09-06T03:00:00Z = 2026-09-05T23:00:00-04:00",
                      "2026-09-06T04:00:00Z = 2026-09-06T01:00:00-03:00",
                      "2026-09-06T05:00:00Z = 2026-09-06T02:00:00-03:00"}));
}

// clang-format off
// Asia/Beirut  Sat Mar 28 21:59:59 2026 UT = Sat Mar 28 23:59:59 2026 EET isdst=0 gmtoff=7200
// Asia/Beirut  Sat Mar 28 22:00:00 2026 UT = Sun Mar 29 01:00:00 2026 EEST isdst=1 gmtoff=10800
// Asia/Beirut  Sat Oct 24 20:59:59 2026 UT = Sat Oct 24 23:59:59 2026 EEST isdst=1 gmtoff=10800
// Asia/Beirut  Sat Oct 24 21:00:00 2026 UT = Sat Oct 24 23:00:00 2026 EET isdst=0 gmtoff=7200
// clang-format on
BOOST_AUTO_TEST_CASE(asia_beirut_changes_at_midnight_in_2026) {
    const std::string z = "Asia/Beirut";
    BOOST_TEST(next("0 0 * * *", z, "2026-03-28T12:00:00Z", 2) ==
               (lines{"2026-03-28T22:00:00Z = 2026-03-29T01:00:00+03:00",
                      "2026-03-29T21:00:00Z = 2026-03-30T00:00:00+03:00"}));
    BOOST_TEST(next("30 23 * * *", z, "2026-10-24T12:00:00Z", 2) ==
               (lines{"2026-10-24T20:30:00Z = 2026-10-24T23:30:00+03:00",
                      "2026-10-25T21:30:00Z = 2026-10-25T23:30:00+02:00"}));
    BOOST_TEST(next("*/30 * * * *", z, "2026-10-24T20:00:00Z", 4) ==
               (lines{"2026-10-24T20:30:00Z = 2026-10-24T23:30:00+03:00",
                      "2026-10-24T21:00:00Z = 2026-10-24T23:00:00+02:00",
                      "2026-10-24T21:30:00Z = 2026-10-24T23:30:00+02:00",
                      "2026-10-24T22:00:00Z = 2026-10-25T00:00:00+02:00"}));
    BOOST_TEST(next("*/30 * * * *", z, "2026-03-28T21:00:00Z", 3) ==
               (lines{"2026-03-28T21:30:00Z = 2026-03-28T23:30:00+02:00",
                      "2026-03-28T22:00:00Z = 2026-03-29T01:00:00+03:00",
                      "2026-03-28T22:30:00Z = 2026-03-29T01:30:00+03:00"}));
}

// clang-format off
// Pacific/Apia  Fri Dec 30 09:59:59 2011 UT = Thu Dec 29 23:59:59 2011 -10 isdst=1 gmtoff=-36000
// Pacific/Apia  Fri Dec 30 10:00:00 2011 UT = Sat Dec 31 00:00:00 2011 +14 isdst=1 gmtoff=50400
// Pacific/Apia  Sat Sep 29 14:00:00 2012 UT = Sun Sep 30 04:00:00 2012 +14 isdst=1 gmtoff=50400
// clang-format on
BOOST_AUTO_TEST_CASE(pacific_apia_skips_30_december_2011) {
    const std::string z = "Pacific/Apia";
    // 09:00 on the 30th does not exist: it fires when the day that does not exist ends.
    BOOST_TEST(next("0 9 * * *", z, "2011-12-29T12:00:00Z", 3) ==
               (lines{"2011-12-29T19:00:00Z = 2011-12-29T09:00:00-10:00",
                      "2011-12-30T10:00:00Z = 2011-12-31T00:00:00+14:00",
                      "2011-12-30T19:00:00Z = 2011-12-31T09:00:00+14:00"}));
    // A yearly job on 30 December: once, at the gap's end, in 2011.
    BOOST_TEST(next("0 12 30 12 *", z, "2011-12-01T00:00:00Z", 2) ==
               (lines{"2011-12-30T10:00:00Z = 2011-12-31T00:00:00+14:00",
                      "2012-12-29T22:00:00Z = 2012-12-30T12:00:00+14:00"}));
    // Every hour of 30 December: none of them exist in 2011.
    BOOST_TEST(next("0 * 30 12 *", z, "2011-12-01T00:00:00Z", 1) ==
               (lines{"2012-12-29T10:00:00Z = 2012-12-30T00:00:00+14:00"}));
}

// clang-format off
// America/Sao_Paulo  Sun Nov  4 02:59:59 2018 UT = Sat Nov  3 23:59:59 2018 -03 isdst=0 gmtoff=-10800
// America/Sao_Paulo  Sun Nov  4 03:00:00 2018 UT = Sun Nov  4 01:00:00 2018 -02 isdst=1 gmtoff=-7200
// America/Sao_Paulo  Sun Feb 17 01:59:59 2019 UT = Sat Feb 16 23:59:59 2019 -02 isdst=1 gmtoff=-7200
// America/Sao_Paulo  Sun Feb 17 02:00:00 2019 UT = Sat Feb 16 23:00:00 2019 -03 isdst=0 gmtoff=-10800 (and no transition after: Brazil abolished daylight saving in 2019)
// clang-format on
BOOST_AUTO_TEST_CASE(america_sao_paulo_before_and_after_its_rules_changed) {
    const std::string z = "America/Sao_Paulo";
    BOOST_TEST(next("30 0 * * *", z, "2018-11-03T12:00:00Z", 2) ==
               (lines{"2018-11-04T03:00:00Z = 2018-11-04T01:00:00-02:00",
                      "2018-11-05T02:30:00Z = 2018-11-05T00:30:00-02:00"}));
    BOOST_TEST(next("30 23 * * *", z, "2019-02-16T12:00:00Z", 2) ==
               (lines{"2019-02-17T01:30:00Z = 2019-02-16T23:30:00-02:00",
                      "2019-02-18T02:30:00Z = 2019-02-17T23:30:00-03:00"}));
    // Where the old rule would have made a gap (first Sunday of November), 2019 has none.
    BOOST_TEST(next("30 0 * * *", z, "2019-11-02T12:00:00Z", 2) ==
               (lines{"2019-11-03T03:30:00Z = 2019-11-03T00:30:00-03:00",
                      "2019-11-04T03:30:00Z = 2019-11-04T00:30:00-03:00"}));
    BOOST_TEST(next("*/30 * * * *", z, "2018-11-04T02:00:00Z", 3) ==
               (lines{"2018-11-04T02:30:00Z = 2018-11-03T23:30:00-03:00",
                      "2018-11-04T03:00:00Z = 2018-11-04T01:00:00-02:00",
                      "2018-11-04T03:30:00Z = 2018-11-04T01:30:00-02:00"}));
    BOOST_TEST(next("*/30 * * * *", z, "2019-02-17T01:00:00Z", 4) ==
               (lines{"2019-02-17T01:30:00Z = 2019-02-16T23:30:00-02:00",
                      "2019-02-17T02:00:00Z = 2019-02-16T23:00:00-03:00",
                      "2019-02-17T02:30:00Z = 2019-02-16T23:30:00-03:00",
                      "2019-02-17T03:00:00Z = 2019-02-17T00:00:00-03:00"}));
}

// clang-format off
// Europe/Moscow  Sat Mar 26 22:59:59 2011 UT = Sun Mar 27 01:59:59 2011 MSK isdst=0 gmtoff=10800
// Europe/Moscow  Sat Mar 26 23:00:00 2011 UT = Sun Mar 27 03:00:00 2011 MSK isdst=0 gmtoff=14400
// Europe/Moscow  Sat Oct 25 21:59:59 2014 UT = Sun Oct 26 01:59:59 2014 MSK isdst=0 gmtoff=14400
// Europe/Moscow  Sat Oct 25 22:00:00 2014 UT = Sun Oct 26 01:00:00 2014 MSK isdst=0 gmtoff=10800
// clang-format on
BOOST_AUTO_TEST_CASE(europe_moscow_kept_summer_time_from_2011_to_2014) {
    const std::string z = "Europe/Moscow";
    BOOST_TEST(next("30 2 * * *", z, "2011-03-26T12:00:00Z", 2) ==
               (lines{"2011-03-26T23:00:00Z = 2011-03-27T03:00:00+04:00",
                      "2011-03-27T22:30:00Z = 2011-03-28T02:30:00+04:00"}));
    // No fold in October 2011 (the old rule's last Sunday): 02:30 once, at +04.
    BOOST_TEST(next("30 2 * * *", z, "2011-10-29T12:00:00Z", 2) ==
               (lines{"2011-10-29T22:30:00Z = 2011-10-30T02:30:00+04:00",
                      "2011-10-30T22:30:00Z = 2011-10-31T02:30:00+04:00"}));
    BOOST_TEST(next("30 1 * * *", z, "2014-10-25T12:00:00Z", 2) ==
               (lines{"2014-10-25T21:30:00Z = 2014-10-26T01:30:00+04:00",
                      "2014-10-26T22:30:00Z = 2014-10-27T01:30:00+03:00"}));
}

// After 2037 the zone files give their rule as a POSIX TZ string (Berlin:
// CET-1CEST,M3.5.0,M10.5.0/3), which the date library alone ignores.
// clang-format off
// Europe/Berlin        Sun Mar 25 01:00:00 2040 UT = Sun Mar 25 03:00:00 2040 CEST isdst=1 gmtoff=7200
// Europe/Berlin        Sun Oct 28 01:00:00 2040 UT = Sun Oct 28 02:00:00 2040 CET isdst=0 gmtoff=3600 Australia/Lord_Howe  Sat Mar 31 15:00:00 2040 UT = Sun Apr  1 01:30:00 2040 +1030 isdst=0 gmtoff=37800 Australia/Lord_Howe  Sat Oct  6 15:30:00 2040 UT = Sun Oct  7 02:30:00 2040 +11 isdst=1 gmtoff=39600 America/Santiago     Sun Apr  8 03:00:00 2040 UT = Sat Apr  7 23:00:00 2040 -04 isdst=0 gmtoff=-14400 America/Santiago     Sun Sep  2 04:00:00 2040 UT = Sun Sep  2 01:00:00 2040 -03 isdst=1 gmtoff=-10800
// clang-format on
BOOST_AUTO_TEST_CASE(after_2037_the_zone_files_own_rule_applies) {
    BOOST_TEST(next("30 2 * * *", "Europe/Berlin", "2040-03-24T12:00:00Z", 2) ==
               (lines{"2040-03-25T01:00:00Z = 2040-03-25T03:00:00+02:00",
                      "2040-03-26T00:30:00Z = 2040-03-26T02:30:00+02:00"}));
    BOOST_TEST(next("30 2 * * *", "Europe/Berlin", "2040-10-27T12:00:00Z", 2) ==
               (lines{"2040-10-28T00:30:00Z = 2040-10-28T02:30:00+02:00",
                      "2040-10-29T01:30:00Z = 2040-10-29T02:30:00+01:00"}));
    BOOST_TEST(next("*/30 * * * *", "Europe/Berlin", "2040-10-28T00:00:00Z", 3) ==
               (lines{"2040-10-28T00:30:00Z = 2040-10-28T02:30:00+02:00",
                      "2040-10-28T01:00:00Z = 2040-10-28T02:00:00+01:00",
                      "2040-10-28T01:30:00Z = 2040-10-28T02:30:00+01:00"}));
    BOOST_TEST(next("15 2 * * *", "Australia/Lord_Howe", "2040-10-06T00:00:00Z", 1) ==
               (lines{"2040-10-06T15:30:00Z = 2040-10-07T02:30:00+11:00"}));
    BOOST_TEST(next("45 1 * * *", "Australia/Lord_Howe", "2040-03-31T00:00:00Z", 2) ==
               (lines{"2040-03-31T14:45:00Z = 2040-04-01T01:45:00+11:00",
                      "2040-04-01T15:15:00Z = 2040-04-02T01:45:00+10:30"}));
    BOOST_TEST(next("0 0 * * *", "America/Santiago", "2040-09-01T12:00:00Z", 2) ==
               (lines{"2040-09-02T04:00:00Z = 2040-09-02T01:00:00-03:00",
                      "2040-09-03T03:00:00Z = 2040-09-03T00:00:00-03:00"}));
    BOOST_TEST(next("30 23 * * *", "America/Santiago", "2040-04-07T12:00:00Z", 2) ==
               (lines{"2040-04-08T02:30:00Z = 2040-04-07T23:30:00-03:00",
                      "2040-04-09T03:30:00Z = 2040-04-08T23:30:00-04:00"}));
}

BOOST_AUTO_TEST_SUITE_END()

// cron_task: runs on the local wheel. Intervals keep these short; nothing timed is asserted,
// only order and "never before the occurrence by the system clock".
BOOST_AUTO_TEST_SUITE(cron_task)

using namespace std::chrono_literals;
using std::chrono::system_clock;

cron::time_point now_ms() {
    return std::chrono::floor<std::chrono::milliseconds>(system_clock::now());
}

BOOST_AUTO_TEST_CASE(runs_each_occurrence_in_order_and_never_early) {
    boost::asio::io_context io;
    const auto anchor = now_ms();
    const auto s = cron::schedule::every(7ms, anchor);
    std::vector<cron::cron_run> runs;
    bool early = false;
    timewheel::cron::cron_task task;
    task = cron::start(io, s, [&](const cron::cron_run& run) {
        early = early || system_clock::now() < run.scheduled || run.started < run.scheduled;
        runs.push_back(run);
        if (runs.size() == 10)
            task.cancel();
    });
    BOOST_TEST(task.active());
    BOOST_TEST(task.next_run().has_value());
    io.run();
    BOOST_TEST(!early);
    BOOST_REQUIRE(runs.size() == 10u);
    for (std::size_t i = 0; i < runs.size(); ++i) {
        BOOST_TEST(runs[i].index == i);
        BOOST_TEST(((runs[i].scheduled - anchor) % 7ms == 0ms));
        BOOST_TEST((runs[i].scheduled > anchor));
        if (i > 0)
            BOOST_TEST((runs[i].scheduled > runs[i - 1].scheduled));
    }
    BOOST_TEST(task.runs() == 10u);
    BOOST_TEST(!task.active());
}

BOOST_AUTO_TEST_CASE(a_run_that_overruns_skips_the_missed_occurrences) {
    boost::asio::io_context io;
    const auto anchor = now_ms();
    const auto s = cron::schedule::every(2ms, anchor);
    std::vector<cron::cron_run> runs;
    timewheel::cron::cron_task task;
    task = cron::start(io, s, [&](const cron::cron_run& run) {
        runs.push_back(run);
        if (runs.size() == 1) {
            const auto until = system_clock::now() + 10ms; // block the thread
            while (system_clock::now() < until) {
            }
        }
        if (runs.size() == 3)
            task.cancel();
    });
    io.run();
    BOOST_REQUIRE(runs.size() == 3u);
    // Each run is for the first occurrence after the previous one and after the previous
    // run started: a late run runs once, the occurrences it missed are skipped. The first
    // run blocked the thread for five occurrences, so one of the gaps is more than one.
    bool skipped = false;
    for (std::size_t i = 1; i < runs.size(); ++i) {
        auto expected = runs[i - 1].scheduled + 2ms;
        while (expected <= std::chrono::floor<std::chrono::milliseconds>(runs[i - 1].started))
            expected += 2ms;
        BOOST_TEST((runs[i].scheduled == expected));
        skipped = skipped || runs[i].scheduled - runs[i - 1].scheduled > 2ms;
    }
    BOOST_TEST(skipped);
}

BOOST_AUTO_TEST_CASE(destroying_the_handle_cancels) {
    boost::asio::io_context io;
    int runs = 0;
    {
        auto task = cron::start(io, cron::schedule::every(1ms, now_ms()), [&] { ++runs; });
    }
    io.run();
    BOOST_TEST(runs == 0);
}

BOOST_AUTO_TEST_CASE(a_schedule_with_no_next_occurrence_ends_the_task_at_once) {
    boost::asio::io_context io;
    int runs = 0;
    auto task = cron::start(io, cron::schedule::parse("0 0 30 2 *"), [&] { ++runs; });
    BOOST_TEST(task.valid());
    BOOST_TEST(!task.active());
    BOOST_TEST(!task.next_run().has_value());
    io.run();
    BOOST_TEST(runs == 0);
}

BOOST_AUTO_TEST_CASE(the_next_run_of_a_cron_expression_is_its_next_occurrence) {
    boost::asio::io_context io;
    const auto s = cron::schedule::parse("0 9 * * MON-FRI", "Europe/Berlin");
    const auto before = now_ms();
    auto task = cron::start(io, s, [] {});
    BOOST_REQUIRE(task.next_run().has_value());
    BOOST_TEST((*task.next_run() == *s.next_after(before) ||
                *task.next_run() == *s.next_after(*s.next_after(before))));
    BOOST_TEST(task.cancel());
    BOOST_TEST(!task.cancel());
}

BOOST_AUTO_TEST_CASE(waking_before_the_occurrence_by_the_system_clock_waits_again) {
    // What happens when the clock was set back while the task slept: the wheel wakes it, the
    // system clock says the occurrence is still ahead, and it must not run.
    boost::asio::io_context io;
    auto& service = boost::asio::use_service<timewheel::wheel_service>(io);
    int runs = 0;
    cron::detail::cron_state_impl<std::function<void()>> state(
        service, cron::schedule::every(1h, now_ms()), {}, [&] { ++runs; });
    state.scheduled_ = now_ms() + 1h;
    state.notify(service, timewheel::detail::entry_event::expired);
    BOOST_TEST(runs == 0);
    BOOST_TEST(state.runs_ == 0u);
    BOOST_TEST(service.cancel(state)); // armed again
}

BOOST_AUTO_TEST_CASE(next_after_allocates_nothing) {
    // What makes a cron_task's runs free of allocations with a parsed schedule too (and a
    // materialiser's calls cheap): the zone's rules are loaded on first use, then only read.
    for (const char* zone : {"Europe/Berlin", "Australia/Lord_Howe", "Pacific/Apia"}) {
        for (const char* expression : {"0 9 * * *", "*/15 * * * *", "0 0 L * 5L"}) {
            const auto s = cron::schedule::parse(expression, zone);
            auto t = at("2026-01-01T00:00:00Z");
            t = *s.next_after(t); // warm: the zone's rules are read from disk
            auto far = at("2150-06-01T00:00:00Z");
            timewheel::test::allocation_counter counter;
            for (int i = 0; i < 2000; ++i)
                t = *s.next_after(t);
            for (int i = 0; i < 100; ++i)
                far = *s.next_after(far);
            const std::size_t allocated = counter.count();
            BOOST_TEST(allocated == 0u, zone << " " << expression);
        }
    }
}

BOOST_AUTO_TEST_CASE(runs_allocate_nothing) {
    boost::asio::io_context io;
    int runs = 0;
    std::size_t allocated = 0;
    timewheel::test::allocation_counter counter;
    timewheel::cron::cron_task task;
    task = cron::start(io, cron::schedule::every(1ms, now_ms()), [&] {
        ++runs;
        if (runs == 20) { // warm
            counter.reset();
        } else if (runs == 70) {
            allocated = counter.count();
            task.cancel();
        }
    });
    io.run();
    BOOST_TEST(runs == 70);
    BOOST_TEST(allocated == 0u);
}

BOOST_AUTO_TEST_SUITE_END()
