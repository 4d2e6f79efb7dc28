//
// example/callback_client.cpp
//
// timewheeld's callback client on its own (server/callback/, docs/server.md "Callbacks"):
// one signed HTTP callback, made to a receiver in this same program that checks the
// signature as a real receiver would.
//
// The client is what timewheeld's workers call when a task comes due; any program on Asio
// can use it to make callbacks with the same rules: a deadline per call, the SSRF policy
// checked on every resolved address (loopback is refused unless allowed, as here), no
// redirects followed, keep-alive connections pooled per origin, and a verdict (success,
// accepted, retry, fail) from the answer or its absence.
//
// The receiver (the other half of this file) accepts one connection on 127.0.0.1, reads
// one request and verifies its Timewheel-Signature with the shared secret: the signature
// covers the method, the URL, the task id (Idempotency-Key), the attempt and the body, so
// that a receiver can tell the call comes from the service, for it, and is no replay.
//
//   callback_client       (takes no arguments; listens on a free port of 127.0.0.1)
//

#include <timewheeld/callback/client.hpp>
#include <timewheeld/callback/signature.hpp>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http.hpp>

#include <charconv>
#include <chrono>
#include <cstdint>
#include <exception>
#include <iostream>
#include <string>

namespace callback = timewheeld::callback;
namespace net = boost::asio;
namespace http = boost::beast::http;
using net::ip::tcp;

namespace {

const std::string secret = "example-shared-secret";

// The receiver: one request, its signature checked, answered 200 (or 401 when the
// signature does not verify, which the client would treat as a permanent failure).
net::awaitable<void> receive_one(tcp::acceptor& acceptor, std::string url, bool& verified) {
    tcp::socket socket = co_await acceptor.async_accept(net::use_awaitable);
    boost::beast::flat_buffer buffer;
    http::request<http::string_body> req;
    co_await http::async_read(socket, buffer, req, net::use_awaitable);

    // Every part the signature covers comes from the request as received, except the URL,
    // which the receiver knows as the one it registered.
    const auto attempt_text = req["Timewheel-Attempt"];
    std::uint32_t attempt = 0;
    std::from_chars(attempt_text.data(), attempt_text.data() + attempt_text.size(), attempt);
    verified = callback::verify_signature(
        req[callback::signature_header], secret,
        callback::signed_request{.method = req.method_string(),
                                 .url = url,
                                 .idempotency_key = req["Idempotency-Key"],
                                 .attempt = attempt,
                                 .body = req.body()},
        std::chrono::system_clock::now());
    std::cout << "receiver: " << req.method_string() << ' ' << req.target() << ", task "
              << req["Idempotency-Key"] << ", attempt " << attempt << ", body " << req.body()
              << ", signature " << (verified ? "verified" : "NOT verified") << '\n';

    http::response<http::empty_body> res{verified ? http::status::ok : http::status::unauthorized,
                                         req.version()};
    res.keep_alive(false);
    co_await http::async_write(socket, res, net::use_awaitable);
}

} // namespace

int main() {
    try {
        net::io_context io;
        tcp::acceptor acceptor(io, tcp::endpoint(net::ip::address_v4::loopback(), 0));
        const std::string url =
            "http://127.0.0.1:" + std::to_string(acceptor.local_endpoint().port()) + "/hook";
        bool verified = false;
        net::co_spawn(io, receive_one(acceptor, url, verified), [](std::exception_ptr e) {
            try {
                if (e) {
                    std::rethrow_exception(e);
                }
            } catch (const std::exception& x) {
                std::cerr << "receiver: " << x.what() << '\n';
            }
        });

        // The client: loopback allowed for this example (timewheeld refuses it unless
        // --callback-allow-loopback), every call signed with the shared secret.
        callback::client_options options;
        options.policy.allow_loopback = true;
        options.signing_secrets = {secret};
        options.total_timeout = std::chrono::seconds(5);
        callback::client client(io.get_executor(), options);

        // What a task's callback holds: the URL, the method, headers and body.
        callback::call_request call;
        call.spec.url = url;
        call.spec.headers = {{"Content-Type", "application/json"}};
        call.spec.body = R"({"order": 42, "action": "expire"})";
        call.task_id = "order-42-expiry";
        call.attempt = 1;

        callback::verdict verdict = callback::verdict::fail;
        client.async_call(call, [&](boost::system::error_code ec, callback::call_result r) {
            verdict = r.verdict;
            std::cout << "client: status " << r.status << ", verdict " << to_string(r.verdict)
                      << (ec ? ", error " + r.error : "") << '\n';
            client.close();
            acceptor.close(); // a receiver still waiting (the call never came) gives up
        });
        io.run();

        const bool ok = verified && verdict == callback::verdict::success;
        std::cout << (ok ? "done: 1 signed callback delivered and verified\n"
                         : "done: the callback failed\n");
        return ok ? 0 : 1;
    } catch (const std::exception& e) {
        std::cerr << "callback_client: " << e.what() << '\n';
        return 1;
    }
}
