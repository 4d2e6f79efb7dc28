//
// server/service/src/json_fields.hpp
//
// The field readers of the service's JSON (task_json.cpp, schedule_json.cpp), private to
// these files: each throws invalid_field naming the field, so that every body of the API
// is read with the same words for the same faults.
//
#ifndef TIMEWHEELD_SERVICE_SRC_JSON_FIELDS_HPP
#define TIMEWHEELD_SERVICE_SRC_JSON_FIELDS_HPP

#include <timewheeld/service/task_json.hpp>

#include <boost/json/object.hpp>
#include <boost/json/string.hpp>
#include <boost/json/value.hpp>

#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>

namespace timewheeld::service::detail {

/// "prefix.name" ("name" without a prefix).
std::string join(std::string_view prefix, std::string_view name);

/// The body parsed; invalid_field "body" when it is not JSON.
boost::json::value parse_body(std::string_view body);

/// `v` as an object; invalid_field `field` otherwise.
const boost::json::object& as_object(const boost::json::value& v, std::string_view field);

/// Refuses members of `o` not in `known` (a misspelt optional field would pass silently).
void only_known(const boost::json::object& o, std::string_view prefix,
                std::initializer_list<std::string_view> known);

/// An integer in [min, max].
std::int64_t as_integer(const boost::json::value& v, const std::string& field, std::int64_t min,
                        std::int64_t max);

/// A string.
const boost::json::string& as_string(const boost::json::value& v, const std::string& field);

/// What a store kept, shown: valid UTF-8 whatever it holds.
boost::json::value shown(std::string_view s);

} // namespace timewheeld::service::detail

#endif // TIMEWHEELD_SERVICE_SRC_JSON_FIELDS_HPP
