//
// test/server/api_tenants.cpp
//
// Tokens with scopes (--tokens-file, issue 30): the file's parser and its lookup, then
// timewheeld as a process: each token gets its scope and no more (read answers, write
// changes, a refused write stores nothing), the file is re-read on SIGHUP and when it
// changes, a file that no longer parses is refused while the tokens in force stay, and a
// broken file stops the start naming its line without echoing a token.
//
#define BOOST_TEST_MODULE server_api_tenants
#include <boost/test/unit_test.hpp>

#include <test/server/support/api_service.hpp>
#include <test/support/temp_dir.hpp>

#include <timewheeld/service/tokens.hpp>

#include <signal.h>

#include <chrono>
#include <fstream>
#include <functional>
#include <string>
#include <thread>
#include <vector>

namespace ts = timewheel::test;
namespace service = timewheeld::service;
using verb = boost::beast::http::verb;
using namespace std::chrono_literals;

namespace {

std::string hex(const service::sha256_digest& d) {
    static const char* digits = "0123456789abcdef";
    std::string out;
    for (auto b : d) {
        out += digits[b >> 4];
        out += digits[b & 15];
    }
    return out;
}

// A tokens file's line for `token`.
std::string line(std::string_view scope, std::string_view token, std::string_view name = "") {
    return std::string(scope) + " sha256:" + hex(service::sha256(token)) + " " + std::string(name) +
           "\n";
}

void write_file(const std::string& path, const std::string& text) {
    // Written under another name and renamed, as a config tool does: the service never
    // reads half a file.
    const auto tmp = path + ".new";
    std::ofstream(tmp) << text;
    std::filesystem::rename(tmp, path);
}

std::string task_body(const std::string& id) {
    return R"({"id": ")" + id +
           R"(", "delay_ms": 600000, "callback": {"url": "http://127.0.0.1:9/hook"}})";
}

ts::api_reply as(ts::api_service& svc, verb method, const std::string& target,
                 const std::string& token, const std::string& body = {}) {
    return svc.request(method, target, body, {{"Authorization", "Bearer " + token}});
}

// Polls `done` for up to 30 s (the service polls its file once a second).
bool eventually(const std::function<bool()>& done) {
    for (auto deadline = std::chrono::steady_clock::now() + 30s;
         std::chrono::steady_clock::now() < deadline; std::this_thread::sleep_for(50ms)) {
        if (done()) {
            return true;
        }
    }
    return false;
}

} // namespace

BOOST_AUTO_TEST_SUITE(token_file)

BOOST_AUTO_TEST_CASE(a_listed_token_has_its_scope_and_nothing_else_has_any) {
    // The digest of "abc" is SHA-256's published test vector.
    BOOST_TEST(hex(service::sha256("abc")) ==
               "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    const auto set = service::token_set::parse("# who may call\n\n" + line("read", "r1", "ro") +
                                               "  write\tsha256:" + hex(service::sha256("w1")) +
                                               "  # ci\r\n" + line("admin", "a1"));
    BOOST_TEST(set.entries().size() == 3u);
    BOOST_TEST(set.entries()[0].name == "ro");
    const auto scope_of = [&](std::string_view token) {
        const auto found = set.find(token);
        return found ? std::string(service::to_string(*found)) : std::string("none");
    };
    BOOST_TEST(scope_of("r1") == "read");
    BOOST_TEST(scope_of("w1") == "write");
    BOOST_TEST(scope_of("a1") == "admin");
    BOOST_TEST(scope_of("r2") == "none");
    BOOST_TEST(scope_of("") == "none");
    BOOST_TEST(scope_of(hex(service::sha256("r1"))) == "none"); // the digest is not the token
    BOOST_TEST(service::token_set::parse("").empty());
}

