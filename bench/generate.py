"""make bench-generate: HF generate() with the model's forward compiled,
dynamo vs torch.compile, in one process (issue 24, item 6).

Models are built from configs (seeded, 2 layers, hidden 64, vocab 1000): a
LlamaForCausalLM, a GPT2LMHeadModel and a MixtralForCausalLM (4 experts).
For each model: eager generate() first (the reference tokens and eager
ms/token), then the same model (a fresh instance, the same weights) with its
forward compiled by dynamo, then by torch.compile, each after a reset of its
own compiler, the same backend for both (--backend, default "eager": the
graphs run as captured, so ms/token is the compiler's own overhead).

Per compiler and cache kind (DynamicCache, then StaticCache via
cache_implementation="static"), over --rounds rounds of
generate(max_new_tokens=--tokens, do_sample=False) on a batch-1 prompt of
8 tokens with its attention mask:
  graphs      graphs handed to the backend, all rounds;
  breaks      graph breaks (dynamo: break reasons of its compile records;
              torch.compile: counters["graph_break"]);
  recompiles  compiles of a code that already had an entry (dynamo: records
              with a recompile reason; torch.compile: the recompile-reason
              look-ups its convert_frame makes, one per recompile);
  limit       cache-limit warnings (dynamo: records of status "limit";
              torch.compile: its "hit config.recompile_limit" warnings);
  equal       every round's tokens equal to eager's;
  ms/tok      per round, wall time / new tokens; steady = the median of
              rounds 2.. (round 1 includes compiling); cpu: the same in
              process CPU time (steadier than wall time on a shared machine).
Mixtral: also the graphs and breaks of one forward (use_cache=False).
Only bench/ may import torch's own compiler, and only to compare against it.

Usage: python bench/generate.py [--models llama,gpt2,mixtral] [--rounds 3]
                                [--tokens 20] [--backend eager] [--json F]
                                [--caches dynamic,static] [--compilers dynamo,torch]
                                [--device cpu|cuda] [--hidden 64] [--layers 2]
"""
import argparse
import json
import logging
import statistics
import sys
import time
import warnings

import torch

VOCAB, HIDDEN, LAYERS, PROMPT = 1000, 64, 2, 8
DEVICE = "cpu"


# ---------------------------------------------------------------- models
def build(name):
    """A fresh model of kind `name`, the same weights every call (seeded)."""
    import transformers as tf
    torch.manual_seed(0)
    if name == "llama":
        cfg = tf.LlamaConfig(vocab_size=VOCAB, hidden_size=HIDDEN, intermediate_size=2 * HIDDEN,
                             num_hidden_layers=LAYERS, num_attention_heads=4,
                             num_key_value_heads=2, max_position_embeddings=256)
        model = tf.LlamaForCausalLM(cfg)
    elif name == "gpt2":
        cfg = tf.GPT2Config(vocab_size=VOCAB, n_embd=HIDDEN, n_layer=LAYERS, n_head=4,
                            n_positions=256, bos_token_id=1, eos_token_id=2)
        model = tf.GPT2LMHeadModel(cfg)
    elif name == "mixtral":
        cfg = tf.MixtralConfig(vocab_size=VOCAB, hidden_size=HIDDEN, intermediate_size=2 * HIDDEN,
                               num_hidden_layers=LAYERS, num_attention_heads=4,
                               num_key_value_heads=2, num_local_experts=4,
                               num_experts_per_tok=2, max_position_embeddings=256)
        model = tf.MixtralForCausalLM(cfg)
    else:
        raise SystemExit(f"unknown model {name!r}")
    model.generation_config.pad_token_id = 0
    model.generation_config.disable_compile = True     # never transformers' own auto-compile
    return model.eval().to(DEVICE)


def prompt():
    g = torch.Generator().manual_seed(1)
    ids = torch.randint(1, VOCAB, (1, PROMPT), generator=g).to(DEVICE)
    return dict(input_ids=ids, attention_mask=torch.ones_like(ids))


