"""dynamo.bytecode: the instruction model (CPython 3.11-3.13), decoder, assembler, liveness.

Public surface (ARCHITECTURE.md, "Contract 2"); the submodules own:
instruction (model + create_*), decode, assemble (+ prologue and resume
helpers), linetable and exntable (wire formats), analysis (stack depth,
liveness, reachability). Nothing here touches frames or the C hook.
"""
from .analysis import (drop_unreachable, live_locals, liveness,
                       max_stack_depth, reachable, stack_depths, successors)
from .assemble import (arg_slot_count, assemble, code_with_new_body, localsplus_names,
                       prologue, strip_prologue)
from .decode import decode, decode_shared, shared_index
from .exntable import RawExnEntry, exntable_decode, exntable_encode
from .instruction import (COND_JUMP, FOR_ITER_EXIT, HAS_CALL_KW, HAS_PRECALL, NULL_ABOVE_CALLABLE,
                          PY312, PY313, ExnTabEntry, Instruction, line_start,
                          binary_op_arg, cache_entries, create_call, create_call_function,
                          create_load_method, create_make_function,
                          create_call_kw, create_call_method, create_dup_top,
                          create_instruction, create_jump, create_load_const,
                          create_load_global, create_rot_n,
                          format_instructions)
from .linetable import linetable_encode
