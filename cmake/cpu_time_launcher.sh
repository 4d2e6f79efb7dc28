#!/bin/sh
# Logs the CPU time (user and system seconds) of each compiler or linker run to the file
# $TIMEWHEEL_CPU_LOG, one line each: "<user> <sys> <wall> <output file>". To see where build
# time goes (CONTRIBUTING.md, "Build time"):
#   TIMEWHEEL_CPU_LOG=/tmp/cpu.log cmake -S . -B build-t \
#     -DCMAKE_CXX_COMPILER_LAUNCHER=$PWD/cmake/cpu_time_launcher.sh \
#     -DCMAKE_CXX_LINKER_LAUNCHER=$PWD/cmake/cpu_time_launcher.sh
#   TIMEWHEEL_CPU_LOG=/tmp/cpu.log cmake --build build-t
#   sort -k1,1nr /tmp/cpu.log | head; awk '{u += $1 + $2} END {print u / 60 " CPU min"}' /tmp/cpu.log
# Without TIMEWHEEL_CPU_LOG it only runs the command.
[ -n "${TIMEWHEEL_CPU_LOG:-}" ] || exec "$@"
out=""
prev=""
for arg in "$@"; do
  [ "$prev" = "-o" ] && out="$arg"
  prev="$arg"
done
exec /usr/bin/time -a -o "$TIMEWHEEL_CPU_LOG" -f "%U %S %e ${out:-?}" "$@"
