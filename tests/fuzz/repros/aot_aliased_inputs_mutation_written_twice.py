"""y is a view of x; the graph mutates a view of x and returns it, then
`l0[i0 % 4]` raises IndexError (lst is empty). aot_eager's synthetic-base
path wrote the mutation back, then failed regenerating the output view
(AssertionError inside aot), and the replay after a failing forward
applied the mutation a second time (x * 9 instead of x * 3). Found by fuzz
seed 300231."""
REASON = "aot_eager: mutation of aliased inputs applied twice after aot failed past its write-back"
BACKEND = "aot_eager"
BODY = """
t0 = x[:, 0]
t0.mul_(3)
t1 = torch.stack([t1, t1]).sum(0)
i0 = l0[i0 % 4]
"""
CALLS = [
    {"noncontig": True, "n": 0, "alias": "view"},
]