def generate(model, tokens, cache):
    kw = dict(max_new_tokens=tokens, do_sample=False, min_new_tokens=tokens)
    if cache == "static":
        kw["cache_implementation"] = "static"
    with torch.no_grad():
        t0, c0 = time.perf_counter(), time.process_time()
        out = model.generate(**prompt(), **kw)
        if DEVICE != "cpu":
            torch.cuda.synchronize()
        dt, dc = time.perf_counter() - t0, time.process_time() - c0
    return out, (dt * 1000 / tokens, dc * 1000 / tokens)


# ---------------------------------------------------------------- the two compilers
class Ours:
    name = "dynamo"

    def __init__(self, backend):
        import dynamo
        from dynamo import records
        self.dynamo, self.records, self.backend = dynamo, records, backend

    def start(self):
        self.dynamo.reset()
        self.mark = self.records.mark()

    def compile(self, fn):
        return self.dynamo.optimize(self.backend)(fn)

    def counts(self):
        recs = self.records.records_since(self.mark)
        limit = self.records.STATUS["LIMIT"]
        return dict(graphs=sum(len(r.graphs) for r in recs),
                    breaks=sum(len(r.break_reasons) for r in recs),
                    recompiles=sum(1 for r in recs
                                   if r.recompile_reason is not None and r.status != limit),
                    limit=sum(1 for r in recs if r.status == limit),
                    reasons=sorted({b.reason[:160] for r in recs for b in r.break_reasons})[:6],
                    recompile_reasons=sorted({str(r.recompile_reason)[:160] for r in recs
                                              if r.recompile_reason is not None})[:6])

    def stop(self):
        self.dynamo.reset()


class _LimitLog(logging.Handler):
    def __init__(self):
        super().__init__(logging.WARNING)
        self.hits = 0

    def emit(self, record):
        if "hit config." in record.getMessage():
            self.hits += 1


class Torch:
    name = "torch.compile"

    def __init__(self, backend):
        import torch._dynamo as td
        import torch._dynamo.convert_frame as cf
        from torch._dynamo.utils import counters
        self.td, self.cf, self.counters = td, cf, counters
        self.backend = backend
        self.limit_log = _LimitLog()
        logging.getLogger("torch._dynamo").addHandler(self.limit_log)
        self.recompiles = 0
        self.reasons = set()
        look_up = cf.get_and_maybe_log_recompilation_reasons

        def counted(*a, **kw):               # called once per recompile
            self.recompiles += 1
            out = look_up(*a, **kw)
            self.reasons.update(str(r).split("\n")[0][:160] for r in (out or [])[:1])
            return out
        cf.get_and_maybe_log_recompilation_reasons = counted

    def start(self):
        self.td.reset()
        self.counters.clear()
        self.graphs = 0
        self.recompiles = 0
        self.reasons = set()
        self.limit_log.hits = 0

    def compile(self, fn):
        if self.backend == "eager":
            def count(gm, example_inputs):
                self.graphs += 1
                return gm.forward
            return torch.compile(fn, backend=count)
        from torch._dynamo.backends.registry import lookup_backend
        inner = lookup_backend(self.backend)

        def count(gm, example_inputs):
            self.graphs += 1
            return inner(gm, example_inputs)
        return torch.compile(fn, backend=count)

    def counts(self):
        gb = self.counters["graph_break"]
        return dict(graphs=self.graphs, breaks=sum(gb.values()), recompiles=self.recompiles,
                    limit=self.limit_log.hits,
                    reasons=sorted(str(r)[:160] for r in gb)[:6],
                    recompile_reasons=sorted(self.reasons)[:6])

    def stop(self):
        self.td.reset()


# ---------------------------------------------------------------- one run
def run_generate(name, compiler, cache, rounds, tokens, ref):
    model = build(name)
    compiler.start()
    model.forward = compiler.compile(model.forward)
    ms, cpu, equal = [], [], True
    for _ in range(rounds):
        out, (per_token, cpu_per_token) = generate(model, tokens, cache)
        ms.append(per_token)
        cpu.append(cpu_per_token)
        equal &= torch.equal(out, ref)
    row = compiler.counts()
    row.update(equal=equal, ms=ms, cpu=cpu, steady=statistics.median(ms[1:] or ms),
               steady_cpu=statistics.median(cpu[1:] or cpu))
    compiler.stop()
    return row


