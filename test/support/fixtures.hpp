//
// test/support/fixtures.hpp
//
// Small helpers that several test files need: an io_context whose shutdown can be called
// early, a flag set by a destructor, and a check of what an exception says.
//

#ifndef TIMEWHEEL_TEST_SUPPORT_FIXTURES_HPP
#define TIMEWHEEL_TEST_SUPPORT_FIXTURES_HPP

#include <boost/asio/io_context.hpp>

#include <exception>
#include <string_view>

namespace timewheel::test {

// Exposes execution_context::shutdown(), the first thing ~io_context() does, so that objects
// that must be destroyed before their context can be checked after it.
struct shutdown_context : boost::asio::io_context {
    using boost::asio::io_context::shutdown;
};

// Sets *flag when destroyed: tells whether a handler (holding it) was destroyed.
// (A constructor, not an aggregate: clang 14 cannot make_shared<T>(args) an aggregate.)
struct set_on_destruction {
    explicit set_on_destruction(bool* f) noexcept
        : flag(f) {}
    ~set_on_destruction() { *flag = true; }
    bool* flag;
};

// Whether the exception's message contains `word`: errors must name what was wrong.
inline bool mentions(const std::exception& e, std::string_view word) {
    return std::string_view(e.what()).find(word) != std::string_view::npos;
}

} // namespace timewheel::test

#endif // TIMEWHEEL_TEST_SUPPORT_FIXTURES_HPP
