//
// test/redis/support/cluster_fixture.hpp
//
// A real three-master Redis Cluster on 127.0.0.1 for the tests: three `redis-server
// --cluster-enabled yes` processes on free ports in a temporary directory, joined with
// `redis-cli --cluster create ... --cluster-replicas 0 --cluster-yes`, ready once every node
// reports cluster_state:ok and `redis-cli --cluster check` finds the slots agreed. The servers
// are killed and the directory removed at the end. Administration the tests need (reshard,
// CLUSTER SETSLOT, MIGRATE) goes through redis-cli, never through the client under test.
//
// Use as a Boost.Test fixture, with the suite skipped when redis-server is not installed:
//
//     BOOST_AUTO_TEST_SUITE(s, *boost::unit_test::precondition(cluster_fixture::servers_installed))
//     BOOST_FIXTURE_TEST_CASE(routing, cluster_fixture) { ... ports[0] ... cli(ports[0], {...}); }
//

#ifndef TIMEWHEEL_TEST_REDIS_SUPPORT_CLUSTER_FIXTURE_HPP
#define TIMEWHEEL_TEST_REDIS_SUPPORT_CLUSTER_FIXTURE_HPP

#include <boost/test/unit_test.hpp>

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <sstream>
#include <stdexcept>
#include <string>
#include <system_error>
#include <thread>
#include <utility>
#include <vector>

extern char** environ;

namespace timewheel::redis::test {

class cluster_fixture {
public:
    static constexpr int masters = 3;

    /// The ports of the three masters, on 127.0.0.1.
    std::array<std::uint16_t, masters> ports{};

    /// Whether redis-server and redis-cli are on PATH; the precondition of every Cluster suite.
    static boost::test_tools::assertion_result servers_installed(boost::unit_test::test_unit_id) {
        boost::test_tools::assertion_result result(!find_program("redis-server").empty() &&
                                                   !find_program("redis-cli").empty());
        if (!result)
            result.message() << "redis-server or redis-cli is not installed (Debian package "
                                "redis-server): skipping the Redis Cluster tests";
        return result;
    }

    cluster_fixture() {
        make_directory();
        try {
            std::array<std::uint16_t, masters> bus{};
            for (int i = 0; i < masters; ++i) {
                ports[i] = free_port();
                bus[i] = free_port();
                start_server(i, bus[i]);
            }
            for (int i = 0; i < masters; ++i)
                wait_listening(i);
            std::vector<std::string> create{"--cluster", "create"};
            for (auto p : ports)
                create.push_back("127.0.0.1:" + std::to_string(p));
            for (char const* a : {"--cluster-replicas", "0", "--cluster-yes"})
                create.emplace_back(a);
            cli_args(create);
            wait_until_stable();
        } catch (...) {
            stop();
            throw;
        }
    }

    ~cluster_fixture() { stop(); }

    cluster_fixture(cluster_fixture const&) = delete;
    cluster_fixture& operator=(cluster_fixture const&) = delete;

    /// Runs `redis-cli -h 127.0.0.1 -p <port> <args...>` and returns what it printed; throws
    /// when it fails.
    std::string cli(std::uint16_t port, std::vector<std::string> args) {
        args.insert(args.begin(), {"-h", "127.0.0.1", "-p", std::to_string(port)});
        return cli_args(args);
    }

    /// Runs `redis-cli <args...>` (no address added); throws when it exits with an error.
    std::string cli_args(std::vector<std::string> const& args) {
        std::vector<std::string> argv{"redis-cli"};
        argv.insert(argv.end(), args.begin(), args.end());
        auto const out = dir_ / ("cli-" + std::to_string(++cli_runs_) + ".out");
        int const status = wait_for(spawn(argv, out));
        std::string text = read_file(out);
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
            throw std::runtime_error("redis-cli " + join(args) + " failed:\n" + text);
        return text;
    }

    /// The node id of the master on @p port.
    std::string node_id(std::uint16_t port) { return trim(cli(port, {"CLUSTER", "MYID"})); }

