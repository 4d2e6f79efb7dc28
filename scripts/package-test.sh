#!/usr/bin/env bash
# Checks the packaging: installs timewheel (library only) into a temporary prefix, checks the
# installed files (Threads::Threads and -pthread declared), then builds and runs three consumers
# against it:
#   find_package   test_package/ with plain CMake and CMAKE_PREFIX_PATH=<prefix> (and its
#                  timewheel::dq_sqlite consumer when that layer is installed)
#   pkg-config     test_package/test_package.cpp compiled with `pkg-config --cflags --libs`
#   subdirectory   test/consumer_subdirectory/, which uses add_subdirectory(<repo root>)
#   components     test/consumer_components/: find_package(timewheel COMPONENTS dq) brings
#                  timewheel::dq and timewheel::redis (when hiredis is there to build them),
#                  and COMPONENTS dq_sqlite timewheel::dq_sqlite (when SQLite 3 is there too)
#   cron           test/consumer_cron/: find_package(timewheel COMPONENTS cron) brings
#                  timewheel::cron and the date library (when the date library is there)
# and checks what the Conan recipe relies on (Conan itself cannot run in CI):
#   the wheel alone    test_package links nothing of the layers (no hiredis, SQLite, OpenSSL)
#   fPIC               CMAKE_POSITION_INDEPENDENT_CODE decides -fPIC for every library
#   finders            Boost.JSON without its own CMake package (find_library), hiredis from a
#                      CMake package's hiredis::hiredis, and hiredis under its Debug name
#   .deb               when timewheeld was built, its .deb (packaging/): made by CPack from the
#                      same build, read with dpkg-deb, extracted (never installed) and its
#                      binary's --check-config run on the packaged settings; its unit checked
#                      by systemd-analyze when that works here
#   shared             with BUILD_SHARED_LIBS=ON the installed timewheeld starts from its
#                      prefix alone (no library of its own left in the build tree); last, since
#                      it turns the build tree the .deb is made from into a shared one
# Prints PASS/FAIL per step and exits non-zero on any failure. Uses only temporary directories.
# Usage: scripts/package-test.sh            (from anywhere in a clone)
set -euo pipefail
cd "$(dirname "$0")/.."
root="$PWD"
bash scripts/setup.sh pkg-config

jobs="${JOBS:-2}"
tmp="$(mktemp -d "${TMPDIR:-/tmp}/timewheel-package-test.XXXXXX")"
trap 'rm -rf "$tmp"' EXIT
prefix="$tmp/prefix"
failures=0

# run <name> <function>: runs the step with its output in a log, shown only on failure.
# The step runs in a subshell outside any `if`/`&&` context, so that `set -e` stops it at
# its first failing command (bash ignores -e inside a tested command, subshells included).
run() {
  local name="$1" log="$tmp/${2}.log" status started=$SECONDS
  set +e
  ( set -euo pipefail; "$2" ) >"$log" 2>&1
  status=$?
  set -e
  if [ "$status" -eq 0 ]; then
    echo "PASS: $name ($((SECONDS - started)) s)"
  else
    echo "FAIL: $name ($((SECONDS - started)) s)"
    sed 's/^/  | /' "$log" | tail -n 40
    failures=$((failures + 1))
  fi
}

# Plain CMake invocations, isolated from the user's and the system's package registries so
# that only the temporary prefix can provide timewheel.
cmake_configure() {
  cmake -DCMAKE_BUILD_TYPE=Release -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF \
    -DCMAKE_FIND_USE_SYSTEM_PACKAGE_REGISTRY=OFF "$@"
}

