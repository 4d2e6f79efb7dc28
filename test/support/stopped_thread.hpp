//
// test/support/stopped_thread.hpp
//
// One thread of a process, stopped while the others run on: what a thread stuck in the
// kernel looks like from outside (a write or an fsync to a disk that does not answer). The
// fault tests stop the SQLite store's writer thread this way: that store holds its file's
// lock alone, so no other process can stall it by holding the lock.
//
//     const pid_t tid = ts::thread_named(pid, "tw-dq-sqlite");
//     {
//         ts::stopped_thread stuck(pid, tid); // waits until it is stopped
//         ... requests that need that thread ...
//     } // runs again
//
// It uses ptrace (seize, interrupt, detach), from a process other than the thread's (the
// thread's own process may fork one: stopped_thread_by_child). If the tracer dies, the
// kernel detaches and the thread runs again. Only raw system calls after the start, so that
// a child forked from a multi-threaded test may run it.
//
#ifndef TIMEWHEEL_TEST_SUPPORT_STOPPED_THREAD_HPP
#define TIMEWHEEL_TEST_SUPPORT_STOPPED_THREAD_HPP

#include <fcntl.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>
#include <string_view>

namespace timewheel::test {

/// The id of the thread named `name` (its comm) in process `pid`; -1 when there is none.
inline pid_t thread_named(pid_t pid, std::string_view name) {
    for (const auto& e :
         std::filesystem::directory_iterator("/proc/" + std::to_string(pid) + "/task")) {
        std::ifstream in(e.path() / "comm");
        std::string comm;
        std::getline(in, comm);
        if (comm == name) {
            return static_cast<pid_t>(std::stol(e.path().filename().string()));
        }
    }
    return -1;
}

namespace detail {

// Stops thread `tid` of `pid` while it waits in a futex (a lock or a condition variable: it
// holds no lock of its queue then, so that others still reach it), trying again while it
// is elsewhere. 0 on success, else an errno. Raw system calls only.
inline int stop_waiting_thread(pid_t pid, pid_t tid) {
    char path[64];
    std::snprintf(path, sizeof path, "/proc/%d/task/%d/syscall", static_cast<int>(pid),
                  static_cast<int>(tid));
    for (int i = 0; i < 500; ++i) {
        if (::ptrace(PTRACE_SEIZE, tid, nullptr, nullptr) != 0) {
            return errno;
        }
        int status = 0;
        if (::ptrace(PTRACE_INTERRUPT, tid, nullptr, nullptr) != 0 ||
            ::waitpid(tid, &status, __WALL) != tid) {
            const int err = errno;
            ::ptrace(PTRACE_DETACH, tid, nullptr, nullptr);
            return err;
        }
        char buf[32] = {};
        const int fd = ::open(path, O_RDONLY);
        if (fd >= 0) {
            const auto n = ::read(fd, buf, sizeof buf - 1);
            ::close(fd);
            if (n > 0 && std::strtol(buf, nullptr, 10) == SYS_futex) {
                return 0;
            }
        }
        ::ptrace(PTRACE_DETACH, tid, nullptr, nullptr);
        ::usleep(10000);
    }
    return ETIMEDOUT;
}

} // namespace detail

/// Thread `tid` of another process `pid`, stopped (while it waits for work) for the life of
/// this object.
class stopped_thread {
public:
    /** @throws std::runtime_error when it cannot be stopped (no ptrace here). */
    stopped_thread(pid_t pid, pid_t tid)
        : tid_(tid) {
        if (const int err = detail::stop_waiting_thread(pid, tid)) {
            throw std::runtime_error("cannot stop thread " + std::to_string(tid) + ": " +
                                     std::strerror(err));
        }
    }
    ~stopped_thread() { ::ptrace(PTRACE_DETACH, tid_, nullptr, nullptr); }
    stopped_thread(const stopped_thread&) = delete;
    stopped_thread& operator=(const stopped_thread&) = delete;

private:
    pid_t tid_;
};

/// Thread `tid` of this very process, stopped for the life of this object by a child
/// process forked to trace it (a process cannot trace its own threads).
class stopped_thread_by_child {
public:
    /** @throws std::runtime_error when it cannot be stopped. */
    explicit stopped_thread_by_child(pid_t tid) {
        int up[2];   // child -> parent: the result of the stop
        int down[2]; // parent -> child: resume (or the parent died: end of file)
        if (::pipe(up) != 0 || ::pipe(down) != 0) {
            throw std::runtime_error("pipe failed");
        }
        const pid_t parent = ::getpid();
        child_ = ::fork();
        if (child_ < 0) {
            throw std::runtime_error("fork failed");
        }
        if (child_ == 0) {
            ::close(up[0]);
            ::close(down[1]);
            const int err = detail::stop_waiting_thread(parent, tid);
            (void)!::write(up[1], &err, sizeof err);
            char c;
            (void)!::read(down[0], &c, 1);
            // Exiting detaches the thread.
            ::_exit(0);
        }
        ::close(up[1]);
        ::close(down[0]);
        resume_fd_ = down[1];
        int err = EPIPE;
        const auto n = ::read(up[0], &err, sizeof err);
        ::close(up[0]);
        if (n != sizeof err || err != 0) {
            resume();
            throw std::runtime_error(std::string("cannot stop the thread: ") + std::strerror(err));
        }
    }
    ~stopped_thread_by_child() { resume(); }
    stopped_thread_by_child(const stopped_thread_by_child&) = delete;
    stopped_thread_by_child& operator=(const stopped_thread_by_child&) = delete;

    /// Lets the thread run again (the child ends), waited for.
    void resume() {
        if (resume_fd_ >= 0) {
            ::close(resume_fd_);
            resume_fd_ = -1;
        }
        if (child_ > 0) {
            int status = 0;
            ::waitpid(child_, &status, 0);
            child_ = -1;
        }
    }

private:
    pid_t child_ = -1;
    int resume_fd_ = -1;
};

} // namespace timewheel::test

#endif // TIMEWHEEL_TEST_SUPPORT_STOPPED_THREAD_HPP
