"""The leak figures of issue 12 (`make leak-figures`): RSS, heap bytes in use
and live objects over 10,000 compile/reset cycles and 1,000,000 cache hits,
with telemetry on and off.

Runs tests/workloads/leak_cycles.py four times at once, as separate
processes: the cycles and the hits of each setting (DYNAMO_TELEMETRY=1/0),
each with one torch thread (OMP_NUM_THREADS=1: four processes share the
machine).  Needs python3 with torch and the built extension only:

    PYTHONPATH=. python3 tests/workloads/leak_figures.py --out-dir DIR

writes into DIR `figures.json` (the four runs' results) and `figures.md`
(the tables), plus one `.log` per run with its progress marks; prints the
tables.  Per cycle "since previous" is the growth between two marks divided
by the cycles between them: after the first thousand cycles' one-off
settling it is the steady growth.  `heap used` is the bytes malloc has out
(mallinfo2): a leak grows it; RSS after malloc_trim also moves with page
and mapping granularity (see leak_cycles.py).

`--deadline S` stops runs still going after S seconds and tabulates what
their progress marks reached (the figures of a command with a time limit).
`--nice N` lowers the runs' priority (`make leak-figures` uses 19).
`--from DIR` prints the tables of runs already made.

Cost of the work: on the 2-core development machine (python 3.11, torch
2.13, CPU time) one cycle ~33 ms, one hit ~23 us; on a 16-core Xeon (python
3.12.3, torch 2.11, the four runs at once) one cycle 22 ms with telemetry,
18 ms without, so 10,000 cycles take ~4 min and 1,000,000 hits ~35 s: the
whole command ends within ~5 min there.
"""
import argparse
import json
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
SETTINGS = {"on": "1", "off": "0"}          # DYNAMO_TELEMETRY
PHASES = ("cycles", "hits")


def _progress(log_path):
    """The cycle marks a run printed to its log (one JSON line each)."""
    samples = []
    try:
        with open(log_path) as f:
            for line in f:
                if line.startswith("{"):
                    try:
                        samples.append(json.loads(line))
                    except ValueError:
                        pass        # a line cut short by a kill
    except OSError:
        pass
    return samples


def run(out_dir, warmup, cycles, hits, samples, deadline, niceness):
    os.makedirs(out_dir, exist_ok=True)
    procs = {}
    start = time.monotonic()
    for name, value in SETTINGS.items():
        env = dict(os.environ, DYNAMO_TELEMETRY=value, OMP_NUM_THREADS="1")
        for phase in PHASES:
            cmd = [sys.executable, os.path.join(HERE, "leak_cycles.py"), "--phase", phase,
                   "--warmup", str(warmup), "--cycles", str(cycles), "--hits", str(hits),
                   "--samples", samples]
            key = f"{phase}-{name}"
            out = open(os.path.join(out_dir, f"{key}.json.tmp"), "w")
            err = open(os.path.join(out_dir, f"{key}.log"), "w")
            pre = (lambda: os.nice(niceness)) if niceness else None
            procs[key] = (subprocess.Popen(cmd, stdout=out, stderr=err, env=env, cwd=ROOT,
                                           preexec_fn=pre), out, err)
    results = {}
    for key, (p, out, err) in procs.items():
        left = None if deadline is None else max(deadline - (time.monotonic() - start), 0.1)
        try:
            rc = p.wait(timeout=left)
        except subprocess.TimeoutExpired:
            p.kill()
            rc = p.wait()
            rc = "killed at the deadline"
        out.close()
        err.close()
        tmp = os.path.join(out_dir, f"{key}.json.tmp")
        with open(tmp) as f:
            lines = f.read().strip().splitlines()
        os.remove(tmp)
        if rc == 0 and lines:
            results[key] = json.loads(lines[-1])
        else:
            results[key] = {"failed": str(rc), "phase": key.split("-")[0],
                            "samples": _progress(os.path.join(out_dir, f"{key}.log"))}
    results["_run"] = {"warmup": warmup, "cycles": cycles, "hits": hits, "samples": samples,
                       "wall_s": time.monotonic() - start, "python": sys.version.split()[0]}
    with open(os.path.join(out_dir, "figures.json"), "w") as f:
        json.dump(results, f, indent=1)
    return results


def kb(x):
    return f"{x / 1024:+.2f}"