install_library() {
  cmake_configure -S "$root" -B "$tmp/build" -DCMAKE_INSTALL_LIBDIR=lib \
    -DTIMEWHEEL_BUILD_TESTS=OFF -DTIMEWHEEL_BUILD_EXAMPLES=OFF -DTIMEWHEEL_BUILD_BENCHMARKS=OFF
  cmake --build "$tmp/build" -j"$jobs"
  # --prefix at install time, as Conan does: the .pc must follow it.
  cmake --install "$tmp/build" --prefix "$prefix"

  local f missing=0
  for f in lib/libtimewheel.a include/timewheel/wheel.hpp \
           lib/cmake/timewheel/timewheelConfig.cmake \
           lib/cmake/timewheel/timewheelConfigVersion.cmake \
           lib/cmake/timewheel/timewheelTargets.cmake lib/pkgconfig/timewheel.pc; do
    [ -f "$prefix/$f" ] || { echo "missing: $f"; missing=1; }
  done
  # Every file under include/ is installed, whatever the lead adds.
  if ! diff <(cd include && find . -type f | sort) <(cd "$prefix/include" && find . -type f | sort); then
    echo "installed include/ differs from the source include/"; missing=1
  fi
  # Nothing installed may point back into the source or build tree.
  if grep -rl -e "$root" -e "$tmp/build" "$prefix/lib/cmake" "$prefix/lib/pkgconfig"; then
    echo "installed package files refer to the source or build tree"; missing=1
  fi
  # Boost.Asio needs the platform threads: the package must say so to its consumers.
  grep -q "Threads::Threads" "$prefix/lib/cmake/timewheel/timewheelTargets.cmake" ||
    { echo "timewheelTargets.cmake does not link Threads::Threads"; missing=1; }
  grep -q "find_dependency(Threads)" "$prefix/lib/cmake/timewheel/timewheelConfig.cmake" ||
    { echo "timewheelConfig.cmake does not find Threads"; missing=1; }
  grep -q "^Libs:.* -pthread" "$prefix/lib/pkgconfig/timewheel.pc" ||
    { echo "timewheel.pc does not link -pthread"; missing=1; }
  grep -q "^prefix=$prefix\$" "$prefix/lib/pkgconfig/timewheel.pc" ||
    { echo "timewheel.pc has the wrong prefix:"; cat "$prefix/lib/pkgconfig/timewheel.pc"; missing=1; }
  [ "$missing" -eq 0 ]
}

consumer_find_package() {
  # And its consumer of a layer, which Conan's test_package builds when the package has it.
  local dq_sqlite=OFF
  [ -f "$prefix/lib/libtimewheel_dq_sqlite.a" ] && dq_sqlite=ON
  cmake_configure -S "$root/test_package" -B "$tmp/test_package" -DCMAKE_PREFIX_PATH="$prefix" \
    -DTEST_PACKAGE_DQ_SQLITE="$dq_sqlite" | tee "$tmp/test_package.configure"
  grep -q "timewheel .* found in $prefix/lib/cmake/timewheel" "$tmp/test_package.configure" ||
    { echo "timewheel was not found in $prefix"; return 1; }
  cmake --build "$tmp/test_package" -j"$jobs"
  "$tmp/test_package/test_package"
  if [ "$dq_sqlite" = ON ]; then
    "$tmp/test_package/test_package_dq_sqlite"
  fi
  # The wheel alone links none of the layers' libraries, neither on its link line nor at run
  # time (the prefix has them all, where the build found hiredis, SQLite and OpenSSL).
  local layers='hiredis|sqlite|libssl|libcrypto|date-tz|timewheel_|-lssl|-lcrypto'
  if grep -E "$layers" "$tmp/test_package/CMakeFiles/test_package.dir/link.txt"; then
    echo "the wheel's consumer links a layer's library (above)"; return 1
  fi
  if ldd "$tmp/test_package/test_package" | grep -E "$layers"; then
    echo "the wheel's consumer loads a layer's library (above)"; return 1
  fi
}

consumer_pkg_config() {
  local flags
  flags="$(PKG_CONFIG_PATH="$prefix/lib/pkgconfig" pkg-config --cflags --libs timewheel)"
  echo "pkg-config --cflags --libs timewheel: $flags"
  # shellcheck disable=SC2086 # the flags are meant to be split
  g++ -std=c++20 -O1 "$root/test_package/test_package.cpp" $flags -o "$tmp/pkg_config_consumer"
  "$tmp/pkg_config_consumer"
}

# Position-independent code by default, but a toolchain's CMAKE_POSITION_INDEPENDENT_CODE
# decides (Conan sets it from the recipe's fPIC option). Configures only, and reads the flags.
position_independent_code() {
  local flags
  cmake_configure -S "$root" -B "$tmp/pic-default" -DTIMEWHEEL_BUILD_TESTS=OFF \
    -DTIMEWHEEL_BUILD_EXAMPLES=OFF >/dev/null
  cmake_configure -S "$root" -B "$tmp/pic-off" -DTIMEWHEEL_BUILD_TESTS=OFF \
    -DTIMEWHEEL_BUILD_EXAMPLES=OFF -DCMAKE_POSITION_INDEPENDENT_CODE=OFF >/dev/null
  # Every library of the package that this machine builds (the layers need their libraries).
  local dir libraries=(CMakeFiles/timewheel.dir)
  for dir in src/redis/CMakeFiles/timewheel_redis.dir src/cron/CMakeFiles/timewheel_cron.dir \
             src/dq/CMakeFiles/timewheel_dq.dir src/dq/sqlite/CMakeFiles/timewheel_dq_sqlite.dir; do
    [ -f "$tmp/pic-default/$dir/flags.make" ] && libraries+=("$dir")
  done
  echo "checked: ${libraries[*]}"
  for dir in "${libraries[@]}"; do
    flags="$tmp/pic-default/$dir/flags.make"
    grep -q -- "-fPIC" "$flags" || { echo "no -fPIC by default:"; cat "$flags"; return 1; }
    flags="$tmp/pic-off/$dir/flags.make"
    if grep -q -- "-fPIC" "$flags"; then
      echo "-fPIC although CMAKE_POSITION_INDEPENDENT_CODE=OFF:"; cat "$flags"; return 1
    fi
  done
}

