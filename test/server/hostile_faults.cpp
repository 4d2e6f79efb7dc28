//
// test/server/hostile_faults.cpp
//
// Faults of the machine under timewheeld, black-box over HTTP on 127.0.0.1 (the binary as a
// child process; its store a real SQLite file or a real redis-server):
//
//   - the store stalls: the SQLite store's writer thread stops (as in a write or fsync that
//     does not return: the test stops that very thread with ptrace, since the store holds
//     its file's lock alone and no other process can take it), or redis-server is stopped
//     with SIGSTOP. Requests answer 503 store_unavailable with Retry-After once
//     --store-timeout-ms has passed (never a hang), /readyz answers 503, and once the store
//     runs again everything works and every task accepted before is still there;
//   - the SQLite file's filesystem fills up (a small tmpfs in a mount namespace of the
//     process's own): submits answer 507 store_full, reads and the readiness probe still
//     answer, the process lives on, and once room is freed submits succeed again and every
//     accepted task is delivered;
//   - the name of the Redis host changes (an /etc/hosts of the test's, bind-mounted in a
//     mount namespace of the process's own): the service resolves it again on every
//     reconnection, answers 503 in time while it does not resolve, and comes back by itself.
//
#define BOOST_TEST_MODULE server_hostile_faults
#include <boost/test/unit_test.hpp>

#include <test/server/support/api_service.hpp>
#include <test/server/support/service_node.hpp>
#include <test/server/support/sink.hpp>
#include <test/support/stopped_thread.hpp>

#include <pthread.h>
#include <sys/socket.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <future>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

namespace ts = timewheel::test;
namespace cs = timewheel::test;
using namespace std::chrono_literals;

namespace {

constexpr auto store_timeout = 500ms;
// A generous bound on an answer the store timeout decides: far beyond it, far below a hang.
constexpr auto answer_bound = 10 * store_timeout;

struct timed_reply {
    ts::api_reply reply;
    std::chrono::steady_clock::duration took;
};

// One request on a connection of its own, its answer awaited for `answer_bound` at most: a
// request that hangs fails the test instead of holding it (the socket is shut down, which
// ends the blocking read; SO_RCVTIMEO would not: Asio polls again after EAGAIN).
timed_reply timed_request(std::uint16_t port, ts::api_http::verb method, std::string target,
                          std::string body = {}) {
    ts::api_connection c(port);
    const auto start = std::chrono::steady_clock::now();
    c.send({method, std::move(target), std::move(body), {}});
    auto answer = std::async(std::launch::async, [&c] {
        // Signals go to the waiting thread: a blocking read they interrupt fails (EINTR).
        sigset_t all;
        sigfillset(&all);
        pthread_sigmask(SIG_BLOCK, &all, nullptr);
        return c.receive();
    });
    if (answer.wait_for(answer_bound) != std::future_status::ready) {
        ::shutdown(c.socket().native_handle(), SHUT_RDWR);
        answer.wait();
        BOOST_FAIL("no answer within " << answer_bound.count() << " ms: the request hangs");
    }
    auto r = answer.get();
    return {std::move(r), std::chrono::steady_clock::now() - start};
}

std::string task(const std::string& id, int delay_ms = 3600000) {
    return ts::task_json(id, "http://127.0.0.1:9/never", delay_ms);
}

// 503 store_unavailable with a Retry-After in whole seconds, after the store was given its
// full timeout (never early) and well before a hang.
void check_unavailable(const timed_reply& r, const std::string& what) {
    BOOST_TEST_CONTEXT(what) {
        BOOST_TEST_REQUIRE(r.reply.status == 503u, r.reply);
        BOOST_TEST(r.reply.error_code() == "store_unavailable");
        const auto retry_after = std::string(r.reply.headers["Retry-After"]);
        BOOST_TEST(!retry_after.empty());
        BOOST_TEST(retry_after.find_first_not_of("0123456789") == std::string::npos, retry_after);
        BOOST_TEST((r.took >= store_timeout),
                   std::chrono::duration_cast<std::chrono::milliseconds>(r.took).count());
        BOOST_TEST((r.took < answer_bound),
                   std::chrono::duration_cast<std::chrono::milliseconds>(r.took).count());
    }
}

// What the service still holds: every task `ids` answers 200.
void check_all_readable(std::uint16_t port, const std::set<std::string>& ids) {
    for (const auto& id : ids) {
        const auto r = timed_request(port, ts::api_http::verb::get, "/v1/tasks/" + id);
        BOOST_TEST(r.reply.status == 200u, id << ": " << r.reply);
    }
}

} // namespace