def run_forward(name, compiler):
    model = build(name)
    with torch.no_grad():
        ref = model(**prompt(), use_cache=False).logits
    compiler.start()
    model.forward = compiler.compile(model.forward)
    with torch.no_grad():
        got = model(**prompt(), use_cache=False).logits
    row = compiler.counts()
    row.update(equal=torch.allclose(ref, got, rtol=1e-4, atol=1e-5))
    compiler.stop()
    return row


def eager(name, cache, rounds, tokens):
    model = build(name)
    outs, ms, cpu = [], [], []
    for _ in range(rounds):
        out, (per_token, cpu_per_token) = generate(model, tokens, cache)
        outs.append(out)
        ms.append(per_token)
        cpu.append(cpu_per_token)
    assert all(torch.equal(o, outs[0]) for o in outs), "eager generate() is not deterministic"
    return outs[0], (statistics.median(ms[1:] or ms), statistics.median(cpu[1:] or cpu))


def main():
    global DEVICE, HIDDEN, LAYERS
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--models", default="llama,gpt2,mixtral")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--tokens", type=int, default=20)
    ap.add_argument("--backend", default="eager")
    ap.add_argument("--caches", default="dynamic,static")
    ap.add_argument("--compilers", default="dynamo,torch")
    ap.add_argument("--json", default=None)
    ap.add_argument("--device", default="cpu", help="cpu, or cuda (the models' sizes as given)")
    ap.add_argument("--hidden", type=int, default=HIDDEN)
    ap.add_argument("--layers", type=int, default=LAYERS)
    args = ap.parse_args()
    DEVICE, HIDDEN, LAYERS = args.device, args.hidden, args.layers
    torch.set_num_threads(1)
    warnings.filterwarnings("ignore", category=UserWarning)
    logging.getLogger("transformers").setLevel(logging.ERROR)
    import transformers
    transformers.logging.set_verbosity_error()
    kinds = {"dynamo": Ours, "torch": Torch}
    compilers = [kinds[k](args.backend) for k in args.compilers.split(",")]
    results = []
    print(f"torch {torch.__version__}, transformers {transformers.__version__}, "
          f"backend {args.backend!r}, {args.rounds} rounds x {args.tokens} tokens, 1 thread, "
          f"{DEVICE}, hidden {HIDDEN}, {LAYERS} layers",
          flush=True)
    hdr = (f"{'model':8} {'cache':8} {'compiler':14} {'graphs':>6} {'breaks':>6} {'recomp':>6} "
           f"{'limit':>5} {'equal':>5} {'ms/tok r1':>9} {'steady':>7} {'eager':>6} "
           f"{'cpu steady':>10} {'cpu eager':>9}")
    print(hdr)
    for name in args.models.split(","):
        if name == "mixtral":
            for c in compilers:
                row = dict(model=name, kind="forward", compiler=c.name, **run_forward(name, c))
                results.append(row)
                print(f"{name:8} {'forward':8} {c.name:14} {row['graphs']:>6} {row['breaks']:>6} "
                      f"{row['recompiles']:>6} {row['limit']:>5} {str(row['equal']):>5}", flush=True)
        for cache in args.caches.split(","):
            ref, (eager_ms, eager_cpu) = eager(name, cache, args.rounds, args.tokens)
            for c in compilers:
                row = dict(model=name, kind=cache, compiler=c.name, eager=eager_ms, eager_cpu=eager_cpu,
                           **run_generate(name, c, cache, args.rounds, args.tokens, ref))
                results.append(row)
                print(f"{name:8} {cache:8} {c.name:14} {row['graphs']:>6} {row['breaks']:>6} "
                      f"{row['recompiles']:>6} {row['limit']:>5} {str(row['equal']):>5} "
                      f"{row['ms'][0]:>9.1f} {row['steady']:>7.2f} {eager_ms:>6.2f} "
                      f"{row['steady_cpu']:>10.2f} {eager_cpu:>9.2f}", flush=True)
    print("\nbreak / recompile reasons (first few):")
    for row in results:
        if row["reasons"] or row["recompile_reasons"]:
            print(f"  {row['model']} {row['kind']} {row['compiler']}:")
            for r in row["reasons"]:
                print(f"    break: {r}")
            for r in row["recompile_reasons"]:
                print(f"    recompile: {r}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
