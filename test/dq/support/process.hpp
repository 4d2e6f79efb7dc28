//
// test/dq/support/process.hpp
//
// A child process for the fault tests: spawned with posix_spawn (stdout and stderr to a
// file), optionally with a skewed clock (Debian's libfaketime, preloaded as the `faketime`
// command does), signalled with kill -9, -STOP, -CONT, -TERM, and waited for with a
// generous watchdog. The destructor kills and reaps what is still running, so a failing
// test leaves no process behind.
//
// Why not `faketime -f '+30s' prog`: that command forks, runs the program as its own child
// and waits for it, so the pid a test would signal (kill -9, -STOP) would be the wrapper's,
// not the program's. Setting LD_PRELOAD and FAKETIME ourselves is exactly what it does for
// the child, with the program's own pid. Note that libfaketime fakes CLOCK_MONOTONIC too:
// with a relative offset, steady_clock reads about the faked wall clock (a constant shift,
// the same rate), so intervals measured on steady_clock stay true and only absolute
// readings of either clock are off. It also moves absolute timerfd times by the offset,
// which strands Asio's "already due" timers when the clock is ahead: see
// support/timerfd_passthrough.cpp, preloaded first for that reason.
//

#ifndef TIMEWHEEL_TEST_DQ_SUPPORT_PROCESS_HPP
#define TIMEWHEEL_TEST_DQ_SUPPORT_PROCESS_HPP

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

extern char** environ;

namespace timewheel::test_support {

/// The preload library of Debian's libfaketime (package `faketime`), or empty if absent.
/// $TIMEWHEEL_LIBFAKETIME overrides the search.
inline std::string libfaketime_path() {
    if (const char* env = std::getenv("TIMEWHEEL_LIBFAKETIME")) {
        return env;
    }
    for (const char* p :
         {"/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1",
          "/usr/lib/aarch64-linux-gnu/faketime/libfaketime.so.1",
          "/usr/lib/faketime/libfaketime.so.1", "/usr/local/lib/faketime/libfaketime.so.1"}) {
        if (::access(p, R_OK) == 0) {
            return p;
        }
    }
    return {};
}

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

    explicit child_process(options opt)
        : opt_(std::move(opt)) {
        if (opt_.argv.empty()) {
            throw std::invalid_argument("child_process: argv is empty");
        }
        std::vector<std::string> env;
        for (char** e = environ; *e; ++e) {
            env.emplace_back(*e);
        }
        if (!opt_.faketime.empty()) {
            const std::string lib = libfaketime_path();
            if (lib.empty()) {
                throw std::runtime_error("child_process: libfaketime not found");
            }
            std::erase_if(env, [](const std::string& e) {
                return e.starts_with("LD_PRELOAD=") || e.starts_with("FAKETIME=") ||
                       e.starts_with("ASAN_OPTIONS=");
            });
            std::string preload;
            for (const auto& p : opt_.preload) {
                preload += p + ' ';
            }
            env.push_back("LD_PRELOAD=" + preload + lib);
            env.push_back("FAKETIME=" + opt_.faketime);
            // ASan insists on being first in the library list; a preloaded libfaketime is
            // not ASan's business (it only wraps the clock calls).
            std::string asan = "verify_asan_link_order=0";
            if (const char* a = std::getenv("ASAN_OPTIONS"); a && *a) {
                asan = std::string(a) + ":" + asan;
            }
            env.push_back("ASAN_OPTIONS=" + asan);
        }
        env.insert(env.end(), opt_.env.begin(), opt_.env.end());

        std::vector<char*> argv;
        for (auto& a : opt_.argv) {
            argv.push_back(a.data());
        }
        argv.push_back(nullptr);
        std::vector<char*> envp;
        for (auto& e : env) {
            envp.push_back(e.data());
        }
        envp.push_back(nullptr);

        posix_spawn_file_actions_t actions;
        posix_spawn_file_actions_init(&actions);
        if (!opt_.output.empty()) {
            posix_spawn_file_actions_addopen(&actions, 1, opt_.output.c_str(),
                                             O_WRONLY | O_CREAT | O_APPEND, 0644);
            posix_spawn_file_actions_adddup2(&actions, 1, 2);
        }
        posix_spawnattr_t attr;
        posix_spawnattr_init(&attr);
        // A process group of its own: a ^C of the test run does not reach it twice, and
        // nothing it starts outlives a group signal.
        posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP);
        posix_spawnattr_setpgroup(&attr, 0);
        const int rc = ::posix_spawn(&pid_, argv[0], &actions, &attr, argv.data(), envp.data());
        posix_spawnattr_destroy(&attr);
        posix_spawn_file_actions_destroy(&actions);
        if (rc != 0) {
            pid_ = -1;
            throw std::runtime_error("child_process: posix_spawn " + opt_.argv[0] + ": " +
                                     std::strerror(rc));
        }
    }

    ~child_process() {
        if (pid_ > 0) {
            ::kill(pid_, SIGKILL);
            reap(true);
        }
    }

    child_process(const child_process&) = delete;
    child_process& operator=(const child_process&) = delete;

    pid_t pid() const noexcept { return pid_; }

    /// kill -9, and waits for it.
    void kill9() {
        if (pid_ > 0) {
            ::kill(pid_, SIGKILL);
            reap(true);
        }
    }

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
    bool running() {
        if (pid_ > 0) {
            reap(false);
        }
        return pid_ > 0;
    }

    /// Waits for the process to exit, at most `limit` (a watchdog, never a measure).
    /// Returns whether it exited.
    bool wait(std::chrono::steady_clock::duration limit = std::chrono::seconds(30)) {
        const auto deadline = std::chrono::steady_clock::now() + limit;
        while (running()) {
            if (std::chrono::steady_clock::now() > deadline) {
                return false;
            }
            std::this_thread::sleep_for(std::chrono::milliseconds(10));
        }
        return true;
    }

    /// After wait(): the exit code, or -signal when a signal ended it.
    int exit_status() const noexcept { return exit_status_; }

    /// What the process wrote to stdout and stderr so far (for failure messages).
    std::string output() const {
        std::ifstream in(opt_.output);
        std::stringstream s;
        s << in.rdbuf();
        return s.str();
    }

private:
    void reap(bool block) {
        int status = 0;
        const pid_t r = ::waitpid(pid_, &status, block ? 0 : WNOHANG);
        if (r == pid_) {
            exit_status_ = WIFEXITED(status) ? WEXITSTATUS(status) : -WTERMSIG(status);
            pid_ = -1;
        }
    }

    options opt_;
    pid_t pid_ = -1;
    int exit_status_ = 0;
};

} // namespace timewheel::test_support

#endif // TIMEWHEEL_TEST_DQ_SUPPORT_PROCESS_HPP
