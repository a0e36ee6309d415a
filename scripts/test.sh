#!/usr/bin/env bash
# Builds walbench and runs the whole test suite: the conformance suite and the lock tests under
# ThreadSanitizer (preset tsan), then every test of the release build through ctest.
# Usage: scripts/test.sh          (after scripts/setup.sh; uses all cores)
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=$(nproc)

echo "== ThreadSanitizer: conformance suite and locks"
cmake --preset tsan >/dev/null
cmake --build --preset tsan -j "$jobs" --target strategy_tests core_tests
export TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1"
build/tsan/strategy_tests "[conformance]"
build/tsan/core_tests "[locks]"
unset TSAN_OPTIONS

echo "== Release build: all tests"
cmake --preset release >/dev/null
cmake --build --preset release -j "$jobs"
ctest --preset release -j "$jobs"
