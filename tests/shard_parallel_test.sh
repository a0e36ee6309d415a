#!/usr/bin/env bash
# Sharded runs end to end (ctest shard_parallel): three shards of a small simulated matrix run
# at once through GNU parallel, `walbench merge` puts them together, and the merged file holds
# exactly the cells of the unsharded run (simulated cells are deterministic, so equal means
# identical JSON), reports the same table, compares with it and reruns a cell identically. Merging two of the three shards must fail with
# one line naming the missing cell.
# Usage: tests/shard_parallel_test.sh WALBENCH_BINARY SOURCE_DIR
set -euo pipefail
walbench=$1
src=$2
command -v parallel >/dev/null ||
  { echo "shard_parallel_test: GNU parallel is not installed (scripts/setup.sh installs it)" >&2; exit 1; }
command -v python3 >/dev/null || { echo "shard_parallel_test: python3 is needed" >&2; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"

# 16 cells: 4 strategies x 2 client counts x 2 record sizes, on the simulator.
sets=(--set platform.kind=sim --set run.duration_s=0.02 --set run.warmup_s=0.005
      --set 'matrix.clients=[1,4]' --set 'matrix.workload.record_size=[16,1024]')
config="$src/configs/quick.json"

"$walbench" run "$config" "${sets[@]}" -q -j 1 -o full.json >/dev/null
parallel --will-cite --halt now,fail=1 -j 3 \
  "$walbench" run "$config" "${sets[@]}" -q -j 1 --shard {}/3 -o shard-{}.json '>' /dev/null \
  ::: 1 2 3
"$walbench" merge shard-3.json shard-1.json shard-2.json -o merged.json

python3 - full.json merged.json <<'PY'
import json, sys
full, merged = (json.load(open(p)) for p in sys.argv[1:3])
assert len(full["cells"]) == 16, f"the unsharded run has {len(full['cells'])} cells, expected 16"
assert [c["index"] for c in merged["cells"]] == list(range(16)), "merged cells not in index order"
for a, b in zip(full["cells"], merged["cells"]):
    assert a == b, f"cell {a['index']} ({a['label']} clients={a['clients']}) differs after the merge"
shards = merged["context"]["merge"]["shards"]
assert [s["k"] for s in shards] == [1, 2, 3] and all(s["n"] == 3 for s in shards), shards
assert sorted(i for s in shards for i in s["cells"]) == list(range(16)), shards
assert "shard" not in merged["context"], "a merged file is no shard"
for key in ("config_hash", "config", "git_sha", "build"):
    assert merged["context"][key] == full["context"][key], f"context.{key} differs"
PY

diff <("$walbench" report full.json) <("$walbench" report merged.json)
"$walbench" compare full.json merged.json >/dev/null
"$walbench" rerun merged.json --cell 5 -q -j 1 -o rerun5.json >/dev/null
python3 - full.json rerun5.json <<'PY'
import json, sys
full, rerun = (json.load(open(p)) for p in sys.argv[1:3])
assert rerun["cells"] == [full["cells"][5]], "cell 5 rerun from the merged file differs"
PY

set +e
"$walbench" merge shard-1.json shard-2.json -o partial.json 2>err.txt
rc=$?
set -e
[ "$rc" -eq 2 ] || { echo "merging 2 of 3 shards: exit status $rc, expected 2" >&2; exit 1; }
[ "$(wc -l <err.txt)" -eq 1 ] && grep -q "cell 2 of 16 is missing" err.txt ||
  { echo "merging 2 of 3 shards: unexpected message: $(cat err.txt)" >&2; exit 1; }
[ ! -e partial.json ] || { echo "a refused merge left partial.json behind" >&2; exit 1; }
echo "shard_parallel_test: 3 shards through GNU parallel, merged = the unsharded run (16 cells)"
