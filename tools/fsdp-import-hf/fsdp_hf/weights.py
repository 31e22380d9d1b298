"""A checkpoint's tensors converted into the trainer's --init-from file, tensor by tensor.

The imported model's parameters carry Hugging Face's names and layouts (llama.py,
gpt2.py), so each tensor is copied as it is: F32 and BF16 stay (the trainer widens bf16
exactly), F16 becomes F32 (exactly), F64 F32 (rounded).
"""
import os

from . import HfError
from .safetensors_io import Writer, checkpoint_tensors

# A tied model's head is its embedding; some checkpoints store a copy anyway.
HEAD = "lm_head.weight"
OUT_DTYPE = {"F32": "F32", "BF16": "BF16", "F16": "F32", "F64": "F32"}


def convert(model_dir, model, params, out_path):
    """Writes `out_path` with every parameter of `params` ([(name, shape, ...)]) from the
    checkpoint in `model_dir`, named as the family's module `model` (family.module) names
    them (a stored head the model lacks is a tied head's copy, left out). Errors name the
    tensor."""
    wanted = {name: tuple(shape) for name, shape, *_ in params}
    refs = {model.checkpoint_name(name, wanted): ref
            for name, ref in checkpoint_tensors(model_dir).items()}
    for name, ref in refs.items():
        if name in wanted or name == HEAD or name.endswith(model.RECOMPUTED):
            continue
        raise HfError(f"{model_dir}: tensor '{name}' {list(ref.shape)} is not a parameter of "
                      "the model its config.json states")
    layout = []
    for name, shape in wanted.items():
        ref = refs.get(name)
        if ref is None:
            raise HfError(f"{model_dir}: the checkpoint has no tensor '{name}' "
                          f"{list(shape)}")
        if ref.shape != shape:
            raise HfError(f"{model_dir}: tensor '{name}' is {list(ref.shape)} in the "
                          f"checkpoint, {list(shape)} in the model its config.json states")
        layout.append((name, OUT_DTYPE[ref.dtype], shape))
    # Written aside and renamed when whole: an error leaves no file that looks complete.
    partial = out_path + ".partial"
    writer = Writer(partial, layout, {"format": "pt", "source": "fsdp-import-hf"})
    try:
        for name, dtype, _shape in layout:
            ref = refs[name]
            writer.write(name, ref.read_raw() if dtype == ref.dtype
                         else ref.read_f32().tobytes())
        writer.close()
    except BaseException:
        writer.file.close()
        os.remove(partial)
        raise
    os.replace(partial, out_path)
