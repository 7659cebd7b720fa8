"""A(f0).m(t0): the instance is created inside the compiled frame; between
the calls A.m is replaced. Eager calls the new method; the compiled code
keeps the old one (no guard on the class attribute of a class
instantiated in the frame; class_method_replaced, with a global
instance, is guarded). Also fuzz seeds 5020076, 5011672, 5018239
(o_ = A(f0); o_.k = 5; o_.m(t0), aot_eager). Found by fuzz seed 5009938
on 3.12. Fixed: NewObjectVariable guards the class attributes it runs (and
__init__) by identity (test_class_of_an_instance_made_in_the_frame_is_guarded)."""
REASON = "method replaced on a class instantiated in the frame: not guarded"
BACKEND = "eager"
BODY = """
t0 = A(f0).m(t0)
"""
CALLS = [
    {"n": 4, "fl": 2.0},
    {"n": 4, "fl": 2.0, "muts": ["A.m = lambda self, t: t - 1"]},
]
