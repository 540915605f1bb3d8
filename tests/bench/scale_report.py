#!/usr/bin/env python3
"""Writes what tests/bench/bench_scale.sh measured into doc/performance.md: the machine, one
table per measurement, and a plot (performance-scale.png beside the page, with Debian's
python3-matplotlib; without it the page says how to get it). Only the text between the
"bench_scale" markers is replaced: the rest of the page is written by hand.

    scale_report.py RESULTS.tsv DOC.md
"""
import collections
import os
import statistics
import sys

BEGIN = "<!-- bench_scale: begin (written by tests/bench/scale_report.py) -->"
END = "<!-- bench_scale: end -->"


def read(path):
    rows = collections.defaultdict(list)
    for line in open(path, encoding="utf-8"):
        parts = line.rstrip("\n").split(" ")
        if parts and parts[0]:
            rows[parts[0]].append(parts[1:])
    return rows


def srun_table(rows):
    samples = collections.defaultdict(list)
    for n, tpn, kind, ns in rows["srun"]:
        samples[(int(n), int(tpn), kind)].append(int(ns) / 1e9)
    out = {}
    for (n, tpn, kind), values in samples.items():
        out.setdefault((n, tpn), {})[kind] = (statistics.median(values), len(values))
    return out


def check_table(rows):
    samples = collections.defaultdict(list)
    for n, rpn, wall, ok in rows["check"]:
        samples[(int(n), int(rpn))].append((float(wall), float(ok)))
    return {k: (statistics.median(w for w, _ in v), statistics.median(o for _, o in v), len(v))
            for k, v in samples.items()}


def machine_lines(rows):
    m = {r[0]: " ".join(r[1:]) for r in rows["machine"]}
    loads = collections.defaultdict(dict)
    for n, when, value in rows["load"]:
        loads[int(n)][when] = value
    return m, loads


