import os
import re

from conan import ConanFile
from conan.errors import ConanInvalidConfiguration
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
    #   cron       TIMEWHEEL_BUILD_CRON        cron expressions on time zones (the date library)
    #   redis      TIMEWHEEL_BUILD_REDIS       the Redis client (needs hiredis)
    #   dq         TIMEWHEEL_BUILD_DQ          the durable queue on redis and cron
    #   dq_sqlite  TIMEWHEEL_BUILD_DQ_SQLITE   dq's embedded store, dq::sqlite_store (SQLite 3)
    #   server     TIMEWHEEL_BUILD_SERVER      timewheeld, the delayed HTTP-callback service, in
    #                                          bin/ (Boost.JSON, OpenSSL; SQLite for its
    #                                          embedded default store)
    # An option turns on what it stands on, so `-o timewheel/*:server=True` alone is enough.
    # Conan 2 freezes every option that has a value before configure() runs (defaults
    # included) and refuses to change it there, so the layers below the server default to
    # None, "as the layers above need": configure() gives each its value, and validate()
    # refuses a layer switched off explicitly under one that needs it.
    options = {"shared": [True, False], "fPIC": [True, False], "cron": [None, True, False],
               "redis": [None, True, False], "dq": [None, True, False],
               "dq_sqlite": [None, True, False], "server": [True, False]}
    default_options = {"shared": False, "fPIC": True, "cron": None, "redis": None, "dq": None,
                       "dq_sqlite": None, "server": False,
                       # cron reads the system's tz database (/usr/share/zoneinfo), as
                       # Debian's date library does; ConanCenter's would download it
                       "date/*:use_system_tz_db": True}

    # What each layer stands on (CMakeLists.txt refuses a layer without them).
    _layer_needs = {"server": ["dq_sqlite", "dq"], "dq_sqlite": ["dq"], "dq": ["redis", "cron"]}

    # Sources are located in the same place as this recipe, copy them to the recipe
    # (docs/openapi.json: timewheeld compiles its OpenAPI document in, server/api/CMakeLists.txt)
    # packaging/: the root CMakeLists adds it with timewheeld (the .deb's files, an install
    # component of their own that Conan's install leaves out).
    exports_sources = ("CMakeLists.txt", "LICENSE", "src/*", "include/*", "cmake/*", "server/*",
                       "packaging/*", "docs/openapi.json")

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
        # From the top down, so that the server's needs reach dq's. A layer left at None is
        # on when one above needs it and off otherwise; one given explicitly is kept (a
        # contradiction is validate()'s to report, not a silent change).
        for layer in ["dq_sqlite", "dq", "redis", "cron"]:
            if self.options.get_safe(layer).value is None:
                needed = any(self._on(above) and layer in needs
                             for above, needs in self._layer_needs.items())
                setattr(self.options, layer, needed)

    def _on(self, layer):
        return str(self.options.get_safe(layer)) == "True"

    def layout(self):
        cmake_layout(self)

    def requirements(self):
        # The public headers include Boost.Intrusive (and later Boost.Asio) headers.
        self.requires("boost/[>=1.81.0 <2]", transitive_headers=True)
        if self.options.cron:
            self.requires("date/[>=3.0.1 <4]")
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
        for above, needs in self._layer_needs.items():
            for layer in needs:
                if self._on(above) and not self._on(layer):
                    raise ConanInvalidConfiguration(
                        f"timewheel: option {above}=True needs {layer}=True (given "
                        f"{layer}=False); leave {layer} unset and it follows {above}")

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
        # Every layer explicitly, also the ones off: CMakeLists.txt would otherwise turn on
        # what it finds on the build machine (the system's hiredis, say) outside the graph.
        tc.cache_variables["TIMEWHEEL_BUILD_CRON"] = bool(self.options.cron)
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
        # One component per layer, each with the CMake target the installed CMake package
        # gives it: timewheel::timewheel (the wheel), timewheel::cron, timewheel::redis,
        # timewheel::dq, timewheel::dq_sqlite; and `server`, the timewheeld binary in bin/ (no
        # library: it is run, not linked).
        self.cpp_info.set_property("cmake_file_name", "timewheel")
        # CMakeDeps makes a package-wide target that links every component. It must not be
        # timewheel::timewheel, which the installed CMake package (and everyone's
        # CMakeLists.txt) means as the wheel alone: a user of the wheel would link hiredis,
        # SQLite and OpenSSL with it. The package-wide target is timewheel::all.
        self.cpp_info.set_property("cmake_target_name", "timewheel::all")
        self.cpp_info.set_property("pkg_config_name", "timewheel-all")
        wheel = self.cpp_info.components["wheel"]
        wheel.libs = ["timewheel"]
        wheel.set_property("cmake_target_name", "timewheel::timewheel")
        wheel.set_property("pkg_config_name", "timewheel")
        # Boost by component only when it is a package of the graph: a profile's
        # [platform_requires] boost/x.y makes it the system's, which is no dependency of
        # CMakeDeps', and naming a component of it fails the generator ("'boost' is not a
        # direct dependency"). The consumer's own find_package(Boost) then finds the system's.
        boost = "boost" in self.dependencies
        wheel.requires = ["boost::headers"] if boost else []
        # Boost.Asio needs the platform threads, as the installed CMake config says with
        # Threads::Threads.
        if self.settings.os in ["Linux", "FreeBSD"]:
            wheel.system_libs = ["pthread"]
        if self.options.cron:
            cron = self.cpp_info.components["cron"]
            cron.libs = ["timewheel_cron"]
            cron.set_property("cmake_target_name", "timewheel::cron")
            cron.requires = ["wheel", "date::date-tz"]
        if self.options.redis:
            redis = self.cpp_info.components["redis"]
            redis.libs = ["timewheel_redis"]
            redis.set_property("cmake_target_name", "timewheel::redis")
            redis.requires = ["wheel", "hiredis::hiredis"]
        if self.options.dq:
            dq = self.cpp_info.components["dq"]
            dq.libs = ["timewheel_dq"]
            dq.set_property("cmake_target_name", "timewheel::dq")
            dq.requires = ["redis", "cron", "wheel"]
        if self.options.dq_sqlite:
            dq_sqlite = self.cpp_info.components["dq_sqlite"]
            dq_sqlite.libs = ["timewheel_dq_sqlite"]
            dq_sqlite.set_property("cmake_target_name", "timewheel::dq_sqlite")
            dq_sqlite.requires = ["dq", "sqlite3::sqlite3"]
        if self.options.server:
            server = self.cpp_info.components["server"]
            server.libs = []
            server.includedirs = []
            server.libdirs = []
            server.bindirs = ["bin"]
            # The binary links these (statically or not, as `shared` says; its own internal
            # libraries always statically); listed so that Conan keeps them in the graph and
            # their shared libraries on the run environment's paths.
            server.requires = ["dq_sqlite", "openssl::ssl", "openssl::crypto"]
            server.requires += ["boost::json"] if boost else []
