"""TorchDynamo-compatible bytecode helpers over dynamo.bytecode.

`assemble(instructions, firstlineno)` lays out `dis.Instruction`s (as
dis.get_instructions gives them: EXTENDED_ARG included, CACHE entries not)
and returns `(co_code, co_linetable)`: the code bytes with zeroed inline
caches and the PEP 626 location table, computed by dynamo.bytecode's own
encoder. Jump arguments are taken as given (no relocation): the input must
already be laid out, as a decoded code object's instructions are. For
rewriting code use dynamo.bytecode (decode / assemble), which relocates.
"""
from ..bytecode import (Instruction, assemble as assemble_code, create_instruction,  # noqa: F401
                       decode, linetable_encode)
from ..bytecode.instruction import cache_entries


def assemble(instructions, firstlineno):
    """(co_code bytes, co_linetable bytes) of laid-out `instructions`."""
    code = bytearray()
    spans = []
    for inst in instructions:
        if inst.opname == "CACHE":
            continue
        arg = inst.arg or 0
        caches = cache_entries(inst.opname)
        code += bytes([inst.opcode, arg & 0xFF]) + bytes(2 * caches)
        pos = getattr(inst, "positions", None)
        loc = tuple(pos) if pos is not None else (inst.starts_line, inst.starts_line, None, None)
        spans.append((1 + caches, loc))
    return bytes(code), linetable_encode(firstlineno, spans)
