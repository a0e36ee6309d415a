#!/usr/bin/env bash
# Regenerates results/ from the code in the working tree: every config that has a result file
# there is run again into results/<date>-<host>-<config>.json (the default name; the old files
# of those configs are removed once the new one is written), then scripts/fidelity_all.sh
# rewrites results/fidelity/. Real-thread configs run one at a time (run this on a quiet
# machine: their tps are measurements); simulated ones run -j JOBS at a time (virtual time: the
# machine's load does not change them). The `--set` overrides the newest old file of a config was
# run with (context.overrides) are given again, so a file made with, say, run.repetitions=3 (three
# seeds on the simulator) is remade with three; OVERRIDES="KEY=VALUE ..." replaces them for every
# config of this call (OVERRIDES="" runs the configs as they are; values split at whitespace).
# A config's old files are the results/*.json whose context.config_files is that config alone.
#
# Usage: scripts/rerun_results.sh [--sim-only | --threads-only] [CONFIG ...]
#   default: every configs/*.json that a results/*.json was made from.
#   WALBENCH=path/to/walbench (default build/release/walbench); JOBS (default 2);
#   OVERRIDES="run.repetitions=3" (default: each config's recorded overrides).
set -euo pipefail
cd "$(dirname "$0")/.."
walbench=${WALBENCH:-build/release/walbench}
jobs=${JOBS:-2}
python=/usr/bin/python3
only=""
case ${1:-} in --sim-only|--threads-only) only=$1; shift ;; esac
[[ -x $walbench ]] || { echo "rerun_results: no $walbench; build it first" >&2; exit 2; }

if (($# == 0)); then
  mapfile -t configs < <("$python" - <<'PY'
import glob, json
seen = []
for path in sorted(glob.glob("results/*.json")):
    files = json.load(open(path)).get("context", {}).get("config_files", [])
    for f in files:
        if f not in seen:
            seen.append(f)
print("\n".join(seen))
PY
)
else
  configs=("$@")
fi

is_sim() { "$python" -c 'import json, sys; sys.exit(0 if json.load(open(sys.argv[1])).get("platform", {}).get("kind") == "sim" else 1)' "$1"; }

status=0
for config in "${configs[@]}"; do
  [[ -f $config ]] || { echo "rerun_results: $config: no such config; skipped" >&2; status=1; continue; }
  if is_sim "$config"; then [[ $only == --threads-only ]] && continue; else [[ $only == --sim-only ]] && continue; fi
  name=$(basename "$config" .json)
  # The config's old files: those whose context.config_files is this config alone (a name
  # pattern would also take postgres-quick's for quick), oldest first by context.date.
  old_text=$("$python" - "$config" <<'PY'
import glob, json, os, sys
config = os.path.normpath(sys.argv[1])
found = []
for path in glob.glob("results/*.json"):
    context = json.load(open(path)).get("context", {})
    if [os.path.normpath(f) for f in context.get("config_files", [])] == [config]:
        found.append((context.get("date", ""), path))
print("\n".join(path for _, path in sorted(found)))
PY
)
  old=()
  [[ -n $old_text ]] && mapfile -t old <<<"$old_text"
  sets=()
  if [[ -v OVERRIDES ]]; then
    read -ra given <<<"$OVERRIDES"
    for o in "${given[@]}"; do sets+=(--set "$o"); done
  elif ((${#old[@]} > 0)); then
    # Under set -e a failing command substitution ends the script (a failing process
    # substitution would not: the config would silently run without its overrides).
    recorded_text=$("$python" -c 'import json, sys; print("\n".join(json.load(open(sys.argv[1]))["context"].get("overrides") or []))' "${old[-1]}")
    mapfile -t recorded <<<"$recorded_text"
    for o in "${recorded[@]}"; do
      [[ -n $o ]] || continue
      # A recorded dsn has its password removed (harness/postgres_config.cc): replaying it would
      # replace the config's dsn with a password-less one.
      if [[ $o == platform.dsn=* ]]; then
        echo "rerun_results: $config: the recorded $o is not replayed (its password was removed); give it in OVERRIDES" >&2
        continue
      fi
      sets+=(--set "$o")
    done
  fi
  echo "rerun_results: $config ${sets[*]}"
  tmp=$(mktemp --suffix=.json)
  rm -f "$tmp"
  if "$walbench" run "$config" "${sets[@]}" -q -j "$jobs" -o "$tmp"; then
    # --ignore-unmatch: a file an earlier rerun already unstaged is no error (under set -e a
    # failing git rm ended the script silently, the new file left in $tmp).
    for f in "${old[@]}"; do
      if [[ -f $f ]]; then git rm -q --cached --ignore-unmatch "$f"; fi
      rm -f "$f"
    done
    day=$(date -u +%F)
    host=$("$python" -c 'import json, sys; print(json.load(open(sys.argv[1]))["context"]["host"])' "$tmp" 2>/dev/null || hostname -s)
    mv "$tmp" "results/$day-$host-$name.json"
  else
    echo "rerun_results: $config: walbench run failed (its file kept at $tmp)" >&2
    status=1
  fi
done
[[ $only == --threads-only ]] || scripts/fidelity_all.sh || status=1
exit $status
