#!/usr/bin/env bash
# Installs what timewheel needs on Debian 12. Idempotent: when every package is present it
# only checks, in well under a second. Extra package names may be given as arguments.
set -euo pipefail

packages=(g++ clang clang-format cmake make libboost1.81-dev libboost-test1.81-dev libbenchmark-dev
          libhiredis-dev libsqlite3-dev libboost-json1.81-dev libssl-dev redis-server redis-tools
          faketime
          libhowardhinnant-date-dev # time zones for timewheel::cron (the system's tzdata)
          ninja-build lld # the build and the linker of scripts/test.sh
          libclang-rt-14-dev # libFuzzer, for scripts/fuzz.sh (the fuzz targets of fuzz/)
          chromium chromium-driver python3-selenium # the dashboard in a browser (test/browser/)
          prometheus # promtool and a real Prometheus for monitoring/'s alerts (test/monitoring/)
          python3-yaml python3-jsonschema # the OpenAPI document's JSON and contract test (test/openapi/)
          python3-pip python3-setuptools # `pip install ./clients/python`, checked by test/clients/python/
          "$@")

# One dpkg-query for all of them: a package is missing unless listed as installed.
installed="$(dpkg-query -W -f='${Package} ${Status}\n' "${packages[@]}" 2>/dev/null |
  sed -n 's/^\([^ ]*\) install ok installed$/\1/p')" || true
missing=()
for p in "${packages[@]}"; do
  grep -qx -- "${p%%:*}" <<<"$installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

echo "setup: installing ${missing[*]}"
sudo=""
[ "$(id -u)" -ne 0 ] && sudo="sudo"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
# The tests start Prometheus themselves, on 127.0.0.1; the package's own service (on every
# interface, :9090) is not wanted on a build machine.
if [[ " ${missing[*]} " == *" prometheus "* ]] && [ -d /run/systemd/system ]; then
  $sudo systemctl disable --now prometheus || true
fi
