#!/usr/bin/env bash
# outputs-hash.sh OUTDIR: build this checkout's bursar-sweep, run a matrix of
# command lines (every study, with and without --config, --window, --windows,
# --policies, --shard and merge) into OUTDIR, and write OUTDIR/HASHES: the
# SHA-256 of every output file, with what legitimately differs between two
# builds set aside (a manifest's program, command line, start and wall time;
# a shard file's program; timings printed on stdout).
#
# It checks that a change did not move any output (docs/contributing.md):
#   git stash; scripts/outputs-hash.sh /tmp/before; git stash pop
#   scripts/outputs-hash.sh /tmp/after
#   diff /tmp/before/HASHES /tmp/after/HASHES    # must print nothing
# Only the repository is read: the logs embedded in the binary
# (sdsc-sp2-excerpt, sdsc-sp2), testdata/traces/ and configs/. It takes a
# few minutes on two cores; needs go and python3.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
out=$1
rm -rf "$out"
mkdir -p "$out/bin" "$out/in"
(cd "$repo" && go build -o "$out/bin/" ./cmd/bursar-sweep)
# The inputs by relative path, so that manifests name the same files
# whatever the checkout's folder.
cp "$repo/configs/bucket.yaml" "$repo/configs/trace.yaml" "$repo/testdata/traces/"*.swf "$out/in/"
cd "$out"
B=bin/bursar-sweep
X=in/SDSC-SP2-1998-4.2-cln.days252-280.swf
: > FAILS
r() {
  local name=$1; shift
  mkdir -p "o/$name"
  "$B" "$@" --out "o/$name" > "o/$name/stdout.txt" 2> "o/$name/stderr.txt" || echo "FAIL $name $?" >> FAILS
}
rq() { r "$@" --quiet; }
r run run
r run-fifo run --policy fifo
r run-quota-storms run --policy quota --storms 2 --pool 256
rq paper-quick paper --quick --workers 2
rq compare-quick compare --quick --workers 2
rq sweep sweep --config in/bucket.yaml --quick --workers 2
rq trace trace --workers 2 --jobs
rq trace-window trace --window 21773058:22637058 --policies fifo,bursar,budget --workers 2
rq trace-by-group trace --by group --policies bursar,fifo,fairshare --workers 2
rq trace-file trace --trace "$X" --windows 2x7d --shares window --workers 2
rq trace-bucket trace --trace sdsc-sp2-excerpt --windows 2x7d --bucket hours:24 --policies bursar,fifo --workers 2
rq trace-config trace --config in/trace.yaml --workers 2
rq budget-knobs budget-knobs --trace sdsc-sp2-excerpt --windows 2x7d --workers 2
rq agents-arrive agents-arrive --trace sdsc-sp2-excerpt --windows 2x7d --max-k 2 --nseeds 2 --policies fifo,bursar --jobs --workers 2
# --shard and merge, for a sweep and for a trace study
for s in 0 1; do
  "$B" paper --quick --shard $s/2 --out o/paper-shard --workers 1 > /dev/null 2>&1 || echo "FAIL paper-shard$s" >> FAILS
  "$B" trace --shard $s/2 --out o/trace-shard --workers 1 > /dev/null 2>&1 || echo "FAIL trace-shard$s" >> FAILS
done
"$B" merge o/paper-shard > /dev/null 2>&1 || echo "FAIL merge paper" >> FAILS
"$B" merge o/trace-shard > /dev/null 2>&1 || echo "FAIL merge trace" >> FAILS
"$B" slurm-script --binary /bin/bursar-sweep --workdir /work trace --windows 2x7d > o/slurm-script.txt 2>&1 || echo "FAIL slurm-script" >> FAILS
find o -type f | sort | while read -r f; do
  case "$f" in
    */manifest.json|*/shard-*-of-*.json)
      python3 -c 'import json,sys
m=json.load(open(sys.argv[1]))
for k in ("program","start","wall_seconds","command_line"): m.pop(k,None)
print(json.dumps(m,sort_keys=True))' "$f" | sha256sum | sed "s|-|$f|";;
    */stderr.txt) ;;
    */stdout.txt) sed -E "s/in [0-9.]+ (m?s|min)/in X s/g; s/[0-9.]+ s (wall|of CPU)/X s \1/g" "$f" | sha256sum | sed "s|-|$f|";;
    *) sha256sum "$f";;
  esac
done > HASHES
echo "outputs-hash: $(wc -l < HASHES) files in $out/HASHES; $(wc -l < FAILS) failed command lines"
test ! -s FAILS
