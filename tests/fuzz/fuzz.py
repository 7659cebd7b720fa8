"""Differential fuzzer driver: `make fuzz` / `make fuzz N=20000 SEED=0`.

    python tests/fuzz/fuzz.py [-n N] [--start S] [--features all|safe|f1,f2,-f3]
                              [--backend eager|aot_eager] [--batch B] [--timeout T]
                              [--out build/fuzz-failures] [--no-minimize]
    python tests/fuzz/fuzz.py --show SEED        # print a program and its call plan

Programs S .. S+N-1 run in worker subprocesses of B programs each (a worker
that crashes or hangs past the per-program alarm costs only its batch: the
driver records the seed and restarts after it). Each mismatch is minimized
in the worker and written to OUT/seed-<seed>.txt and printed. Exit status 1
when any mismatch, timeout or crash was seen. The last line is a summary:
programs, calls, compiles, mismatches per kind.
"""
import argparse
import json
import os
import subprocess
import sys
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


def worker(args):
    import fuzzrun
    feats = parse_features(args.features)
    for seed in range(args.start, args.start + args.n):
        prog = fuzzgen.generate(seed, feats)
        if args.backend:
            prog.backend = args.backend
        t = time.time()
        o = fuzzrun.run_program(prog, args.timeout)
        rec = {"seed": seed, "calls": o.calls, "compiles": o.compiles, "eager_exc": o.eager_exceptions,
               "backend_warnings": o.backend_warnings, "secs": round(time.time() - t, 3)}
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


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("-n", type=int, default=200)
    ap.add_argument("--start", type=int, default=0)
    ap.add_argument("--features", default="all")
    ap.add_argument("--backend", default=None)
    ap.add_argument("--batch", type=int, default=250)
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
    seed = args.start
    tot = {"programs": 0, "calls": 0, "compiles": 0, "eager_exc": 0, "backend_warnings": 0, "skipped": 0}
    bad = []
    tracer_errors = {}      # message -> [count, first seed]
    t0 = time.time()
    logf = open(args.log, "a") if args.log else None
    while seed < end:
        n = min(args.batch, end - seed)
        cmd = [sys.executable, os.path.abspath(__file__), "--worker", "--start", str(seed), "-n", str(n),
               "--features", args.features, "--timeout", str(args.timeout), "--out", args.out]
        if args.backend:
            cmd += ["--backend", args.backend]
        if args.no_minimize:
            cmd.append("--no-minimize")
        # a whole batch may take long; the per-program alarm bounds each program,
        # this bounds a worker stuck outside Python (C hang)
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)
        last = seed - 1
        for line in proc.stdout:
            if not line.startswith("FUZZ "):
                continue
            rec = json.loads(line[5:])
            if logf:
                logf.write(json.dumps(rec) + "\n")
                logf.flush()
            last = rec["seed"]
            tot["programs"] += 1
            for k in ("calls", "compiles", "eager_exc", "backend_warnings"):
                tot[k] += rec[k]
            tot["skipped"] += "skipped" in rec
            for msg in rec.get("tracer_errors", ()):
                tracer_errors.setdefault(msg, [0, rec["seed"]])[0] += 1
            if "mismatch" in rec:
                bad.append(rec)
                label = f"KNOWN ({', '.join(rec['known'])})" if rec["known"] else "NEW"
                print(f"\nMISMATCH [{label}] seed {rec['seed']} ({rec['mismatch']}): {rec['detail']}")
                with open(rec["repro"]) as fh:
                    print(fh.read())
        rc = proc.wait()
        if last < seed + n - 1:
            crashed = last + 1
            rec = {"seed": crashed, "mismatch": "crash", "detail": f"worker exit status {rc}"}
            bad.append(rec)
            tot["programs"] += 1
            print(f"\nCRASH seed {crashed}: worker exit status {rc}  (python tests/fuzz/fuzz.py --show {crashed})")
            seed = crashed + 1
        else:
            seed += n
        print(f"fuzz: {tot['programs']}/{args.n} programs, {len(bad)} mismatches, "
              f"{time.time() - t0:.0f} s", file=sys.stderr, flush=True)
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
          f"mismatches {len(bad)} {kinds}  features {args.features}  seeds {args.start}..{end - 1}  "
          f"{time.time() - t0:.0f} s")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
