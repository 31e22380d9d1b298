"""Writes tiny Hugging Face checkpoints, with Hugging Face's own loss and logits, for
testing `fsdp-import-hf` without torch.

Run once by a developer; never by CI (CI has neither torch nor transformers). The
output is committed under test/e2e/Inputs/hf/; the importer's tests compile the
evaluation step of each imported model and compare its loss with `expected.json`
(1e-5 relative).

    python3 -m venv /tmp/hfvenv
    /tmp/hfvenv/bin/python -m pip install torch transformers safetensors numpy
    /tmp/hfvenv/bin/python test/reference/make_hf_fixtures.py [--out DIR] [--only NAME,...]
    /tmp/hfvenv/bin/python test/reference/make_hf_fixtures.py --verify   # reload and recheck

Written with transformers 5.24.0 and torch 2.15.0 (CPU, float32). Transformers 5
writes the rotary settings as `rope_parameters` {"rope_theta", "rope_type", ...} in
config.json; transformers 4 wrote `rope_theta` and `rope_scaling` at the top level. A
rerun with another version may change the spelling of config.json and the last bits of
the losses; the importer should accept both spellings.

Each fixture is a folder DIR/NAME holding
  config.json, generation_config.json   as `save_pretrained` writes them
  model.safetensors                     (llama3-scaled: model-0000i-of-0000n.safetensors
                                         and model.safetensors.index.json, bf16)
  batch.npz     input_ids int32 [2, 16] and targets int32 [2, 16]: one NumPy draw of
                [2, 17] tokens in [0, 256) (seed BATCH_SEED), input_ids = [:, :16],
                targets = [:, 1:]; the same batch in every folder (longer where
                FIXTURE_SEQ says)
  logits.npy    float32 [2, T, 256], the model's logits on input_ids
  expected.json {family, model_type, architectures, transformers, torch,
                 loss: mean cross-entropy of `logits` against `targets` over all 32
                   positions, log-softmax in float64 (no label shifting),
                 loss_hf: F.cross_entropy of the same in float32, for reference,
                 logits_sum: float64 sum of logits, logits_sample: logits[0, 0, :8]}

The models (2 layers, hidden 64, vocabulary 256, float32 unless said):
  llama          LlamaForCausalLM, 4 heads, 2 kv heads, ffn 96, rope_theta 1e4, eps 1e-5, untied
  llama3-scaled  as llama but rope_theta 5e5 with "llama3" rope scaling (factor 8, low 1,
                 high 4, original context 16: changes frequencies at head_dim 16), eps 1e-6,
                 tied embeddings, saved in bf16 in two or more safetensors shards
  mistral        MistralForCausalLM, 4 heads, 1 kv head, ffn 96, no sliding window, untied
  qwen2          Qwen2ForCausalLM, 4 heads, 2 kv heads, ffn 96, q/k/v biases, tied,
                 eps 1e-6, rope_theta 1e6, no sliding window
  gpt2           GPT2LMHeadModel, 4 heads, 64 positions, gelu_new, no dropout, tied
  qwen3          Qwen3ForCausalLM, 4 heads, 2 kv heads, head_dim 32 (not 64 / 4), ffn 96,
                 q_norm and k_norm over each head, eps 1e-6, rope_theta 1e6, tied
  olmo2          Olmo2ForCausalLM, 4 heads, 2 kv heads, ffn 96, norms after attention and
                 MLP, q_norm and k_norm over the whole projections, eps 1e-6, untied
  phi3           Phi3ForCausalLM, 4 heads, 2 kv heads, ffn 96, fused qkv_proj and
                 gate_up_proj, partial_rotary_factor 0.75 (12 of 16 features rotate), tied
  mistral-window as mistral with 2 kv heads and a sliding window of 16, on [2, 64] batches
  qwen3-window   as qwen3 with head_dim 16 and a sliding window of 8 on layer 1 only
                 (use_sliding_window, max_window_layers 1), on [2, 32] batches
  qwen2-yarn     as qwen2 with YaRN rotary scaling (factor 4 over an original context of
                 16, the attention factor 0.1 ln 4 + 1), on [2, 32] batches
  gemma3         Gemma3ForCausalLM (gemma3_text), 4 heads, 2 kv heads, head_dim 32, ffn 96,
                 GeGLU, sandwich norms with gains 1 + w, query-key norms, scores scaled
                 by 24^-1/2, layer 0 local (window 8, base 1e4), layer 1 global (base
                 1e6, linear rotary scaling 8 as Gemma 3 4B and up), logits soft-capped
                 at 5, tied, on [2, 32] batches
  gemma          GemmaForCausalLM, 4 heads, 1 kv head, head_dim 32, ffn 96, hidden_act
                 "gelu" (the tanh GELU to transformers), gains 1 + w, linear rotary
                 scaling 2, tied
  gemma2         Gemma2ForCausalLM, as gemma3 without query-key norms, one rotary base
                 (1e4), layer 0 local by default (window 8), scores soft-capped at 2 and
                 logits at 5, an untied head, on [2, 32] batches
Every weight is redrawn from a seeded torch generator after construction (matrices
normal / sqrt(fan_in), embeddings 0.25 normal, norm weights 1 + 0.1 normal, biases 0.02
normal; Gemma's embeddings normal / sqrt(hidden), which its scale by sqrt(hidden) brings to
1, and its norm weights 0.1 normal, its gains being 1 + w), so that no tensor is at its
init value and an importer that drops one fails.

The expected values come from the checkpoint as saved: each folder is loaded back with
`from_pretrained(dtype=float32, attn_implementation="eager")` (the bf16 weights of
llama3-scaled upcast to float32), put in eval mode, and run on the CPU under no_grad.
"""
import argparse
import json
import math
import os
import shutil
import sys

