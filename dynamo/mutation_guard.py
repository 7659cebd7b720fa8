"""GenerationTracker: which "generation" an nn.Module was created in.

A generation is a period between two entries into a compiling context: each
`with dynamo.optimize(...):` entry starts a new one (calls of a function
decorated by optimize() do not: they run in C). Once any optimize() has been
called, nn.Module.__init__ and
__setstate__ (so also copy.deepcopy and unpickling) tag the new module with
the current generation. `GenerationTracker.get_generation_value(m)` reads the
tag (-1: made before tagging was installed). Code written for TorchDynamo
uses it to tell modules created while compiled code ran from older ones.

Owns the tag table (weak keys: a tag never keeps a module alive) and the
patch of nn.Module; nothing here runs on a cache hit.
"""
import functools
import weakref

import torch


class GenerationTracker:
    generation = 0
    _tags = weakref.WeakKeyDictionary()

    @classmethod
    def tag(cls, module):
        """Record that `module` belongs to the current generation."""
        try:
            cls._tags[module] = cls.generation
        except TypeError:       # not weak-referenceable: untracked
            pass

    @classmethod
    def get_generation_value(cls, module):
        """The generation `module` was created in, -1 if untracked."""
        try:
            return cls._tags.get(module, -1)
        except TypeError:       # not weak-referenceable: never tagged
            return -1

    @classmethod
    def check(cls, module):
        """True if `module` was created in the current generation."""
        return cls.get_generation_value(module) == cls.generation


_installed = False


def install_generation_tagging():
    """Patch nn.Module.__init__/__setstate__ to tag new modules (once)."""
    global _installed
    if _installed:
        return
    _installed = True
    Module = torch.nn.Module
    init, setstate = Module.__init__, Module.__setstate__

    @functools.wraps(init)
    def tagging_init(self, *args, **kwargs):
        init(self, *args, **kwargs)
        GenerationTracker.tag(self)

    @functools.wraps(setstate)
    def tagging_setstate(self, state):
        setstate(self, state)
        GenerationTracker.tag(self)

    Module.__init__ = tagging_init
    Module.__setstate__ = tagging_setstate


def new_generation():
    """Start a generation (installing the tagging first if needed)."""
    install_generation_tagging()
    GenerationTracker.generation += 1
