#!/usr/bin/env bash
# The Slurm scripts (ctest slurm_scripts): `bash -n` on each, then scripts/slurm/submit.sh run
# against a stand-in `sbatch` that runs each job at once, here. No Slurm controller is available
# offline (with a real sbatch nothing beyond the syntax check can be tested without a cluster),
# so the stand-in checks what the scripts ask of Slurm, not Slurm itself: submit.sh submits an
# array --array=1-N and a merge with --dependency=afterok:<array id>; each task, given the
# variables Slurm sets for an array task (SLURM_ARRAY_TASK_ID/_COUNT/_MIN/_MAX/_STEP), runs its
# shard; the merge job merges the N files into a file with every cell in index order. It also
# checks that a task refuses an array with a step, which would skip shards.
# Usage: tests/slurm_scripts_test.sh WALBENCH_BINARY SOURCE_DIR
set -euo pipefail
walbench=$1
src=$2
for f in "$src"/scripts/slurm/*.sbatch "$src"/scripts/slurm/*.sh; do
  bash -n "$f" || { echo "slurm_scripts_test: $f: syntax error" >&2; exit 1; }
done
command -v python3 >/dev/null || { echo "slurm_scripts_test: python3 is needed" >&2; exit 1; }

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir "$work/bin"
# The stand-in: sbatch [--parsable] [--array=A-B] [--dependency=afterok:ID] SCRIPT ARGS...
# Job ids count from 1000; a job whose afterok dependency failed never runs (as in Slurm,
# where it stays pending).
cat >"$work/bin/sbatch" <<'SBATCH'
#!/usr/bin/env bash
set -euo pipefail
state=$SBATCH_STANDIN_DIR
echo "sbatch $*" >>"$state/sbatch.log"
array="" dependency=""
while [[ $1 == --* ]]; do
  case $1 in
    --parsable) ;;
    --array=*) array=${1#--array=} ;;
    --dependency=afterok:*) dependency=${1#--dependency=afterok:} ;;
    *) echo "sbatch stand-in: unexpected option $1" >&2; exit 1 ;;
  esac
  shift
done
id=$(($(cat "$state/next_id" 2>/dev/null || echo 1000) + 1))
echo "$id" >"$state/next_id"
if [ -n "$dependency" ] && [ -e "$state/failed-$dependency" ]; then
  echo "$id"; exit 0
fi
if [ -n "$array" ]; then
  lo=${array%-*} hi=${array#*-}
  for ((t = lo; t <= hi; t++)); do
    SLURM_ARRAY_JOB_ID=$id SLURM_ARRAY_TASK_ID=$t SLURM_ARRAY_TASK_COUNT=$((hi - lo + 1)) \
      SLURM_ARRAY_TASK_MIN=$lo SLURM_ARRAY_TASK_MAX=$hi SLURM_ARRAY_TASK_STEP=1 \
      bash "$@" >>"$state/job-$id.out" 2>&1 || touch "$state/failed-$id"
  done
else
  SLURM_JOB_ID=$id bash "$@" >>"$state/job-$id.out" 2>&1 || touch "$state/failed-$id"
fi
echo "$id"
SBATCH
chmod +x "$work/bin/sbatch"
export SBATCH_STANDIN_DIR=$work PATH="$work/bin:$PATH" WALBENCH=$walbench

cd "$work"
sets=(--set platform.kind=sim --set run.duration_s=0.02 --set run.warmup_s=0.005
      --set 'matrix.clients=[1,4]' --set 'matrix.workload.record_size=[16,1024]' -q -j 1)
cp "$src/configs/quick.json" quick.json
"$src/scripts/slurm/submit.sh" quick.json 3 "${sets[@]}" >submit.txt
cat submit.txt
grep -q -- "--parsable --array=1-3 .*walbench-array.sbatch quick.json results/quick-shards\." sbatch.log ||
  { echo "slurm_scripts_test: no array submission in: $(cat sbatch.log)" >&2; exit 1; }
grep -q -- "--parsable --dependency=afterok:1001 .*walbench-merge.sbatch results/quick-shards\.[^ ]* results/quick-slurm-1001.json 3" sbatch.log ||
  { echo "slurm_scripts_test: no merge submission after the array in: $(cat sbatch.log)" >&2; exit 1; }
[ ! -e failed-1001 ] && [ ! -e failed-1002 ] ||
  { echo "slurm_scripts_test: a job failed:" >&2; cat job-*.out >&2; exit 1; }
python3 - results/quick-slurm-1001.json <<'PY'
import json, sys
doc = json.load(open(sys.argv[1]))
assert [c["index"] for c in doc["cells"]] == list(range(16)), "cells not 0..15 in order"
assert [s["k"] for s in doc["context"]["merge"]["shards"]] == [1, 2, 3]
PY
"$walbench" report results/quick-slurm-1001.json >/dev/null

# An array with a step would skip shards: the task refuses it.
set +e
SLURM_ARRAY_TASK_ID=3 SLURM_ARRAY_TASK_COUNT=2 SLURM_ARRAY_TASK_MIN=1 SLURM_ARRAY_TASK_MAX=3 \
  SLURM_ARRAY_TASK_STEP=2 bash "$src/scripts/slurm/walbench-array.sbatch" quick.json stepped \
  "${sets[@]}" 2>step.txt
rc=$?
set -e
[ "$rc" -eq 2 ] && grep -q "one range with step 1" step.txt && [ ! -e stepped ] ||
  { echo "slurm_scripts_test: a stepped array was not refused (rc $rc): $(cat step.txt)" >&2; exit 1; }
echo "slurm_scripts_test: syntax ok; submit.sh -> array 1-3 + afterok merge -> 16 cells"
