//
// fuzz/task_json.cpp
//
// The JSON a client sends: timewheeld::service::parse_submit, parse_reschedule, parse_requeue,
// parse_result (task_json.hpp), and the callback side's callback::parse_callback
// (payload.hpp), which reads every stored callback back. The first byte picks the parser,
// the rest is the body. Invariants:
//   - the API's parsers either throw invalid_field naming a non-empty field with a message,
//     or give a value in range; nothing else is thrown (libFuzzer reports an escaping
//     exception as a crash);
//   - an accepted submit's payload is a JSON object with a string "url", and a submit of
//     that payload gives the same payload (what is stored re-parses to itself);
//   - the callback side's parser, under the API's limits, accepts every payload the API
//     stores (issue 25, item 4: the worker calls whatever the API accepted);
//   - callback::parse_callback either throws payload_error naming a field, or gives a spec
//     whose to_json() parses back to an equal spec.
//
#include "check.hpp"

#include <timewheeld/callback/payload.hpp>
#include <timewheeld/service/task_json.hpp>

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>

#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <variant>

namespace {

namespace service = timewheeld::service;
namespace cb = timewheeld::callback;
namespace dq = timewheel::dq;
namespace json = boost::json;

void check_due(const dq::due_time& due) {
    if (const auto* t = std::get_if<dq::time_point>(&due)) {
        FUZZ_CHECK(*t >= dq::time_point{} && *t <= dq::max_due, "an absolute due time in range");
    } else {
        const auto d = std::get<dq::duration>(due);
        FUZZ_CHECK(d >= dq::duration(0) && d <= dq::max_due.time_since_epoch(), "a delay in range");
    }
}

void submit(std::string_view body) {
    const service::validation_limits limits;
    const dq::task t = service::parse_submit(body, limits);
    check_due(t.due);
    FUZZ_CHECK(t.payload.size() <= limits.max_payload_bytes, "the payload is within its limit");
    FUZZ_CHECK(t.retry.max_attempts >= 1 && t.retry.base <= t.retry.cap, "a sane retry policy");
    boost::system::error_code ec;
    const json::value payload = json::parse(t.payload, ec);
    FUZZ_CHECK(!ec && payload.is_object(), "the payload is a JSON object");
    const auto* url = payload.as_object().if_contains("url");
    FUZZ_CHECK(url && url->is_string(), "the payload has a string url");

    json::object again{{"callback", payload}, {"delay_ms", 0}};
    if (!t.id.empty()) {
        again["id"] = t.id;
    }
    try {
        const dq::task t2 = service::parse_submit(json::serialize(again), limits);
        FUZZ_CHECK(t2.payload == t.payload, "the stored payload re-parses to itself");
        FUZZ_CHECK(t2.id == t.id, "the id re-parses to itself");
    } catch (const service::invalid_field& e) {
        std::fprintf(stderr, "re-submit refused: %s\npayload: %s\n", e.what(), t.payload.c_str());
        FUZZ_CHECK(false, "the stored payload is accepted again");
    }
    try {
        cb::parse_callback(std::string_view(t.payload), limits.callback);
    } catch (const cb::payload_error& e) {
        std::fprintf(stderr, "callback side refuses: %s\npayload: %s\n", e.what(),
                     t.payload.c_str());
        FUZZ_CHECK(false, "the callback side accepts what the API stores");
    }
}

void callback(std::string_view text) {
    cb::callback_spec spec;
    try {
        spec = cb::parse_callback(text);
    } catch (const cb::payload_error& e) {
        FUZZ_CHECK(!e.field().empty(), "a refused callback names its field");
        return;
    }
    const std::string again = json::serialize(cb::to_json(spec));
    try {
        FUZZ_CHECK(cb::parse_callback(std::string_view(again)) == spec,
                   "parse, to_json, parse gives the same callback");
    } catch (const cb::payload_error& e) {
        std::fprintf(stderr, "to_json refused: %s\njson: %s\n", e.what(), again.c_str());
        FUZZ_CHECK(false, "to_json gives a callback that parses");
    }
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size < 1) {
        return 0;
    }
    const std::string_view body(reinterpret_cast<const char*>(data + 1), size - 1);
    const unsigned which = data[0] % 5;
    if (which == 4) {
        callback(body);
        return 0;
    }
    try {
        switch (which) {
        case 0:
            submit(body);
            break;
        case 1:
            check_due(service::parse_reschedule(body));
            break;
        case 2:
            check_due(service::parse_requeue(body));
            break;
        default: {
            const auto r = service::parse_result(body);
            FUZZ_CHECK(r.attempt >= 1, "an attempt is counted from 1");
            break;
        }
        }
    } catch (const service::invalid_field& e) {
        FUZZ_CHECK(!e.field().empty(), "a refusal names its field");
        FUZZ_CHECK(!e.message().empty(), "a refusal says what is wrong");
    }
    return 0;
}
