"""Exceptions raised by dynamo; every unsupported path raises Unsupported.

Unsupported carries a reason a user can act on and, once known, the user's
file:line ("Processing original code: ...") where tracing stopped.
"""


class DynamoError(RuntimeError):
    """Base class of dynamo's own errors."""


class Unsupported(DynamoError):
    """The tracer met something it cannot put into a graph.

    `reason` is the short cause (e.g. "generic_jump TensorVariable()");
    `user_stack` is a list of traceback.FrameSummary, innermost last, added
    by the tracer when it knows where it was.
    """

    # user code raises here (None.attr, 1/0, a missing key) rather than
    # the tracer lacking a rule: tracer/frame.py may then run the whole
    # frame eagerly instead of breaking at the call
    user_raise = False

    def __init__(self, reason, user_stack=None):
        super().__init__(reason)
        self.reason = reason
        self.user_stack = list(user_stack or [])

    def add_user_stack(self, user_stack):
        if not self.user_stack:
            self.user_stack = list(user_stack)

    def __str__(self):
        if not self.user_stack:
            return self.reason
        lines = [self.reason, "", "Processing original code:"]
        for fs in self.user_stack:
            lines.append(f'  File "{fs.filename}", line {fs.lineno}, in {fs.name}')
            if fs.line:
                lines.append(f"    {fs.line}")
        return "\n".join(lines)


class BackendCompilerFailed(DynamoError):
    """A backend raised while compiling a graph (raise_on_backend_error)."""

    def __init__(self, backend_name, inner):
        super().__init__(f"backend {backend_name!r} raised {type(inner).__name__}: {inner}")
        self.backend_name = backend_name
        self.inner = inner


class CacheLimitExceeded(DynamoError):
    """Not raised to users; used to tag records where cache_size_limit was hit."""


# Failures of a compile caused by the call's environment, not by the code:
# this call's stack depth (RecursionError: a first call near the recursion
# limit), memory (MemoryError), a module half imported when a signal handler
# or another thread reached the compiler during the process's first compile
# (ImportError), the operating system (OSError: files, descriptors). A
# compile that fails with one of them is not remembered as a property of
# the code (convert_frame tries again on a later call); KeyboardInterrupt
# and SystemExit are not caught at all: they reach the caller.
ENVIRONMENT_ERRORS = (RecursionError, MemoryError, ImportError, OSError)


def environment_error(exc):
    """The ENVIRONMENT_ERRORS instance that `exc` is, or that caused it
    (its __cause__ / __context__ chain: a tracer that turned the failure of
    an example-value run into Unsupported), else None."""
    seen = 0
    while exc is not None and seen < 16:
        if isinstance(exc, ENVIRONMENT_ERRORS):
            return exc
        exc = exc.__cause__ or exc.__context__
        seen += 1
    return None
