"""fsdp-import-hf: a Hugging Face model directory -> a model file in the fsdp dialect (and
its weights as the trainer's --init-from file).

    fsdp-import-hf MODEL_DIR --batch B --seq T [--grid N | R,S] [--param-dtype bf16]
                   [--remat unit] [--freeze GLOB,...] [--no-dropout] -o model.mlir
                   [--weights init.safetensors]

MODEL_DIR holds config.json and, with --weights, the checkpoint (model.safetensors or
shards with model.safetensors.index.json). Supported: LlamaForCausalLM (grouped- and
multi-query attention, tied embeddings, linear, Llama 3's and YaRN's rotary scaling, in
the rope_scaling or rope_parameters spelling), MistralForCausalLM (a sliding window),
Qwen2ForCausalLM (q, k, v biases, sliding layers), Qwen3ForCausalLM (query-key norms per head),
Olmo2ForCausalLM (norms after each branch, query-key norms over the projections),
Phi3ForCausalLM (fused products, partial rotary), GemmaForCausalLM (gains 1 + w, GeGLU,
the embedding scaled), Gemma2ForCausalLM (norms around each branch, local and global
layers, soft-capped scores and logits), Gemma3ForCausalLM (gemma3_text: query-key norms,
local layers with their own rotary base), GPT2LMHeadModel (learned positions, LayerNorm
with biases, the tanh GELU, Conv1D weights, a tied head). Every config field is honoured,
known to leave the training step's math alone, or refused with an error that names it.
"""
import argparse
import os
import sys

from . import HfError, run_tool, config, family, weights
from .mlir_text import frozen_names
from .plan import Plan


def parse_grid(text):
    try:
        grid = tuple(int(n) for n in text.split(","))
    except ValueError:
        grid = ()
    if len(grid) not in (1, 2) or min(grid) < 1:
        raise HfError(f"--grid {text}: expected N or R,S (positive integers)")
    return grid


def arguments(argv):
    ap = argparse.ArgumentParser(prog="fsdp-import-hf", description=__doc__.split("\n\n")[0])
    ap.add_argument("model_dir")
    ap.add_argument("--batch", type=int, required=True, help="sequences per global batch")
    ap.add_argument("--seq", type=int, required=True, help="tokens per sequence")
    ap.add_argument("--grid", default="1", help="ranks: N (full_shard) or R,S (hybrid_shard)")
    ap.add_argument("--param-dtype", choices=["f32", "bf16"], default="f32")
    ap.add_argument("--reduce-dtype", choices=["f32", "bf16"], default="f32")
    ap.add_argument("--remat", choices=["none", "unit", "selective"], default="none")
    ap.add_argument("--key-block", type=int, help="keys per block of fsdp.attention "
                    "(default: the sequence, at most 512)")
    ap.add_argument("--lr", type=float, default=3e-5)
    ap.add_argument("--weight-decay", type=float, default=0.0)
    ap.add_argument("--clip-grad-norm", type=float, default=1.0)
    ap.add_argument("--freeze", default="", help="comma-separated parameter names or "
                    "globs to declare frozen (never updated), e.g. 'model.embed_tokens.weight' "
                    "or 'model.layers.[0-9].*'")
    ap.add_argument("--no-dropout", action="store_true", help="train without the "
                    "config's dropout (otherwise a non-zero dropout is an error)")
    ap.add_argument("-o", "--output", required=True, help="the model file to write")
    ap.add_argument("--weights", help="also write the checkpoint's tensors here, for the "
                    "trainer's --init-from")
    return ap.parse_args(argv)


def run(args):
    for flag, value in (("--batch", args.batch), ("--seq", args.seq),
                        ("--key-block", args.key_block or 1)):
        if value < 1:
            raise HfError(f"{flag} {value}: expected a positive integer")
    grid = parse_grid(args.grid)
    spec = config.model_spec(config.load(args.model_dir), args.seq, args.no_dropout)
    model = family.module(spec)
    plan = Plan(grid=grid, param_dtype=args.param_dtype, reduce_dtype=args.reduce_dtype,
                remat=args.remat, lr=args.lr, weight_decay=args.weight_decay,
                clip_grad_norm=args.clip_grad_norm)
    header = [f"Imported from {os.path.abspath(args.model_dir)} ({spec.family}) by "
              "fsdp-import-hf: Hugging Face's parameter names and layouts."]
    table = model.parameters(spec)
    frozen = frozen_names(table, [p for p in args.freeze.split(",") if p])
    text = model.write(spec, args.batch, args.seq, plan, args.key_block, header, frozen)
    if args.weights:
        weights.convert(args.model_dir, model, table, args.weights)
    with open(args.output, "w") as f:
        f.write(text)


def main(argv=None):
    args = arguments(sys.argv[1:] if argv is None else argv)
    run_tool("fsdp-import-hf", run, args)
