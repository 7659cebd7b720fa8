"""torch and standard-library calls that transformers models make under
compile (issue 31): torch._higher_order_ops' associative_scan (Mamba),
torch.vmap of mask functions under TransformGetItemToIndex (T5Gemma2),
torch.distributions.Normal with its argument check, and a UserDict of
shared KV states (Gemma 3n). Each counted: graphs and breaks of the first
call, outputs (and dtypes) equal eager."""
import collections

import pytest
import torch

import dynamo
from dynamo import records
from dynamo.testing import CompileCounter, same

associative_scan = pytest.importorskip("torch._higher_order_ops.associative_scan").associative_scan


def run(fn, *args, graphs=1, breaks=0, seed=None):
    """Compiled result of fn(*args), checked against eager (both from
    `seed` when given), with (graphs, breaks) of its first call counted."""
    dynamo.reset()
    if seed is not None:
        torch.manual_seed(seed)
    expected = fn(*args)
    cnt = CompileCounter()
    start = records.mark()
    if seed is not None:
        torch.manual_seed(seed)
    got = dynamo.optimize(cnt)(fn)(*args)
    reasons = [b.reason for r in records.records_since(start) for b in r.break_reasons]
    assert (cnt.frame_count, len(reasons)) == (graphs, breaks), reasons
    assert same(expected, got) and getattr(expected, "dtype", None) == getattr(got, "dtype", None)
    return cnt, reasons


# ------------------------------------------------ associative_scan
def selective_scan(a, b):
    # transformers' Mamba (modeling_mamba.py) when is_torchdynamo_compiling()
    def combine_fn(left, right):
        a_left, b_left = left
        a_right, b_right = right
        return a_left * a_right, a_right * b_left + b_right
    _, states = associative_scan(combine_fn, (a, b), dim=2, combine_mode="generic")
    return states.transpose(1, 2) * 2


def test_associative_scan_of_a_pytree_is_one_graph():
    a, b = torch.rand(2, 3, 5, 4), torch.randn(2, 3, 5, 4)
    cnt, _ = run(selective_scan, a, b)
    # one select per leaf and element, one combine (2 mul, 1 add) per step,
    # one stack per leaf, and the transpose and mul after
    assert cnt.op_count == 2 * 5 + 3 * 4 + 2 + 2
    # the recurrence the sequential loop computes, exactly
    state, states = torch.zeros(2, 3, 4), []
    for i in range(5):
        state = a[:, :, i] * state + b[:, :, i]
        states.append(state)
    assert torch.equal(dynamo.optimize(CompileCounter())(selective_scan)(a, b),
                       torch.stack(states, 1) * 2)


def test_associative_scan_reverse_and_negative_dim():
    def suffix_sums(x):
        return associative_scan(lambda l, r: l + r, x, dim=-1, reverse=True, combine_mode="generic")
    x = torch.randn(3, 6)
    run(suffix_sums, x)
    got = dynamo.optimize(CompileCounter())(suffix_sums)(x)
    assert same(got, x.flip(-1).cumsum(-1).flip(-1))

    def prefix_max_list(x, y):
        out = associative_scan(lambda l, r: [torch.maximum(l[0], r[0]), l[1] * r[1]], [x, y], 0,
                               combine_mode="generic")
        return out[0], out[1]
    run(prefix_max_list, torch.randn(4, 3), torch.rand(4, 3))


def test_associative_scan_torch_rejects_runs_eagerly():
    # pointwise mode needs CUDA: torch raises, so the call runs eagerly
    def pointwise_on_cpu(x):
        y = x * 2
        try:
            y = associative_scan(lambda l, r: l + r, y, dim=0)
        except ValueError:
            pass
        return y + 1
    _, reasons = run(pointwise_on_cpu, torch.randn(4), graphs=2, breaks=1)
    assert "pointwise mode" in reasons[0]