import numpy as np

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DEFAULT_OUT = os.path.join(REPO, "test", "e2e", "Inputs", "hf")

BATCH, SEQ, VOCAB, HIDDEN, LAYERS = 2, 16, 256, 64, 2
BATCH_SEED = 20240601
FIXTURES = ["llama", "llama3-scaled", "mistral", "qwen2", "gpt2", "qwen3", "olmo2", "phi3",
            "mistral-window", "qwen3-window", "qwen2-yarn", "gemma3", "gemma", "gemma2"]
# Sequences longer than SEQ, for the sliding windows to be shorter than them.
FIXTURE_SEQ = {"mistral-window": 64, "qwen3-window": 32, "qwen2-yarn": 32, "gemma3": 32,
               "gemma2": 32}
SEEDS = {name: 1000 + i for i, name in enumerate(FIXTURES)}


def make_config(name):
    import transformers as tf
    common = dict(vocab_size=VOCAB, hidden_size=HIDDEN, num_hidden_layers=LAYERS,
                  num_attention_heads=4, intermediate_size=96, hidden_act="silu",
                  attention_dropout=0.0, bos_token_id=1, eos_token_id=2)
    if name == "llama":
        return tf.LlamaForCausalLM, tf.LlamaConfig(
            **common, num_key_value_heads=2, max_position_embeddings=64,
            rope_theta=10000.0, rms_norm_eps=1e-5, tie_word_embeddings=False)
    if name == "llama3-scaled":
        return tf.LlamaForCausalLM, tf.LlamaConfig(
            **common, num_key_value_heads=2, max_position_embeddings=128,
            rope_theta=500000.0,
            rope_scaling={"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
                          "high_freq_factor": 4.0, "original_max_position_embeddings": 16},
            rms_norm_eps=1e-6, tie_word_embeddings=True)
    if name == "mistral":
        return tf.MistralForCausalLM, tf.MistralConfig(
            **common, num_key_value_heads=1, max_position_embeddings=64,
            rope_theta=10000.0, rms_norm_eps=1e-5, sliding_window=None,
            tie_word_embeddings=False)
    if name == "qwen2":
        return tf.Qwen2ForCausalLM, tf.Qwen2Config(
            **common, num_key_value_heads=2, max_position_embeddings=64,
            rope_theta=1000000.0, rms_norm_eps=1e-6, use_sliding_window=False,
            sliding_window=None, max_window_layers=LAYERS, tie_word_embeddings=True)
    if name == "qwen3":
        return tf.Qwen3ForCausalLM, tf.Qwen3Config(
            **common, num_key_value_heads=2, head_dim=32, max_position_embeddings=64,
            rope_theta=1000000.0, rms_norm_eps=1e-6, use_sliding_window=False,
            tie_word_embeddings=True)
    if name == "olmo2":
        return tf.Olmo2ForCausalLM, tf.Olmo2Config(
            **common, num_key_value_heads=2, max_position_embeddings=64,
            rope_theta=10000.0, rms_norm_eps=1e-6, pad_token_id=None,
            tie_word_embeddings=False)
    if name == "phi3":
        return tf.Phi3ForCausalLM, tf.Phi3Config(
            **common, num_key_value_heads=2, max_position_embeddings=64,
            original_max_position_embeddings=64, rope_theta=10000.0,
            partial_rotary_factor=0.75, rms_norm_eps=1e-5, resid_pdrop=0.0,
            embd_pdrop=0.0, sliding_window=None, pad_token_id=None,
            tie_word_embeddings=True)
    if name == "mistral-window":
        return tf.MistralForCausalLM, tf.MistralConfig(
            **common, num_key_value_heads=2, max_position_embeddings=64,
            rope_theta=10000.0, rms_norm_eps=1e-5, sliding_window=16,
            tie_word_embeddings=False)
    if name == "qwen3-window":
        return tf.Qwen3ForCausalLM, tf.Qwen3Config(
            **common, num_key_value_heads=2, head_dim=16, max_position_embeddings=64,
            rope_theta=1000000.0, rms_norm_eps=1e-6, use_sliding_window=True,
            sliding_window=8, max_window_layers=1, tie_word_embeddings=True)
    if name == "qwen2-yarn":
        return tf.Qwen2ForCausalLM, tf.Qwen2Config(
            **common, num_key_value_heads=2, max_position_embeddings=64,
            rope_parameters={"rope_type": "yarn", "rope_theta": 1000000.0, "factor": 4.0,
                             "original_max_position_embeddings": 16},
            rms_norm_eps=1e-6, use_sliding_window=False, tie_word_embeddings=True)
    if name == "gemma3":
        gemma = {k: v for k, v in common.items() if k != "hidden_act"}
        return tf.Gemma3ForCausalLM, tf.Gemma3TextConfig(
            **gemma, num_key_value_heads=2, head_dim=32, query_pre_attn_scalar=24,
            hidden_activation="gelu_pytorch_tanh", max_position_embeddings=64,
            sliding_window=8, layer_types=["sliding_attention", "full_attention"],
            rope_parameters={"sliding_attention": {"rope_type": "default", "rope_theta": 10000.0},
                             "full_attention": {"rope_type": "linear", "factor": 8.0,
                                                "rope_theta": 1000000.0}},
            rms_norm_eps=1e-6, final_logit_softcapping=5.0, pad_token_id=0,
            tie_word_embeddings=True)
    if name == "gemma":
        gemma = dict(common, hidden_act="gelu")  # the original releases' spelling
        return tf.GemmaForCausalLM, tf.GemmaConfig(
            **gemma, num_key_value_heads=1, head_dim=32, max_position_embeddings=64,
            rope_parameters={"rope_type": "linear", "factor": 2.0, "rope_theta": 10000.0},
            rms_norm_eps=1e-6, pad_token_id=0, tie_word_embeddings=True)
    if name == "gemma2":
        gemma = {k: v for k, v in common.items() if k != "hidden_act"}
        return tf.Gemma2ForCausalLM, tf.Gemma2Config(
            **gemma, num_key_value_heads=2, head_dim=32, query_pre_attn_scalar=24,
            hidden_activation="gelu_pytorch_tanh", max_position_embeddings=64,
            sliding_window=8, rope_parameters={"rope_type": "default", "rope_theta": 10000.0},
            rms_norm_eps=1e-6, attn_logit_softcapping=2.0, final_logit_softcapping=5.0,
            pad_token_id=0, tie_word_embeddings=False)
    if name == "gpt2":
        return tf.GPT2LMHeadModel, tf.GPT2Config(
            vocab_size=VOCAB, n_embd=HIDDEN, n_layer=LAYERS, n_head=4, n_positions=64,
            activation_function="gelu_new", resid_pdrop=0.0, embd_pdrop=0.0,
            attn_pdrop=0.0, summary_first_dropout=0.0, layer_norm_epsilon=1e-5,
            bos_token_id=1, eos_token_id=2, tie_word_embeddings=True)
    raise SystemExit(f"unknown fixture {name!r} (known: {', '.join(FIXTURES)})")


