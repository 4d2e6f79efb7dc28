//
// test/support/process.hpp
//
// A child process for the tests that start programs (the dq fault tests, timewheeld's): spawned
// with posix_spawn (stdout and stderr to a file), optionally with a skewed clock (Debian's
// libfaketime, preloaded as the `faketime` command does), signalled with kill -9, -STOP, -CONT,
// -TERM, and waited for with a generous watchdog. The destructor kills and reaps what is still
// running, so a failing test leaves no process behind.
//
// Why not `faketime -f '+30s' prog`: that command forks, runs the program as its own child
// and waits for it, so the pid a test would signal (kill -9, -STOP) would be the wrapper's,
// not the program's. Setting LD_PRELOAD and FAKETIME ourselves is exactly what it does for
// the child, with the program's own pid. Note that libfaketime fakes CLOCK_MONOTONIC too:
// with a relative offset, steady_clock reads about the faked wall clock (a constant shift,
// the same rate), so intervals measured on steady_clock stay true and only absolute
// readings of either clock are off. It also moves absolute timerfd times by the offset,
// which strands Asio's "already due" timers when the clock is ahead: see
// test/dq/support/timerfd_passthrough.cpp, preloaded first for that reason.
//

#ifndef TIMEWHEEL_TEST_SUPPORT_PROCESS_HPP
#define TIMEWHEEL_TEST_SUPPORT_PROCESS_HPP

#include <boost/test/unit_test.hpp>

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace timewheel::test {

/// The preload library of Debian's libfaketime (package `faketime`), or empty if absent.
/// $TIMEWHEEL_LIBFAKETIME overrides the search.
std::string libfaketime_path();

/// Boost.Test precondition: skips the test, saying why, without libfaketime.
struct faketime_available {
    boost::test_tools::assertion_result operator()(boost::unit_test::test_unit_id) const {
        boost::test_tools::assertion_result r(!libfaketime_path().empty());
        if (!r) {
            r.message() << "skipped: libfaketime not found (Debian: apt-get install faketime; "
                           "scripts/setup.sh installs it)";
        }
        return r;
    }
};

/// One child process.
class child_process {
public:
    struct options {
        std::vector<std::string> argv{};    ///< argv[0] is the program's path
        std::filesystem::path output{};     ///< stdout and stderr go here (appended)
        std::string faketime{};             ///< when set, e.g. "+30s": run with this clock skew
        std::vector<std::string> preload{}; ///< libraries preloaded before libfaketime
        std::vector<std::string> env{};     ///< extra "NAME=value" entries
    };

    explicit child_process(options opt);
    ~child_process();

    child_process(const child_process&) = delete;
    child_process& operator=(const child_process&) = delete;

    pid_t pid() const noexcept { return pid_; }

    /// kill -9, and waits for it.
    void kill9();

    /// kill -STOP: the process stops where it is (its sockets stay open).
    void stop() { signal(SIGSTOP); }

    /// kill -CONT.
    void cont() { signal(SIGCONT); }

    /// kill -TERM: asks the process to stop gracefully (see wait()).
    void terminate() { signal(SIGTERM); }

    /// Sends a signal (nothing once the process has been reaped).
    void signal(int sig) {
        if (pid_ > 0) {
            ::kill(pid_, sig);
        }
    }

    /// Whether the process still runs (reaps it when it has exited).
    bool running();

    /// Waits for the process to exit, at most `limit` (a watchdog, never a measure).
    /// Returns whether it exited.
    bool wait(std::chrono::steady_clock::duration limit = std::chrono::seconds(30));

    /// After wait(): the exit code, or -signal when a signal ended it.
    int exit_status() const noexcept { return exit_status_; }

    /// What the process wrote to stdout and stderr so far (for failure messages).
    std::string output() const;

private:
    void reap(bool block);

    options opt_;
    pid_t pid_ = -1;
    int exit_status_ = 0;
};

} // namespace timewheel::test

#endif // TIMEWHEEL_TEST_SUPPORT_PROCESS_HPP
