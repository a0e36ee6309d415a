#!/usr/bin/env bash
# Submits a walbench matrix to Slurm as N shards and a merge (README "Sharded runs on several
# machines"): a job array of walbench-array.sbatch, then walbench-merge.sbatch with
# --dependency=afterok on the array. Prints both job ids and where the merged file will be.
#
# Usage: scripts/slurm/submit.sh CONFIG N [walbench run options, e.g. --set run.repetitions=3]
# Run it from the directory CONFIG's path is relative to, on a file system the nodes share.
# Shard files go to a new directory results/<config>-shards.XXXXXX, the merged file to
# results/<config>-slurm-<array job id>.json. Environment: WALBENCH (the binary; default this
# repository's build/release/walbench), and sbatch's own SBATCH_* variables (SBATCH_PARTITION,
# SBATCH_ACCOUNT, SBATCH_TIMELIMIT, ...) for both jobs.
set -euo pipefail

if [ $# -lt 2 ] || ! [[ $2 =~ ^[1-9][0-9]*$ ]]; then
  echo "submit.sh: usage: scripts/slurm/submit.sh CONFIG N [walbench run options] (N: shards, >= 1)" >&2
  exit 2
fi
config=$1
n=$2
shift 2
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
export WALBENCH=${WALBENCH:-$(cd "$here/../.." && pwd)/build/release/walbench}
[ -x "$WALBENCH" ] || { echo "submit.sh: $WALBENCH is not an executable (build it, or set WALBENCH)" >&2; exit 2; }
[ -r "$config" ] || { echo "submit.sh: cannot read config $config" >&2; exit 2; }
# A bad config or --set fails here, once, rather than in every task.
sets=()
args=("$@")
for ((i = 0; i < ${#args[@]}; i++)); do
  case ${args[i]} in
    --set) sets+=(--set "${args[i + 1]:-}"); i=$((i + 1)) ;;
    --set=*) sets+=("${args[i]}") ;;
  esac
done
"$WALBENCH" validate "$config" "${sets[@]}" >/dev/null

stem=$(basename "$config" .json)
mkdir -p results
outdir=$(mktemp -d "results/$stem-shards.XXXXXX")
# --parsable prints "jobid" or "jobid;cluster".
array=$(sbatch --parsable --array="1-$n" "$here/walbench-array.sbatch" "$config" "$outdir" "$@")
array=${array%%;*}
out="results/$stem-slurm-$array.json"
merge=$(sbatch --parsable --dependency="afterok:$array" "$here/walbench-merge.sbatch" "$outdir" "$out" "$n")
merge=${merge%%;*}
echo "submit.sh: array job $array ($n shards -> $outdir/), merge job $merge -> $out"
