"""The leak figures of issue 12 (`make leak-figures`): RSS and live objects
over 10,000 compile/reset cycles and 1,000,000 cache hits, with telemetry on
and off.

Runs tests/workloads/leak_cycles.py once per setting (both at once, at
nice 19: the figures are memory, not time), keeps each run's JSON in
--out-dir, and prints one Markdown table of the marks (cycles 1,000, 5,000,
10,000 by default; hits at a tenth, half and all of them).  Per cycle
"since previous" is the growth between two marks divided by the cycles
between them: after the first thousand cycles' one-off settling it is the
steady growth.  `--from DIR` prints the table of runs already made.
"""
import argparse
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
SETTINGS = {"on": "1", "off": "0"}          # DYNAMO_TELEMETRY


def run(out_dir, warmup, cycles, hits, samples):
    os.makedirs(out_dir, exist_ok=True)
    procs = {}
    for name, value in SETTINGS.items():
        env = dict(os.environ, DYNAMO_TELEMETRY=value)
        cmd = ["nice", "-n", "19", sys.executable, os.path.join(HERE, "leak_cycles.py"),
               "--warmup", str(warmup), "--cycles", str(cycles), "--hits", str(hits),
               "--samples", samples]
        out = open(os.path.join(out_dir, f"telemetry-{name}.json"), "w")
        err = open(os.path.join(out_dir, f"telemetry-{name}.log"), "w")
        procs[name] = (subprocess.Popen(cmd, stdout=out, stderr=err, env=env, cwd=ROOT), out, err)
    failed = []
    for name, (p, out, err) in procs.items():
        if p.wait() != 0:
            failed.append(name)
        out.close()
        err.close()
    if failed:
        sys.exit(f"leak_cycles.py failed for telemetry {', '.join(failed)}: see {out_dir}/*.log")


def kb(x):
    return f"{x / 1024:+.2f}"


def table(out_dir):
    lines = ["| telemetry | mark | live objects | per cycle (since start / since previous mark) "
             "| RSS MiB | RSS per cycle, KiB (since start / since previous) "
             "| RSS after malloc_trim per cycle, KiB (since previous) | shm RSS MiB |",
             "|---|---|---:|---|---:|---|---:|---:|"]
    hit_lines = ["| telemetry | hits | live objects per hit | RSS bytes per hit "
                 "| RSS after malloc_trim, bytes per hit |", "|---|---:|---:|---:|---:|"]
    for name in SETTINGS:
        with open(os.path.join(out_dir, f"telemetry-{name}.json")) as f:
            d = json.loads(f.read().strip().splitlines()[-1])
        start = d["start"]
        lines.append(f"| {name} | start (after warm-up) | {start['objects']} | | "
                     f"{start['rss_bytes'] / 2**20:.1f} | | | {start['rss_shmem_bytes'] / 2**20:.2f} |")
        for s in d["samples"]:
            a, s0, sp = s["absolute"], s["per_cycle_since_start"], s["per_cycle_since_previous"]
            lines.append(
                f"| {name} | cycle {s['cycle']:,} | {a['objects']} | "
                f"{s0['objects']:+.4f} / {sp['objects']:+.4f} | {a['rss_bytes'] / 2**20:.1f} | "
                f"{kb(s0['rss_bytes'])} / {kb(sp['rss_bytes'])} | {kb(sp['rss_trim_bytes'])} | "
                f"{a['rss_shmem_bytes'] / 2**20:.2f} |")
        for h in d["hit_samples"]:
            g = h["per_hit_since_start"]
            hit_lines.append(f"| {name} | {h['hits']:,} | {g['objects']:+.6f} | "
                             f"{g['rss_bytes']:+.3f} | {g['rss_trim_bytes']:+.3f} |")
    return "\n".join(lines) + "\n\n" + "\n".join(hit_lines)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out-dir", default=os.path.join(ROOT, "build", "leak-figures"))
    ap.add_argument("--from", dest="from_dir", help="print the table of runs kept in this folder")
    ap.add_argument("--warmup", type=int, default=100)
    ap.add_argument("--cycles", type=int, default=10000)
    ap.add_argument("--hits", type=int, default=1000000)
    ap.add_argument("--samples", default="1000,5000,10000")
    args = ap.parse_args()
    if args.from_dir is None:
        run(args.out_dir, args.warmup, args.cycles, args.hits, args.samples)
    print(table(args.from_dir or args.out_dir))


if __name__ == "__main__":
    main()