# A shared build (Conan's shared=True) of timewheeld and the libraries it links, installed:
# timewheeld starts from the prefix with nothing of the build tree on its library path, and
# none of its own libraries (timewheeld_*) is a shared one left behind. The install step's
# build tree, reconfigured with BUILD_SHARED_LIBS=ON: the objects are the same (CMakeLists.txt,
# timewheel_package_library), so this relinks and compiles nothing. Runs last: it removes that
# tree.
shared_server() {
  local shared="$tmp/shared-prefix"
  cmake_configure -S "$root" -B "$tmp/build" -DBUILD_SHARED_LIBS=ON >/dev/null
  cmake --build "$tmp/build" -j"$jobs" --target timewheeld | tee "$tmp/shared-build.log"
  echo "compiled again for the shared build: $(grep -c "Building CXX object" "$tmp/shared-build.log") objects"
  cmake --install "$tmp/build" --prefix "$shared" >/dev/null
  if find "$tmp/build" "$shared" -name 'libtimewheeld_*.so*' | grep .; then
    echo "timewheeld's own libraries are shared (above)"; return 1
  fi
  ls "$shared/lib"/libtimewheel*.so
  # The build tree goes away, so that nothing can be found there by any path.
  rm -rf "$tmp/build"
  env -u LD_LIBRARY_PATH "$shared/bin/timewheeld" --help >"$tmp/shared-help.txt"
  grep -q -- "--store" "$tmp/shared-help.txt" ||
    { echo "timewheeld --help did not list its settings:"; cat "$tmp/shared-help.txt"; return 1; }
  ldd "$shared/bin/timewheeld" | grep "libtimewheel"
  if ldd "$shared/bin/timewheeld" | grep "libtimewheel" | grep -v " => $shared/"; then
    echo "timewheeld loads a library of the package from outside its prefix (above)"; return 1
  fi
}

# How the build finds what Conan provides under other names than Debian: Boost.JSON without
# a boost_json CMake package of its own (find_library), hiredis as a CMake package's
# hiredis::hiredis target (preferred to the library), and hiredis as hiredisd (its Debug
# builds' name). Configures only, and reads what was found.
finders() {
  mkdir -p "$tmp/hiredis-package/lib/cmake/hiredis" "$tmp/hiredisd"
  cat >"$tmp/hiredis-package/lib/cmake/hiredis/hiredis-config.cmake" <<'CMAKE'
find_library(hiredis_stand_in_library hiredis REQUIRED)
add_library(hiredis::hiredis UNKNOWN IMPORTED)
set_target_properties(hiredis::hiredis PROPERTIES IMPORTED_LOCATION "${hiredis_stand_in_library}")
CMAKE
  cmake_configure -S "$root" -B "$tmp/finders" -DTIMEWHEEL_BUILD_TESTS=OFF \
    -DTIMEWHEEL_BUILD_EXAMPLES=OFF -DCMAKE_DISABLE_FIND_PACKAGE_boost_json=ON \
    -DCMAKE_PREFIX_PATH="$tmp/hiredis-package" -DTIMEWHEEL_BUILD_SERVER=ON | tee "$tmp/finders.log"
  grep -q "timewheel: hiredis from its CMake package in $tmp/hiredis-package" "$tmp/finders.log" ||
    { echo "hiredis::hiredis of a CMake package was not preferred"; return 1; }
  grep -q "^TIMEWHEEL_BOOST_JSON_LIBRARY:FILEPATH=.*libboost_json" "$tmp/finders/CMakeCache.txt" ||
    { echo "Boost.JSON was not found by name without its CMake package"; return 1; }
  # And with its CMake package (the install step's build), no library by name.
  if grep "^TIMEWHEEL_BOOST_JSON_LIBRARY:FILEPATH=.*libboost_json" "$tmp/build/CMakeCache.txt"; then
    echo "Boost.JSON was found by name although Boost's CMake package has it"; return 1
  fi

  local hiredis
  hiredis="$(grep "^TIMEWHEEL_HIREDIS_LIBRARY:FILEPATH=" "$tmp/build/CMakeCache.txt" | cut -d= -f2)"
  ln -s "$hiredis" "$tmp/hiredisd/libhiredisd${hiredis##*/libhiredis}"
  cmake_configure -S "$root" -B "$tmp/finders-debug" -DTIMEWHEEL_BUILD_TESTS=OFF \
    -DTIMEWHEEL_BUILD_EXAMPLES=OFF -DCMAKE_LIBRARY_PATH="$tmp/hiredisd" -DTIMEWHEEL_BUILD_REDIS=ON |
    tee "$tmp/finders-debug.log"
  grep -q "timewheel: hiredis is $tmp/hiredisd/libhiredisd" "$tmp/finders-debug.log" ||
    { echo "hiredis was not found under its Debug name hiredisd"; return 1; }
}

