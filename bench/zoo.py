"""make bench-zoo: every architecture a library offers, captured by dynamo and
by torch.compile (issue 31, item 2).

The zoo is enumerated at run time: every model type with an entry in
transformers' AutoModel mapping (built from its config class with the sizes
shrunk: SHRINK), the smallest model of every timm family (one of its
modules; the smallest by its size words: _timm_size) and every torchvision
model (weights None; --smallest: the smallest of each builder module), where
those libraries import (torchvision without its C ops: bench/_tv_ops.py). Each model runs in a subprocess of its
own with a timeout: eager, then dynamo, then torch.compile, both with the
backend "eager" on a fresh cache, CPU, one intra-op thread.

One counting rule for both compilers, from what each reports of itself:
  graphs     the graphs handed to the backend during the first call;
  breaks     cuts made in traced frames during the first call: each time
             a compiler ended a graph early at a break and went on after it
             (dynamo: the break reasons of its compile records whose frame
             was cut, status OK; torch.compile: its OutputGraph.
             compile_subgraph calls with a graph-break reason, counted by a
             wrapper around that method). Neither counts a frame it gave up
             on and ran eagerly as a whole. (torch's counters["graph_break"]
             misses the cut at a tensor branch in a frame's own code, which
             it files under counters["unimplemented"]; bench/break_rule.py
             shows both readings on functions whose cuts are known);
  recompiles graphs handed to the backend during a second, identical call;
  equal      every tensor leaf of the output equal to eager's (rtol 1e-4,
             atol 1e-5); capture the first call's wall time.
Every call (eager's, and each compiler's first and second) starts from the
same random state (torch, numpy, random: _seeded), so a model that draws
random numbers (VITS' durations, ViT-MAE's masking) makes the same draws on
each call: its second call is identical, and its outputs comparable.
Only bench/ may import torch's own compiler, and only to compare against it.

Usage: python bench/zoo.py [--libs hf,timm,tv] [--models a,b] [-j N] [--smallest]
                           [--shard I/N] [--sample K] [--timeout S] [--out F]
       python bench/zoo.py --list
Writes bench/zoo.json (one record per model, and bench/zoo.jsonl as they
come) and prints the summary table.
"""
import argparse
import json
import math
import os
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.join(HERE, "..")

# config attributes set to small values where a config has them (sub-configs
# too: text_config, vision_config, encoder, ...)
SHRINK = {
    "hidden_size": 32, "d_model": 32, "n_embd": 32, "embed_dim": 32, "dim": 32, "d_embed": 32,
    "num_hidden_layers": 2, "num_layers": 2, "n_layer": 2, "n_layers": 2, "encoder_layers": 2,
    "decoder_layers": 2, "num_decoder_layers": 2, "num_encoder_layers": 2,
    "num_attention_heads": 2, "num_heads": 2, "n_head": 2, "n_heads": 2,
    "encoder_attention_heads": 2, "decoder_attention_heads": 2, "num_key_value_heads": 1,
    "intermediate_size": 64, "d_ff": 64, "ffn_dim": 64, "encoder_ffn_dim": 64,
    "decoder_ffn_dim": 64, "hidden_dim": 64, "n_inner": 64, "dff": 64, "d_kv": 16, "head_dim": 16,
    "vocab_size": 128, "num_experts": 4, "num_local_experts": 4, "num_experts_per_tok": 2,
}
B, S = 2, 8
RTOL, ATOL = 1e-4, 1e-5


# ---------------------------------------------------------------- the zoo
def _vision_importable():
    """torchvision (and timm, which imports it) importable here: bench/_tv_ops.py."""
    sys.path.insert(0, HERE)
    import _tv_ops
    _tv_ops.install()


def list_models(libs, smallest=False):
    if "timm" in libs or "tv" in libs:
        _vision_importable()
    names = []
    if "hf" in libs:
        try:
            from transformers.models.auto.modeling_auto import MODEL_MAPPING_NAMES
            names += [f"hf:{t}" for t in MODEL_MAPPING_NAMES]
        except ImportError:
            pass
    if "timm" in libs:
        try:
            import timm
            names += [f"timm:{min(timm.list_models(module=m), key=_timm_size)}"
                      for m in timm.list_modules()]       # a family is one of timm's modules
        except ImportError:
            pass
    if "tv" in libs:
        try:
            import torchvision
            tv = torchvision.models.list_models()
            names += [f"tv:{n}" for n in (_tv_smallest(tv) if smallest else tv)]
        except ImportError:
            pass
    return names