    /// The ports of the masters that serve slots, and their slot ranges, from node 0's
    /// CLUSTER NODES (migrating/importing markers left out).
    std::vector<std::pair<std::uint16_t, std::pair<int, int>>> slot_ranges() {
        std::vector<std::pair<std::uint16_t, std::pair<int, int>>> out;
        std::istringstream lines(cli(ports[0], {"CLUSTER", "NODES"}));
        for (std::string line; std::getline(lines, line);) {
            std::istringstream fields(line);
            std::vector<std::string> f;
            for (std::string w; fields >> w;)
                f.push_back(w);
            if (f.size() < 9)
                continue;
            auto const colon = f[1].find(':');
            auto const at = f[1].find('@');
            auto const port =
                static_cast<std::uint16_t>(std::stoi(f[1].substr(colon + 1, at - colon - 1)));
            for (std::size_t i = 8; i < f.size(); ++i) {
                if (f[i].starts_with("["))
                    continue;
                auto const dash = f[i].find('-');
                int const lo = std::stoi(f[i].substr(0, dash));
                int const hi = dash == std::string::npos ? lo : std::stoi(f[i].substr(dash + 1));
                out.push_back({port, {lo, hi}});
            }
        }
        return out;
    }

    /// The port of the master that serves @p slot, from node 0's CLUSTER NODES.
    std::uint16_t owner_port(std::uint16_t slot) {
        for (auto const& [port, range] : slot_ranges())
            if (slot >= range.first && slot <= range.second)
                return port;
        throw std::runtime_error("no master serves slot " + std::to_string(slot));
    }

    /// Waits until every node reports cluster_state:ok and all agree on the slots (after a
    /// create or a reshard).
    void wait_until_stable() {
        auto const deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
        for (;;) {
            bool ok = true;
            for (auto p : ports)
                ok =
                    ok && cli(p, {"CLUSTER", "INFO"}).find("cluster_state:ok") != std::string::npos;
            if (ok) {
                std::vector<std::string> argv{"redis-cli", "--cluster", "check",
                                              "127.0.0.1:" + std::to_string(ports[0])};
                auto const out = dir_ / "check.out";
                int const status = wait_for(spawn(argv, out));
                ok = WIFEXITED(status) && WEXITSTATUS(status) == 0 &&
                     read_file(out).find("[OK] All nodes agree") != std::string::npos;
            }
            if (ok)
                return;
            if (std::chrono::steady_clock::now() > deadline)
                throw std::runtime_error("the test cluster did not reach cluster_state:ok in 60 s");
            std::this_thread::sleep_for(std::chrono::milliseconds(100));
        }
    }

    /// The temporary directory of the servers (their logs are there).
    std::filesystem::path const& directory() const { return dir_; }

    static std::string find_program(std::string const& name) {
        char const* path = std::getenv("PATH");
        std::istringstream dirs(path ? path : "/usr/bin:/bin");
        for (std::string d; std::getline(dirs, d, ':');) {
            auto const candidate = std::filesystem::path(d.empty() ? "." : d) / name;
            if (::access(candidate.c_str(), X_OK) == 0)
                return candidate.string();
        }
        return {};
    }

    /// Whether something accepts connections on 127.0.0.1:@p port.
    static bool can_connect(std::uint16_t port) {
        int const fd = ::socket(AF_INET, SOCK_STREAM, 0);
        if (fd < 0)
            return false;
        sockaddr_in addr{};
        addr.sin_family = AF_INET;
        addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        addr.sin_port = htons(port);
        bool const ok = ::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
        ::close(fd);
        return ok;
    }

private:
    std::filesystem::path dir_;
    std::array<pid_t, masters> pids_{};
    int cli_runs_ = 0;

    void make_directory() {
        std::string tmpl = (std::filesystem::temp_directory_path() / "timewheel-cluster-XXXXXX");
        if (::mkdtemp(tmpl.data()) == nullptr)
            throw std::system_error(errno, std::generic_category(), "mkdtemp");
        dir_ = tmpl;
    }

