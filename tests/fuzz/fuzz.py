"""Differential fuzzer driver: `make fuzz` / `make fuzz N=20000 SEED=0`.

    python tests/fuzz/fuzz.py [-n N] [--start S] [-j J] [--features all|safe|f1,f2,-f3]
                              [--backend eager|aot_eager] [--dynamic] [--batch B] [--timeout T]
                              [--deadline-s D] [--grace-s G] [--summary FILE.json]
                              [--out build/fuzz-failures] [--no-minimize] [--log FILE]
    python tests/fuzz/fuzz.py --show SEED        # print a program and its call plan

Runs with a plain python3 (the repository root is put on sys.path; the
extension must be built: `make ext`). Programs S .. S+N-1 are handed out
one seed at a time, in order, to J persistent worker subprocesses (torch
imported once per worker; dynamo.reset() between programs; a worker is
replaced after B programs, default 2000). Worker starts are staggered
(--stagger-s apart) and workers run with one intra-op thread
(OMP_NUM_THREADS=1 unless set) and DYNAMO_TELEMETRY=0 unless --telemetry;
-j is lowered to the CPU count and to the memory available (--worker-gb
per worker).
A worker that crashes or hangs past the per-program alarm (--timeout)
costs only the program it died on: the seed is recorded and a new worker
goes on. A crashed program's plain-Python calls are then run alone in a
fresh process: when that crashes too, the program is skipped (torch's
crash, not ours), else the crash is a mismatch. Each mismatch is minimized in the worker and written to
OUT/seed-<seed>.txt (and .py, the tests/fuzz/repros format) and printed.

--deadline-s D: no program is started after D seconds; running programs
finish (minimizing stops early) until D + G seconds (--grace-s, default 30),
when the workers still running are terminated and their seeds reported as
unfinished (neither passed nor failed). --summary writes a JSON summary:
programs, calls, compiles, mismatches by kind, timeouts, crashes, the seed
ranges actually completed, python/torch versions, wall and CPU seconds.

--dynamic: every program runs with dynamo.config.dynamic_shapes = True
(every dimension of every tensor argument a symbolic size from the first
compile; without it, programs whose calls change sizes get automatic
dynamic shapes from their second compile on).

Exit status 1 when any mismatch, timeout or crash was seen. The last line
is a summary: programs, calls, compiles, mismatches per kind.
"""
import argparse
import json
import os
import platform
import resource
import signal
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
if ROOT not in sys.path:
    sys.path.insert(1, ROOT)        # `import dynamo` without PYTHONPATH or a venv

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
    """Read seeds from stdin, one a line; print one `FUZZ {json}` record
    per program. Exits 0 at EOF, RESTART after --batch programs or after a
    program that may have left the process in a bad state (the record then
    says "restart")."""
    import logging
    import fuzzrun
    import torch
    logging.getLogger("dynamo").setLevel(logging.ERROR)   # "compiled no graph" notes: per program, not news
    if args.dynamic:
        import dynamo
        dynamo.config.dynamic_shapes = True
    feats = parse_features(args.features)
    warm_up(fuzzrun)
    print("FUZZ-INFO " + json.dumps({"python": platform.python_version(), "torch": torch.__version__,
                                     "pid": os.getpid(), "threads": torch.get_num_threads()}), flush=True)
    done = 0
    for line in sys.stdin:
        seed = int(line)
        prog = fuzzgen.generate(seed, feats)
        if args.backend:
            prog.backend = args.backend
        t, c = time.time(), time.process_time()
        o = fuzzrun.run_program(prog, args.timeout)
        rec = {"seed": seed, "backend": prog.backend, "calls": o.calls, "compiles": o.compiles,
               "eager_exc": o.eager_exceptions, "backend_warnings": o.backend_warnings,
               "secs": round(time.time() - t, 3), "cpu": round(time.process_time() - c, 3),
               "maxrss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024}
        if o.tracer_errors:
            rec["tracer_errors"] = o.tracer_errors
        if o.skipped:
            rec["skipped"] = o.skipped
        if o.mismatch:
            m = o.mismatch
            stop_at = args.hard_deadline_at - 10 if args.hard_deadline_at else None
            small, runs = (prog, 0) if args.no_minimize or m.kind == "timeout" else \
                fuzzrun.minimize(prog, m.kind, args.timeout, stop_at=stop_at)
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
        done += 1
        restart = bool(o.skipped or (o.mismatch and o.mismatch.kind == "timeout") or
                       any("FuzzTimeout" in e for e in o.tracer_errors))
        # the alarm may have interrupted torch or dynamo anywhere: go on in a fresh process
        if restart or done >= args.batch:
            rec["restart"] = True
        print("FUZZ " + json.dumps(rec), flush=True)
        if rec.get("restart"):
            sys.exit(RESTART)


def _ranges(seeds):
    """Sorted seeds -> [[first, last], ...] of consecutive runs."""
    out = []
    for s in sorted(seeds):
        if out and s == out[-1][1] + 1:
            out[-1][1] = s
        else:
            out.append([s, s])
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("-n", type=int, default=200)
    ap.add_argument("--start", type=int, default=0)
    ap.add_argument("--features", default="all")
    ap.add_argument("--backend", default=None)
    ap.add_argument("--dynamic", action="store_true",
                    help="config.dynamic_shapes: every size symbolic from the first compile")
    ap.add_argument("--batch", type=int, default=2000, help="programs per worker process before a fresh one")
    ap.add_argument("-j", "--jobs", type=int, default=1, help="worker processes at a time")
    ap.add_argument("--progress-s", type=float, default=30.0, help="progress line on stderr every this many seconds")
    ap.add_argument("--progress", type=int, default=None, help=argparse.SUPPRESS)   # old flag: ignored
    ap.add_argument("--telemetry", action="store_true",
                    help="let workers publish telemetry (off by default: DYNAMO_TELEMETRY=0)")
    ap.add_argument("--timeout", type=int, default=60, help="per-program alarm, seconds")
    ap.add_argument("--deadline-s", type=float, default=None,
                    help="start no program after this many seconds from the start")
    ap.add_argument("--grace-s", type=float, default=30.0,
                    help="after the deadline, terminate workers still running after this many seconds")
    ap.add_argument("--stagger-s", type=float, default=0.05, help="seconds between worker starts")
    ap.add_argument("--worker-gb", type=float, default=1.0,
                    help="memory to reserve per worker: -j is lowered to fit the available memory")
    ap.add_argument("--summary", default=None, help="write a JSON summary to this file")
    ap.add_argument("--out", default="build/fuzz-failures")
    ap.add_argument("--no-minimize", action="store_true")
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--eager-check", type=int, default=None, help=argparse.SUPPRESS)
    ap.add_argument("--hard-deadline-at", type=float, default=None, help=argparse.SUPPRESS)
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
    if args.eager_check is not None:
        import fuzzrun
        prog = fuzzgen.generate(args.eager_check, parse_features(args.features))
        if args.backend:
            prog.backend = args.backend
        fuzzrun.run_program(prog, args.timeout, eager_only=True)
        return 0
    if args.worker:
        worker(args)
        return 0
    return drive(args)


def _available_gb():
    try:
        with open("/proc/meminfo") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) / 2 ** 20
    except (OSError, ValueError, IndexError):
        pass
    return None