def table(results):
    lines = ["| telemetry | mark | s | live objects | per cycle (since start / since previous) "
             "| RSS MiB | RSS per cycle, KiB (since start / since previous) "
             "| RSS after malloc_trim per cycle, KiB (since previous) "
             "| heap used per cycle, B (since previous) | py blocks per cycle (since previous) "
             "| shm RSS MiB | telemetry blob KiB |",
             "|---|---|---:|---:|---|---:|---|---:|---:|---:|---:|---:|"]
    hit_lines = ["| telemetry | hits | live objects per hit | RSS bytes per hit "
                 "| RSS after malloc_trim, bytes per hit | heap used, bytes per hit "
                 "| us per hit |", "|---|---:|---:|---:|---:|---:|---:|"]
    notes = []
    for name in SETTINGS:
        d = results.get(f"cycles-{name}", {})
        if "failed" in d:
            notes.append(f"- cycles, telemetry {name}: run {d['failed']}; marks it reached below")
        start = d.get("start")
        if start:
            lines.append(f"| {name} | start (after warm-up) | | {start['objects']} | | "
                         f"{start['rss_bytes'] / 2**20:.1f} | | | | | "
                         f"{start['rss_shmem_bytes'] / 2**20:.2f} | "
                         f"{start['tele_blob_bytes'] / 1024:.0f} |")
        for s in d.get("samples", []):
            a, s0, sp = s["absolute"], s["per_cycle_since_start"], s["per_cycle_since_previous"]
            lines.append(
                f"| {name} | cycle {s['cycle']:,} | {s.get('elapsed_s', 0):.0f} | {a['objects']} | "
                f"{s0['objects']:+.4f} / {sp['objects']:+.4f} | {a['rss_bytes'] / 2**20:.1f} | "
                f"{kb(s0['rss_bytes'])} / {kb(sp['rss_bytes'])} | {kb(sp['rss_trim_bytes'])} | "
                f"{sp.get('heap_used_bytes', 0):+.1f} | {sp.get('py_blocks', 0):+.3f} | "
                f"{a['rss_shmem_bytes'] / 2**20:.2f} | {a['tele_blob_bytes'] / 1024:.0f} |")
        if "cycle_s" in d:
            notes.append(f"- cycles, telemetry {name}: {d['cycle_s'] * 1e3:.1f} ms per cycle "
                         f"({d.get('cycle_cpu_s', 0) * 1e3:.1f} ms CPU; python "
                         f"{d.get('python', '?')}, torch {d.get('torch', '?')})")
        h = results.get(f"hits-{name}", {})
        if "failed" in h:
            notes.append(f"- hits, telemetry {name}: run {h['failed']}")
        if "hit_s" in h:
            notes.append(f"- hits, telemetry {name}: {h['hit_s'] * 1e6:.1f} us per hit "
                         f"({h.get('hit_cpu_s', 0) * 1e6:.1f} us CPU)")
        for s in h.get("hit_samples", []):
            g = s["per_hit_since_start"]
            hit_lines.append(f"| {name} | {s['hits']:,} | {g['objects']:+.6f} | "
                             f"{g['rss_bytes']:+.3f} | {g['rss_trim_bytes']:+.3f} | "
                             f"{g.get('heap_used_bytes', 0):+.3f} | "
                             f"{h.get('hit_s', 0) * 1e6:.1f} |")
    run_info = results.get("_run", {})
    head = (f"warm-up {run_info.get('warmup')} cycles, then {run_info.get('cycles'):,} cycles; "
            f"{run_info.get('hits'):,} hits; wall {run_info.get('wall_s', 0):.0f} s\n\n"
            if run_info else "")
    return (head + "\n".join(lines) + "\n\n" + "\n".join(hit_lines)
            + ("\n\n" + "\n".join(notes) if notes else "") + "\n")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out-dir", default=os.path.join(ROOT, "build", "leak-figures"))
    ap.add_argument("--from", dest="from_dir", help="print the tables of runs kept in this folder")
    ap.add_argument("--warmup", type=int, default=100)
    ap.add_argument("--cycles", type=int, default=10000)
    ap.add_argument("--hits", type=int, default=1000000)
    ap.add_argument("--samples", default="1000,2000,5000,10000")
    ap.add_argument("--deadline", type=float, default=None,
                    help="seconds after which runs still going are stopped (their marks so far "
                         "are tabulated)")
    ap.add_argument("--nice", type=int, default=0, help="niceness of the runs (default 0)")
    args = ap.parse_args()
    if args.from_dir is None:
        results = run(args.out_dir, args.warmup, args.cycles, args.hits, args.samples,
                      args.deadline, args.nice)
        text = table(results)
        with open(os.path.join(args.out_dir, "figures.md"), "w") as f:
            f.write(text)
    else:
        with open(os.path.join(args.from_dir, "figures.json")) as f:
            text = table(json.load(f))
    print(text)
    failed = [k for k, v in (results if args.from_dir is None else {}).items()
              if isinstance(v, dict) and "failed" in v]
    if failed:
        sys.exit(f"leak_cycles.py did not finish for {', '.join(failed)}: see the .log files")


if __name__ == "__main__":
    main()
