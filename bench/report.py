#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Medians, spreads and ratios of prepop-bench's JSON lines, as a markdown
table, a JSON summary and gnuplot PNGs.

usage: bench/report.py RESULTS_DIR NAME < measurements.jsonl
"""
import json
import os
import re
import statistics
import subprocess
import sys

out_dir, name = sys.argv[1], sys.argv[2]
os.makedirs(out_dir, exist_ok=True)
runs = {}
# What the run was on, as bench/run has the guest say it first: its kernel
# (uname -r) and QEMU's version line
kernel = qemu = None
for line in sys.stdin:
    line = line.strip()
    if qemu is None and "QEMU emulator version" in line:
        qemu = line[line.find("QEMU emulator version"):]
    if kernel is None and re.fullmatch(r"\d+\.\d+\.\d+[-+~.\w]*", line):
        kernel = line
    start = line.find('{"bench": "prepop"')
    if start < 0:
        continue
    r = json.loads(line[start:])
    # A call over pages already there is its own policy: "present"; QEMU
    # locking all its memory too: "mem-lock" ("mem-lock=on-fault"; true in
    # results of before on-fault), and with libvirt's thread contexts
    lock = r.get("mem_lock")
    lock = "on" if lock is True else (lock or "off")
    key = (r["kind"], r["size"],
           r["policy"] + (", present" if r.get("present") else "") +
           {"off": "", "on": ", mem-lock"}.get(lock, ", mem-lock=" + lock) +
           (", thread contexts" if r.get("thread_contexts") else ""),
           r["method"], r["threads"], r.get("regions", 1))
    runs.setdefault(key, []).append(r)

summary = []
for key, rs in sorted(runs.items()):
    kind, size, policy, method, threads, regions = key
    secs = sorted(r["seconds"] for r in rs)
    med = statistics.median(secs)
    nodes = max(rs, key=lambda r: sum(r["node_pages"]))["node_pages"]
    # The same in every run, or each node's least..most
    per_run = [tuple(r["node_pages"]) for r in rs]
    width = max(len(p) for p in per_run)
    per_run = [p + (0,) * (width - len(p)) for p in per_run]
    same_nodes = len(set(per_run)) == 1
    summary.append({
        "kind": kind, "size": size, "policy": policy, "method": method,
        "threads": threads, "regions": regions, "runs": len(secs),
        "median_s": med,
        "min_s": secs[0], "max_s": secs[-1],
        "gbps": size / med / 1e9 if med > 0 else 0.0,
        "node_pages": nodes,
        "node_pages_every_run": same_nodes,
        "node_pages_min": [min(p[n] for p in per_run) for n in range(width)],
        "node_pages_max": [max(p[n] for p in per_run) for n in range(width)],
        # Each repetition's seconds, for ratios paired within a repetition
        "by_rep": {r["rep"]: r["seconds"] for r in rs if "rep" in r},
    })
    # QEMU: its time to ready without preallocation, and what it locked
    if "startup" in rs[0]:
        summary[-1]["startup_s"] = statistics.median(r["startup"]
                                                     for r in rs)
        summary[-1]["vmlck_kb"] = statistics.median(r["vmlck_kb"]
                                                    for r in rs)
        if "locked_kb" in rs[0]:
            summary[-1]["locked_kb"] = statistics.median(r["locked_kb"]
                                                         for r in rs)
            summary[-1]["locked_kb_min"] = min(r["locked_kb"] for r in rs)
            summary[-1]["locked_kb_max"] = max(r["locked_kb"] for r in rs)


def find(kind, size, policy, method, threads, regions=None):
    for s in summary:
        if (s["kind"], s["size"], s["policy"], s["method"],
                s["threads"]) == (kind, size, policy, method, threads) and \
                regions in (None, s["regions"]):
            return s
    return None


def paired(a, b):
    """b / a per repetition both ran in (the methods alternate within a
    repetition, so the two share its state of the machine): median and
    quartiles, or None for fewer than 4 repetitions."""
    reps = sorted(set(a["by_rep"]) & set(b["by_rep"]))
    rs = sorted(b["by_rep"][i] / a["by_rep"][i] for i in reps
                if a["by_rep"][i] > 0)
    if len(rs) < 4:
        return None
    q = statistics.quantiles(rs, n=4)
    return (statistics.median(rs), q[0], q[2], len(rs))


def node_cell(s):
    if s["node_pages_every_run"]:
        return ", ".join(str(n) for n in s["node_pages"])
    return ", ".join("%d..%d" % (a, b) for a, b in zip(s["node_pages_min"],
                                                       s["node_pages_max"]))


def label(s):
    m = s["method"]
    name = m if m in ("touch", "madvise", "map_populate", "mlock",
                      "work") else "%s:%d" % (m, s["threads"])
    if "startup_s" in s:
        name += " (startup %.3f s, VmLck %d MiB" % (s["startup_s"],
                                                    s["vmlck_kb"] / 1024)
        if "locked_kb" in s and s["locked_kb_min"] == s["locked_kb_max"]:
            name += ", backends Locked %d MiB in every run" % (
                s["locked_kb"] / 1024)
        elif "locked_kb" in s:
            name += ", backends Locked %d..%d MiB" % (
                s["locked_kb_min"] / 1024, s["locked_kb_max"] / 1024)
        name += ")"
    return name if s["regions"] == 1 else "%s, %d regions" % (
        name, s["regions"])


lines = ["# prepop-bench: %s" % name, "",
         "Medians of %s runs per cell, methods alternated in one run; "
         "GB/s = size / median. Spread: min..max seconds. Pages per node: "
         "the same in every run, else each node's least..most." %
         ", ".join(sorted({str(s["runs"]) for s in summary})), ""]
if kernel or qemu:
    lines += ["On %s." % "; ".join(
        x for x in ("kernel " + kernel if kernel else None, qemu) if x),
        ""]
for kind in ("4k", "thp", "2m"):
    rows = [s for s in summary if s["kind"] == kind]
    if not rows:
        continue
    lines += ["## %s pages" % kind, "",
              "| size | policy | method | median s | min..max s | GB/s "
              "| pages per node |", "|---|---|---|---|---|---|---|"]
    for s in rows:
        lines.append("| %d MiB | %s | %s | %.4f | %.4f..%.4f | %.2f | %s |" % (
            s["size"] >> 20, s["policy"], label(s), s["median_s"],
            s["min_s"], s["max_s"], s["gbps"], node_cell(s)))
    lines.append("")

# The targets, as ratios within this run
ratios = []


def add_ratio(name, kind, size, pol, value, target, pair=None):
    """A ratio of medians, its target, and its paired form where it has one"""
    ratios.append((name, kind, size, pol, value, target, pair))


sizes = sorted({s["size"] for s in summary})
policies = sorted({s["policy"] for s in summary})
for kind in ("4k", "thp", "2m"):
    for size in sizes:
        for pol in policies:
            for n in (1, 2, 4, 8):
                fb, qm = (find(kind, size, pol, "fallback", n),
                          find(kind, size, pol, "qemu", n))
                if fb and qm and qm["median_s"] > 0:
                    add_ratio("fallback:%d vs qemu:%d" % (n, n), kind,
                              size, pol, qm["median_s"] / fb["median_s"],
                              1.0)
                mo = find(kind, size, pol, "module", n)
                if mo and fb:
                    add_ratio("module:%d vs fallback:%d" % (n, n), kind,
                              size, pol, fb["median_s"] / mo["median_s"],
                              1.0, paired(mo, fb))
            # QEMU with the series against stock QEMU, whole and less
            # each binary's own startup
            for n in (1, 2, 4, 8):
                st, mp = (find(kind, size, pol, "qemu-stock", n),
                          find(kind, size, pol, "qemu-mpp", n))
                if st and mp and mp["median_s"] > 0:
                    add_ratio("qemu-mpp:%d vs qemu-stock:%d, time to "
                              "ready" % (n, n), kind, size, pol,
                              st["median_s"] / mp["median_s"], 1.0)
                    hs, hm = (find(kind, size, pol, "qemu-stock-hot", n),
                              find(kind, size, pol, "qemu-mpp-hot", n))
                    if hs and hm and hm["median_s"] > 0:
                        add_ratio("qemu-mpp-hot:%d vs qemu-stock-hot:%d,"
                                  " object_add after mem-lock" % (n, n),
                                  kind, size, pol,
                                  hs["median_s"] / hm["median_s"],
                                  # seed 001's margin, where pages
                                  # are moved: on several nodes
                                  2.0 if len(hs["node_pages"]) > 1
                                  else None)
                    a = st["median_s"] - st["startup_s"]
                    b = mp["median_s"] - mp["startup_s"]
                    if b > 0:
                        add_ratio("qemu-mpp:%d vs qemu-stock:%d, less "
                                  "startup" % (n, n), kind, size, pol,
                                  a / b, None)
            # A stock QEMU populated from outside (-S, the tool, cont)
            # against its own prealloc: time from exec to running
            for n in (1, 2, 4, 8):
                rm = find(kind, size, pol, "qemu-remote", n)
                for k in (1, 2, 4, 8):
                    st = find(kind, size, pol, "qemu-stock", k)
                    if rm and st and rm["median_s"] > 0:
                        add_ratio("qemu-remote:%d vs qemu-stock:%d, "
                                  "exec to running" % (n, k), kind,
                                  size, pol,
                                  st["median_s"] / rm["median_s"],
                                  None)
            m1, m2 = (find(kind, size, pol, "module", 1),
                      find(kind, size, pol, "module", 2))
            if m1 and m2:
                add_ratio("module:2 vs module:1", kind, size, pol,
                          m1["median_s"] / m2["median_s"], 1.7)
            # A VM's regions: one call against one call per region
            for n in (1, 2, 4, 8):
                for be in ("module", "fallback"):
                    one, each = (find(kind, size, pol, be + "-ctx", n),
                                 find(kind, size, pol, be + "-each", n))
                    if one and each and one["median_s"] > 0:
                        add_ratio("%s-each:%d vs %s-ctx:%d (%d regions)"
                                  % (be, n, be, n, one["regions"]),
                                  kind, size, pol,
                                  each["median_s"] / one["median_s"],
                                  1.7, paired(one, each))
                    # Small calls: the latency against madvise's
                    md = find(kind, size, pol, "madvise", 1)
                    small = 1.5 if size <= 2 << 20 else 1.2
                    if "present" in pol:
                        small = None
                    for how, target in (("-ctx", small), ("-fresh", None)):
                        c = find(kind, size, pol, be + how, n)
                        if c and md and md["median_s"] > 0 and \
                                size <= 64 << 20:
                            add_ratio("%s%s:%d latency / madvise" %
                                      (be, how, n), kind, size, pol,
                                      c["median_s"] / md["median_s"],
                                      -target if target else None,
                                      paired(md, c))
                    # In the background while the caller works
                    bg, alone, work = (find(kind, size, pol, be + "-bg", n),
                                       find(kind, size, pol, be + "-ctx", n),
                                       find(kind, size, pol, "work", 1))
                    if bg and alone and work and alone["median_s"] > 0:
                        longer = max(alone["median_s"], work["median_s"])
                        add_ratio("%s-bg:%d both done / longer of the "
                                  "two" % (be, n), kind, size, pol,
                                  bg["median_s"] / longer, -1.1)
            if kind == "thp":
                pops = [s for s in summary if s["kind"] == "thp" and
                        s["size"] == size and s["policy"] == pol and
                        s["method"] in ("fallback", "module")]
                ms = [s for s in summary if s["kind"] == "thp" and
                      s["size"] == size and s["policy"] == pol and
                      s["method"] == "memset"]
                if pops and ms:
                    best = max(pops, key=lambda s: s["gbps"])
                    bw = max(ms, key=lambda s: s["gbps"])
                    add_ratio("THP %s vs memset:%d bandwidth" %
                              (label(best), bw["threads"]), kind, size,
                              pol, best["gbps"] / bw["gbps"], 0.5)
if ratios:
    lines += ["## Targets (ratios measured in this run)", "",
              "Ratio: of the medians. Paired: the median (quartiles) of the "
              "ratio within each repetition, where the two methods ran "
              "one after the other.", "",
              "| comparison | kind | size | policy | ratio | paired "
              "| target | met |",
              "|---|---|---|---|---|---|---|---|"]
    # A negative target is an upper bound, None none: for reference
    for what, kind, size, pol, ratio, target, pair in ratios:
        if target is None:
            want, met = "-", "-"
        elif target < 0:
            want, met = "<= %.2f" % -target, ratio <= -target
        else:
            want, met = ">= %.2f" % target, ratio >= target
        if met in (True, False):
            met = "yes" if met else "**no**"
        pcell = "-" if pair is None else "%.3f (%.3f..%.3f, %d)" % pair
        lines.append("| %s | %s | %d MiB | %s | %.3f | %s | %s | %s |" % (
            what, kind, size >> 20, pol, ratio, pcell, want, met))
    lines.append("")
touch = [s for s in summary if s["kind"] == "4k" and s["method"] == "touch"]
if touch:
    t = max(touch, key=lambda s: s["size"])
    lines += ["Single page fault (one thread touching 4 KiB pages, %d MiB): "
              "%.3f us per fault." % (t["size"] >> 20,
                                      t["median_s"] / (t["size"] / 4096) * 1e6),
              ""]

with open(os.path.join(out_dir, name + ".md"), "w") as f:
    f.write("\n".join(lines))
with open(os.path.join(out_dir, name + ".json"), "w") as f:
    json.dump({"summary": summary, "ratios": [
        {"comparison": r[0], "kind": r[1], "size": r[2], "policy": r[3],
         "ratio": r[4], "target": r[5],
         "paired": None if r[6] is None else {
             "median": r[6][0], "q1": r[6][1], "q3": r[6][2],
             "reps": r[6][3]}} for r in ratios]}, f, indent=1)


def plot(tag, title, xlabel, rows, xkey, series, extra=""):
    """One PNG: GB/s against xkey, a line per series(row)."""
    names = sorted({series(s) for s in rows})
    data = os.path.join(out_dir, "%s-%s.dat" % (name, tag))
    with open(data, "w") as f:
        for n in names:
            f.write("\"%s\"\n" % n)
            for s in sorted((s for s in rows if series(s) == n), key=xkey):
                f.write("%d %.4f\n" % (xkey(s), s["gbps"]))
            f.write("\n\n")
    png = os.path.join(out_dir, "%s-%s.png" % (name, tag))
    script = ("set terminal png size 900,560 noenhanced; set output '%s';"
              "set title '%s'; set xlabel '%s'; set ylabel 'GB/s';"
              "%s set key outside; set grid; plot for [i=0:%d] '%s' "
              "index i using 1:2 with linespoints title columnheader(1)" %
              (png, title, xlabel, extra, len(names) - 1, data))
    subprocess.run(["gnuplot", "-e", script], check=False)


for kind in ("4k", "thp", "2m"):
    # GB/s against size, one line per method
    rows = [s for s in summary if s["kind"] == kind and
            s["policy"] == policies[0] and s["regions"] == 1]
    if len({s["size"] for s in rows}) >= 2:
        plot(kind, "populate %s pages (%s)" % (kind, name), "size (MiB)",
             rows, lambda s: s["size"] >> 20, label, "set logscale x 2;")
    # GB/s against threads at the largest size, one line per method
    rows = [s for s in rows if s["size"] == sizes[-1] and s["method"] in
            ("qemu", "fallback", "module", "memset")]
    if len({s["threads"] for s in rows}) >= 2:
        plot(kind + "-threads", "populate %d MiB of %s pages (%s)" %
             (sizes[-1] >> 20, kind, name), "threads or workers", rows,
             lambda s: s["threads"], lambda s: s["method"], "set xtics 1;")
# The VMM scenarios: one bar chart of medians per group of one run
vmm = ("-ctx", "-each", "-bg", "-fresh", "-stock", "-mpp")
groups = {}
for s in summary:
    groups.setdefault((s["kind"], s["size"], s["policy"], s["regions"]),
                      []).append(s)
for (kind, size, pol, regions), rows in sorted(groups.items()):
    if not any(r["method"].endswith(vmm) for r in rows):
        continue
    tag = "%s-%dM-%s-%dr" % (kind, size >> 20,
                             pol.replace(", ", "-").replace(" ", "-"), regions)
    data = os.path.join(out_dir, "%s-%s.dat" % (name, tag))
    with open(data, "w") as f:
        for r in sorted(rows, key=lambda r: r["median_s"]):
            f.write("\"%s\" %.6f\n" % (label(r), r["median_s"] * 1e3))
    png = os.path.join(out_dir, "%s-%s.png" % (name, tag))
    script = ("set terminal png size 900,480 noenhanced; set output '%s';"
              "set title '%d MiB of %s pages, %s, %d region(s) (%s)';"
              "set ylabel 'median ms'; set style fill solid 0.6;"
              "set boxwidth 0.7; set xtics rotate by -30; set grid y;"
              "set yrange [0:*]; plot '%s' using 0:2:xtic(1) with boxes "
              "notitle" % (png, size >> 20, kind, pol, regions, name, data))
    subprocess.run(["gnuplot", "-e", script], check=False)
print("\n".join(lines))
