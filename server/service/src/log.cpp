//
// server/service/src/log.cpp
//
// One line per event, written with one fwrite so that the lines of several threads never
// mix; the time is formatted as the API shows times (format_rfc3339).
//
#include <timewheeld/service/log.hpp>
#include <timewheeld/service/task_json.hpp>

#include <chrono>

namespace timewheeld::service {

namespace {

void append_value(std::string& line, std::string_view v) {
    const bool quote = v.empty() || v.find_first_of(" \"=\t\r\n\\") != std::string_view::npos;
    if (!quote) {
        line += v;
        return;
    }
    line += '"';
    for (char c : v) {
        switch (c) {
        case '"':
            line += "\\\"";
            break;
        case '\\':
            line += "\\\\";
            break;
        case '\n':
            line += "\\n";
            break;
        case '\r':
            line += "\\r";
            break;
        case '\t':
            line += "\\t";
            break;
        default:
            line += c;
        }
    }
    line += '"';
}

} // namespace

void logger::log(log_level l, std::string_view event, std::initializer_list<log_field> fields) {
    if (!enabled(l)) {
        return;
    }
    static constexpr const char* names[] = {"error", "warn", "info", "debug"};
    std::string line = "ts=";
    line += format_rfc3339(
        std::chrono::time_point_cast<std::chrono::milliseconds>(std::chrono::system_clock::now()));
    line += " level=";
    line += names[static_cast<int>(l)];
    line += " event=";
    append_value(line, event);
    for (const auto& f : fields) {
        line += ' ';
        line += f.key;
        line += '=';
        append_value(line, f.value);
    }
    line += '\n';
    // One fwrite per line: stdio locks the stream for the call.
    std::fwrite(line.data(), 1, line.size(), out_);
    std::fflush(out_);
}

} // namespace timewheeld::service
