#!/usr/bin/env python3
"""FCFS + EASY on an SWF log, straightforwardly, for a speed comparison.

A single-threaded reading of docs/studies.md §2.1 and §3 in plain Python
(standard library only), written to time `bursar-sweep trace --policy fifo`
against (issue 21 item 6; docs/traces.md gives the figures). It reads the
log itself (plain or gzipped), keeps the jobs §3 keeps (run time > 0,
processors > 0 and at most the header's MaxProcs; processors = requested,
or allocated where requested is missing), replays them event by event, and
prints the jobs' wait and bounded-slowdown statistics, which match the Go
replay's (`trace.ReplayEASY`) to the second.

    python3 scripts/fcfs_easy.py LOG.swf[.gz]
"""
import gzip
import heapq
import sys


def read(path):
    opener = gzip.open if path.endswith(".gz") else open
    pool = None
    jobs = []
    with opener(path, "rt") as f:
        for line in f:
            line = line.strip()
            if not line:
                continue
            if line.startswith(";"):
                key, _, val = line[1:].partition(":")
                if key.strip() == "MaxProcs":
                    pool = int(val.split()[0])
                continue
            x = line.split()
            number, submit, run = int(x[0]), int(x[1]), int(x[3])
            alloc, req, reqtime = int(x[4]), int(x[7]), int(x[8])
            procs = req if req > 0 else alloc
            if run <= 0 or procs <= 0 or procs > pool:
                continue
            jobs.append((submit, number, run, max(reqtime, run), procs))
    jobs.sort()
    return pool, jobs


def replay(pool, jobs):
    """Each job's start under FCFS + EASY (§2.1)."""
    n = len(jobs)
    start = [0] * n
    ends = []  # heap of (real end, job)
    running = {}  # job -> (estimated end, gpus)
    queue = []
    free = pool
    nxt = 0
    t = jobs[0][0]
    while True:
        # (1) ends at or before t
        while ends and ends[0][0] <= t:
            _, j = heapq.heappop(ends)
            free += jobs[j][4]
            del running[j]
        # (2) arrivals at or before t
        while nxt < n and jobs[nxt][0] <= t:
            queue.append(nxt)
            nxt += 1

        def launch(j):
            nonlocal free
            start[j] = t
            free -= jobs[j][4]
            running[j] = (t + jobs[j][3], jobs[j][4])
            heapq.heappush(ends, (t + jobs[j][2], j))

        # (3) the head starts while it fits
        while queue and jobs[queue[0]][4] <= free:
            launch(queue.pop(0))
        # (4) one EASY pass: the head's shadow time and extra GPUs
        if queue:
            head = jobs[queue[0]][4]
            est = sorted(running.values())
            avail, shadow, extra = free, None, 0
            i = 0
            while i < len(est):
                e = est[i][0]
                while i < len(est) and est[i][0] == e:
                    avail += est[i][1]
                    i += 1
                if avail >= head:
                    shadow, extra = e, avail - head
                    break
            rest = queue[:1]
            for j in queue[1:]:
                g = jobs[j][4]
                if g <= free and t + jobs[j][3] <= shadow:
                    launch(j)
                elif g <= free and g <= extra:
                    extra -= g
                    launch(j)
                else:
                    rest.append(j)
            queue = rest
        # the next event
        tn = None
        if nxt < n:
            tn = jobs[nxt][0]
        if ends and (tn is None or ends[0][0] < tn):
            tn = ends[0][0]
        if tn is None:
            return start
        t = tn


def pct(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(p / 100 * len(xs)))]


def main():
    pool, jobs = read(sys.argv[1])
    start = replay(pool, jobs)
    waits = [start[i] - j[0] for i, j in enumerate(jobs)]
    bslds = [max(1.0, (w + j[2]) / max(j[2], 10)) for w, j in zip(waits, jobs)]
    n = len(jobs)
    last = max(s + j[2] for s, j in zip(start, jobs))
    held = sum(j[4] * j[2] for j in jobs)
    print(f"jobs {n}  pool {pool}")
    print(f"wait: mean {sum(waits) / n:.3f} s  p50 {pct(waits, 50)} s  p95 {pct(waits, 95)} s")
    print(f"bounded slowdown: mean {sum(bslds) / n:.4f}  p95 {pct(bslds, 95):.4f}")
    print(f"makespan {last - jobs[0][0]} s  utilization {held / (pool * (last - jobs[0][0])):.4f}")


if __name__ == "__main__":
    main()
