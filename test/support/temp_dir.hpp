//
// test/support/temp_dir.hpp
//
// A directory of a test's own under /tmp: a database file, a log, a port file, a Unix socket
// go there, and it is removed with all it holds at the end of the scope, so that a test
// leaves nothing behind and two tests (or two runs of one) never share one. One home for
// the redis, dq and service tests, which each made their own.
//
#ifndef TIMEWHEEL_TEST_SUPPORT_TEMP_DIR_HPP
#define TIMEWHEEL_TEST_SUPPORT_TEMP_DIR_HPP

#include <filesystem>
#include <string>

namespace timewheel::test {

/// A new directory /tmp/`prefix`-XXXXXX (mkdtemp), which the caller removes (or keeps, to
/// read after a failure).
/** @throws std::runtime_error when it cannot be made. */
std::filesystem::path make_temp_dir(const std::string& prefix);

/// A directory made by make_temp_dir, removed with what it holds at the end of the scope.
class temp_dir {
public:
    explicit temp_dir(const std::string& prefix = "timewheel-test");
    ~temp_dir();
    temp_dir(const temp_dir&) = delete;
    temp_dir& operator=(const temp_dir&) = delete;

    const std::filesystem::path& path() const noexcept { return path_; }

    /// The path of the file `name` in it, as a string (what the stores' options take).
    std::string file(const std::string& name) const;

private:
    std::filesystem::path path_;
};

} // namespace timewheel::test

#endif // TIMEWHEEL_TEST_SUPPORT_TEMP_DIR_HPP
