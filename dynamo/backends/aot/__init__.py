"""AOT autograd with eager semantics: the adapter the "aot_eager" and
"aot_inductor_debug" backends (and none else) run AOT autograd through.

Rooms: compile.py (`_aot`: trace through aot_module_simplified, choose the
runtime or eager ops), hazards.py (why a graph must run its captured ops
eagerly), analysis.py (what the runtime must know about the graph),
graph.py (the facts both read: in-place nodes, shared storages, what
eager's autograd saved), runtime.py (`_AotRuntime`, `_SavedTensors`).

aot_module_simplified's compiled function differs from running the graph
op by op in ways a user can see; _AotRuntime restores eager's:
 - its forward is functionalized: mutations of inputs are written back at
   the end. When an op fails at run time (an int64 softmax, which the
   fake-tensor trace accepted) the earlier mutations are lost, while
   eager has applied them. Nothing has been written back when the
   forward raises, so the captured graph is then run again op by op
   (the torch RNG state restored first when the forward graph draws
   random numbers): the user sees eager's mutations and eager's error.
   Input mutations aot keeps in the graph (keep_inference_input_mutations:
   trailing copy_ nodes; aot bumps those inputs' versions before running
   it) are not written when the graph raises, so a raise inside the
   forward graph is always replayed; one outside it only when no input's
   version moved (else aot failed after writing back).
 - the backward reads what eager's saves: a mutated input's new value is
   saved as the input itself, not as a functional copy
   (_partition_saving_mutated_inputs).
   Graphs with in-place ops (augmented assignments `t += u` included)
   called on inputs that share storage run their captured ops eagerly:
   aot's synthetic bases for such inputs have failed after writing back
   (regenerating an output view) and return a new tensor where eager's
   in-place op returns the input object itself.
 - its compiled function is one autograd node, recorded or not by the
   grad mode of the call: it cannot give eager's autograd metadata where
   the graph itself switches grad mode. A graph entered with grad off
   that turns it on (an enable_grad block, or a resume function that
   leaves a no_grad block) ran as inference: its outputs lost their
   grad_fn, and views of inputs came back as no_grad views. A view made
   under no_grad of a tensor that requires grad is, in eager, a leaf-like
   tensor without grad_fn; returned, or used by an op with grad on, aot
   gave it a grad_fn to its base (or failed to trace). Such graphs run
   their captured ops eagerly (_grad_mode_hazard). So do graphs whose
   in-place op overwrites a value eager's autograd saved for the
   backward (eager's backward raises; aot's trace of it failed): found
   on the capture's fake autograd graph (_saved_value_overwritten).
 - one autograd node computes every input's gradient, and an output the
   loss never reaches gets a zero gradient, so an input that only feeds
   such outputs gets a zero .grad where eager leaves None. Where the
   outputs do not all depend on the same inputs, a hook on that node
   drops the gradients of the inputs that no reached output depends on.
   An input the graph writes in place is one more output of that node
   (its new value, copied back after the call), and its autograd edge
   is the one it had before the call.
   The zero gradient of an unreached output also runs through aot's
   backward, where eager's autograd never goes: times an inf or NaN of
   the graph (std of one row, an exp that overflowed) it makes NaN. When
   an output was not reached and the node's gradients are not finite,
   the hook recomputes eager's (_AotRuntime._eager_grads).
 - its outputs are made while its forward runs with grad off: an output
   that is a view comes back as a no_grad view, which refuses an in-place
   op with grad on where eager's view accepts it (and the reverse). The
   runtime gives view outputs the creation mode of the capture's example
   (_output_creation_meta).
 - the strides of size-1 dims: aot's out-of-place version of an in-place
   op and its _unsafe_view of an output view of an intermediate choose
   others than eager's kernels; such graphs run their captured ops
   eagerly (_size1_stride_hazard).
 - an output `v.detach()` next to an output `v` that is a view: aot
   regenerates the detached output from v's base with the detach alone,
   without v's own view steps, and fails on the shape (`t = a.t();
   return t, t.detach()` - torch.compile's aot_eager fails the same
   way). Such detaches run after the compiled function, on its output
   v (_hoist_output_detach): the same tensor eager's detach returns.
 - the values its backward reads are its own choice: where eager saved
   an input, or an output, of the graph (or a view on its memory) and
   the program writes that memory in place after the call, eager's
   backward raises and aot's ran. The runtime checks those tensors'
   versions in the backward (_saved_inputs, _AotRuntime._watch_saved).
   The reverse: its one node reads all it saved whichever output the
   loss reaches (and runs, with no gradient, when the loss reaches
   none), where eager's reached nodes may have saved nothing on that
   memory: aot's version check raised where eager's backward ran. Its
   saved tensors are held through hooks for the call (_SavedTensors).
"""
from .analysis import _grad_deps  # noqa: F401
from .compile import _aot, _aot_inputs, aot_eager  # noqa: F401
from .graph import _mutates, _share_storage  # noqa: F401
from .hazards import _size1_stride_hazard  # noqa: F401
from .runtime import _AotRuntime  # noqa: F401
