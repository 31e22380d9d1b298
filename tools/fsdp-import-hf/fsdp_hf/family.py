"""The model module of a config's family: llama.py (Llama, Mistral, Qwen2, Qwen3, OLMo 2,
Phi-3, Gemma 3) or gpt2.py.

Each has parameters(spec) ([(name, shape, unit, initializer)] with Hugging Face's names),
write(spec, batch, seq, plan, key_block, header, frozen) (the model file),
checkpoint_name(name, wanted) (a checkpoint tensor's name in the model) and RECOMPUTED
(the suffixes of buffers a checkpoint may store that the model recomputes).
"""
from . import gpt2, llama


def module(spec):
    return gpt2 if spec.family == "gpt2" else llama