BOOST_AUTO_TEST_CASE(a_bad_line_is_refused_naming_its_number_and_never_the_token) {
    const auto refused = [](const std::string& text, const std::string& expected) {
        try {
            service::token_set::parse(text);
        } catch (const std::invalid_argument& e) {
            const std::string what = e.what();
            BOOST_TEST(what.find(expected) != std::string::npos, what);
            BOOST_TEST(what.find("hunter2") == std::string::npos, what);
            return;
        }
        BOOST_ERROR("accepted: " << text);
    };
    const auto ok = line("read", "r1");
    refused(ok + "owner sha256:" + hex(service::sha256("x")) + "\n", "line 2: unknown scope");
    refused(ok + "read hunter2\n", "line 2: expected sha256:");
    refused("write sha256:" + hex(service::sha256("x")).substr(1) + "\n", "line 1: expected");
    refused("write sha256:" + std::string(64, 'g') + "\n", "line 1: expected");
    refused("read\n", "line 1: expected");
    refused(ok + "\n" + line("admin", "r1"), "line 3: a token listed twice");
    refused(line("read", "x", "name extra"), "line 1: more than");
    // --token also in the file: refused, not silently given one scope of the two.
    auto set = service::token_set::parse(ok);
    BOOST_CHECK_THROW(set.add("r1", service::scope::admin, "--token"), std::invalid_argument);
    BOOST_CHECK_THROW(service::token_set::read_file("/nonexistent/tokens"), std::invalid_argument);
}