# timm's size words, smallest first; a model's size is its smallest word's rank
# (unnamed: "base"), then the first number in its name (resnet10t < resnet50)
SIZE_WORDS = ["atto", "femto", "pico", "nano", "zepto", "xxxs", "xxs", "xs", "mini", "micro",
              "tiny", "t", "small", "s", "lite", "b0", "b1", "base", "b", "medium", "m",
              "large", "l", "xl", "xlarge", "huge", "h", "giant", "g"]


def _timm_size(name):
    import re
    ranks = [SIZE_WORDS.index(w) for w in re.split(r"[_.]", name) if w in SIZE_WORDS]
    nums = [int(n) / (1000 if u == "mf" else 1)             # regnet_x_400mf < regnet_x_1_6gf
            for n, u in re.findall(r"(\d+)(mf)?", name)]
    return (min(ranks, default=SIZE_WORDS.index("base")), nums[:1] or [0], name)


def _tv_smallest(names):
    """The smallest torchvision model of each builder module, by parameters
    counted on the meta device (a builder that cannot run there: by name)."""
    import torch
    import torchvision
    best = {}
    for n in names:
        builder = torchvision.models.get_model_builder(n)
        try:
            with torch.device("meta"):
                try:
                    m = builder(weights=None, weights_backbone=None)
                except TypeError:
                    m = builder(weights=None)
            size = (sum(p.numel() for p in m.parameters()), ())
        except Exception:  # noqa: BLE001 - e.g. an initializer that reads data
            size = (math.inf, _timm_size(n))
        best[builder.__module__] = min(best.get(builder.__module__, (size, n)), (size, n))
    return [n for _, n in best.values()]


def _shrink(cfg, depth=0):
    for k, v in SHRINK.items():
        if isinstance(getattr(cfg, k, None), int) and not isinstance(getattr(cfg, k), bool):
            try:
                setattr(cfg, k, v)
            except Exception:  # noqa: BLE001 - a read-only or validated attribute keeps its value
                pass
    vocab = getattr(cfg, "vocab_size", None)
    for k in ("pad_token_id", "bos_token_id", "eos_token_id", "decoder_start_token_id"):
        if isinstance(vocab, int) and isinstance(getattr(cfg, k, None), int) and getattr(cfg, k) >= vocab:
            try:
                setattr(cfg, k, 1)          # a shrunk vocabulary keeps its special ids in range
            except Exception:  # noqa: BLE001
                pass
    if depth < 2:
        for k, v in list(vars(cfg).items()):
            if hasattr(v, "to_dict") and hasattr(v, "model_type"):
                _shrink(v, depth + 1)
    return cfg


def build_hf(model_type):
    import torch
    from transformers import AutoConfig, AutoModel
    cfg = _shrink(AutoConfig.for_model(model_type))
    torch.manual_seed(0)
    model = AutoModel.from_config(cfg).eval()
    g = torch.Generator().manual_seed(1)
    name = getattr(model, "main_input_name", "input_ids")
    vocab = getattr(cfg, "vocab_size", None) or 100
    if name == "input_ids":
        inputs = {"input_ids": torch.randint(0, min(vocab, 100), (B, S), generator=g)}
    elif name == "pixel_values":
        vc = getattr(cfg, "vision_config", None) or cfg
        size = getattr(vc, "image_size", 224)
        size = size[0] if isinstance(size, (list, tuple)) else size
        inputs = {name: torch.randn(B, getattr(vc, "num_channels", 3), size, size, generator=g)}
    elif name == "input_values":
        inputs = {name: torch.randn(B, 4000, generator=g)}
    elif name == "input_features":
        mel = getattr(cfg, "num_mel_bins", 80)
        frames = 2 * getattr(cfg, "max_source_positions", 1500)
        inputs = {name: torch.randn(B, mel, frames, generator=g)}
    else:
        raise RuntimeError(f"no input recipe for {name}")
    if getattr(cfg, "is_encoder_decoder", False):
        inputs["decoder_input_ids"] = torch.randint(0, min(vocab, 100), (B, 4), generator=g)
    return model, inputs


def build_timm(name):
    _vision_importable()
    import timm
    import torch
    torch.manual_seed(0)
    model = timm.create_model(name, pretrained=False).eval()
    cfg = model.pretrained_cfg
    size = cfg.get("input_size", (3, 224, 224))
    return model, {"x": torch.randn(1, *size, generator=torch.Generator().manual_seed(1))}