    void start_server(int i, std::uint16_t bus_port) {
        auto const port = std::to_string(ports[i]);
        std::vector<std::string> argv{"redis-server",
                                      "--port",
                                      port,
                                      "--bind",
                                      "127.0.0.1",
                                      "--cluster-enabled",
                                      "yes",
                                      "--cluster-port",
                                      std::to_string(bus_port),
                                      "--cluster-config-file",
                                      (dir_ / ("nodes-" + port + ".conf")).string(),
                                      "--dir",
                                      dir_.string(),
                                      "--save",
                                      "",
                                      "--appendonly",
                                      "no",
                                      "--daemonize",
                                      "no"};
        pids_[i] = spawn(argv, dir_ / ("redis-" + port + ".log"));
    }

    void wait_listening(int i) {
        auto const deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
        while (!can_connect(ports[i])) {
            int status = 0;
            if (::waitpid(pids_[i], &status, WNOHANG) == pids_[i]) {
                pids_[i] = 0;
                throw std::runtime_error(
                    "redis-server on port " + std::to_string(ports[i]) + " exited:\n" +
                    read_file(dir_ / ("redis-" + std::to_string(ports[i]) + ".log")));
            }
            if (std::chrono::steady_clock::now() > deadline)
                throw std::runtime_error("redis-server did not listen within 30 s");
            std::this_thread::sleep_for(std::chrono::milliseconds(20));
        }
    }

    void stop() noexcept {
        for (auto& pid : pids_) {
            if (pid > 0) {
                ::kill(pid, SIGKILL);
                int status = 0;
                ::waitpid(pid, &status, 0);
                pid = 0;
            }
        }
        if (!dir_.empty() && std::getenv("TIMEWHEEL_KEEP_CLUSTER_DIR") == nullptr) {
            std::error_code ec;
            std::filesystem::remove_all(dir_, ec);
        }
    }

    static pid_t spawn(std::vector<std::string> const& args, std::filesystem::path const& output) {
        posix_spawn_file_actions_t actions;
        ::posix_spawn_file_actions_init(&actions);
        ::posix_spawn_file_actions_addopen(&actions, 1, output.c_str(),
                                           O_WRONLY | O_CREAT | O_TRUNC, 0644);
        ::posix_spawn_file_actions_adddup2(&actions, 1, 2);
        ::posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
        std::vector<char*> argv;
        for (auto const& a : args)
            argv.push_back(const_cast<char*>(a.c_str()));
        argv.push_back(nullptr);
        pid_t pid = 0;
        int const rc = ::posix_spawnp(&pid, argv[0], &actions, nullptr, argv.data(), environ);
        ::posix_spawn_file_actions_destroy(&actions);
        if (rc != 0)
            throw std::system_error(rc, std::generic_category(), "posix_spawnp " + args[0]);
        return pid;
    }

    static int wait_for(pid_t pid) {
        int status = 0;
        while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
        }
        return status;
    }

    // A port nobody listens on now; the kernel's ephemeral range keeps clashes between
    // concurrent tests unlikely, and a clash fails loudly in wait_listening().
    static std::uint16_t free_port() {
        int const fd = ::socket(AF_INET, SOCK_STREAM, 0);
        if (fd < 0)
            throw std::system_error(errno, std::generic_category(), "socket");
        sockaddr_in addr{};
        addr.sin_family = AF_INET;
        addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        socklen_t len = sizeof addr;
        if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
            ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
            int const e = errno;
            ::close(fd);
            throw std::system_error(e, std::generic_category(), "bind 127.0.0.1:0");
        }
        ::close(fd);
        return ntohs(addr.sin_port);
    }

    static std::string read_file(std::filesystem::path const& p) {
        std::ifstream in(p);
        std::ostringstream s;
        s << in.rdbuf();
        return s.str();
    }

    static std::string trim(std::string s) {
        while (!s.empty() && (s.back() == '\n' || s.back() == '\r' || s.back() == ' '))
            s.pop_back();
        return s;
    }

    static std::string join(std::vector<std::string> const& v) {
        std::string s;
        for (auto const& a : v)
            s += (s.empty() ? "" : " ") + a;
        return s;
    }
};

} // namespace timewheel::redis::test

#endif // TIMEWHEEL_TEST_REDIS_SUPPORT_CLUSTER_FIXTURE_HPP