BOOST_AUTO_TEST_CASE(a_tokens_file_is_a_regular_file_of_at_most_a_mebibyte) {
    const auto refused = [](const std::string& path, const std::string& expected) {
        try {
            service::token_set::read_file(path);
        } catch (const std::invalid_argument& e) {
            BOOST_TEST(std::string(e.what()).find(expected) != std::string::npos, e.what());
            return;
        }
        BOOST_ERROR("accepted: " << path);
    };
    ts::temp_dir dir;
    // A device would be read without end, a FIFO would block the API's thread.
    refused("/dev/zero", "not a regular file");
    refused(dir.path().string(), "not a regular file");
    // Comments count: the bound is on what is read, not on the tokens.
    const auto big = dir.file("big");
    std::ofstream(big) << line("read", "r1") << std::string(1 << 20, '#');
    refused(big, "larger than 1 MiB");
    const auto fits = dir.file("fits");
    std::ofstream(fits) << line("read", "r1") << "#" << std::string((1 << 20) - 200, 'x') << "\n";
    BOOST_TEST(service::token_set::read_file(fits).entries().size() == 1u);
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(scopes, *boost::unit_test::precondition(ts::redis_available()))

BOOST_AUTO_TEST_CASE(each_token_does_what_its_scope_allows_and_no_more) {
    ts::temp_dir dir;
    const auto file = dir.file("tokens");
    write_file(file, line("read", "reader") + line("write", "writer"));
    ts::api_service svc({.args = {"--tokens-file", file}, .env = {"TIMEWHEELD_TOKEN=root"}});

    BOOST_TEST(svc.get("/v1/tasks?state=delayed").status == 401u);
    BOOST_TEST(as(svc, verb::get, "/v1/tasks?state=delayed", "readerx").status == 401u);
    BOOST_TEST(svc.get("/healthz").status == 200u);

    // read: every GET, no change.
    BOOST_TEST(as(svc, verb::get, "/v1/tasks?state=delayed", "reader").status == 200u);
    BOOST_TEST(as(svc, verb::get, "/v1/stats", "reader").status == 200u);
    BOOST_TEST(as(svc, verb::get, "/metrics", "reader").status == 200u);
    const auto refused = as(svc, verb::post, "/v1/tasks", "reader", task_body("r-1"));
    BOOST_TEST(refused.status == 403u, refused);
    BOOST_TEST(refused.error_code() == "insufficient_scope");
    BOOST_TEST(refused.headers["WWW-Authenticate"] == "Bearer error=\"insufficient_scope\"");
    BOOST_TEST(as(svc, verb::get, "/v1/tasks/r-1", "reader").status == 404u); // not stored

    // write: changes tasks; admin (--token) too.
    BOOST_TEST(as(svc, verb::post, "/v1/tasks", "writer", task_body("w-1")).status == 201u);
    BOOST_TEST(as(svc, verb::post, "/v1/tasks", "root", task_body("a-1")).status == 201u);
    BOOST_TEST(as(svc, verb::get, "/v1/tasks/w-1", "reader").status == 200u);
    BOOST_TEST(as(svc, verb::delete_, "/v1/tasks/w-1", "reader").status == 403u);
    BOOST_TEST(as(svc, verb::patch, "/v1/tasks/w-1", "reader", R"({"delay_ms": 5})").status ==
               403u);
    BOOST_TEST(as(svc, verb::delete_, "/v1/tasks/w-1", "writer").status == 200u);
    BOOST_TEST(as(svc, verb::delete_, "/v1/tasks/a-1", "root").status == 200u);

    // Queues: changing their settings needs admin, reading them read.
    const std::string q = R"({"id": "billing"})";
    BOOST_TEST(as(svc, verb::post, "/v1/queues", "writer", q).status == 403u);
    BOOST_TEST(as(svc, verb::post, "/v1/queues", "reader", q).status == 403u);
    BOOST_TEST(as(svc, verb::get, "/v1/queues/billing", "reader").status == 404u); // not stored
    BOOST_TEST(as(svc, verb::post, "/v1/queues", "root", q).status == 201u);
    BOOST_TEST(as(svc, verb::get, "/v1/queues/billing", "reader").status == 200u);
    BOOST_TEST(as(svc, verb::get, "/v1/queues", "reader").status == 200u);
    BOOST_TEST(as(svc, verb::patch, "/v1/queues/billing", "writer", "{}").status == 403u);
    BOOST_TEST(as(svc, verb::delete_, "/v1/queues/billing", "writer").status == 403u);
    BOOST_TEST(as(svc, verb::get, "/v1/queues/billing", "reader").status == 200u);
    BOOST_TEST(as(svc, verb::delete_, "/v1/queues/billing", "root").status == 200u);
}

BOOST_AUTO_TEST_CASE(the_file_is_read_again_on_sighup_and_on_change_and_a_broken_one_is_kept_out) {
    ts::temp_dir dir;
    const auto file = dir.file("tokens");
    write_file(file, line("read", "old"));
    ts::api_service svc({.args = {"--tokens-file", file}});
    const auto status = [&](const std::string& token) {
        return as(svc, verb::get, "/v1/tasks?state=delayed", token).status;
    };
    BOOST_TEST(status("old") == 200u);

    // SIGHUP: the new file at once (the poll may see it first; either way, it is read).
    write_file(file, line("read", "new"));
    BOOST_TEST_REQUIRE(::kill(svc.process().pid(), SIGHUP) == 0);
    BOOST_TEST(eventually([&] { return status("new") == 200u; }));
    BOOST_TEST(status("old") == 401u);

    // A change without a signal: seen by the poll.
    write_file(file, line("read", "newer") + line("write", "writer"));
    BOOST_TEST(eventually([&] { return status("newer") == 200u; }));
    BOOST_TEST(status("new") == 401u);

    // A file that no longer parses: refused whole, the tokens in force stay.
    write_file(file, line("read", "newest") + "owner sha256:00\n");
    BOOST_TEST(eventually([&] { return svc.log().find("tokens_refused") != std::string::npos; }),
               svc.log());
    BOOST_TEST(svc.log().find("line 2") != std::string::npos, svc.log());
    BOOST_TEST(status("newer") == 200u);
    BOOST_TEST(status("newest") == 401u);
    BOOST_TEST(svc.process().running());
}

BOOST_AUTO_TEST_CASE(a_broken_tokens_file_stops_the_start_naming_its_line) {
    ts::temp_dir dir;
    const auto file = dir.file("tokens");
    write_file(file, line("read", "fine") + "read hunter2\n");
    try {
        ts::api_service svc({.args = {"--tokens-file", file}});
        BOOST_ERROR("timewheeld started with a broken tokens file");
    } catch (const std::runtime_error& e) {
        const std::string what = e.what();
        BOOST_TEST(what.find("bad_settings") != std::string::npos, what);
        BOOST_TEST(what.find("line 2") != std::string::npos, what);
        BOOST_TEST(what.find("hunter2") == std::string::npos, what);
    }
    try {
        ts::api_service svc({.args = {"--tokens-file", dir.file("missing")}});
        BOOST_ERROR("timewheeld started with a missing tokens file");
    } catch (const std::runtime_error& e) {
        BOOST_TEST(std::string(e.what()).find("cannot read") != std::string::npos, e.what());
    }
}

BOOST_AUTO_TEST_SUITE_END()