def build_tv(name):
    _vision_importable()
    import torch
    import torchvision
    torch.manual_seed(0)
    try:                                  # no backbone weights either (no download)
        model = torchvision.models.get_model(name, weights=None, weights_backbone=None)
    except TypeError:                     # a classifier takes no backbone argument
        model = torchvision.models.get_model(name, weights=None)
    model.eval()
    kind = model.__module__
    shape = ((1, 3, 16, 224, 224) if "mvit" in kind or "s3d" in kind   # their 16x224x224 clip
             else (1, 3, 8, 112, 112) if "video" in kind else (1, 3, 224, 224))
    g = torch.Generator().manual_seed(1)
    x = torch.randn(*shape, generator=g)
    if "detection" in kind:
        return model, {"images": [x[0]]}
    if "optical_flow" in kind:                         # RAFT: a pair of frames
        return model, {"image1": x, "image2": torch.randn(*shape, generator=g)}
    import inspect
    first = next(iter(inspect.signature(model.forward).parameters))   # x, input, ...
    return model, {first: x}


BUILDERS = {"hf": build_hf, "timm": build_timm, "tv": build_tv}


# ---------------------------------------------------------------- one model
def _leaves(value, out):
    import torch
    if isinstance(value, torch.Tensor):
        out.append(value)
    elif isinstance(value, dict) or hasattr(value, "to_tuple"):
        for v in (value.values() if isinstance(value, dict) else value.to_tuple()):
            _leaves(v, out)
    elif isinstance(value, (list, tuple)):
        for v in value:
            _leaves(v, out)
    return out


def _equal(ref, got):
    import torch
    a, b = _leaves(ref, []), _leaves(got, [])
    return bool(a) and len(a) == len(b) and all(
        x.shape == y.shape and torch.allclose(x, y, rtol=RTOL, atol=ATOL, equal_nan=True)
        for x, y in zip(a, b))


def _seeded():
    """The random state every call starts from."""
    import random
    import torch
    torch.manual_seed(0)
    random.seed(0)
    try:
        import numpy
        numpy.random.seed(0)
    except ImportError:
        pass


def _ours(model, inputs):
    import dynamo
    from dynamo import records
    from dynamo.testing import CompileCounter
    dynamo.reset()
    cnt = CompileCounter()
    opt = dynamo.optimize(cnt)(model)
    start = records.mark()
    _seeded()
    t0 = time.perf_counter()
    out = opt(**inputs)
    capture = time.perf_counter() - t0
    recs = records.records_since(start)
    reasons = [b.reason for r in recs if r.status == records.STATUS["OK"] for b in r.break_reasons]
    graphs = cnt.frame_count
    _seeded()
    opt(**inputs)
    return out, dict(graphs=graphs, breaks=len(reasons), recompiles=cnt.frame_count - graphs,
                     capture=capture, reasons=sorted(set(reasons))[:5])


def _torch(model, inputs):
    import torch
    import torch._dynamo as td
    from torch._dynamo import output_graph
    td.reset()
    seen, cuts = [], []
    original = output_graph.OutputGraph.compile_subgraph

    def counted(self, tx, *args, **kwargs):     # counts only; calls through unchanged
        reason = kwargs.get("reason")
        if reason is not None and getattr(reason, "graph_break", False):
            cuts.append(str(reason.reason))
        return original(self, tx, *args, **kwargs)

    def backend(gm, example_inputs):
        seen.append(gm)
        return gm.forward

    output_graph.OutputGraph.compile_subgraph = counted
    try:
        opt = torch.compile(model, backend=backend)
        _seeded()
        t0 = time.perf_counter()
        out = opt(**inputs)
        capture = time.perf_counter() - t0
        graphs = len(seen)
        breaks = len(cuts)
        reasons = sorted(set(cuts))[:5]
        _seeded()
        opt(**inputs)
    finally:
        output_graph.OutputGraph.compile_subgraph = original
    return out, dict(graphs=graphs, breaks=breaks, recompiles=len(seen) - graphs,
                     capture=capture, reasons=[str(r)[:200] for r in reasons])


def run_one(name):
    """The record of one model (run in its own process)."""
    import warnings
    warnings.filterwarnings("ignore")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
    import torch
    torch.set_num_threads(1)
    lib, _, model_name = name.partition(":")
    rec = {"model": name}
    try:
        model, inputs = BUILDERS[lib](model_name)
        with torch.no_grad():
            _seeded()
            ref = model(**inputs)
    except Exception as e:  # noqa: BLE001 - the harness's limit, recorded, not dynamo's
        rec["eager_error"] = f"{type(e).__name__}: {str(e)[:200]}"
        return rec
    for who, fn in (("ours", _ours), ("torch", _torch)):
        try:
            with torch.no_grad():
                out, stats = fn(model, inputs)
            stats["equal"] = _equal(ref, out)
        except Exception as e:  # noqa: BLE001 - a compiler's failure is its result
            stats = {"error": f"{type(e).__name__}: {str(e)[:200]}"}
        rec[who] = stats
    return rec