def drive(args):
    parse_features(args.features)   # reject bad names before starting workers
    avail = _available_gb()
    cpus = os.cpu_count() or 1
    if args.jobs > cpus:        # more workers than cores: more memory and warm-up, no more programs
        print(f"fuzz: -j {args.jobs} lowered to {cpus} (CPU cores)", file=sys.stderr, flush=True)
        args.requested_jobs, args.jobs = args.jobs, cpus
    if avail is not None and args.worker_gb > 0 and args.jobs * args.worker_gb > avail:
        fit = max(1, int(avail / args.worker_gb))
        print(f"fuzz: -j {args.jobs} lowered to {fit}: {avail:.0f} GB available, "
              f"{args.worker_gb:g} GB reserved per worker (--worker-gb)", file=sys.stderr, flush=True)
        args.requested_jobs, args.jobs = getattr(args, "requested_jobs", args.jobs), fit
    end = args.start + args.n
    t0 = time.time()
    deadline = t0 + args.deadline_s if args.deadline_s is not None else None
    hard = deadline + args.grace_s if deadline is not None else None
    tot = {"programs": 0, "calls": 0, "compiles": 0, "eager_exc": 0, "backend_warnings": 0, "skipped": 0,
           "skipped_crashed": 0,
           "secs": 0.0, "cpu": 0.0, "maxrss_mb": 0}
    bad = []
    done_seeds = []
    unfinished = []         # seeds whose worker was terminated at the hard deadline
    tracer_errors = {}      # message -> [count, first seed]
    by_backend = {}         # backend -> programs
    info = {}
    logf = open(args.log, "a") if args.log else None
    lock = threading.Lock()
    state = {"next": args.start, "stopped_by_deadline": False, "last_progress": t0, "worker_starts": 0}
    live = {}               # pid -> Popen of running workers
    killed = set()          # pids terminated by the watchdog
    env = dict(os.environ)
    if not args.telemetry:
        env.setdefault("DYNAMO_TELEMETRY", "0")     # no shared-memory publishing per compile
    for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        env.setdefault(var, "1")                    # J workers, not J x cores threads
    env.setdefault("TORCH_CPP_LOG_LEVEL", "ERROR")  # kernels' one-time warnings, once per worker
    cmd = [sys.executable, os.path.abspath(__file__), "--worker", "--features", args.features,
           "--timeout", str(args.timeout), "--out", args.out, "--batch", str(args.batch)]
    if args.backend:
        cmd += ["--backend", args.backend]
    if args.dynamic:
        cmd.append("--dynamic")
    if args.no_minimize:
        cmd.append("--no-minimize")
    if hard is not None:
        cmd += ["--hard-deadline-at", repr(hard)]

    def take():
        with lock:
            if deadline is not None and time.time() >= deadline:
                if state["next"] < end:
                    state["stopped_by_deadline"] = True
                return None
            if state["next"] >= end:
                return None
            seed = state["next"]
            state["next"] += 1
            return seed

    def record(rec, crash=False):
        with lock:
            if logf:
                logf.write(json.dumps(rec) + "\n")
                logf.flush()
            done_seeds.append(rec["seed"])
            tot["programs"] += 1
            for k in ("calls", "compiles", "eager_exc", "backend_warnings"):
                tot[k] += rec[k]
            tot["secs"] += rec.get("secs", 0.0)
            tot["cpu"] += rec.get("cpu", 0.0)
            tot["maxrss_mb"] = max(tot["maxrss_mb"], rec.get("maxrss_mb", 0))
            tot["skipped"] += "skipped" in rec
            tot["skipped_crashed"] += "crashed" in rec.get("skipped", "")
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
                try:
                    with open(rec["repro"]) as fh:
                        print(fh.read(), flush=True)
                except OSError:
                    pass
            now = time.time()
            if now - state["last_progress"] >= args.progress_s:
                state["last_progress"] = now
                dt = now - t0
                print(f"fuzz: {tot['programs']}/{args.n} programs, {len(bad)} mismatches, {dt:.0f} s, "
                      f"{tot['programs'] / dt:.2f} programs/s", file=sys.stderr, flush=True)

    def spawn():
        proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env,
                                bufsize=1)
        with lock:
            live[proc.pid] = proc
            state["worker_starts"] += 1
        return proc

    def reap(proc):
        try:
            proc.stdin.close()
        except OSError:
            pass
        rc = proc.wait()
        with lock:
            live.pop(proc.pid, None)
        return rc

    def read_line(proc, prefix):
        """The next stdout line starting with prefix (None at EOF)."""
        for line in proc.stdout:
            if line.startswith(prefix):
                return line[len(prefix):]
        return None

    def eager_check(seed):
        """A worker died on seed: run the program's plain-Python calls
        alone in a fresh process (same alarm, same teardown). The exit
        status when that crashes too (the crash is torch's or Python's,
        not the compiler's: torch 2.11 overflows the C stack freeing an
        autograd graph 450,000 nodes deep, seed 90,033,311), else None."""
        limit = args.timeout + 120
        if hard is not None:        # past the hard deadline: no check, the crash counts
            limit = min(limit, hard - time.time())
        try:
            if limit <= 0:
                return None
            r = subprocess.run(cmd + ["--eager-check", str(seed)], stdin=subprocess.DEVNULL,
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env,
                               timeout=limit)
        except subprocess.TimeoutExpired:
            return None
        return r.returncode if r.returncode < 0 else None

    def job(k):
        time.sleep(k * args.stagger_s)
        proc = None
        while True:
            seed = take()
            if seed is None:
                break
            if proc is None:
                proc = spawn()
                hello = read_line(proc, "FUZZ-INFO ")
                if hello is None:               # died in the warm-up: nothing to blame on a seed
                    rc = reap(proc)
                    proc = None
                    if rc != 0 and rc not in (-signal.SIGTERM, -signal.SIGKILL):
                        print(f"fuzz: a worker died starting (exit status {rc})", file=sys.stderr, flush=True)
                    with lock:
                        unfinished.append(seed)
                    if hard is not None and time.time() >= hard:
                        break
                    continue
                with lock:
                    info.update(json.loads(hello))
            proc.stdin.write(f"{seed}\n")
            proc.stdin.flush()
            line = read_line(proc, "FUZZ ")
            if line is None:
                rc = reap(proc)
                was_killed = proc.pid in killed
                proc = None
                if was_killed:
                    with lock:
                        unfinished.append(seed)
                    break
                plain = eager_check(seed)
                if plain is not None:
                    record({"seed": seed, "skipped": f"plain Python crashed too (exit status {plain})",
                            "calls": 0, "compiles": 0, "eager_exc": 0, "backend_warnings": 0})
                    continue
                record({"seed": seed, "mismatch": "crash", "detail": f"worker exit status {rc}",
                        "calls": 0, "compiles": 0, "eager_exc": 0, "backend_warnings": 0, "known": []},
                       crash=True)
                continue
            rec = json.loads(line)
            record(rec)
            if rec.get("restart"):
                reap(proc)
                proc = None
        if proc is not None:
            reap(proc)

    def watchdog():
        while not finished.wait(1.0):
            if hard is not None and time.time() >= hard:
                with lock:
                    procs = list(live.values())
                for p in procs:
                    killed.add(p.pid)
                    p.terminate()
                time.sleep(2.0)
                for p in procs:
                    if p.poll() is None:
                        p.kill()
                return

    finished = threading.Event()
    threads = [threading.Thread(target=job, args=(k,)) for k in range(max(1, args.jobs))]
    dog = threading.Thread(target=watchdog, daemon=True)
    dog.start()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    finished.set()
    wall = time.time() - t0
    if tracer_errors:
        print("tracer errors (frame ran eagerly; not mismatches):")
        for msg, (cnt, first) in sorted(tracer_errors.items(), key=lambda kv: -kv[1][0]):
            print(f"  {cnt:5d}  first seed {first}: {msg}")
    kinds = {}
    for r in bad:
        k = r["mismatch"] + ("/known" if r.get("known") else "")
        kinds[k] = kinds.get(k, 0) + 1
    covered = _ranges(done_seeds)
    print(f"fuzz summary: programs {tot['programs']}  calls {tot['calls']}  compiles {tot['compiles']}  "
          f"calls-raising-eagerly {tot['eager_exc']}  backend-fallbacks {tot['backend_warnings']}  "
          f"skipped(plain Python hung) {tot['skipped'] - tot['skipped_crashed']}  "
          f"skipped(plain Python crashed) {tot['skipped_crashed']}  "
          f"mismatches {len(bad)} {kinds}  features {args.features}  backends {by_backend}  "
          f"seeds {_ranges_text(covered)}  unfinished {len(unfinished)}  {wall:.0f} s  "
          f"{tot['programs'] / max(wall, 1e-9):.2f} programs/s")
    if args.summary:
        children = resource.getrusage(resource.RUSAGE_CHILDREN)
        me = resource.getrusage(resource.RUSAGE_SELF)
        summary = {
            "programs": tot["programs"], "calls": tot["calls"], "compiles": tot["compiles"],
            "calls_raising_eagerly": tot["eager_exc"], "backend_fallbacks": tot["backend_warnings"],
            "mismatches": len(bad), "mismatches_by_kind": kinds,
            "timeouts": sum(1 for r in bad if r["mismatch"] == "timeout"),
            "crashes": sum(1 for r in bad if r["mismatch"] == "crash"),
            "skipped_eager_hung": tot["skipped"] - tot["skipped_crashed"],
            "skipped_eager_crashed": tot["skipped_crashed"],
            "failures": [{k: r.get(k) for k in ("seed", "backend", "mismatch", "detail", "repro", "known", "kinds")}
                         for r in sorted(bad, key=lambda r: r["seed"])],
            "seeds_requested": [args.start, end - 1],
            "seeds_completed": covered,
            "unfinished_seeds": sorted(unfinished),
            "stopped_by_deadline": bool(state["stopped_by_deadline"] or unfinished),
            "backends": by_backend, "features": args.features,
            "tracer_errors": {m: c for m, (c, _) in sorted(tracer_errors.items(), key=lambda kv: -kv[1][0])[:50]},
            "python": info.get("python"), "torch": info.get("torch"), "worker_threads": info.get("threads"),
            "driver_python": platform.python_version(), "platform": platform.platform(),
            "jobs": args.jobs, "jobs_requested": getattr(args, "requested_jobs", args.jobs),
            "mem_available_gb_at_start": round(avail, 1) if avail is not None else None, "cpus": os.cpu_count(), "worker_starts": state["worker_starts"],
            "deadline_s": args.deadline_s, "grace_s": args.grace_s, "timeout_s": args.timeout,
            "wall_s": round(wall, 1),
            "cpu_s": round(children.ru_utime + children.ru_stime + me.ru_utime + me.ru_stime, 1),
            "program_wall_s": round(tot["secs"], 1), "program_cpu_s": round(tot["cpu"], 1),
            "cpu_s_per_program": round(tot["cpu"] / tot["programs"], 4) if tot["programs"] else None,
            "programs_per_s": round(tot["programs"] / max(wall, 1e-9), 2),
            "worker_max_rss_mb": tot["maxrss_mb"],
        }
        os.makedirs(os.path.dirname(os.path.abspath(args.summary)), exist_ok=True)
        tmp = args.summary + ".tmp"
        with open(tmp, "w") as fh:
            json.dump(summary, fh, indent=1)
            fh.write("\n")
        os.replace(tmp, args.summary)
    return 1 if bad else 0


def _ranges_text(covered):
    if not covered:
        return "none"
    text = ",".join(f"{a}..{b}" if a != b else str(a) for a, b in covered[:6])
    return text + (f",... ({len(covered)} ranges)" if len(covered) > 6 else "")


if __name__ == "__main__":
    sys.exit(main())