consumer_components() {
  local sqlite=OFF
  [ -f "$prefix/lib/libtimewheel_dq_sqlite.a" ] && sqlite=ON
  cmake_configure -S "$root/test/consumer_components" -B "$tmp/components" \
    -DCMAKE_PREFIX_PATH="$prefix" -DCONSUMER_DQ_SQLITE="$sqlite"
  cmake --build "$tmp/components" -j"$jobs"
  "$tmp/components/consumer_components"
  # And the wheel alone loads no layer: timewheel::redis only when asked for.
  grep -q "timewheelRedisTargets" "$prefix/lib/cmake/timewheel/timewheelTargets.cmake" &&
    { echo "timewheelTargets.cmake loads the Redis client"; return 1; }
  return 0
}

consumer_cron() {
  cmake_configure -S "$root/test/consumer_cron" -B "$tmp/cron" -DCMAKE_PREFIX_PATH="$prefix"
  cmake --build "$tmp/cron" -j"$jobs"
  "$tmp/cron/consumer_cron"
  # The wheel alone links no date library.
  grep -q "date" "$prefix/lib/cmake/timewheel/timewheelTargets.cmake" &&
    { echo "timewheelTargets.cmake names the date library"; return 1; }
  return 0
}

consumer_subdirectory() {
  cmake_configure -S "$root/test/consumer_subdirectory" -B "$tmp/subdirectory"
  # The consumer's target only, as a user's build would: what it links (the wheel alone),
  # not every layer of the tree again (the Redis client, the queue, timewheeld: minutes).
  cmake --build "$tmp/subdirectory" -j"$jobs" --target consumer_subdirectory
  if find "$tmp/subdirectory" -name 'libtimewheel_*.a' | grep .; then
    echo "a user of the wheel alone built another layer"; return 1
  fi
  "$tmp/subdirectory/consumer_subdirectory"
}