BOOST_AUTO_TEST_CASE(a_stalled_sqlite_store_answers_503_in_time_and_is_not_ready) {
    const ts::temp_dir dir("hostile-faults");
    ts::service_node node(
        {.store = ts::sqlite_store_url(dir),
         .args = {"--no-worker", "--store-timeout-ms", std::to_string(store_timeout.count())}});
    std::set<std::string> accepted;
    for (int i = 0; i < 5; ++i) {
        const auto id = "before-" + std::to_string(i);
        const auto r = timed_request(node.port(), ts::api_http::verb::post, "/v1/tasks", task(id));
        BOOST_TEST_REQUIRE(r.reply.status == 201u, r.reply);
        accepted.insert(id);
    }
    BOOST_TEST_REQUIRE(
        timed_request(node.port(), ts::api_http::verb::get, "/readyz").reply.status == 200u);
    {
        const pid_t pid = node.process().pid();
        const pid_t writer_tid = ts::thread_named(pid, "tw-dq-sqlite");
        BOOST_TEST_REQUIRE(writer_tid > 0, "no thread named tw-dq-sqlite in timewheeld");
        const ts::stopped_thread writer(pid, writer_tid);
        check_unavailable(
            timed_request(node.port(), ts::api_http::verb::post, "/v1/tasks", task("during")),
            "POST /v1/tasks");
        check_unavailable(timed_request(node.port(), ts::api_http::verb::get, "/readyz"),
                          "GET /readyz");
        check_unavailable(timed_request(node.port(), ts::api_http::verb::get, "/v1/tasks/before-0"),
                          "GET /v1/tasks/{id}");
        // The rest of the service answers meanwhile.
        BOOST_TEST(timed_request(node.port(), ts::api_http::verb::get, "/healthz").reply.status ==
                   200u);
    }
    // The store runs again: ready, accepting, and holding every task accepted before.
    BOOST_TEST_REQUIRE(ts::eventually([&] {
        return timed_request(node.port(), ts::api_http::verb::get, "/readyz").reply.status == 200u;
    }));
    const auto after =
        timed_request(node.port(), ts::api_http::verb::post, "/v1/tasks", task("after"));
    BOOST_TEST(after.reply.status == 201u, after.reply);
    check_all_readable(node.port(), accepted);
    // The submit that timed out while queued was never run.
    BOOST_TEST(
        timed_request(node.port(), ts::api_http::verb::get, "/v1/tasks/during").reply.status ==
        404u);
    BOOST_TEST(node.process().running(), node.log());
}

BOOST_AUTO_TEST_CASE(a_stopped_redis_answers_503_in_time_and_is_not_ready) {
    ts::api_service svc(ts::api_service::options{
        .args = {"--store-timeout-ms", std::to_string(store_timeout.count())}});
    std::set<std::string> accepted;
    for (int i = 0; i < 5; ++i) {
        const auto id = "before-" + std::to_string(i);
        const auto r = timed_request(svc.port(), ts::api_http::verb::post, "/v1/tasks", task(id));
        BOOST_TEST_REQUIRE(r.reply.status == 201u, r.reply);
        accepted.insert(id);
    }
    BOOST_TEST_REQUIRE(timed_request(svc.port(), ts::api_http::verb::get, "/readyz").reply.status ==
                       200u);
    svc.redis().freeze();
    try {
        check_unavailable(
            timed_request(svc.port(), ts::api_http::verb::post, "/v1/tasks", task("during")),
            "POST /v1/tasks");
        check_unavailable(timed_request(svc.port(), ts::api_http::verb::get, "/readyz"),
                          "GET /readyz");
        check_unavailable(timed_request(svc.port(), ts::api_http::verb::get, "/v1/tasks/before-0"),
                          "GET /v1/tasks/{id}");
    } catch (...) {
        svc.redis().thaw();
        throw;
    }
    svc.redis().thaw();
    BOOST_TEST_REQUIRE(ts::eventually([&] {
        return timed_request(svc.port(), ts::api_http::verb::get, "/readyz").reply.status == 200u;
    }));
    const auto after =
        timed_request(svc.port(), ts::api_http::verb::post, "/v1/tasks", task("after"));
    BOOST_TEST(after.reply.status == 201u, after.reply);
    check_all_readable(svc.port(), accepted);
    BOOST_TEST(svc.process().running(), svc.log());
}

