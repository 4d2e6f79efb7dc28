//
// timewheeld/service/log.hpp
//
// Structured one-line logs: `ts=2026-11-26T01:02:03.456Z level=info event=listening
// port=8080`, one write per line (lines of several threads never mix), values quoted
// when they hold spaces, quotes or '='. Quiet by default: start and stop at info, one line
// per request only at debug.
//
#ifndef TIMEWHEELD_SERVICE_LOG_HPP
#define TIMEWHEELD_SERVICE_LOG_HPP

#include <timewheeld/service/settings.hpp>

#include <cstdio>
#include <initializer_list>
#include <string>
#include <string_view>
#include <utility>

namespace timewheeld::service {

/// One key and its value, already formatted.
struct log_field {
    std::string_view key;
    std::string value;
    log_field(std::string_view k, std::string v)
        : key(k)
        , value(std::move(v)) {}
    log_field(std::string_view k, std::string_view v)
        : key(k)
        , value(v) {}
    log_field(std::string_view k, const char* v)
        : key(k)
        , value(v) {}
    template <typename Integer>
    requires std::is_integral_v<Integer> log_field(std::string_view k, Integer v)
        : key(k)
        , value(std::to_string(v)) {}
};

/// Writes log lines at or above a level to a FILE (stderr by default).
class logger {
public:
    explicit logger(log_level level = log_level::info, std::FILE* out = stderr) noexcept
        : level_(level)
        , out_(out) {}

    bool enabled(log_level l) const noexcept { return l <= level_; }

    void log(log_level l, std::string_view event, std::initializer_list<log_field> fields = {});

    void error(std::string_view event, std::initializer_list<log_field> fields = {}) {
        log(log_level::error, event, fields);
    }
    void warn(std::string_view event, std::initializer_list<log_field> fields = {}) {
        log(log_level::warn, event, fields);
    }
    void info(std::string_view event, std::initializer_list<log_field> fields = {}) {
        log(log_level::info, event, fields);
    }
    void debug(std::string_view event, std::initializer_list<log_field> fields = {}) {
        log(log_level::debug, event, fields);
    }

private:
    log_level level_;
    std::FILE* out_;
};

} // namespace timewheeld::service

#endif // TIMEWHEELD_SERVICE_LOG_HPP
