#!/usr/bin/env bash
# The trace study's committed runs on windows of the full logs, and its
# sensitivity to the mapping knobs (README.md "Real traces",
# docs/traces.md): every policy on the default 14-day windows of SDSC-SP2
# and of KTH-SP2 (min(12, ⌊span ÷ 14 d⌋) = 12 on each, the span from 90
# days after the first submit, docs/studies.md §5.1) under the default
# lookback shares, then the SDSC-SP2 windows again under each other
# `shares` rule, the oracles groups and window included (docs/studies.md
# §1, §5), and under Bursar's old `bucket: hours:24`. Each
# run writes its folder under results/trace/, its table (table.txt)
# included: the command writes that file itself.
#
#   scripts/trace-windows.sh [TRACES_DIR]   # default: traces/ (the logs as docs/traces.md downloads them)
#
# Every window starts after the lead-in `trace` chooses by default (26 days
# on SDSC-SP2, 4 on KTH-SP2; docs/studies.md §4.5). Needs bin/bursar-sweep
# (make build). About 65 s of CPU in all (December 2026, run in parallel at
# load ~25): 10.6 s for all policies on SDSC-SP2's 12 windows, 5.6 s on
# KTH-SP2's (docs/traces.md); the policies that read no shares (priority) or
# no bucket (all but bursar) are left out of the sensitivity runs, fifo
# kept as the paired control.
set -euo pipefail
dir=${1:-traces}
sdsc="$dir/SDSC-SP2-1998-4.2-cln.swf.gz"
kth="$dir/KTH-SP2-1996-2.1-cln.swf.gz"
bin=${BURSAR_SWEEP:-bin/bursar-sweep}

run() { # run OUT ARGS…: bursar-sweep trace ARGS… into results/trace/OUT
	local out=results/trace/$1
	shift
	mkdir -p "$out"
	"$bin" trace --windows 14d --quiet --out "$out" "$@"
}

run sdsc-sp2-12x14d --trace "$sdsc"
run kth-sp2-12x14d --trace "$kth"
for s in groups window users equal-groups equal-users; do
	run "shares/$s" --trace "$sdsc" --shares "$s" --policies bursar,fifo,static,static-share,fairshare,quota,quota-fair,budget
done
run shares/bucket-hours24 --trace "$sdsc" --bucket hours:24 --policies bursar,fifo
