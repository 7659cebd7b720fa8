"""Issue 29's must-show runs in one time box, spread over the machine's
cores: the differential fuzzer in static and in dynamic mode
(tests/fuzz/fuzz.py) and the soak (tests/workloads/soak.py, 8 threads x
1,000,000 calls with recompiles and resets from finalizers), side by side.

    python3 tests/fuzz/reliability.py --out DIR [--budget-s 480] [--seed S]
                                      [--soak-calls 1000000] [--soak-threads 8]
                                      [--soak-reset-every 125000] [--no-soak]

The soak takes one core (its threads share the GIL); the other cores are
split between the two fuzz runs (static seeds from S, dynamic seeds from
S + 50,000,000, so two modes never share a seed). Every run stops starting
work at the budget (fuzz: --deadline-s; soak: --deadline-s) and is cut off
at most 60 s later; the soak's summary says whether all its calls ran.
Writes DIR/fuzz-static.json, DIR/fuzz-dynamic.json, DIR/soak.json (the
runs' summaries), their logs (*.log) and minimized reproducers
(DIR/fuzz-failures-*/), and prints the totals; the last line is one JSON
object of them. Exit status 0 when no run found a mismatch, timeout,
crash or error and the soak completed. Needs the extension built for the
python running it (`make ext PYTHON=python3 VENV=none`). A tool, not a test.
"""
import argparse
import json
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
DYNAMIC_SEED_OFFSET = 50_000_000


def _load(path):
    try:
        with open(path) as fh:
            text = fh.read().strip()
        return json.loads(text)
    except (OSError, ValueError):
        return None


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--budget-s", type=float, default=480.0,
                    help="no fuzz program or soak call starts after this many seconds")
    ap.add_argument("--seed", type=int, default=20_000_000, help="first static seed")
    ap.add_argument("--soak-calls", type=int, default=1_000_000)
    ap.add_argument("--soak-threads", type=int, default=8)
    ap.add_argument("--soak-reset-every", type=int, default=125_000)
    ap.add_argument("--no-soak", action="store_true")
    ap.add_argument("--jobs", type=int, default=None, help="fuzz workers in all (default: cores - 1)")
    args = ap.parse_args()
    out = os.path.abspath(args.out)
    os.makedirs(out, exist_ok=True)
    cpus = os.cpu_count() or 1
    jobs = args.jobs if args.jobs is not None else max(2, cpus - (0 if args.no_soak else 1))
    j_static, j_dynamic = (jobs + 1) // 2, max(1, jobs // 2)
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    env.setdefault("OMP_NUM_THREADS", "1")
    fuzz = os.path.join(HERE, "fuzz.py")
    n = 10_000_000                  # more than a budget can run: the deadline ends it
    runs = {
        "fuzz-static": [sys.executable, fuzz, "-j", str(j_static), "-n", str(n), "--start", str(args.seed),
                        "--deadline-s", str(args.budget_s), "--grace-s", "45", "--progress-s", "60",
                        "--summary", os.path.join(out, "fuzz-static.json"),
                        "--out", os.path.join(out, "fuzz-failures-static")],
        "fuzz-dynamic": [sys.executable, fuzz, "-j", str(j_dynamic), "-n", str(n), "--dynamic",
                         "--start", str(args.seed + DYNAMIC_SEED_OFFSET),
                         "--deadline-s", str(args.budget_s), "--grace-s", "45", "--progress-s", "60",
                         "--summary", os.path.join(out, "fuzz-dynamic.json"),
                         "--out", os.path.join(out, "fuzz-failures-dynamic")],
    }
    if not args.no_soak:
        runs["soak"] = [sys.executable, os.path.join(ROOT, "tests", "workloads", "soak.py"),
                        "--threads", str(args.soak_threads), "--calls", str(args.soak_calls),
                        "--reset-every", str(args.soak_reset_every), "--deadline-s", str(args.budget_s),
                        "--progress-s", "60", "--summary", os.path.join(out, "soak.json")]
    print(f"reliability: {cpus} cores; fuzz static -j {j_static} (seeds from {args.seed}), "
          f"dynamic -j {j_dynamic} (seeds from {args.seed + DYNAMIC_SEED_OFFSET})"
          + ("" if args.no_soak else f", soak {args.soak_threads} threads x {args.soak_calls:,} calls")
          + f"; budget {args.budget_s:.0f} s", flush=True)
    t0 = time.monotonic()
    procs = {}
    for name, cmd in runs.items():
        log = open(os.path.join(out, name + ".log"), "w")
        procs[name] = (subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT), log)
    hard = args.budget_s + 60
    rcs = {}
    while len(rcs) < len(procs):
        for name, (p, log) in procs.items():
            if name in rcs:
                continue
            rc = p.poll()
            if rc is None and time.monotonic() - t0 > hard:
                p.kill()
                rc = p.wait()
            if rc is not None:
                rcs[name] = rc
                log.close()
        time.sleep(1.0)
    wall = time.monotonic() - t0
    totals = {"wall_s": round(wall, 1), "cores": cpus, "exit_codes": rcs}
    ok = True
    for mode in ("static", "dynamic"):
        s = _load(os.path.join(out, f"fuzz-{mode}.json"))
        if s is None:
            totals[f"fuzz_{mode}"] = None
            ok = False
            print(f"fuzz {mode}: no summary (see {out}/fuzz-{mode}.log)")
            continue
        keep = ("programs", "calls", "compiles", "mismatches", "timeouts", "crashes",
                "seeds_completed", "python", "torch", "jobs", "programs_per_s", "failures")
        totals[f"fuzz_{mode}"] = {k: s.get(k) for k in keep}
        ok &= s["mismatches"] == 0
        print(f"fuzz {mode}: {s['programs']:,} programs, {s['calls']:,} calls, {s['compiles']:,} compiles, "
              f"{s['mismatches']} mismatches ({s['timeouts']} timeouts, {s['crashes']} crashes), "
              f"seeds {s['seeds_completed'][:3]}{'...' if len(s['seeds_completed']) > 3 else ''}, "
              f"-j {s['jobs']}, {s['programs_per_s']} programs/s, python {s['python']}, torch {s['torch']}")
        for f in s.get("failures", [])[:10]:
            print(f"  seed {f['seed']} {f['mismatch']}: {str(f['detail'])[:200]}")
    if not args.no_soak:
        s = _load(os.path.join(out, "soak.json"))
        totals["soak"] = s
        if s is None:
            ok = False
            print(f"soak: no summary (crashed or hung: see {out}/soak.log)")
        else:
            ok &= s["complete"] and s["mismatches"] == 0 and not s["errors"]
            print(f"soak: {s['threads']} threads, {s['calls_total']:,} calls of "
                  f"{s['threads'] * s['calls_per_thread']:,} ({'complete' if s['complete'] else 'cut at the budget'}), "
                  f"{s['resets']} resets (armed: {s['resets_armed']}), {s['mismatches']} mismatches, "
                  f"{len(s['errors'])} errors, {s['calls_per_s']} calls/s, {s['wall_s']} s")
            for e in s["errors"][:3]:
                print("  " + e.replace("\n", "\n  ")[-1500:])
            for m in s["mismatch_examples"][:5]:
                print("  " + m)
    totals["ok"] = bool(ok)
    print(json.dumps(totals, default=str))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
