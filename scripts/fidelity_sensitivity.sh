#!/usr/bin/env bash
# How far the fidelity verdict moves when an uncertain simulator constant moves: runs the
# simulated reproductions of the published tps tables with the given overrides and scores them
# as scripts/fidelity_all.sh scores results/ (walbench compare --reference per table, then
# scripts/fidelity_totals.py over all of them), into a directory of its own. Nothing under
# results/ is touched. Hold its totals.txt against results/fidelity/totals.txt: with one seed
# (the configs' default), against that file's row of the same seed; with run.repetitions=3,
# against its medians.
#
# Usage: scripts/fidelity_sensitivity.sh OUT_DIR [--set PATH=VALUE ...] [CONFIG ...]
#   OUT_DIR   a new or empty directory: runs/<config>.json (the result files), <table>.txt,
#             .json and .png (the comparisons), totals.txt (the bar over all tables)
#   --set     passed to every `walbench run` (repeatable), e.g.
#             --set platform.semaphore_post_ns=1000 --set run.repetitions=3
#   CONFIG    configs/sim-NAME.json files (default: every one whose published table
#             $REFERENCE_DIR/NAME.csv has a tps column, the tables results/fidelity/totals.txt adds up)
# Environment: WALBENCH (default build/release/walbench), JOBS (walbench run -j, default the
#   number of cores), REFERENCE_DIR (default ../shared/reference); paths relative to the caller.
# Example: scripts/fidelity_sensitivity.sh /tmp/post2x --set platform.semaphore_post_ns=1000
#   (about 18-19 minutes on 2 cores for the five tables with one seed)
# Exit status: 0 scored; 1 a run or the scoring failed (the message says how to go on);
#   2 bad input, nothing run.
set -euo pipefail
caller_dir=$PWD
# A path given relative to the caller's directory, made absolute (the script works from the repo).
from_caller() { if [[ $1 == /* ]]; then echo "$1"; else echo "$caller_dir/$1"; fi; }
[[ -z ${WALBENCH:-} ]] || WALBENCH=$(from_caller "$WALBENCH")
[[ -z ${REFERENCE_DIR:-} ]] || REFERENCE_DIR=$(from_caller "$REFERENCE_DIR")
cd "$(dirname "$0")/.."
help_text() { sed -n '10,22p' "$0" | sed 's/^# \{0,1\}//'; }
usage() { help_text >&2; exit 2; }
fail() { echo "fidelity_sensitivity: $*" >&2; exit 2; }

walbench=${WALBENCH:-build/release/walbench}
export REFERENCE_DIR=${REFERENCE_DIR:-../shared/reference}
jobs=${JOBS:-$(nproc)}
(($# > 0)) || usage
case $1 in
  -h | --help) help_text; exit 0 ;;
  -*) fail "the first argument is OUT_DIR, a directory; got option $1 (see --help)" ;;
esac
out_dir=$(from_caller "$1")
shift
sets=()
configs=()
while (($# > 0)); do
  case $1 in
    --set)
      (($# > 1)) || fail "--set needs PATH=VALUE"
      [[ $2 == *=* ]] || fail "--set $2: expected PATH=VALUE"
      sets+=(--set "$2")
      shift 2
      ;;
    -h | --help) help_text; exit 0 ;;
    -*) fail "unknown option $1 (see --help)" ;;
    *)
      configs+=("$(from_caller "$1")")
      shift
      ;;
  esac
done

[[ -x $walbench ]] || fail "no $walbench; build it (cmake --build --preset release --target walbench)"

has_tps_column() { head -n 1 "$1" | tr ',' '\n' | grep -qx 'tps'; }
if ((${#configs[@]} == 0)); then
  for config in configs/sim-*.json; do
    name=$(basename "$config" .json)
    reference=$REFERENCE_DIR/${name#sim-}.csv
    [[ -f $reference ]] && has_tps_column "$reference" && configs+=("$config")
  done
  ((${#configs[@]} > 0)) || fail "no configs/sim-*.json has a published tps table in $REFERENCE_DIR"
fi
for config in "${configs[@]}"; do
  name=$(basename "$config" .json)
  [[ -f $config && $name == sim-* ]] || fail "$config: expected a configs/sim-NAME.json file"
  [[ -f $REFERENCE_DIR/${name#sim-}.csv ]] || fail "$config: no published table $REFERENCE_DIR/${name#sim-}.csv"
done

if [[ -e $out_dir ]]; then
  [[ -d $out_dir ]] || fail "$out_dir exists and is not a directory"
  [[ -z $(ls -A "$out_dir") ]] || fail "$out_dir is not empty (choose a new directory)"
fi
mkdir -p "$out_dir/runs"
out_dir=$(cd "$out_dir" && pwd)

results=()
for config in "${configs[@]}"; do
  result=$out_dir/runs/$(basename "$config")
  echo "== $config ${sets[*]}"
  status=0
  "$walbench" run "$config" "${sets[@]}" -q -j "$jobs" -o "$result" || status=$?
  if ((status != 0)); then
    echo "fidelity_sensitivity: $config: walbench run exited $status; nothing scored." >&2
    echo "  Finish it: $walbench run --resume $result (an interrupted run), then run the" >&2
    echo "  configs not yet run into another directory, or score what is there with" >&2
    echo "  FIDELITY_OUT=$out_dir scripts/fidelity_all.sh $out_dir/runs/*.json" >&2
    exit 1
  fi
  results+=("$result")
done
WALBENCH=$walbench FIDELITY_OUT=$out_dir scripts/fidelity_all.sh "${results[@]}" >/dev/null ||
  { echo "fidelity_sensitivity: scoring failed (scripts/fidelity_all.sh, above)" >&2; exit 1; }
echo "== $out_dir/totals.txt"
cat "$out_dir/totals.txt"
