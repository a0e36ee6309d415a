#!/usr/bin/env bash
# Regenerates docs/plots/ from the result files: for each results/*.json (or the files named),
#   NAME.png            `walbench plot --usl`: tps against clients per variant and panel, with
#                       each curve's Universal Scalability Law fit
#   NAME-usl.txt        `walbench report --usl`: the fitted lambda, sigma, kappa, N* and R^2
#   NAME-published.png  only for a simulated result whose config reproduces a published tps table
#                       (configs/sim-TABLE.json and ../shared/reference/TABLE.csv, as in
#                       scripts/fidelity_all.sh): `walbench plot --ratio BASELINE --reference`,
#                       each variant in % of the table's first variant, the published ratios dashed
# NAME is the result's file name without .json.
#
# Usage: scripts/plot_results.sh [-o DIR] [RESULT.json ...]
#   default: every results/*.json into docs/plots/. Run from anywhere; paths are relative to the
#   repo. WALBENCH=path/to/walbench to use another binary (default build/release/walbench).
set -euo pipefail
cd "$(dirname "$0")/.."
walbench=${WALBENCH:-build/release/walbench}
python=/usr/bin/python3
out_dir=docs/plots
if [[ ${1:-} == -o ]]; then
  [[ $# -ge 2 ]] || { echo "plot_results: -o needs a directory" >&2; exit 2; }
  out_dir=$2
  shift 2
fi
[[ -x $walbench ]] || { echo "plot_results: no $walbench; build it (cmake --build --preset release --target walbench)" >&2; exit 2; }
if (($# == 0)); then
  shopt -s nullglob
  set -- results/*.json
  (($# > 0)) || { echo "plot_results: no results/*.json" >&2; exit 2; }
fi
mkdir -p "$out_dir"

# The published tps table a result's config reproduces ("" when none): context.config_files
# names configs/sim-TABLE.json and ../shared/reference/TABLE.csv has a tps column.
reference_of() {
  "$python" -c 'import csv, json, os, sys
files = json.load(open(sys.argv[1]))["context"].get("config_files", [])
name = os.path.basename(files[0])[:-len(".json")] if len(files) == 1 and files[0].endswith(".json") else ""
ref = "../shared/reference/" + name[4:] + ".csv" if name.startswith("sim-") else ""
ok = ref and os.path.isfile(ref) and "tps" in next(csv.reader(open(ref)), [])
print(ref if ok else "")' "$1"
}
# The first variant of a reference table: the baseline of its ratios.
first_variant() {
  "$python" -c 'import csv, sys; print(next(csv.DictReader(open(sys.argv[1])))["variant"])' "$1"
}

status=0
for result in "$@"; do
  name=$(basename "$result" .json)
  echo "== $result"
  "$walbench" plot "$result" --usl -o "$out_dir/$name.png" || status=1
  tmp=$(mktemp)
  if "$walbench" report "$result" --usl >"$tmp"; then mv "$tmp" "$out_dir/$name-usl.txt"; else rm -f "$tmp"; status=1; fi
  reference=$(reference_of "$result")
  if [[ -n $reference ]]; then
    "$walbench" plot "$result" --ratio "$(first_variant "$reference")" --reference "$reference" \
      -o "$out_dir/$name-published.png" || status=1
  fi
done
exit $status
