"""Differential fuzzer driver: `make fuzz` / `make fuzz N=20000 SEED=0`.

    python tests/fuzz/fuzz.py [-n N] [--start S] [--features all|safe|f1,f2,-f3]
                              [--backend eager|aot_eager] [--batch B] [--timeout T]
                              [--out build/fuzz-failures] [--no-minimize]
    python tests/fuzz/fuzz.py --show SEED        # print a program and its call plan

Programs S .. S+N-1 run in persistent worker subprocesses, each running B
programs (default 2000) in one process with dynamo.reset() between them
(torch is imported once per worker), J workers at a time (-j, default 1).
A worker that crashes or hangs past the per-program alarm costs only the
program it died on: the driver records the seed and starts a new worker
after it. Workers run with DYNAMO_TELEMETRY=0 unless --telemetry. Each mismatch is minimized
in the worker and written to OUT/seed-<seed>.txt and printed. Exit status 1
when any mismatch, timeout or crash was seen. The last line is a summary:
programs, calls, compiles, mismatches per kind.
"""
import argparse
import json
import os
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import fuzzgen  # noqa: E402


def parse_features(spec):
    if spec in ("all", "", None):
        return fuzzgen.DEFAULT_FEATURES
    if spec == "safe":
        return fuzzgen.SAFE_FEATURES
    feats = set(fuzzgen.DEFAULT_FEATURES)
    items = spec.split(",")
    if all(not it.startswith("-") for it in items):
        feats = set()
    for it in items:
        if it == "safe":
            feats |= fuzzgen.SAFE_FEATURES
        elif it == "all":
            feats |= fuzzgen.DEFAULT_FEATURES
        elif it.startswith("-"):
            feats.discard(it[1:])
        else:
            feats.add(it)
    unknown = feats - set(fuzzgen.FEATURES)
    if unknown:
        raise SystemExit(f"unknown features: {sorted(unknown)}; known: {', '.join(fuzzgen.FEATURES)}")
    return frozenset(feats)


RESTART = 3    # worker exit status: "start a new worker after my last program"


def warm_up(fuzzrun):
    """Run one small program per backend with no alarm: torch imports
    much lazily on a first compile (sympy, aot autograd), which can take
    longer than the per-program alarm on a loaded machine; an alarm that
    interrupts an import leaves a half-initialized module and every later
    compile of the worker failing (frames run eagerly: no compiles, no
    mismatches)."""
    for backend in ("eager", "aot_eager"):
        prog = fuzzgen.generate(0, fuzzgen.DEFAULT_FEATURES)
        prog.backend = backend
        fuzzrun.run_program(prog, 3600)


