//
// test/dq/support/run_log.hpp
//
// What a test worker process (dq_test_worker) ran, as the tests read it. Each worker
// appends one line per event to its own file with a single write(2) on an O_APPEND
// descriptor, so a line is in the kernel's hands before the handler goes on, and survives
// a kill -9 of the worker:
//
//   start <id> <attempt> <worker>            the handler was called
//   time  <id> <attempt> <worker> <ms>       the store's clock (Redis TIME), read after start
//   end   <id> <attempt> <worker> <outcome>  the handler completes with this outcome
//
// Ids and worker names are written as given; the tests use ids without blanks.
//

#ifndef TIMEWHEEL_TEST_DQ_SUPPORT_RUN_LOG_HPP
#define TIMEWHEEL_TEST_DQ_SUPPORT_RUN_LOG_HPP

#include <fcntl.h>
#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace timewheel::test {

/// Appends lines to a run log (the worker's side).
class run_log_writer {
public:
    explicit run_log_writer(const std::filesystem::path& p)
        : fd_(::open(p.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644)) {
        if (fd_ < 0) {
            throw std::runtime_error("run_log_writer: cannot open " + p.string());
        }
    }
    ~run_log_writer() { ::close(fd_); }
    run_log_writer(const run_log_writer&) = delete;
    run_log_writer& operator=(const run_log_writer&) = delete;

    /// Writes `line` and a newline in one write(2).
    void write(std::string line) {
        line += '\n';
        const char* p = line.data();
        std::size_t left = line.size();
        while (left > 0) {
            const auto n = ::write(fd_, p, left);
            if (n <= 0) {
                return;
            }
            p += n;
            left -= static_cast<std::size_t>(n);
        }
    }

private:
    int fd_;
};

/// One run of a handler, as the logs tell it.
struct run_record {
    std::string id;
    std::uint32_t attempt = 0;
    std::string worker;
    std::int64_t store_ms = -1; ///< the store's clock just after the start; -1 if not logged
    std::string outcome;        ///< empty when the run never reached its end (killed)
};

/// Every run in the logs, in the order of their start lines (file by file).
inline std::vector<run_record> read_runs(const std::vector<std::filesystem::path>& files) {
    std::vector<run_record> runs;
    std::map<std::string, std::size_t> open; // "id attempt worker" -> index in runs
    for (const auto& f : files) {
        std::ifstream in(f);
        std::string line;
        while (std::getline(in, line)) {
            std::istringstream s(line);
            std::string kind, id, worker;
            std::uint32_t attempt = 0;
            if (!(s >> kind >> id >> attempt >> worker)) {
                continue; // a line cut by a kill -9 (none expected: one write per line)
            }
            const std::string key = id + ' ' + std::to_string(attempt) + ' ' + worker;
            if (kind == "start") {
                open[key] = runs.size();
                runs.push_back({id, attempt, worker, -1, {}});
            } else if (auto it = open.find(key); it != open.end()) {
                if (kind == "time") {
                    s >> runs[it->second].store_ms;
                } else if (kind == "end") {
                    s >> runs[it->second].outcome;
                }
            }
        }
    }
    return runs;
}

/// Runs per id.
inline std::map<std::string, int> runs_per_id(const std::vector<run_record>& runs) {
    std::map<std::string, int> n;
    for (const auto& r : runs) {
        ++n[r.id];
    }
    return n;
}

/// The counters a worker process writes when it exits ("name value" lines).
inline std::map<std::string, std::int64_t> read_counters(const std::filesystem::path& f) {
    std::map<std::string, std::int64_t> c;
    std::ifstream in(f);
    std::string name;
    std::int64_t v = 0;
    while (in >> name >> v) {
        c[name] = v;
    }
    return c;
}

} // namespace timewheel::test

#endif // TIMEWHEEL_TEST_DQ_SUPPORT_RUN_LOG_HPP
