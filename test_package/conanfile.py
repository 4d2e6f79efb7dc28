import os
import subprocess

from conan import ConanFile
from conan.errors import ConanException
from conan.tools.build import can_run
from conan.tools.cmake import CMake, CMakeToolchain, cmake_layout
from conan.tools.files import load


class timewheelTestConan(ConanFile):
    settings = "os", "compiler", "build_type", "arch"
    generators = "CMakeDeps"

    def requirements(self):
        self.requires(self.tested_reference_str)

    def layout(self):
        cmake_layout(self)

    def _has(self, option):
        return bool(self.dependencies["timewheel"].options.get_safe(option))

    def generate(self):
        tc = CMakeToolchain(self)
        tc.cache_variables["TEST_PACKAGE_DQ_SQLITE"] = self._has("dq_sqlite")
        tc.generate()

    def build(self):
        cmake = CMake(self)
        cmake.configure()
        cmake.build()

    def test(self):
        if not can_run(self):
            return
        cmd = os.path.join(self.cpp.build.bindir, "test_package")
        self.run(cmd, env="conanrun")
        # The wheel alone links none of the layers' libraries (timewheel::timewheel is the
        # wheel's component, not the package-wide target): neither on its link line (static
        # libraries too; Makefiles keep it in link.txt) nor as a shared library it loads.
        if self.settings.os == "Linux":
            seen = subprocess.run(["readelf", "-d", cmd], capture_output=True, text=True,
                                  check=True).stdout
            link = os.path.join(self.build_folder, "CMakeFiles", "test_package.dir", "link.txt")
            if os.path.exists(link):
                seen += load(self, link)
            for lib in ["hiredis", "sqlite3", "libssl", "libcrypto", "date-tz", "timewheel_"]:
                if lib in seen:
                    raise ConanException(f"test_package (the wheel alone) links {lib}:\n{seen}")
        if self._has("dq_sqlite"):
            self.run(os.path.join(self.cpp.build.bindir, "test_package_dq_sqlite"),
                     env="conanrun")
        # With -o timewheel/*:server=True the package carries timewheeld: it starts and
        # lists its settings (its default store among them).
        if self._has("server"):
            timewheeld = os.path.join(self.dependencies["timewheel"].package_folder, "bin",
                                      "timewheeld")
            self.run(f'"{timewheeld}" --help', env="conanrun")
