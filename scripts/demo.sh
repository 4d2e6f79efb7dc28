#!/usr/bin/env bash
# Sets up, builds and runs the demo: the wheel itself (example/wheel_demo: idle connections
# reaped), then the service (example/service_demo.py: timewheeld on its embedded SQLite store,
# a receiver verifying signatures, four tasks that finish, retry, die with a completion
# notice, and are cancelled). Everything it starts runs on 127.0.0.1 and is stopped at the end.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j"${JOBS:-2}" --target wheel_demo timewheeld
./build/example/wheel_demo
echo
/usr/bin/python3 example/service_demo.py --timewheeld build/server/timewheeld
