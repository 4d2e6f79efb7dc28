//
// test/support/temp_dir.cpp
//
// make_temp_dir and temp_dir (temp_dir.hpp): mkdtemp names the directory, so that tests
// running at once (ctest -j, two builds) never pick the same one.
//
#include <test/support/temp_dir.hpp>

#include <stdlib.h>

#include <stdexcept>
#include <system_error>

namespace timewheel::test {

std::filesystem::path make_temp_dir(const std::string& prefix) {
    // /tmp, not TMPDIR: a Unix socket made in it (redis-server's) needs a short path.
    std::string tmpl = "/tmp/" + prefix + "-XXXXXX";
    if (!::mkdtemp(tmpl.data())) {
        throw std::runtime_error("make_temp_dir: mkdtemp failed for " + tmpl);
    }
    return tmpl;
}

temp_dir::temp_dir(const std::string& prefix)
    : path_(make_temp_dir(prefix)) {}

temp_dir::~temp_dir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
}

std::string temp_dir::file(const std::string& name) const {
    return (path_ / name).string();
}

} // namespace timewheel::test