# ------------------------------------------------ torch.vmap
def test_transformers_vmapped_mask_is_one_graph():
    # sdpa_mask(use_vmap=True) as T5Gemma2 reaches it (an and_mask_function):
    # four nested vmaps of a mask function over index tensors, inside
    # `with TransformGetItemToIndex()`, indexing the padding mask by them
    mu = pytest.importorskip("transformers.masking_utils")

    def mask(attention_mask):
        fn = mu.and_masks(mu.sliding_window_bidirectional_overlay(2), mu.bidirectional_mask_function)
        return mu.sdpa_mask(batch_size=2, q_length=8, kv_length=8, mask_function=fn,
                            attention_mask=attention_mask, use_vmap=True,
                            allow_is_causal_skip=False)
    am = torch.ones(2, 8, dtype=torch.long)
    am[0, :3] = 0
    cnt, _ = run(mask, am)
    ops = {n.target for n in cnt.graphs[0].graph.nodes}
    assert torch.ops.aten.index.Tensor in ops and torch.vmap not in ops
    # the same mask as the index-based (non-vmap) expansion
    expected = mu.sdpa_mask(batch_size=2, q_length=8, kv_length=8, mask_function=mu.and_masks(
        mu.sliding_window_bidirectional_overlay(2), mu.bidirectional_mask_function),
        attention_mask=am, allow_is_causal_skip=False)
    assert torch.equal(dynamo.optimize(CompileCounter())(mask)(am), expected)


def test_vmap_of_elementwise_functions():
    c = torch.randn(4)

    def scaled(x, y):
        return torch.vmap(lambda a, b: torch.where(a > 0, a * b, c) + 1, in_dims=(0, None))(x, y)
    run(scaled, torch.randn(3, 4), torch.randn(4))

    def outer(x, y):                    # nested, mapped dims not in front, a result per level
        inner = torch.vmap(lambda a, b: (a - b, (a * 2).to(torch.float64)), in_dims=(1, 0))
        return torch.vmap(inner, in_dims=(None, 0))(x, y)
    run(outer, torch.randn(4, 3), torch.randn(5, 3))

    def unmapped_result(x):             # the result does not depend on x: expanded
        return torch.vmap(lambda a: c * 2)(x)
    run(unmapped_result, torch.randn(3, 2))


def test_vmap_where_the_batch_would_show_breaks():
    c = torch.tensor(1.0)
    cases = [
        (lambda a: a.sum(), torch.randn(3, 4), "sum on a mapped tensor"),          # a reduction
        (lambda a: a + a.shape[0], torch.randn(3, 4), "shape of a mapped"),        # the element's shape
        (lambda a: a[0] * 2, torch.randn(3, 4), "getitem on a mapped"),            # indexing the element
        # 0-d elements of half and a 0-d float32: float32 per element
        (lambda a: a + c, torch.ones(3, dtype=torch.half), "promotes types"),
        (lambda a: a + torch.rand(()), torch.randn(3), "draws random"),            # one draw per element
        (lambda a: a + torch.nn.Dropout()(c), torch.randn(3), "draws random"),
        (lambda a: a.clone().add_(1), torch.randn(3), "add_ on a mapped"),        # in place
        (lambda a: torch.nn.ReLU()(a), torch.randn(3), "called on a mapped"),      # a module
    ]
    for body, x, why in cases:
        def f(x):
            return torch.vmap(body, randomness="different")(x * 2) + 1
        _, reasons = run(f, x, graphs=2, breaks=1, seed=0)
        assert reasons[0].startswith("vmap: ") and why in reasons[0], reasons


def test_vmap_of_an_elementwise_function_with_rank_one_elements():
    c = torch.tensor(1.0)

    def f(x):
        return torch.vmap(lambda a: a + c)(x)       # elements of rank 1: no promotion change
    run(f, torch.ones(3, 2, dtype=torch.half))


def test_frames_inside_an_eager_vmap_run_eagerly_without_warning():
    import warnings
    cnt = CompileCounter()
    inner = dynamo.optimize(cnt)(lambda a: a * 2 + 1)
    x = torch.randn(3, 4)
    dynamo.reset()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = torch.vmap(inner)(x)
    assert cnt.frame_count == 0 and torch.equal(got, x * 2 + 1)