namespace {

// The unshare flags that give a process a mount namespace of its own in which it may mount a
// tmpfs: "-m" as root, "-rm" (a user namespace too) otherwise; nothing when neither works.
std::optional<std::string> mount_namespace_flags(const std::filesystem::path& dir) {
    for (const char* flags : {"-m", "-rm"}) {
        const std::string cmd = std::string("unshare ") + flags +
                                " /bin/sh -c 'mount -t tmpfs -o size=64k tmpfs \"$0\"' " +
                                dir.string() + " >/dev/null 2>&1";
        if (std::system(cmd.c_str()) == 0) {
            return flags;
        }
    }
    return std::nullopt;
}

} // namespace

BOOST_AUTO_TEST_CASE(sqlite_on_a_full_filesystem_answers_507_and_loses_nothing_accepted) {
    const ts::temp_dir mnt("hostile-fs");
    const auto flags = mount_namespace_flags(mnt.path());
    if (!flags) {
        BOOST_TEST_MESSAGE("skipped: neither `unshare -m` nor `unshare -rm` may mount a tmpfs "
                           "here (no mount namespace for the full-filesystem case)");
        return;
    }
    cs::sink sink;
    sink.respond([](const cs::recorded_request&) {
        cs::reply r;
        r.status = 200;
        return r;
    });

    // timewheeld in a mount namespace of its own, its SQLite file on a 12 MiB tmpfs there
    // (gone with the process), 6 MiB of it taken by a ballast file the test removes later
    // through /proc/<pid>/root: the operator freeing room. Enough room: a full disk leaves up
    // to SQLite's autocheckpoint (1000 pages, 4 MiB) of committed pages in the WAL that the
    // database file must grow to take in, and a claim rewrites its tasks' rows (payloads
    // too). With 1 MiB freed here, nothing would run until more is freed.
    const ts::temp_dir dir("hostile-faults");
    const std::string script = "mount -t tmpfs -o size=12m tmpfs \"$0\" && "
                               "head -c 6291456 /dev/zero > \"$0/ballast\" && exec \"$@\"";
    std::optional<ts::child_process> proc;
    const auto port = ts::launch_timewheeld(
        proc, dir.path(),
        {"--store", "sqlite:" + (mnt.path() / "tasks.db").string(), "--threads", "1",
         "--callback-allow-loopback", "--store-timeout-ms", "5000"},
        {}, false, {"/usr/bin/env", "unshare", *flags, "/bin/sh", "-c", script, mnt.path()});
    // The files on the tmpfs as the process sees them, and its log: what a failure shows.
    const auto in_ns = [&] {
        return std::filesystem::path("/proc/" + std::to_string(proc->pid()) + "/root" +
                                     mnt.path().string());
    };
    const auto log = [&] {
        std::string files;
        std::error_code ec;
        for (const auto& e : std::filesystem::directory_iterator(in_ns(), ec)) {
            files += e.path().filename().string() + "=" +
                     std::to_string(std::filesystem::file_size(e.path(), ec)) + " ";
        }
        return "files: " + files + "\n" + proc->output();
    };

    // Tasks with 32 KiB callback bodies, due while the filesystem is full: the worker's
    // claims and acknowledgements meet the full disk too.
    const std::string body(32 * 1024, 'x');
    const auto big_task = [&](const std::string& id) {
        return ts::task_json(id, sink.url("/hook"), 1000,
                             R"({"attempts": 10, "base_ms": 50, "cap_ms": 200})", body);
    };
    std::set<std::string> accepted;
    std::size_t n = 0;
    int full_in_a_row = 0;
    while (full_in_a_row < 5) {
        BOOST_TEST_REQUIRE(n < 2000u, "the filesystem never filled: " << log());
        const auto id = "fill-" + std::to_string(n++);
        const auto r = timed_request(port, ts::api_http::verb::post, "/v1/tasks", big_task(id));
        if (r.reply.status == 201u) {
            accepted.insert(id);
            full_in_a_row = 0;
            continue;
        }
        BOOST_TEST_REQUIRE(r.reply.status == 507u, r.reply);
        BOOST_TEST(r.reply.error_code() == "store_full");
        ++full_in_a_row;
    }
    BOOST_TEST_MESSAGE(accepted.size() << " tasks accepted before the filesystem was full");
    BOOST_TEST_REQUIRE(accepted.size() > 10u);

    // Full: reads and the readiness probe answer while submits keep failing next to them
    // (in the same transactions).
    {
        std::atomic<bool> stop{false};
        std::vector<std::string> also_accepted; // room found after all: to be delivered too
        std::vector<ts::api_reply> odd;
        std::thread writer([&] {
            for (int i = 0; !stop; ++i) {
                const auto id = "while-full-" + std::to_string(i);
                const auto r =
                    timed_request(port, ts::api_http::verb::post, "/v1/tasks", big_task(id));
                if (r.reply.status == 201u) {
                    also_accepted.push_back(id);
                } else if (r.reply.status != 507u) {
                    odd.push_back(r.reply);
                }
            }
        });
        for (const auto& id : accepted) {
            const auto r = timed_request(port, ts::api_http::verb::get, "/v1/tasks/" + id);
            BOOST_TEST(r.reply.status == 200u, id << ": " << r.reply);
        }
        const auto ready = timed_request(port, ts::api_http::verb::get, "/readyz");
        BOOST_TEST(ready.reply.status == 200u, ready.reply);
        stop = true;
        writer.join();
        for (const auto& r : odd) {
            BOOST_ERROR("a submit while full answered " << r);
        }
        accepted.insert(also_accepted.begin(), also_accepted.end());
    }
    BOOST_TEST_REQUIRE(proc->running(), log());

    // Room is freed: submits succeed again, and every accepted task is delivered.
    BOOST_TEST_MESSAGE(log());
    BOOST_TEST_REQUIRE(std::filesystem::remove(in_ns() / "ballast"));
    BOOST_TEST_REQUIRE(ts::eventually([&] {
                           const auto r = timed_request(port, ts::api_http::verb::post, "/v1/tasks",
                                                        big_task("after-room"));
                           return r.reply.status == 201u;
                       }),
                       log());
    accepted.insert("after-room");
    BOOST_TEST_REQUIRE(
        ts::eventually([&] { return ts::count_deliveries(accepted, sink).missing == 0; }),
        ts::count_deliveries(accepted, sink).missing
            << " missing, as " << ts::count_deliveries(accepted, sink).first_missing << ": "
            << log());
    for (const auto& id : accepted) {
        const auto r = timed_request(port, ts::api_http::verb::get, "/v1/tasks/" + id);
        BOOST_TEST_REQUIRE(r.reply.status == 200u, r.reply);
    }
    BOOST_TEST(proc->running(), log());
}

