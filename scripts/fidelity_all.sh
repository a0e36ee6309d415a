#!/usr/bin/env bash
# Regenerates results/fidelity/: for each simulated result file, `walbench compare --reference`
# against the published table its config reproduces, as text (<table>.txt, what the command
# prints), JSON (<table>.json, harness/RESULTS.md "Fidelity comparison files") and a plot
# (<table>.png, scripts/plot_fidelity.py); then results/fidelity/totals.txt adds the fidelity
# bar's targets up over every tps table there, on the medians and per repetition (seed)
# (scripts/fidelity_totals.py).
#
# Usage: scripts/fidelity_all.sh [RESULT.json ...]
#   default: every results/*-sim-*.json. Run from anywhere; paths are relative to the repo.
#   WALBENCH=path/to/walbench to use another binary (default build/release/walbench).
#   FIDELITY_OUT=DIR to write the comparisons and totals there (default results/fidelity);
#   REFERENCE_DIR=DIR to take the published tables from there (default ../shared/reference).
#   scripts/fidelity_sensitivity.sh uses both.
#
# The table is found from the result's config file (context.config_files): configs/sim-NAME.json
# reproduces ../shared/reference/NAME.csv; a sim config with no such table whose "fitted" list
# is empty (a setting whose table is kept aside) is skipped with a note; any other missing table
# fails, as does a call that scores no table. Options per table are below. Result files written
# before configs had a `fitted` list get it from their config file (--fitted-from); a result that
# records its own list in context.config is compared with that one.
set -euo pipefail
cd "$(dirname "$0")/.."
walbench=${WALBENCH:-build/release/walbench}
python=/usr/bin/python3
out_dir=${FIDELITY_OUT:-results/fidelity}
reference_dir=${REFERENCE_DIR:-../shared/reference}
[[ -x $walbench ]] || { echo "fidelity_all: no $walbench; build it (cmake --build --preset release --target walbench)" >&2; exit 2; }

if (($# == 0)); then
  shopt -s nullglob
  set -- results/*-sim-*.json
  (($# > 0)) || { echo "fidelity_all: no results/*-sim-*.json" >&2; exit 2; }
fi
[[ -d $reference_dir ]] || { echo "fidelity_all: no directory $reference_dir (REFERENCE_DIR)" >&2; exit 2; }
mkdir -p "$out_dir"

# The one config file a result was run from: context.config_files, or, for a file without that
# key, configs/sim-NAME.json from a name ending in -sim-NAME.json ("" when there is no one file).
config_of() {
  "$python" -c 'import json, os, re, sys
context = json.load(open(sys.argv[1]))["context"]
if "config_files" in context:
    files = context["config_files"]
    print(files[0] if len(files) == 1 else "")
else:
    m = re.search(r"-(sim-.+?)(-[0-9]+)?\.json$", os.path.basename(sys.argv[1]))
    print(f"configs/{m.group(1)}.json" if m else "")' "$1"
}
# Whether the result records a fitted list in context.config.
records_fitted() {
  "$python" -c 'import json, sys
c = json.load(open(sys.argv[1]))["context"].get("config")
configs = c if isinstance(c, list) else [c]
sys.exit(0 if any(isinstance(x, dict) and "fitted" in x for x in configs) else 1)' "$1"
}

# Whether a config fits nothing (an empty "fitted" list): a setting whose table is kept aside.
kept_aside() {
  [[ -f $1 ]] && "$python" -c 'import json, sys; sys.exit(0 if json.load(open(sys.argv[1])).get("fitted", None) == [] else 1)' "$1"
}

status=0
scored=0
for result in "$@"; do
  config=$(config_of "$result")
  name=$(basename "${config:-none}" .json)
  table=${name#sim-}
  reference=$reference_dir/$table.csv
  if [[ -n $config && $name == sim-* && ! -f $reference ]] && kept_aside "$config"; then
    # A setting whose published table is kept aside (its config fits nothing: an empty
    # "fitted" list, e.g. configs/sim-wal-buf-mapping-176core-tmpfs.json): nothing to compare
    # with here; REFERENCE_DIR=DIR holding NAME.csv compares it.
    echo "fidelity_all: $result: no $reference (a setting without a published table here); skipped" >&2
    continue
  fi
  if [[ -z $config || $name != sim-* || ! -f $reference ]]; then
    echo "fidelity_all: $result: its config (${config:-none}) is not configs/sim-NAME.json with a $reference_dir/NAME.csv; skipped" >&2
    status=1
    continue
  fi
  scored=$((scored + 1))
  options=()
  plot_options=()
  case $table in
    insert-locks-fsync-off | insert-locks-64vcpu-disk) plot_options=(--sizes 16,1024,16384) ;;
    # The 2011 table's `tables` column: a file that sweeps workload.tables matches it cell by
    # cell; one whose cells share a kind (files made before the key, 2026-12-06: permanent) is
    # compared on that slice.
    xloginsert-scale-32core)
      kinds=$("$python" -c 'import json, sys; cells = json.load(open(sys.argv[1]))["cells"]; print("swept" if any("workload.tables" in c.get("matrix", {}) for c in cells) else " ".join(sorted({c.get("workload", {}).get("tables", "permanent") for c in cells})))' "$result")
      [[ $kinds == swept ]] || options=(--fix "tables=$kinds") ;;
  esac
  if ! records_fitted "$result"; then
    if [[ -f $config ]]; then
      options+=(--fitted-from "$config")
    else
      echo "fidelity_all: $result: no fitted list recorded and no $config to take one from" >&2
    fi
  fi
  echo "== $result vs $reference ${options[*]}"
  "$walbench" compare "$result" --reference "$reference" "${options[@]}" --json "$out_dir/$table.json" \
    >"$out_dir/$table.txt"
  # A wait-event table (variant,clients,wait_event,samples) is compared as shares; its text and
  # JSON are the comparison, and plot_fidelity.py draws tps curves only.
  if "$python" -c 'import json, sys; sys.exit(0 if json.load(open(sys.argv[1])).get("mode") == "wait_events" else 1)' "$out_dir/$table.json"; then
    rm -f "$out_dir/$table.png"
  else
    "$python" scripts/plot_fidelity.py "$out_dir/$table.json" "$out_dir/$table.png" "${plot_options[@]}"
  fi
done
if ((scored == 0)); then
  echo "fidelity_all: no result had a published table in $reference_dir; $out_dir/totals.txt left as it was" >&2
  exit 1
fi
"$python" scripts/fidelity_totals.py "$out_dir"/*.json -o "$out_dir/totals.txt" || status=1
exit $status