def perturb(model, seed):
    """Redraws every parameter (tied ones once) from a generator seeded by `seed`."""
    import torch
    from transformers.pytorch_utils import Conv1D
    g = torch.Generator().manual_seed(seed)
    owner = {}
    for mname, mod in model.named_modules():
        for pname, p in mod.named_parameters(recurse=False):
            owner.setdefault(id(p), (mname, pname, mod))
    with torch.no_grad():
        for name, p in model.named_parameters():
            _, pname, mod = owner[id(p)]
            r = torch.randn(p.shape, generator=g, dtype=torch.float32)
            if pname == "bias":
                v = 0.02 * r
            elif isinstance(mod, torch.nn.Embedding) and "Gemma" in type(mod).__name__:
                # Gemma's embedding (also its head) is scaled by sqrt(hidden) on the way
                # in: drawn as a head's weight, so that neither end is 8 times larger.
                v = r / math.sqrt(p.shape[1])
            elif isinstance(mod, torch.nn.Embedding):
                v = 0.25 * r
            elif p.dim() == 1 and type(mod).__name__.startswith("Gemma"):
                v = 0.1 * r  # Gemma's RMSNorm: the gain is 1 + weight
            elif p.dim() == 1:  # RMSNorm / LayerNorm weight
                v = 1.0 + 0.1 * r
            elif isinstance(mod, Conv1D):  # GPT-2: weight [in, out]
                v = r / math.sqrt(p.shape[0])
            elif isinstance(mod, torch.nn.Linear):  # weight [out, in]
                v = r / math.sqrt(p.shape[1])
            else:
                raise SystemExit(f"no rule for parameter {name} of {type(mod).__name__}")
            p.copy_(v.to(p.dtype))