def worker(args):
    import fuzzrun
    feats = parse_features(args.features)
    warm_up(fuzzrun)
    for seed in range(args.start, args.start + args.n):
        prog = fuzzgen.generate(seed, feats)
        if args.backend:
            prog.backend = args.backend
        t = time.time()
        o = fuzzrun.run_program(prog, args.timeout)
        rec = {"seed": seed, "backend": prog.backend, "calls": o.calls, "compiles": o.compiles,
               "eager_exc": o.eager_exceptions, "backend_warnings": o.backend_warnings,
               "secs": round(time.time() - t, 3)}
        if o.tracer_errors:
            rec["tracer_errors"] = o.tracer_errors
        if o.skipped:
            rec["skipped"] = o.skipped
        if o.mismatch:
            m = o.mismatch
            small, runs = (prog, 0) if args.no_minimize or m.kind == "timeout" else \
                fuzzrun.minimize(prog, m.kind, args.timeout)
            m2 = fuzzrun.run_program(small, args.timeout).mismatch if small is not prog else m
            text = fuzzrun.render_repro(small, m2 or m)
            os.makedirs(args.out, exist_ok=True)
            path = os.path.join(args.out, f"seed-{seed}.txt")
            with open(path, "w") as fh:
                fh.write(text)
            with open(path[:-4] + ".py", "w") as fh:
                fh.write(fuzzrun.render_repro_py(small, m2 or m))
            known = sorted(k for k in small.kinds() if k in fuzzgen.KNOWN_OPEN)
            rec.update(mismatch=m.kind, detail=m.detail[:300], repro=path, kinds=sorted(small.kinds()),
                       min_runs=runs, known=known)
        print("FUZZ " + json.dumps(rec), flush=True)
        if o.skipped or (o.mismatch and o.mismatch.kind == "timeout") or \
                any("FuzzTimeout" in e for e in o.tracer_errors):
            # the alarm may have interrupted torch or dynamo anywhere: go on in a fresh process
            sys.exit(RESTART)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("-n", type=int, default=200)
    ap.add_argument("--start", type=int, default=0)
    ap.add_argument("--features", default="all")
    ap.add_argument("--backend", default=None)
    ap.add_argument("--batch", type=int, default=2000)
    ap.add_argument("-j", "--jobs", type=int, default=1, help="worker processes at a time")
    ap.add_argument("--progress", type=int, default=100, help="progress line every this many programs")
    ap.add_argument("--telemetry", action="store_true",
                    help="let workers publish telemetry (off by default: DYNAMO_TELEMETRY=0)")
    ap.add_argument("--timeout", type=int, default=60)
    ap.add_argument("--out", default="build/fuzz-failures")
    ap.add_argument("--no-minimize", action="store_true")
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--show", type=int, default=None)
    ap.add_argument("--log", default=None, help="append every per-program JSON record to this file")
    args = ap.parse_args()
    if args.show is not None:
        p = fuzzgen.generate(args.show, parse_features(args.features))
        print(p.source())
        for i, c in enumerate(p.calls):
            print(f"# call {i}: {c.describe()}  muts {[m for _, m in c.muts]}")
        print(f"# backend {p.backend}")
        return 0
    if args.worker:
        worker(args)
        return 0

    parse_features(args.features)   # reject bad names before starting workers
    end = args.start + args.n
    tot = {"programs": 0, "calls": 0, "compiles": 0, "eager_exc": 0, "backend_warnings": 0, "skipped": 0}
    bad = []
    tracer_errors = {}      # message -> [count, first seed]
    by_backend = {}         # backend -> programs
    t0 = time.time()
    logf = open(args.log, "a") if args.log else None
    lock = threading.Lock()
    todo = list(range(args.start, end, args.batch))
    env = dict(os.environ)
    if not args.telemetry:
        env.setdefault("DYNAMO_TELEMETRY", "0")     # no shared-memory publishing per compile

    def run_batch(seed, n):
        """One worker over seeds seed..seed+n-1; after a crash or hang,
        a new worker goes on after the seed it died on."""
        while n > 0:
            cmd = [sys.executable, os.path.abspath(__file__), "--worker", "--start", str(seed), "-n", str(n),
                   "--features", args.features, "--timeout", str(args.timeout), "--out", args.out]
            if args.backend:
                cmd += ["--backend", args.backend]
            if args.no_minimize:
                cmd.append("--no-minimize")
            proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True, env=env)
            last = seed - 1
            for line in proc.stdout:
                if line.startswith("FUZZ "):
                    last = json.loads(line[5:])["seed"]
                    record(json.loads(line[5:]))
            rc = proc.wait()
            if last >= seed + n - 1:
                return
            if rc == RESTART and last >= seed:
                n -= last + 1 - seed
                seed = last + 1
                continue
            crashed = last + 1
            record({"seed": crashed, "mismatch": "crash", "detail": f"worker exit status {rc}",
                    "calls": 0, "compiles": 0, "eager_exc": 0, "backend_warnings": 0, "known": []},
                   crash=True)
            n -= crashed + 1 - seed
            seed = crashed + 1

    def record(rec, crash=False):
        with lock:
            if logf:
                logf.write(json.dumps(rec) + "\n")
                logf.flush()
            tot["programs"] += 1
            for k in ("calls", "compiles", "eager_exc", "backend_warnings"):
                tot[k] += rec[k]
            tot["skipped"] += "skipped" in rec
            if rec.get("backend"):
                by_backend[rec["backend"]] = by_backend.get(rec["backend"], 0) + 1
            for msg in rec.get("tracer_errors", ()):
                tracer_errors.setdefault(msg, [0, rec["seed"]])[0] += 1
            if crash:
                bad.append(rec)
                print(f"\nCRASH seed {rec['seed']}: {rec['detail']}  (python tests/fuzz/fuzz.py --show {rec['seed']})",
                      flush=True)
            elif "mismatch" in rec:
                bad.append(rec)
                label = f"KNOWN ({', '.join(rec['known'])})" if rec["known"] else "NEW"
                print(f"\nMISMATCH [{label}] seed {rec['seed']} ({rec['mismatch']}): {rec['detail']}")
                with open(rec["repro"]) as fh:
                    print(fh.read(), flush=True)
            if tot["programs"] % args.progress == 0:
                dt = time.time() - t0
                print(f"fuzz: {tot['programs']}/{args.n} programs, {len(bad)} mismatches, {dt:.0f} s, "
                      f"{tot['programs'] / dt:.2f} programs/s", file=sys.stderr, flush=True)

    def job():
        while True:
            with lock:
                if not todo:
                    return
                seed = todo.pop(0)
            run_batch(seed, min(args.batch, end - seed))
    threads = [threading.Thread(target=job) for _ in range(max(1, args.jobs))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if tracer_errors:
        print("tracer errors (frame ran eagerly; not mismatches):")
        for msg, (cnt, first) in sorted(tracer_errors.items(), key=lambda kv: -kv[1][0]):
            print(f"  {cnt:5d}  first seed {first}: {msg}")
    kinds = {}
    for r in bad:
        k = r["mismatch"] + ("/known" if r.get("known") else "")
        kinds[k] = kinds.get(k, 0) + 1
    print(f"fuzz summary: programs {tot['programs']}  calls {tot['calls']}  compiles {tot['compiles']}  "
          f"calls-raising-eagerly {tot['eager_exc']}  backend-fallbacks {tot['backend_warnings']}  "
          f"skipped(eager hung) {tot['skipped']}  "
          f"mismatches {len(bad)} {kinds}  features {args.features}  backends {by_backend}  "
          f"seeds {args.start}..{end - 1}  {time.time() - t0:.0f} s  "
          f"{tot['programs'] / max(time.time() - t0, 1e-9):.2f} programs/s")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
