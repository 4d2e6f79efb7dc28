//
// test/redis/support/redis_fixture.hpp
//
// A real redis-server for the tests: started on 127.0.0.1 at a free port (or on a unix
// socket) in a temporary directory, without persistence, with DEBUG allowed; waited for
// until it answers PING; stopped (or killed with SIGKILL, stopped with SIGSTOP, restarted on
// the same port) on demand. Tests that need it are skipped, with a message, when there is
// no redis-server on the PATH.
//

#ifndef TIMEWHEEL_TEST_REDIS_SUPPORT_REDIS_FIXTURE_HPP
#define TIMEWHEEL_TEST_REDIS_SUPPORT_REDIS_FIXTURE_HPP

#include <timewheel/redis/config.hpp>

#include <test/support/temp_dir.hpp>

#include <boost/asio/io_context.hpp>
#include <boost/test/unit_test.hpp>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace timewheel::test {

/// The redis-server to run: $TIMEWHEEL_REDIS_SERVER, or redis-server on the PATH.
std::string redis_server_binary();

/// Boost.Test precondition: skips the test, saying why, without a redis-server.
struct redis_available {
    boost::test_tools::assertion_result operator()(boost::unit_test::test_unit_id) const {
        boost::test_tools::assertion_result r(!redis_server_binary().empty());
        if (!r) {
            r.message() << "skipped: redis-server not found on the PATH (Debian: apt-get "
                           "install redis-server; CI installs it)";
        }
        return r;
    }
};

/// A free TCP port on 127.0.0.1 (bound, read, released).
std::uint16_t free_port();

/// One redis-server process.
class redis_server {
public:
    struct options {
        bool unix_socket = false;      ///< listen on a unix socket only (port 0)
        std::vector<std::string> args; ///< extra arguments, e.g. {"--requirepass", "pw"}
    };

    redis_server()
        : redis_server(options{}) {}

    explicit redis_server(options opt);

    ~redis_server();

    redis_server(const redis_server&) = delete;
    redis_server& operator=(const redis_server&) = delete;

    std::uint16_t port() const noexcept { return port_; }
    std::string socket_path() const { return (dir_ / "redis.sock").string(); }
    const std::filesystem::path& dir() const noexcept { return dir_; }
    pid_t pid() const noexcept { return pid_; }

    /// A client config for this server.
    redis::config config() const;

    /// Starts the server (again, on the same port or socket) and waits until it answers.
    void start();

    /// Stops the server with SIGTERM and waits for it.
    void stop() { signal_and_wait(SIGTERM); }

    /// Kills the server with SIGKILL (kill -9) and waits for it.
    void kill9() { signal_and_wait(SIGKILL); }

    /// Freezes (SIGSTOP) and thaws (SIGCONT) the server: a server that stalls.
    void freeze() { ::kill(pid_, SIGSTOP); }
    void thaw() { ::kill(pid_, SIGCONT); }

    /// Sends one command with a blocking socket and returns the raw reply (for set-up).
    std::string command(const std::string& resp) const;

private:
    void signal_and_wait(int sig);
    int connect_raw() const;
    void wait_until_ready();

    options opt_;
    std::filesystem::path dir_;
    std::uint16_t port_ = 0;
    pid_t pid_ = -1;
};

/// Runs `io` until `done()` is true, or fails after `limit` (a generous watchdog, never a
/// timed assertion). Returns whether `done()` became true.
template <typename Pred>
bool run_until(boost::asio::io_context& io, Pred done,
               std::chrono::steady_clock::duration limit = std::chrono::seconds(30)) {
    const auto deadline = std::chrono::steady_clock::now() + limit;
    while (!done()) {
        if (std::chrono::steady_clock::now() > deadline) {
            return false;
        }
        if (io.stopped()) {
            io.restart();
        }
        io.run_one_for(std::chrono::milliseconds(20));
    }
    return true;
}

/// Runs `io` for about `d` (lets written requests reach the server, for instance).
void run_for(boost::asio::io_context& io, std::chrono::steady_clock::duration d);

/// A command in RESP, the wire form redis_server::command() sends ({"SET", "k", "v"}).
inline std::string resp_command(const std::vector<std::string>& words) {
    std::string s = "*" + std::to_string(words.size()) + "\r\n";
    for (const auto& w : words) {
        s += "$" + std::to_string(w.size()) + "\r\n" + w + "\r\n";
    }
    return s;
}

} // namespace timewheel::test

#endif // TIMEWHEEL_TEST_REDIS_SUPPORT_REDIS_FIXTURE_HPP