def make_batch(length=SEQ):
    rng = np.random.default_rng(BATCH_SEED)
    seq = rng.integers(0, VOCAB, size=(BATCH, length + 1)).astype(np.int32)
    return np.ascontiguousarray(seq[:, :length]), np.ascontiguousarray(seq[:, 1:])


def evaluate(folder, input_ids, targets):
    """Loads `folder` in float32 (eager attention, CPU, eval) -> (model, logits, losses)."""
    import torch
    import torch.nn.functional as F
    from transformers import AutoModelForCausalLM
    model = AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32,
                                                 attn_implementation="eager")
    model.eval()
    for p in model.parameters():
        assert p.dtype == torch.float32, p.dtype
    with torch.no_grad():
        logits = model(input_ids=torch.from_numpy(input_ids).long()).logits
    assert logits.dtype == torch.float32 and tuple(logits.shape) == input_ids.shape + (VOCAB,)
    t = torch.from_numpy(targets).long()
    lp = torch.log_softmax(logits.double(), dim=-1)
    loss = float(-lp.gather(-1, t.unsqueeze(-1)).mean())
    loss_hf = float(F.cross_entropy(logits.reshape(-1, VOCAB), t.reshape(-1)))
    return model, logits.numpy(), loss, loss_hf


def write_fixture(name, out):
    import torch
    import transformers
    cls, config = make_config(name)
    folder = os.path.join(out, name)
    if os.path.isdir(folder):
        shutil.rmtree(folder)
    os.makedirs(folder)
    torch.manual_seed(SEEDS[name])
    config._attn_implementation = "eager"
    model = cls(config).to(torch.float32)
    perturb(model, SEEDS[name])
    model.eval()
    if name == "llama3-scaled":
        model = model.to(torch.bfloat16)
        model.save_pretrained(folder, max_shard_size="100KB")
    else:
        model.save_pretrained(folder)
    input_ids, targets = make_batch(FIXTURE_SEQ.get(name, SEQ))
    np.savez(os.path.join(folder, "batch.npz"), input_ids=input_ids, targets=targets)
    saved = {k: v.detach().float().clone() for k, v in model.state_dict().items()}
    model, logits, loss, loss_hf = evaluate(folder, input_ids, targets)
    assert model.config._attn_implementation == "eager", model.config._attn_implementation
    loaded = model.state_dict()
    assert sorted(loaded) == sorted(saved), sorted(set(loaded) ^ set(saved))
    for k, v in saved.items():  # nothing dropped or re-initialised by the round trip
        assert torch.equal(loaded[k], v), f"{name}: {k} differs after reloading"
    np.save(os.path.join(folder, "logits.npy"), logits)
    expected = {
        "family": name,
        "model_type": model.config.model_type,
        "architectures": list(model.config.architectures or [cls.__name__]),
        "transformers": transformers.__version__,
        "torch": torch.__version__,
        "loss": loss,
        "loss_hf": loss_hf,
        "logits_sum": float(logits.astype(np.float64).sum()),
        "logits_sample": [float(x) for x in logits[0, 0, :8]],
    }
    with open(os.path.join(folder, "expected.json"), "w") as f:
        json.dump(expected, f, indent=2)
        f.write("\n")
    for x in os.listdir(folder):  # save_pretrained writes the weights 0600
        os.chmod(os.path.join(folder, x), 0o644)
    size = sum(os.path.getsize(os.path.join(folder, x)) for x in os.listdir(folder))
    print(f"{name}: loss {loss:.9g} (F.cross_entropy {loss_hf:.9g}), {size} bytes in {folder}")