def markdown(rows):
    m, loads = machine_lines(rows)
    sizes = sorted({int(r[0]) for r in rows["up"]})
    srun = srun_table(rows)
    check = check_table(rows)
    faults = {int(r[0]): (int(r[1]) if r[1].isdigit() else None) for r in rows["fault"]}
    fault_lines = {int(r[0]): " ".join(r[1:]) for r in rows["fault_line"]}
    allreduce = {int(r[0]): (float(r[1]), int(r[2])) for r in rows["allreduce"]}
    up = {int(r[0]): float(r[1]) for r in rows["up"]}
    out = [BEGIN, "",
           f"Measured {m.get('date', '?')} by `tests/bench/bench_scale.sh` on {m.get('cpu', '?')}, "
           f"{m.get('cores', '?')} cores, {m.get('memory_gib', '?')} GiB, Linux {m.get('kernel', '?')}, "
           f"{m.get('slurm', '?')}, torch {m.get('torch', '?')}. Every slurmd, slurmstepd and task of "
           "the N nodes shares these cores, and the machine ran other work meanwhile "
           "(1-minute load average before and after each size: "
           + ", ".join(f"N={n}: {loads[n].get('before', '?')} / {loads[n].get('after', '?')}" for n in sizes)
           + ").", ""]
    out += ["Step launch: medians of `srun -N N --ntasks-per-node=T true` and the same with `--ddp`, "
            "run in interleaved pairs inside one allocation; the ratio is --ddp / plain (aim: at most 1.05).", "",
            "| N | cluster up (s) | 1/node: plain | --ddp | ratio | 8/node: plain | --ddp | ratio |",
            "|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for n in sizes:
        cells = [str(n), f"{up.get(n, float('nan')):.1f}"]
        for tpn in (1, 8):
            s = srun.get((n, tpn), {})
            if "plain" in s and "ddp" in s:
                p, d = s["plain"][0], s["ddp"][0]
                cells += [f"{p:.2f} s", f"{d:.2f} s", f"**{d / p:.3f}** ({s['ddp'][1]} pairs)"]
            else:
                cells += ["-", "-", "-"]
        out.append("| " + " | ".join(cells) + " |")
    out += ["", "ddp-check under `--ddp` (medians of 3): srun's whole wall time / the rendezvous time "
            "ddp-check reports (aim: at most 2 s for 1,024 ranks on 256 nodes); a gloo all-reduce of "
            "N x 1 ranks (contrib/examples/allreduce.py); the longest line of a ddp-check whose ranks "
            "all claim NODE_RANK 0, so that its faults name every node (aim: under 300 characters).", "",
            "| N | ddp-check 1/node (s) | 4/node (s) | gloo all-reduce N x 1 (s) | longest fault line |",
            "|---:|---|---|---|---:|"]
    for n in sizes:
        cells = [str(n)]
        for rpn in (1, 4):
            c = check.get((n, rpn))
            cells.append(f"{c[0]:.2f} / **{c[1]:.3f}** ({n * rpn} ranks)" if c else "-")
        a = allreduce.get(n)
        skipped = [" ".join(r[1:]) for r in rows["skip"] if r[0] == "allreduce" and r[1] == f"{n}:"]
        cells.append(f"{a[0]:.1f} ({a[1]}/{n} ranks right)" if a else ("skipped: " + skipped[0].split(": ", 1)[-1] if skipped else "-"))
        cells.append(f"{faults[n]} chars" if faults.get(n) else "-")
        out.append("| " + " | ".join(cells) + " |")
    out += ["", "ddp-watch, one hung rank (timeout 15 s): seconds from rank 0's last step line to "
            "ddp-watch's return with the verdict, and the verdict's length.", "",
            "| cluster | job | program | stall to verdict (s) | verdict length | names the hung rank and node |",
            "|---:|---:|---|---:|---:|---|"]
    for n, kind, mm, delay, length, named in rows["watch"]:
        prog = "tests/cluster/stall.py (gloo DDP)" if kind == "stall" else "tests/bench/stall_light.py (no torch)"
        out.append(f"| {n} | {mm} x 1 | {prog} | {delay} | {length} | {named} |")
    out += ["", "The verdicts:", ""]
    for r in rows["watch_line"]:
        out.append(f"- {r[2]} ranks: `{' '.join(r[3:])}`")
    out += ["", "The longest ddp-check fault line (every rank claims NODE_RANK 0):", ""]
    for n in sizes:
        if n in fault_lines:
            out.append(f"- N={n}: `{fault_lines[n]}`")
    out += ["", "The no-plugin script (ddpgen with `ddp_plugin: false`) on N - 1 nodes, the second one "
            "excluded so that the node list has a gap:", "",
            "| N | tasks | head node right | distinct ports | SLURM_JOB_NODELIST |", "|---:|---:|---:|---:|---|"]
    for n, mm, tasks, right, ports, *lst in rows["noplugin"]:
        out.append(f"| {mm} | {tasks} | {right} | {ports} | `{' '.join(lst)}` |")
    errors = [" ".join(r) for r in rows["error"]]
    if errors:
        out += ["", "Failed measurements:", ""] + [f"- {e}" for e in errors]
    out += ["", "![srun, srun --ddp and ddp-check against the number of nodes](performance-scale.png)", "", END]
    return "\n".join(out)


def plot(rows, png):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("scale_report.py: no plot: python3-matplotlib is missing (apt-get install python3-matplotlib)",
              file=sys.stderr)
        return False
    srun = srun_table(rows)
    check = check_table(rows)
    fig, (left, middle, right) = plt.subplots(1, 3, figsize=(15, 4.2))
    for tpn, style in ((1, "o"), (8, "s")):
        pts = sorted((n, v["ddp"][0] / v["plain"][0]) for (n, t), v in srun.items()
                     if t == tpn and "ddp" in v and "plain" in v)
        if pts:
            middle.plot([p[0] for p in pts], [p[1] for p in pts], "-" + style, label=f"{tpn}/node")
    middle.axhline(1.05, color="grey", linestyle=":", label="aim 1.05")
    middle.set_title("srun --ddp / plain srun")
    middle.set_ylabel("ratio of medians")
    for tpn, style in ((1, "o"), (8, "s")):
        for kind, line in (("plain", "-"), ("ddp", "--")):
            pts = sorted((n, v[kind][0]) for (n, t), v in srun.items() if t == tpn and kind in v)
            if pts:
                left.plot([p[0] for p in pts], [p[1] for p in pts], line + style,
                          label=f"srun {'--ddp ' if kind == 'ddp' else ''}true, {tpn}/node")
    left.set_title("step launch (median)")
    for rpn, style in ((1, "o"), (4, "s")):
        pts = sorted((n, v[1], v[0]) for (n, r), v in check.items() if r == rpn)
        if pts:
            right.plot([p[0] for p in pts], [p[1] for p in pts], "-" + style, label=f"rendezvous, {rpn}/node")
            right.plot([p[0] for p in pts], [p[2] for p in pts], ":" + style, label=f"whole srun, {rpn}/node")
    right.set_title("ddp-check under --ddp (median)")
    for ax in (left, middle, right):
        ax.set_xscale("log", base=2)
        ax.set_xlabel("nodes")
    for ax in (left, right):
        ax.set_yscale("log")
        ax.set_ylabel("seconds")
    for ax in (left, middle, right):
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(png, dpi=100)
    return True


def main():
    results, doc = sys.argv[1], sys.argv[2]
    rows = read(results)
    block = markdown(rows)
    plot(rows, os.path.join(os.path.dirname(os.path.abspath(doc)), "performance-scale.png"))
    text = open(doc, encoding="utf-8").read() if os.path.exists(doc) else "# Performance\n\n" + BEGIN + "\n" + END + "\n"
    if BEGIN in text and END in text:
        head, rest = text.split(BEGIN, 1)
        tail = rest.split(END, 1)[1]
        text = head + block + tail
    else:
        text = text.rstrip("\n") + "\n\n" + block + "\n"
    with open(doc, "w", encoding="utf-8") as f:
        f.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
