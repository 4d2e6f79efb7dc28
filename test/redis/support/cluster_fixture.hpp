//
// test/redis/support/cluster_fixture.hpp
//
// A real three-master Redis Cluster on 127.0.0.1 for the tests: three redis_server processes
// (redis_fixture.hpp: free ports, temporary directories, no persistence) started with
// `--cluster-enabled yes`, joined with `redis-cli --cluster create ... --cluster-replicas 0
// --cluster-yes`, ready once every node reports cluster_state:ok and `redis-cli --cluster
// check` finds the slots agreed; stopped at the end. Administration the tests need (reshard,
// CLUSTER SETSLOT, MIGRATE) goes through redis-cli, never through the client under test.
//
// Skip the suite, with a message, when redis-server or redis-cli is missing:
//
//     BOOST_AUTO_TEST_SUITE(s, *boost::unit_test::precondition(cluster_available{}))
//     BOOST_FIXTURE_TEST_CASE(routing, cluster_fixture) { ... cli(ports[0], {"GET", "k"}) ... }
//

#ifndef TIMEWHEEL_TEST_REDIS_SUPPORT_CLUSTER_FIXTURE_HPP
#define TIMEWHEEL_TEST_REDIS_SUPPORT_CLUSTER_FIXTURE_HPP

#include <test/redis/support/redis_fixture.hpp>

#include <boost/test/unit_test.hpp>

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <string>
#include <system_error>
#include <thread>
#include <utility>
#include <vector>

extern char** environ;

namespace timewheel::test {

/// redis-cli: next to the redis-server in use, or on the PATH.
inline std::string redis_cli_binary() {
    auto const server = redis_server_binary();
    if (!server.empty()) {
        auto const sibling = std::filesystem::path(server).parent_path() / "redis-cli";
        if (::access(sibling.c_str(), X_OK) == 0)
            return sibling.string();
    }
    return {};
}

/// Boost.Test precondition of the Cluster suites: skips them, saying why, without
/// redis-server and redis-cli.
struct cluster_available {
    boost::test_tools::assertion_result operator()(boost::unit_test::test_unit_id) const {
        boost::test_tools::assertion_result r(!redis_cli_binary().empty());
        if (!r)
            r.message() << "skipped: redis-server and redis-cli not found on the PATH (Debian: "
                           "apt-get install redis-server; CI installs it)";
        return r;
    }
};

class cluster_fixture {
public:
    static constexpr int masters = 3;

    /// The ports of the three masters, on 127.0.0.1.
    std::array<std::uint16_t, masters> ports{};

    cluster_fixture() {
        for (int i = 0; i < masters; ++i) {
            redis_server::options opt;
            opt.args = {"--cluster-enabled",     "yes",
                        "--cluster-port",        std::to_string(free_port()),
                        "--cluster-config-file", "nodes.conf"};
            servers_[i] = std::make_unique<redis_server>(std::move(opt));
            ports[i] = servers_[i]->port();
        }
        std::vector<std::string> create{"--cluster", "create"};
        for (auto p : ports)
            create.push_back("127.0.0.1:" + std::to_string(p));
        create.insert(create.end(), {"--cluster-replicas", "0", "--cluster-yes"});
        cli_args(create);
        wait_until_stable();
    }

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
        int status = 0;
        auto text = run_cli(args, status);
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
            std::string line;
            for (auto const& a : args)
                line += " " + a;
            throw std::runtime_error("redis-cli" + line + " failed:\n" + text);
        }
        return text;
    }

    /// Starts one more node and joins it to the cluster as a replica of the master on
    /// @p master; returns its port once the master counts it as an online replica.
    std::uint16_t add_replica(std::uint16_t master) {
        redis_server::options opt;
        opt.args = {"--cluster-enabled",     "yes",
                    "--cluster-port",        std::to_string(free_port()),
                    "--cluster-config-file", "nodes.conf"};
        replicas_.push_back(std::make_unique<redis_server>(std::move(opt)));
        auto const port = replicas_.back()->port();
        cli_args({"--cluster", "add-node", "127.0.0.1:" + std::to_string(port),
                  "127.0.0.1:" + std::to_string(master), "--cluster-slave", "--cluster-master-id",
                  node_id(master)});
        auto const deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
        while (cli(master, {"INFO", "replication"}).find("state=online") == std::string::npos) {
            if (std::chrono::steady_clock::now() > deadline)
                throw std::runtime_error("the replica on " + std::to_string(port) +
                                         " did not come online in 60 s");
            std::this_thread::sleep_for(std::chrono::milliseconds(100));
        }
        return port;
    }

    /// kill -9 the master on @p port (not ports[0]: its directory keeps redis-cli's output).
    void kill9(std::uint16_t port) {
        for (auto& s : servers_)
            if (s->port() == port)
                s->kill9();
    }

    /// The node id of the master on @p port.
    std::string node_id(std::uint16_t port) {
        auto id = cli(port, {"CLUSTER", "MYID"});
        while (!id.empty() && (id.back() == '\n' || id.back() == '\r'))
            id.pop_back();
        return id;
    }

    /// Every (master port, first slot, last slot) of node 0's CLUSTER NODES, in its order
    /// (migrating/importing markers left out).
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
                int status = 0;
                auto const text = run_cli(
                    {"--cluster", "check", "127.0.0.1:" + std::to_string(ports[0])}, status);
                ok = WIFEXITED(status) && WEXITSTATUS(status) == 0 &&
                     text.find("[OK] All nodes agree") != std::string::npos;
            }
            if (ok)
                return;
            if (std::chrono::steady_clock::now() > deadline)
                throw std::runtime_error("the test cluster did not reach cluster_state:ok in 60 s");
            std::this_thread::sleep_for(std::chrono::milliseconds(100));
        }
    }

private:
    // redis-cli with stdout and stderr to a file in node 0's directory; returns the output.
    std::string run_cli(std::vector<std::string> const& args, int& status) {
        auto const out = servers_[0]->dir() / ("cli-" + std::to_string(++cli_runs_) + ".out");
        auto const binary = redis_cli_binary();
        posix_spawn_file_actions_t actions;
        ::posix_spawn_file_actions_init(&actions);
        ::posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
        ::posix_spawn_file_actions_addopen(&actions, 1, out.c_str(), O_WRONLY | O_CREAT | O_TRUNC,
                                           0644);
        ::posix_spawn_file_actions_adddup2(&actions, 1, 2);
        std::vector<char*> argv{const_cast<char*>(binary.c_str())};
        for (auto const& a : args)
            argv.push_back(const_cast<char*>(a.c_str()));
        argv.push_back(nullptr);
        pid_t pid = 0;
        int const rc = ::posix_spawn(&pid, binary.c_str(), &actions, nullptr, argv.data(), environ);
        ::posix_spawn_file_actions_destroy(&actions);
        if (rc != 0)
            throw std::system_error(rc, std::generic_category(), "posix_spawn " + binary);
        while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
        }
        std::ifstream in(out);
        std::ostringstream text;
        text << in.rdbuf();
        return text.str();
    }

    std::array<std::unique_ptr<redis_server>, masters> servers_;
    std::vector<std::unique_ptr<redis_server>> replicas_; // add_replica's
    int cli_runs_ = 0;
};

} // namespace timewheel::test

#endif // TIMEWHEEL_TEST_REDIS_SUPPORT_CLUSTER_FIXTURE_HPP