def verify_fixture(name, out):
    folder = os.path.join(out, name)
    with open(os.path.join(folder, "expected.json")) as f:
        expected = json.load(f)
    batch = np.load(os.path.join(folder, "batch.npz"))
    input_ids, targets = batch["input_ids"], batch["targets"]
    ok = input_ids.dtype == np.int32 and targets.dtype == np.int32
    ok &= bool((np.stack(make_batch(FIXTURE_SEQ.get(name, SEQ))) ==
                np.stack([input_ids, targets])).all())
    _, logits, loss, loss_hf = evaluate(folder, input_ids, targets)
    saved = np.load(os.path.join(folder, "logits.npy"))
    d_loss = abs(loss - expected["loss"]) / abs(expected["loss"])
    d_logits = float(np.abs(logits - saved).max())
    d_sum = abs(float(logits.astype(np.float64).sum()) - expected["logits_sum"])
    ok &= d_loss <= 1e-6 and d_logits <= 1e-5
    print(f"{name}: loss {loss:.9g} vs expected {expected['loss']:.9g} (rel diff {d_loss:.3g}),"
          f" max |logits diff| {d_logits:.3g}, logits_sum diff {d_sum:.3g}:"
          f" {'ok' if ok else 'MISMATCH'}")
    return ok


def main():
    ap = argparse.ArgumentParser(description=" ".join(__doc__.split("\n\n")[0].split()))
    ap.add_argument("--out", default=DEFAULT_OUT, help="output folder (default %(default)s)")
    ap.add_argument("--only", default="", help="comma-separated subset of " + ",".join(FIXTURES))
    ap.add_argument("--verify", action="store_true",
                    help="reload the existing fixtures and check expected.json and logits.npy")
    args = ap.parse_args()
    names = [n for n in args.only.split(",") if n] or FIXTURES
    for n in names:
        if n not in FIXTURES:
            ap.error(f"unknown fixture {n!r} (known: {', '.join(FIXTURES)})")
    if args.verify:
        return 0 if all([verify_fixture(n, args.out) for n in names]) else 1
    os.makedirs(args.out, exist_ok=True)
    for n in names:
        write_fixture(n, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
