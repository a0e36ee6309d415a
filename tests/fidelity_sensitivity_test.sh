#!/usr/bin/env bash
# scripts/fidelity_sensitivity.sh end to end (ctest fidelity_sensitivity): with a stand-in
# reference directory holding one tps table and one wait-event table, the default picks only the
# config of the tps table, runs it with the overrides (recorded in the result file and applied
# to every cell), scores it into the output directory (comparison, totals) and leaves
# results/fidelity alone; bad input (a non-empty output directory, a --set without a value, a
# config with no published table, an option where OUT_DIR goes, an unknown option) exits 2 with
# a message naming it and runs nothing; --help prints the usage and exits 0; a failing run
# exits 1 unscored with a message saying how to go on.
# Usage: tests/fidelity_sensitivity_test.sh WALBENCH_BINARY SOURCE_DIR
set -euo pipefail
walbench=$1
src=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
script=$src/scripts/fidelity_sensitivity.sh
export WALBENCH=$walbench JOBS=1 REFERENCE_DIR=$work/reference
fail() { echo "fidelity_sensitivity_test: $*" >&2; exit 1; }

mkdir -p "$REFERENCE_DIR"
{
  echo "variant,tables,clients,tps"
  for c in 1:630:612 8:4574:4576 24:11614:12924 32:10685:14168; do
    IFS=: read -r clients single patch <<<"$c"
    echo "single_lock,permanent,$clients,$single"
    echo "xloginsert_scale_patch_2011,permanent,$clients,$patch"
  done
} >"$REFERENCE_DIR/xloginsert-scale-32core.csv"
printf 'variant,workload,clients,wait_event,samples\nclog_exclusive,simple_update,64,Client:ClientRead,10\n' \
  >"$REFERENCE_DIR/clog-group-update-wait-events-128core.csv"

totals_before=$(cksum <"$src/results/fidelity/totals.txt")
out=$work/out
"$script" "$out" --set run.duration_s=0.05 --set run.warmup_s=0.02 \
  --set 'matrix.clients=[1,8,24,32]' --set platform.semaphore_post_ns=1000 >"$work/log" 2>&1 ||
  { cat "$work/log" >&2; fail "the run failed"; }

[[ $(ls "$out/runs") == sim-xloginsert-scale-32core.json ]] ||
  fail "expected only the tps table's config to run, got: $(ls "$out/runs")"
python3 - "$out/runs/sim-xloginsert-scale-32core.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
overrides = d["context"]["overrides"]
assert "platform.semaphore_post_ns=1000" in overrides, overrides
cells = d["cells"]
assert len(cells) == 16 and all(c["ok"] for c in cells), (len(cells), [c.get("error") for c in cells])  # 4 client counts x 2 variants x permanent, unlogged
assert all(c["platform"]["sim"]["semaphore_post_ns"] == 1000 for c in cells)
PY
[[ -s $out/xloginsert-scale-32core.json && -s $out/xloginsert-scale-32core.txt ]] ||
  fail "no comparison of the table in $out"
grep -q '^xloginsert-scale-32core ' "$out/totals.txt" || fail "totals.txt lacks the table: $(cat "$out/totals.txt")"
grep -q 'peaks within 2x' "$out/totals.txt" || fail "totals.txt has no targets"
[[ $(cksum <"$src/results/fidelity/totals.txt") == "$totals_before" ]] || fail "results/fidelity/totals.txt changed"

# Bad input: exit 2, a message naming what is wrong, nothing run.
expect_refusal() {
  local pattern=$1
  shift
  local status=0
  "$script" "$@" >"$work/err" 2>&1 || status=$?
  [[ $status == 2 ]] || fail "$* exited $status, expected 2: $(cat "$work/err")"
  grep -q -- "$pattern" "$work/err" || fail "$*: message lacks '$pattern': $(cat "$work/err")"
}
expect_refusal "is not empty" "$out"
expect_refusal "expected PATH=VALUE" "$work/new1" --set run.duration_s
expect_refusal "no published table" "$work/new2" "$src/configs/sim-insert-locks-fsync-off.json"
expect_refusal "Usage:"
expect_refusal "the first argument is OUT_DIR" --set run.duration_s=1 "$work/new3"
expect_refusal "unknown option --bogus" "$work/new4" --bogus
[[ ! -e $work/new1 && ! -e $work/new2 && ! -e $work/new3 && ! -e $work/new4 ]] ||
  fail "a refused call created its output directory"
(cd "$work" && "$script" --help >"$work/help") || fail "--help exited non-zero"
grep -q "^Usage:" "$work/help" || fail "--help printed no usage on stdout"
[[ ! -e $work/--help ]] || fail "--help was taken for OUT_DIR"
(cd "$work" && WALBENCH=/nonexistent/walbench "$script" --help >"$work/help-unbuilt") ||
  fail "--help without a built walbench exited non-zero"
grep -q "^Usage:" "$work/help-unbuilt" || fail "--help without a built walbench printed no usage"
# A run that fails: exit 1, nothing scored, the message says how to go on.
printf '#!/bin/sh\nexit 1\n' >"$work/failing-walbench"
chmod +x "$work/failing-walbench"
status=0
WALBENCH=$work/failing-walbench "$script" "$work/new5" >"$work/err" 2>&1 || status=$?
[[ $status == 1 ]] || fail "a failing run exited $status, expected 1: $(cat "$work/err")"
grep -q "nothing scored" "$work/err" && grep -q -- "--resume" "$work/err" ||
  fail "a failing run's message lacks what to do: $(cat "$work/err")"
[[ ! -e $work/new5/totals.txt ]] || fail "a failing run was scored"
echo "fidelity_sensitivity_test: ok"
