//
// test/redis/support/redis_fixture.cpp
//
// redis_server, free_port, run_for (redis_fixture.hpp).
//
#include <test/redis/support/redis_fixture.hpp>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <stdexcept>
#include <thread>

namespace timewheel::test {

std::string redis_server_binary() {
    if (const char* env = std::getenv("TIMEWHEEL_REDIS_SERVER")) {
        return env;
    }
    const char* path = std::getenv("PATH");
    std::string p = path ? path : "/usr/bin:/bin";
    std::size_t start = 0;
    while (start <= p.size()) {
        auto end = p.find(':', start);
        if (end == std::string::npos) {
            end = p.size();
        }
        std::filesystem::path candidate = p.substr(start, end - start);
        candidate /= "redis-server";
        if (::access(candidate.c_str(), X_OK) == 0) {
            return candidate.string();
        }
        start = end + 1;
    }
    return {};
}

std::uint16_t free_port() {
    int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = 0;
    if (fd < 0 || ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
        throw std::runtime_error("free_port: cannot bind 127.0.0.1:0");
    }
    socklen_t len = sizeof a;
    ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
    ::close(fd);
    return ntohs(a.sin_port);
}

redis_server::redis_server(options opt)
    : opt_(std::move(opt)) {
    dir_ = make_temp_dir("timewheel-redis");
    if (!opt_.unix_socket) {
        port_ = free_port();
    }
    start();
}

redis_server::~redis_server() {
    stop();
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
}

redis::config redis_server::config() const {
    redis::config c;
    if (opt_.unix_socket) {
        c.unix_socket = socket_path();
    } else {
        c.host = "127.0.0.1";
        c.port = port_;
    }
    return c;
}

void redis_server::start() {
    if (pid_ > 0) {
        return;
    }
    const std::string binary = redis_server_binary();
    std::vector<std::string> args = {binary,
                                     "--bind",
                                     "127.0.0.1",
                                     "--port",
                                     std::to_string(port_),
                                     "--save",
                                     "",
                                     "--appendonly",
                                     "no",
                                     "--daemonize",
                                     "no",
                                     "--enable-debug-command",
                                     "yes",
                                     "--dir",
                                     dir_.string(),
                                     "--logfile",
                                     (dir_ / "redis.log").string()};
    if (opt_.unix_socket) {
        args.insert(args.end(), {"--unixsocket", socket_path(), "--unixsocketperm", "700"});
    }
    args.insert(args.end(), opt_.args.begin(), opt_.args.end());
    std::vector<char*> argv;
    for (auto& a : args) {
        argv.push_back(a.data());
    }
    argv.push_back(nullptr);
    pid_ = ::fork();
    if (pid_ == 0) {
        ::execv(binary.c_str(), argv.data());
        ::_exit(127);
    }
    if (pid_ < 0) {
        throw std::runtime_error("redis_server: fork failed");
    }
    wait_until_ready();
}

std::string redis_server::command(const std::string& resp) const {
    int fd = connect_raw();
    if (fd < 0) {
        return {};
    }
    ::send(fd, resp.data(), resp.size(), MSG_NOSIGNAL);
    char buf[4096];
    auto n = ::recv(fd, buf, sizeof buf, 0);
    ::close(fd);
    return n > 0 ? std::string(buf, static_cast<std::size_t>(n)) : std::string();
}

void redis_server::signal_and_wait(int sig) {
    if (pid_ <= 0) {
        return;
    }
    if (sig != SIGKILL) {
        ::kill(pid_, SIGCONT);
    }
    ::kill(pid_, sig);
    int status = 0;
    ::waitpid(pid_, &status, 0);
    pid_ = -1;
    if (opt_.unix_socket) {
        std::error_code ec;
        std::filesystem::remove(socket_path(), ec);
    }
}

int redis_server::connect_raw() const {
    int fd = -1;
    if (opt_.unix_socket) {
        fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
        sockaddr_un a{};
        a.sun_family = AF_UNIX;
        const auto path = socket_path();
        path.copy(a.sun_path, sizeof a.sun_path - 1);
        if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
            ::close(fd);
            return -1;
        }
    } else {
        fd = ::socket(AF_INET, SOCK_STREAM, 0);
        sockaddr_in a{};
        a.sin_family = AF_INET;
        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        a.sin_port = htons(port_);
        if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
            ::close(fd);
            return -1;
        }
    }
    timeval tv{2, 0};
    ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    return fd;
}

void redis_server::wait_until_ready() {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (std::chrono::steady_clock::now() < deadline) {
        int status = 0;
        if (::waitpid(pid_, &status, WNOHANG) == pid_) {
            pid_ = -1;
            throw std::runtime_error("redis_server: redis-server exited at start; see " +
                                     (dir_ / "redis.log").string());
        }
        const std::string r = command("*1\r\n$4\r\nPING\r\n");
        if (r.starts_with("+PONG") || r.starts_with("-NOAUTH")) {
            return;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    throw std::runtime_error("redis_server: redis-server did not answer within 20 s");
}

void run_for(boost::asio::io_context& io, std::chrono::steady_clock::duration d) {
    const auto deadline = std::chrono::steady_clock::now() + d;
    while (std::chrono::steady_clock::now() < deadline) {
        if (io.stopped()) {
            io.restart();
        }
        io.run_one_until(deadline);
    }
}

} // namespace timewheel::test
