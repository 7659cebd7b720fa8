"""The symbolic interpreter: InstructionTranslator (outermost frame, graph
breaks), InliningTranslator (inlined calls) and the VariableTracker kinds."""
from .frame import InstructionTranslator, RestartAnalysis
from .translator import InliningTranslator, InstructionTranslatorBase
