//
// test/support/process.cpp
//
// child_process and libfaketime_path (process.hpp).
//
#include <test/support/process.hpp>

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>

extern char** environ;

namespace timewheel::test {

std::string libfaketime_path() {
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

child_process::child_process(options opt)
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

child_process::~child_process() {
    if (pid_ > 0) {
        ::kill(pid_, SIGKILL);
        reap(true);
    }
}

void child_process::kill9() {
    if (pid_ > 0) {
        ::kill(pid_, SIGKILL);
        reap(true);
    }
}

bool child_process::running() {
    if (pid_ > 0) {
        reap(false);
    }
    return pid_ > 0;
}

bool child_process::wait(std::chrono::steady_clock::duration limit) {
    const auto deadline = std::chrono::steady_clock::now() + limit;
    while (running()) {
        if (std::chrono::steady_clock::now() > deadline) {
            return false;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return true;
}

std::string child_process::output() const {
    std::ifstream in(opt_.output);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
}

void child_process::reap(bool block) {
    int status = 0;
    const pid_t r = ::waitpid(pid_, &status, block ? 0 : WNOHANG);
    if (r == pid_) {
        exit_status_ = WIFEXITED(status) ? WEXITSTATUS(status) : -WTERMSIG(status);
        pid_ = -1;
    }
}

} // namespace timewheel::test
