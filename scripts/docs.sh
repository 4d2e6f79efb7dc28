#!/usr/bin/env bash
# Builds the API reference with Doxygen (into build-docs/html); fails on any warning.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh doxygen
doxygen docs/Doxyfile
echo "docs: build-docs/html/index.html"