def test_getitem_to_index_block():
    from torch.overrides import TorchFunctionMode
    mode = [c for c in TorchFunctionMode.__subclasses__() if c.__name__ == "TransformGetItemToIndex"]
    if not mode:
        pytest.skip("this torch has no TransformGetItemToIndex")

    def f(x, i):
        with mode[0]():
            y = x[i, 1] + x[0, i]
        return y * 2
    cnt, _ = run(f, torch.randn(4, 5), torch.tensor([0, 2, 3]))
    assert sum(n.target is torch.ops.aten.index.Tensor for n in cnt.graphs[0].graph.nodes) == 2


# ------------------------------------------------ torch.distributions
def gaussian_topk(x):
    # Gemma3nTextMLP._gaussian_topk
    target = torch.tensor(0.95, dtype=torch.float32, device=x.device)
    normal_dist = torch.distributions.normal.Normal(0, 1)
    std_multiplier = normal_dist.icdf(target).type(x.dtype)
    cutoff = x.mean(-1, keepdim=True) + x.std(-1, keepdim=True, unbiased=False) * std_multiplier
    return torch.nn.functional.relu(x - cutoff)


def test_normal_distribution_made_and_queried_in_the_frame():
    assert torch.distributions.Distribution._validate_args     # its argument check runs
    run(gaussian_topk, torch.randn(2, 8))

    def passed_in(x, dist):
        return dist.icdf(torch.sigmoid(x)) * dist.stddev + dist.mean + dist.variance
    run(passed_in, torch.randn(5), torch.distributions.Normal(torch.zeros(5), torch.ones(5)))

    def log_prob(x, dist):          # checks x is in the support: a branch on x's data
        return dist.log_prob(x)
    run(log_prob, torch.randn(5), torch.distributions.Normal(torch.zeros(5), torch.ones(5)),
        graphs=0, breaks=1)
    run(log_prob, torch.randn(5), torch.distributions.Normal(torch.zeros(5), torch.ones(5),
                                                             validate_args=False))


def test_branch_on_a_tensor_made_from_constants_is_folded():
    def check(x):
        valid = torch.tensor([0.5, 2.0]) > 0
        if not torch._is_all_true(valid):
            raise ValueError("bad")
        return x * 2
    run(check, torch.randn(3))

    def written(x):                                   # a write through a view: not folded
        t = torch.tensor(1.0)
        t.view(()).add_(x.sum() * 0 - 5)
        return x + 1 if t > 0 else x - 1
    _, reasons = run(written, torch.randn(3), graphs=2, breaks=1)
    assert reasons == ["generic_jump TensorVariable()"]

    def drawn(x):                                     # a random draw: not folded
        return x + 1 if torch.rand(()) > 2 else x - 1
    run(drawn, torch.randn(3), graphs=2, breaks=1, seed=0)


# ------------------------------------------------ collections.UserDict
def test_userdict_made_in_the_frame():
    def layer(x, i, shared):
        if i == 0:
            shared[i] = x * 2, x + 1
            return x
        k, v = shared[0]
        return x + k * v

    def model(x):           # Gemma3nTextModel's shared_kv_states = UserDict()
        shared = collections.UserDict()
        for i in range(3):
            x = layer(x, i, shared)
        del shared[0]
        return x, len(shared), 0 in shared
    run(model, torch.randn(3))


def test_associative_scan_with_a_random_combine_runs_eagerly():
    def noisy(x):
        y = x * 2
        try:
            y = associative_scan(lambda l, r: l + r * torch.rand(()), y, 0, combine_mode="generic")
        except RuntimeError:        # vmap's randomness="error"
            pass
        return y + 1
    _, reasons = run(noisy, torch.randn(4), graphs=2, breaks=1, seed=0)
    assert "draws random" in reasons[0]


def test_branch_on_a_constant_written_by_an_op_without_underscore_is_not_folded():
    def f(x):
        t = torch.tensor(-1.0)
        torch.nn.functional.relu(t, inplace=True)       # writes t: 0.0
        return x + 1 if t < 0 else x - 1
    run(f, torch.randn(3), graphs=2, breaks=1)
