import os
import re

from conan import ConanFile
from conan.tools.build import check_min_cppstd
from conan.tools.cmake import CMake, CMakeDeps, CMakeToolchain, cmake_layout
from conan.tools.files import copy, load, rmdir


class timewheelRecipe(ConanFile):
    name = "timewheel"
    package_type = "library"

    # Optional metadata
    license = "BSL-1.0"  # the Boost Software License 1.0, in LICENSE
    description = "A hierarchical timing wheel for Boost.Asio"
    topics = ("timer", "timing-wheel", "asio", "boost")

    # Binary configuration
    settings = "os", "compiler", "build_type", "arch"
    # The layers above the wheel are off by default, so that a user of the wheel alone links
    # nothing else. Each is a CMake option of CMakeLists.txt and a component of the package:
    #   redis      TIMEWHEEL_BUILD_REDIS       the Redis client (needs hiredis)
    #   dq         TIMEWHEEL_BUILD_DQ          the durable queue on it
    #   dq_sqlite  TIMEWHEEL_BUILD_DQ_SQLITE   dq's embedded store, dq::sqlite_store (SQLite 3)
    #   server     TIMEWHEEL_BUILD_SERVER      timewheeld, the delayed HTTP-callback service, in
    #                                          bin/ (Boost.JSON, OpenSSL; SQLite for its
    #                                          embedded default store)
    # An option turns on what it stands on.
    options = {"shared": [True, False], "fPIC": [True, False], "redis": [True, False],
               "dq": [True, False], "dq_sqlite": [True, False], "server": [True, False]}
    default_options = {"shared": False, "fPIC": True, "redis": False, "dq": False,
                       "dq_sqlite": False, "server": False}

    # Sources are located in the same place as this recipe, copy them to the recipe
    # (docs/openapi.json: timewheeld compiles its OpenAPI document in, server/api/CMakeLists.txt)
    exports_sources = ("CMakeLists.txt", "LICENSE", "src/*", "include/*", "cmake/*", "server/*",
                       "docs/openapi.json")

    def set_version(self):
        # One source of truth: project(timewheel VERSION x.y.z ...) in CMakeLists.txt.
        if not self.version:
            cmakelists = load(self, os.path.join(self.recipe_folder, "CMakeLists.txt"))
            match = re.search(r"project\s*\(\s*timewheel\s+VERSION\s+([0-9]+(?:\.[0-9]+)*)",
                              cmakelists)
            self.version = match.group(1) if match else "0.1.0"

    def config_options(self):
        if self.settings.os == "Windows":
            self.options.rm_safe("fPIC")

    def configure(self):
        if self.options.shared:
            self.options.rm_safe("fPIC")
        if self.options.server:
            # timewheeld's default store is the embedded one.
            self.options.dq_sqlite = True
            self.options.dq = True
        if self.options.dq_sqlite:
            self.options.dq = True
        if self.options.dq:
            self.options.redis = True  # the durable queue stands on the Redis client

    def layout(self):
        cmake_layout(self)

    def requirements(self):
        # The public headers include Boost.Intrusive (and later Boost.Asio) headers.
        self.requires("boost/[>=1.81.0 <2]", transitive_headers=True)
        if self.options.redis:
            self.requires("hiredis/[>=0.14 <2]")
        if self.options.dq_sqlite:
            self.requires("sqlite3/[>=3.35 <4]")
        if self.options.server:
            # Boost.Beast and Boost.JSON (built by Conan's boost unless without_json), and
            # OpenSSL for https callbacks and their signatures.
            self.requires("openssl/[>=3 <4]")

    def validate(self):
        check_min_cppstd(self, 20)

    def generate(self):
        deps = CMakeDeps(self)
        deps.generate()
        # The fPIC option reaches CMakeLists.txt as CMAKE_POSITION_INDEPENDENT_CODE, which the
        # toolchain sets from it; shared builds are position-independent anyway.
        tc = CMakeToolchain(self)
        tc.cache_variables["TIMEWHEEL_BUILD_TESTS"] = False
        tc.cache_variables["TIMEWHEEL_BUILD_EXAMPLES"] = False
        tc.cache_variables["TIMEWHEEL_BUILD_BENCHMARKS"] = False
        tc.cache_variables["TIMEWHEEL_INSTALL"] = True
        tc.cache_variables["TIMEWHEEL_BUILD_REDIS"] = bool(self.options.redis)
        tc.cache_variables["TIMEWHEEL_BUILD_DQ"] = bool(self.options.dq)
        tc.cache_variables["TIMEWHEEL_BUILD_DQ_SQLITE"] = bool(self.options.dq_sqlite)
        tc.cache_variables["TIMEWHEEL_BUILD_SERVER"] = bool(self.options.server)
        tc.generate()

    def build(self):
        cmake = CMake(self)
        cmake.configure()
        cmake.build()

    def package(self):
        copy(self, "LICENSE", self.source_folder, os.path.join(self.package_folder, "licenses"))
        cmake = CMake(self)
        cmake.install()
        # Conan generates the consumers' CMake and pkg-config files from package_info().
        rmdir(self, os.path.join(self.package_folder, "lib", "cmake"))
        rmdir(self, os.path.join(self.package_folder, "lib", "pkgconfig"))

    def package_info(self):
        # One component per layer, as the installed CMake package has them:
        # timewheel::timewheel, timewheel::redis, timewheel::dq, timewheel::dq_sqlite; and
        # `server`, the timewheeld binary in bin/ (no library: it is run, not linked).
        self.cpp_info.set_property("cmake_file_name", "timewheel")
        wheel = self.cpp_info.components["timewheel"]
        wheel.libs = ["timewheel"]
        wheel.set_property("cmake_target_name", "timewheel::timewheel")
        wheel.set_property("pkg_config_name", "timewheel")
        wheel.requires = ["boost::headers"]
        # Boost.Asio needs the platform threads, as the installed CMake config says with
        # Threads::Threads.
        if self.settings.os in ["Linux", "FreeBSD"]:
            wheel.system_libs = ["pthread"]
        if self.options.redis:
            redis = self.cpp_info.components["redis"]
            redis.libs = ["timewheel_redis"]
            redis.set_property("cmake_target_name", "timewheel::redis")
            redis.requires = ["timewheel", "hiredis::hiredis"]
        if self.options.dq:
            dq = self.cpp_info.components["dq"]
            dq.libs = ["timewheel_dq"]
            dq.set_property("cmake_target_name", "timewheel::dq")
            dq.requires = ["redis", "timewheel"]
        if self.options.dq_sqlite:
            dq_sqlite = self.cpp_info.components["dq_sqlite"]
            dq_sqlite.libs = ["timewheel_dq_sqlite"]
            dq_sqlite.set_property("cmake_target_name", "timewheel::dq_sqlite")
            dq_sqlite.requires = ["dq", "sqlite3::sqlite3"]
        if self.options.server:
            server = self.cpp_info.components["server"]
            server.libs = []
            server.includedirs = []
            server.bindirs = ["bin"]
            # The binary links these statically; listed so that Conan keeps them in the graph
            # (and their shared libraries on the run environment's paths).
            server.requires = ["dq_sqlite", "openssl::ssl", "openssl::crypto", "boost::headers"]