# ---------------------------------------------------------------- the sweep
def _spawn(name, timeout):
    cmd = [sys.executable, os.path.abspath(__file__), "--one", name]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([ROOT, os.environ.get("PYTHONPATH", "")]),
               OMP_NUM_THREADS="1")
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)
    except subprocess.TimeoutExpired:
        return {"model": name, "timeout": timeout}
    for line in reversed(p.stdout.splitlines()):
        if line.startswith("{"):
            return json.loads(line)
    return {"model": name, "crash": (p.stderr or "")[-300:]}


def _whole(s):
    return "error" not in s and s["graphs"] == 1 and s["breaks"] == 0


def summarize(recs):
    """The table: per library, the models whose eager ran and how both fared."""
    rows = []
    libs = sorted({r["model"].split(":")[0] for r in recs})
    for lib in libs + ["all"]:
        rs = [r for r in recs if (lib == "all" or r["model"].startswith(lib + ":"))
              and "ours" in r and "torch" in r]
        ok = [r for r in rs if "error" not in r["ours"] and "error" not in r["torch"]]
        ratios = [r["ours"]["capture"] / r["torch"]["capture"] for r in ok
                  if r["torch"]["capture"] > 0]
        rows.append({
            "lib": lib, "eager ran": len(rs),
            "ours whole": sum(_whole(r["ours"]) for r in rs),
            "torch whole": sum(_whole(r["torch"]) for r in rs),
            "breaks <= torch": sum(r["ours"]["breaks"] <= r["torch"]["breaks"] for r in ok),
            "equal (where torch's are)": f'{sum(r["ours"]["equal"] for r in ok if r["torch"]["equal"])}'
                                         f'/{sum(r["torch"]["equal"] for r in ok)}',
            "recompiles ours/torch": f'{sum(r["ours"]["recompiles"] > 0 for r in ok)}'
                                     f'/{sum(r["torch"]["recompiles"] > 0 for r in ok)}',
            "capture geomean ours/torch": round(math.exp(sum(map(math.log, ratios)) / len(ratios)), 3)
            if ratios else None,
        })
    return rows


def print_table(rows):
    keys = list(rows[0])
    print("| " + " | ".join(keys) + " |")
    print("|" + "---|" * len(keys))
    for r in rows:
        print("| " + " | ".join(str(r[k]) for k in keys) + " |")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--libs", default="hf,timm,tv")
    ap.add_argument("--models", default="")
    ap.add_argument("-j", type=int, default=1)
    ap.add_argument("--shard", default="0/1", help="I/N: every N-th model from the I-th")
    ap.add_argument("--sample", type=int, default=0, help="every K-th model only")
    ap.add_argument("--timeout", type=int, default=300)
    ap.add_argument("--out", default=os.path.join(HERE, "zoo.json"))
    ap.add_argument("--list", action="store_true")
    ap.add_argument("--smallest", action="store_true",
                    help="torchvision: the smallest model of each builder module only")
    ap.add_argument("--one", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.one:
        print(json.dumps(run_one(args.one)))
        return
    names = args.models.split(",") if args.models else list_models(args.libs.split(","), args.smallest)
    i, n = map(int, args.shard.split("/"))
    names = names[i::n]
    if args.sample:
        names = names[::args.sample]
    if args.list:
        print("\n".join(names))
        return
    recs = []
    partial = open(args.out + "l", "w")         # zoo.jsonl: each record as it comes
    with ThreadPoolExecutor(max_workers=args.j) as pool:
        for rec in pool.map(lambda m: _spawn(m, args.timeout), names):
            recs.append(rec)
            partial.write(json.dumps(rec) + "\n")
            partial.flush()
            o, t = rec.get("ours", {}), rec.get("torch", {})
            print(f'{rec["model"]:40s} ours {o.get("graphs")}/{o.get("breaks")} '
                  f'torch {t.get("graphs")}/{t.get("breaks")} equal {o.get("equal")} '
                  f'{rec.get("eager_error") or o.get("error") or rec.get("timeout") or ""}'[:200],
                  flush=True)
    partial.close()
    with open(args.out, "w") as f:
        json.dump({"records": recs, "summary": summarize(recs)}, f, indent=1)
    print_table(summarize(recs))


if __name__ == "__main__":
    main()
