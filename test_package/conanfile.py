import os

from conan import ConanFile
from conan.tools.build import can_run
from conan.tools.cmake import CMake, cmake_layout


class timewheelTestConan(ConanFile):
    settings = "os", "compiler", "build_type", "arch"
    generators = "CMakeDeps", "CMakeToolchain"

    def requirements(self):
        self.requires(self.tested_reference_str)

    def layout(self):
        cmake_layout(self)

    def build(self):
        cmake = CMake(self)
        cmake.configure()
        cmake.build()

    def test(self):
        if can_run(self):
            cmd = os.path.join(self.cpp.build.bindir, "test_package")
            self.run(cmd, env="conanrun")
            # With -o timewheel/*:server=True the package carries timewheeld: it starts and
            # lists its settings (its default store among them).
            timewheel = self.dependencies["timewheel"]
            if timewheel.options.get_safe("server"):
                timewheeld = os.path.join(timewheel.package_folder, "bin", "timewheeld")
                self.run(f'"{timewheeld}" --help', env="conanrun")