# The .deb from the build above (CPack), checked without installing it: what it holds and
# declares, the extracted binary on the packaged settings, the unit as systemd reads it.
deb_package() {
  (cd "$tmp/build" && cpack -G DEB -B "$tmp/deb")
  local deb x="$tmp/deb-root" out f status=0
  deb="$(echo "$tmp"/deb/timewheeld_*.deb)"
  [ -f "$deb" ] || { echo "no timewheeld_*.deb in $tmp/deb"; return 1; }
  dpkg-deb --info "$deb" | tee "$tmp/deb.info"
  dpkg-deb --contents "$deb" | tee "$tmp/deb.contents"
  grep -q "^ Package: timewheeld$" "$tmp/deb.info" || { echo "not the timewheeld package"; return 1; }
  # Computed by dpkg-shlibdeps from what the binary links.
  grep -E "^ Depends: .*libsqlite3-0" "$tmp/deb.info" | grep -q "libssl3" ||
    { echo "Depends lacks libsqlite3-0 or libssl3"; return 1; }
  for f in ' ./usr/bin/timewheeld$' ' ./lib/systemd/system/timewheeld.service$' \
           ' ./usr/share/doc/timewheeld/server.md$' ' ./usr/share/doc/timewheeld/copyright$'; do
    grep -q "$f" "$tmp/deb.contents" || { echo "the package lacks$f"; return 1; }
  done
  # The settings hold secrets: root's alone.
  grep -q '^-rw------- root/root .* ./etc/timewheeld/timewheeld.env$' "$tmp/deb.contents" ||
    { echo "timewheeld.env is not -rw------- root/root"; return 1; }
  if grep -E '\.(a|hpp|cmake|pc)$' "$tmp/deb.contents"; then
    echo "the package holds the library's files"; return 1
  fi
  dpkg-deb -e "$deb" "$tmp/deb-control"
  grep -qx /etc/timewheeld/timewheeld.env "$tmp/deb-control/conffiles" ||
    { echo "timewheeld.env is not a conffile"; return 1; }
  [ -x "$tmp/deb-control/postinst" ] || { echo "postinst is not executable"; return 1; }

  dpkg-deb -x "$deb" "$x"
  # The packaged settings, as the unit gives them (EnvironmentFile= is KEY=VALUE lines),
  # but the store in a directory of ours (/var/lib/timewheeld exists under the unit only).
  mkdir "$tmp/deb-state"
  # shellcheck disable=SC1091 # the extracted file
  out="$(set -a; . "$x/etc/timewheeld/timewheeld.env"; set +a
         TIMEWHEELD_STORE="sqlite:$tmp/deb-state/timewheeld.db" "$x/usr/bin/timewheeld" --check-config)"
  echo "$out"
  grep -q -- "--bind = 127.0.0.1 (TIMEWHEELD_BIND)" <<<"$out" ||
    { echo "--check-config did not read the packaged settings"; return 1; }
  grep -q "the configuration is valid" <<<"$out" || { echo "--check-config did not pass"; return 1; }
  # A bad setting: exit 2, naming it.
  out="$(TIMEWHEELD_PORT=eighty "$x/usr/bin/timewheeld" --check-config 2>&1)" || status=$?
  echo "$out"
  if [ "$status" -ne 2 ] || ! grep -q "TIMEWHEELD_PORT" <<<"$out"; then
    echo "a bad TIMEWHEELD_PORT: exit $status, not 2 naming it"; return 1
  fi

  # The unit as systemd reads it, its paths pointed into the extracted tree.
  sed -e "s|/usr/bin/timewheeld|$x/usr/bin/timewheeld|" \
      -e "s|/etc/timewheeld/timewheeld.env|$x/etc/timewheeld/timewheeld.env|" \
      "$x/lib/systemd/system/timewheeld.service" >"$tmp/timewheeld.service"
  printf '[Service]\nExecStart=/bin/true\n' >"$tmp/probe.service"
  if ! command -v systemd-analyze >/dev/null ||
     ! systemd-analyze verify "$tmp/probe.service" >/dev/null 2>&1; then
    echo "SKIP: systemd-analyze verify does not work here"; return 0
  fi
  # verify exits 0 on unknown keys too: any output is a failure.
  out="$(systemd-analyze verify "$tmp/timewheeld.service" 2>&1)"
  [ -z "$out" ] || { echo "systemd-analyze verify: $out"; return 1; }
  # The hardening as systemd scores it (0 best, 10 worst; 1.4 when written): at most 2.0.
  systemd-analyze security --offline=yes --threshold=20 "$tmp/timewheeld.service" | tail -n 1
}

run install install_library
if [ "$failures" -ne 0 ]; then
  echo "package-test: FAIL (install failed; consumers not tried)"
  exit 1
fi
run "consumer find_package (test_package)" consumer_find_package
run "consumer pkg-config" consumer_pkg_config
run "consumer add_subdirectory" consumer_subdirectory
if [ -f "$prefix/lib/libtimewheel_dq.a" ]; then
  run "consumer of the redis and dq components" consumer_components
else
  echo "SKIP: consumer of the redis and dq components (built without hiredis)"
fi
if [ -f "$prefix/lib/libtimewheel_cron.a" ]; then
  run "consumer of the cron component" consumer_cron
else
  echo "SKIP: consumer of the cron component (built without the date library)"
fi
run "position-independent code follows CMAKE_POSITION_INDEPENDENT_CODE" position_independent_code
if [ -x "$tmp/build/server/timewheeld" ] && command -v dpkg-deb >/dev/null; then
  run "the timewheeld .deb (cpack -G DEB, dpkg-deb, --check-config, systemd-analyze)" deb_package
else
  echo "SKIP: the timewheeld .deb (timewheeld not built, or no dpkg-deb)"
fi
if [ -f "$prefix/bin/timewheeld" ]; then
  run "finders: Boost.JSON by name, hiredis::hiredis, hiredisd" finders
  run "shared build: the installed timewheeld starts from its prefix" shared_server
else
  echo "SKIP: shared timewheeld and the finders (built without timewheeld's dependencies)"
fi

if [ "$failures" -ne 0 ]; then
  echo "package-test: FAIL ($failures failed)"
  exit 1
fi
echo "package-test: PASS"
