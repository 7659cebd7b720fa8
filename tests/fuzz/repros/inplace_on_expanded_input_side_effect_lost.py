"""y is x[:1].expand_as(x); `y.mul_(2)` raises in eager (more than one
element of the written-to tensor refers to one memory location) after
`a.cnt += 1`. Fake tensors accept the write, so the op was captured and
raised inside the graph, before the attribute write (applied after the
graph) was done: a.cnt differs. Found by fuzz seed 1001196 (fixed: an
input with internal overlap makes the op probed on real tensors of the
same strides; the refusal is a break)."""
REASON = "tracer: in-place op on an expanded tensor captured; raised in the graph, the attribute write lost"
BACKEND = "eager"
BODY = """
a.cnt += 1
x.add_(1)
if b0:
    raise ValueError('b')
y.mul_(2)
"""
CALLS = [
    {"shape": (3, 3), "alias": "row"},
]