namespace {

// The unshare flags that let a process bind-mount files of its own over /etc/hosts and
// /etc/nsswitch.conf in a mount namespace of its own ("-m" as root, "-rm" otherwise);
// nothing when neither works.
std::optional<std::string> bind_mount_flags(const std::filesystem::path& file) {
    for (const char* flags : {"-m", "-rm"}) {
        const std::string cmd = std::string("unshare ") + flags +
                                " /bin/sh -c 'mount --bind \"$0\" /etc/hosts' " + file.string() +
                                " >/dev/null 2>&1";
        if (std::system(cmd.c_str()) == 0) {
            return flags;
        }
    }
    return std::nullopt;
}

// Rewrites `file` in place (the same inode: a bind mount follows the inode, not the name).
void rewrite(const std::filesystem::path& file, const std::string& text) {
    std::ofstream out(file, std::ios::trunc);
    out << text;
    BOOST_TEST_REQUIRE(out.good(), file);
}

} // namespace

// A managed Redis fails over by moving its DNS name: the name in a redis:// URL must be
// resolved again on every reconnection, never once for good. timewheeld runs in a mount
// namespace of its own where /etc/hosts is a file of the test's and the resolver reads only
// that file (hosts: files), so no lookup leaves the machine. The name is taken out of the
// file and the service's connection closed: with the address kept from before, the next
// submit would succeed; resolved again, it fails (503 in time), and once the name is back
// the service reconnects by itself.
BOOST_AUTO_TEST_CASE(a_redis_host_name_is_resolved_again_on_every_reconnection) {
    const ts::temp_dir files("hostile-dns");
    const auto hosts = files.path() / "hosts";
    const auto nsswitch = files.path() / "nsswitch.conf";
    const std::string name = "redis.timewheel.test";
    rewrite(hosts, "127.0.0.1 localhost\n127.0.0.1 " + name + "\n");
    rewrite(nsswitch, "hosts: files\n");
    const auto flags = bind_mount_flags(hosts);
    if (!flags) {
        BOOST_TEST_MESSAGE("skipped: neither `unshare -m` nor `unshare -rm` may bind-mount "
                           "/etc/hosts here (no mount namespace for the DNS case)");
        return;
    }
    ts::redis_server redis;
    const ts::temp_dir dir("hostile-dns-node");
    const std::string script = "mount --bind \"$0\" /etc/hosts && "
                               "mount --bind \"$1\" /etc/nsswitch.conf && shift && exec \"$@\"";
    std::optional<ts::child_process> proc;
    const auto port = ts::launch_timewheeld(
        proc, dir.path(),
        {"--store", "redis://" + name + ":" + std::to_string(redis.port()) + "/dns", "--no-worker",
         "--store-timeout-ms", std::to_string(store_timeout.count())},
        {}, false,
        {"/usr/bin/env", "unshare", *flags, "/bin/sh", "-c", script, hosts.string(),
         nsswitch.string()});

    std::set<std::string> accepted;
    for (int i = 0; i < 3; ++i) {
        const auto id = "named-" + std::to_string(i);
        const auto r = timed_request(port, ts::api_http::verb::post, "/v1/tasks", task(id));
        BOOST_TEST_REQUIRE(r.reply.status == 201u, r.reply << proc->output());
        accepted.insert(id);
    }

    // The name goes away, and so does the service's connection.
    rewrite(hosts, "127.0.0.1 localhost\n");
    const auto killed = redis.command(ts::resp_command({"CLIENT", "KILL", "TYPE", "normal"}));
    BOOST_TEST_REQUIRE(killed.starts_with(":"), killed);
    BOOST_TEST_REQUIRE(std::stoi(killed.substr(1)) >= 1, killed);
    check_unavailable(
        timed_request(port, ts::api_http::verb::post, "/v1/tasks", task("while-unnamed")),
        "POST /v1/tasks while the name does not resolve");

    // The name is back: the service finds the server again by itself.
    rewrite(hosts, "127.0.0.1 localhost\n127.0.0.1 " + name + "\n");
    BOOST_TEST_REQUIRE(ts::eventually([&] {
                           return timed_request(port, ts::api_http::verb::post, "/v1/tasks",
                                                task("renamed"))
                                      .reply.status == 201u;
                       }),
                       proc->output());
    accepted.insert("renamed");
    check_all_readable(port, accepted);
    BOOST_TEST(
        timed_request(port, ts::api_http::verb::get, "/v1/tasks/while-unnamed").reply.status ==
        404u);
    BOOST_TEST(proc->running(), proc->output());
}
