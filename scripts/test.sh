#!/usr/bin/env bash
# Builds walbench and runs the whole test suite: the conformance suite, the lock,
# streaming-verifier and CLOG unit tests and two short real-thread runs under ThreadSanitizer
# (preset tsan), then every test of the release build through ctest.
# Usage: scripts/test.sh          (after scripts/setup.sh; uses all cores)
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=$(nproc)

echo "== ThreadSanitizer: conformance suite and locks"
cmake --preset tsan >/dev/null
cmake --build --preset tsan -j "$jobs" --target strategy_tests core_tests walbench
export TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1"
# The conformance suite's real-thread part: its simulated part ([sim]) runs every client as a
# fiber on one OS thread, where TSan sees no data race between clients, and costs most of the
# TSan time (consolidation_array's sim cells alone take minutes there); it runs in the release
# build's ctest. The streaming verifier's own thread is covered by core_tests "[stream]", the
# CLOG's page I/O outside the control lock (readers, committers and evictions racing on the
# SLRU slots) by core_tests "[clog]".
build/tsan/strategy_tests "[conformance]~[sim]"
build/tsan/core_tests "[locks],[stream],[clog]"
echo "== ThreadSanitizer: real-thread runs through the runner (window snapshots, WAL writer, ideal)"
tsan_out=$(mktemp -d)
trap 'rm -rf "$tsan_out"' EXIT
build/tsan/walbench run configs/quick.json -q --set run.duration_s=0.2 --set run.warmup_s=0.1 \
  --set 'matrix.clients=[4]' --set 'matrix.workload.record_size=[16,16384]' -o "$tsan_out/quick.json"
# with the xid lock table (clog.xid_locks, the default, set here so that this run keeps it):
# savepoints enter 1 + 3 xids a transaction
build/tsan/walbench run configs/clog-group-update.json -q --set run.duration_s=0.2 \
  --set run.warmup_s=0.1 --set run.repetitions=1 --set 'matrix.clients=[4]' \
  --set clog.xid_locks=true -o "$tsan_out/clog.json"
# tpcb_like at scale 1: every transaction queues on the one branch row (core/cell/row_locks.h)
build/tsan/walbench run configs/xloginsert-scale.json -q --set run.duration_s=0.2 \
  --set run.warmup_s=0.1 --set run.repetitions=1 --set workload.scale=1 --set 'matrix.clients=[6]' \
  -o "$tsan_out/rowlocks.json"
unset TSAN_OPTIONS

echo "== Release build: all tests"
cmake --preset release >/dev/null
cmake --build --preset release -j "$jobs"
ctest --preset release -j "$jobs"
