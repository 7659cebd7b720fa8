"""getattr_static: inspect.getattr_static's answer, without its cost.

The tracer asks, many times per traced layer, what a class or an instance
holds under a name without running descriptors, __getattr__ or
__getattribute__. inspect.getattr_static answers that, but on 3.11 each
call walks the MRO of every class on the MRO of the metaclass to find out
whether a class replaced the instance `__dict__` descriptor (a profile of a
BERT capture spent 6% of its time there). That answer depends only on the
class namespaces along an MRO, and the `__dict__` entry of a class
namespace cannot be assigned after the class is made (type's `__dict__`
is read-only and type.__setattr__ refuses the name), so it is kept per
class, valid while the class's `__mro__` is the same tuple (assigning
`__bases__` makes a new one); 3.12's inspect keeps it per MRO the same way.

Contract: getattr_static(obj, name[, default]) returns what
inspect.getattr_static returns for the same arguments, and raises the
same AttributeError. Owns `_SHADOW`, weakly keyed by class.
"""
import types
import weakref

_MISSING = object()
_mro_of = type.__dict__["__mro__"].__get__        # TypeError unless a type
_dict_of = type.__dict__["__dict__"].__get__      # the class namespace, no lookup
_SHADOW = weakref.WeakKeyDictionary()             # class -> (mro, shadowing __dict__ | _MISSING)


def _shadowed_dict(klass):
    """The `__dict__` entry of the first class on klass's MRO that replaces
    the instance-dict descriptor, or _MISSING when none does."""
    mro = _mro_of(klass)
    try:
        hit = _SHADOW.get(klass)
    except TypeError:               # a class that cannot be weakly referenced
        hit = None
    if hit is not None and hit[0] is mro:
        return hit[1]
    found = _MISSING
    for entry in mro:
        entry_dict = _dict_of(entry).get("__dict__", _MISSING)
        if entry_dict is _MISSING:
            continue
        if not (type(entry_dict) is types.GetSetDescriptorType
                and entry_dict.__name__ == "__dict__" and entry_dict.__objclass__ is entry):
            found = entry_dict
            break
    try:
        _SHADOW[klass] = (mro, found)
    except TypeError:
        pass
    return found


def _on_class(klass, name):
    for entry in _mro_of(klass):
        if _shadowed_dict(type(entry)) is _MISSING:
            ns = _dict_of(entry)
            if name in ns:
                return ns[name]
    return _MISSING


def _is_type(obj):
    try:
        _mro_of(obj)
    except TypeError:
        return False
    return True


def getattr_static(obj, name, default=_MISSING):
    """inspect.getattr_static(obj, name[, default]), see the module."""
    found_on_instance = _MISSING
    if not _is_type(obj):
        klass = type(obj)
        shadow = _shadowed_dict(klass)
        if shadow is _MISSING or type(shadow) is types.MemberDescriptorType:
            try:
                instance_dict = object.__getattribute__(obj, "__dict__")
            except AttributeError:
                pass
            else:
                found_on_instance = dict.get(instance_dict, name, _MISSING)
    else:
        klass = obj
    found_on_class = _on_class(klass, name)
    if found_on_instance is not _MISSING and found_on_class is not _MISSING:
        kind = type(found_on_class)
        if _on_class(kind, "__get__") is not _MISSING and (
                _on_class(kind, "__set__") is not _MISSING
                or _on_class(kind, "__delete__") is not _MISSING):
            return found_on_class           # a data descriptor wins over the instance
    if found_on_instance is not _MISSING:
        return found_on_instance
    if found_on_class is not _MISSING:
        return found_on_class
    if obj is klass:                        # a class: its metaclass's namespaces too
        for entry in _mro_of(type(klass)):
            if _shadowed_dict(type(entry)) is _MISSING:
                ns = _dict_of(entry)
                if name in ns:
                    return ns[name]
    if default is not _MISSING:
        return default
    raise AttributeError(name)
