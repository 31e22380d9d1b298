"""A Hugging Face config.json read into the model it states, every field accounted for.

Each field is either honoured (it shapes the model), known not to change what a training
step computes (metadata, generation defaults), or refused with an error that names it. A
field the importer does not know is refused too: it may change the model.
"""
import dataclasses
import json
import os

from . import HfError

# Fields that do not change the training step's math: bookkeeping, tokenizer ids,
# generation and output switches, the stored dtype (the checkpoint's tensors say theirs).
METADATA = {
    "_name_or_path", "transformers_version", "torch_dtype", "dtype", "use_cache",
    "bos_token_id", "eos_token_id", "pad_token_id", "sep_token_id", "decoder_start_token_id",
    "output_attentions", "output_hidden_states", "return_dict", "tokenizer_class",
    "id2label", "label2id", "problem_type", "task_specific_params", "finetuning_task",
    "prefix", "max_length", "min_length", "do_sample", "num_beams", "temperature", "top_k",
    "top_p", "repetition_penalty", "tie_encoder_decoder", "is_encoder_decoder",
    "is_decoder", "add_cross_attention", "chunk_size_feed_forward", "pruned_heads",
    "torchscript", "use_bfloat16", "tf_legacy_loss", "cross_attention_hidden_size",
    "bad_words_ids", "begin_suppress_tokens", "diversity_penalty", "early_stopping",
    "encoder_no_repeat_ngram_size", "exponential_decay_length_penalty",
    "forced_bos_token_id", "forced_eos_token_id", "length_penalty", "no_repeat_ngram_size",
    "num_beam_groups", "num_return_sequences", "output_scores", "remove_invalid_values",
    "return_dict_in_generate", "suppress_tokens", "typical_p",
    # Splits each projection into slices summed in another order: the same function.
    "pretraining_tp",
}

ARCHITECTURES = {"llama": "LlamaForCausalLM", "mistral": "MistralForCausalLM",
                 "qwen2": "Qwen2ForCausalLM", "gpt2": "GPT2LMHeadModel"}
# GPT-2's activation_function values that are the tanh form of GELU (fsdp.gelu).
GPT2_GELU = ("gelu_new", "gelu_pytorch_tanh")
GPT2_SUMMARY = ("summary_type", "summary_use_proj", "summary_activation",
                "summary_proj_to_labels", "summary_first_dropout")


@dataclasses.dataclass
class LlamaSpec:
    """A decoder of the Llama family: pre-norm RMSNorm blocks of grouped-query attention
    with rotary positions and a SwiGLU MLP."""
    family: str
    vocab: int
    dim: int
    layers: int
    heads: int
    kv_heads: int
    head_dim: int
    ffn: int
    rms_eps: float
    tied: bool
    rope_theta: float
    llama3_scaling: tuple = None  # (factor, low, high, original context)
    qkv_bias: bool = False
    o_bias: bool = False
    mlp_bias: bool = False
    init_std: float = 0.02


def llama2_spec(vocab, dim, layers, heads, kv_heads, ffn, rope_theta=10000.0):
    """A Llama of Llama-2's form (RMSNorm eps 1e-5, no biases, an untied head) of these
    sizes: examples/generate_llama.py's model, and the reference's llama: names."""
    return LlamaSpec(family="llama", vocab=vocab, dim=dim, layers=layers, heads=heads,
                     kv_heads=kv_heads, head_dim=dim // heads, ffn=ffn, rms_eps=1e-5,
                     tied=False, rope_theta=float(rope_theta))


@dataclasses.dataclass
class Gpt2Spec:
    """GPT-2: learned positions, pre-norm LayerNorm blocks of multi-head attention with
    one fused query-key-value product, a tanh-GELU MLP, Conv1D weights [in, out]."""
    vocab: int
    dim: int
    layers: int
    heads: int
    ffn: int
    positions: int
    ln_eps: float
    tied: bool = True
    scale_attn_weights: bool = True
    scale_by_layer: bool = False
    init_std: float = 0.02
    family: str = "gpt2"

    @property
    def head_dim(self):
        return self.dim // self.heads

    def attention_scale(self, layer):
        """Layer `layer`'s score scale: 1/sqrt(D) (or 1), divided by layer + 1 when the
        config scales by the inverse layer index."""
        scale = self.head_dim ** -0.5 if self.scale_attn_weights else 1.0
        return scale / (layer + 1) if self.scale_by_layer else scale


class Fields:
    """The config's fields, each taken at most once; `leftover` names the rest."""

    def __init__(self, path, data):
        self.path, self.data, self.taken = path, data, set()

    def error(self, field, why):
        return HfError(f"{self.path}: {field} = {json.dumps(self.data.get(field))}: {why}")

    def has(self, field):
        return field in self.data and self.data[field] is not None

    def take(self, field, default=None, kind=None):
        self.taken.add(field)
        value = self.data.get(field, default)
        if value is None:
            value = default
        if kind is not None and value is not None and (
                not isinstance(value, kind) or isinstance(value, bool)):
            raise self.error(field, "expected " + ("a number" if isinstance(kind, tuple)
                                                   else "an " + kind.__name__))
        return value

    def required(self, field, kind=int):
        if not self.has(field):
            raise HfError(f"{self.path}: {field} is missing")
        value = self.take(field, kind=kind)
        if kind is int and (isinstance(value, bool) or value < 1):
            raise self.error(field, "expected a positive integer")
        return value

    def require_value(self, field, allowed, why, default=None):
        value = self.take(field, default)
        if value not in allowed:
            raise self.error(field, why)
        return value

    def ignore(self, *fields):
        self.taken.update(fields)

    def leftover(self):
        return sorted(set(self.data) - self.taken - METADATA)


def load(model_dir):
    path = os.path.join(model_dir, "config.json")
    try:
        with open(path) as f:
            data = json.load(f)
    except OSError as e:
        raise HfError(f"{model_dir}: no config.json ({e.strerror})") from None
    except ValueError as e:
        raise HfError(f"{path}: not JSON ({e})") from None
    if not isinstance(data, dict):
        raise HfError(f"{path}: not a JSON object")
    return Fields(path, data)


def _rope(fields):
    """(theta, llama3 scaling or None) from rope_theta/rope_scaling or rope_parameters."""
    if fields.has("rope_parameters"):
        params = fields.take("rope_parameters", kind=dict)
        if fields.has("rope_scaling") and fields.data["rope_scaling"] != params:
            raise fields.error("rope_scaling", "given beside rope_parameters, and different")
        fields.ignore("rope_scaling")
        where = "rope_parameters"
        theta = params.get("rope_theta", fields.take("rope_theta", 10000.0))
    else:
        params = fields.take("rope_scaling", kind=dict) or {}
        where = "rope_scaling"
        theta = fields.take("rope_theta", 10000.0)
    if not isinstance(theta, (int, float)) or isinstance(theta, bool) or theta <= 1:
        raise fields.error("rope_theta", "expected a number above 1")
    kind = params.get("rope_type", params.get("type", "default"))
    known = {"rope_type", "type", "rope_theta"}
    if kind == "default":
        extra = sorted(set(params) - known)
        if extra:
            raise fields.error(where, f"field {extra[0]} of the default rotary embedding "
                                      "is not understood")
        return float(theta), None
    if kind != "llama3":
        raise fields.error(where, f"rope_type '{kind}' is not supported (default and "
                                  "llama3 are)")
    names = ("factor", "low_freq_factor", "high_freq_factor",
             "original_max_position_embeddings")
    missing = [n for n in names if n not in params]
    if missing:
        raise fields.error(where, f"llama3 scaling needs {missing[0]}")
    extra = sorted(set(params) - known - set(names))
    if extra:
        raise fields.error(where, f"field {extra[0]} of the llama3 scaling is not understood")
    factor, low, high, context = (params[n] for n in names)
    if not (factor > 0 and 0 < low < high and isinstance(context, int) and context > 0):
        raise fields.error(where, "llama3 scaling needs factor > 0, 0 < low_freq_factor < "
                                  "high_freq_factor and a positive integer context")
    return float(theta), (float(factor), float(low), float(high), int(context))


def _sliding_window(fields, family, seq):
    """Mistral's and Qwen2's sliding window: honoured only when it covers the sequence
    (then every position sees all earlier ones, as full causal attention does)."""
    window = fields.take("sliding_window")
    if family == "qwen2":
        use = fields.take("use_sliding_window", False)
        fields.ignore("max_window_layers")
        types = fields.take("layer_types")
        if types is not None and any(t != "full_attention" for t in types):
            if use is not True:
                raise fields.error("layer_types", "sliding-window layers are not supported")
        if not use:
            return
    elif family != "mistral":
        return
    if window is not None and window < seq:
        field = "sliding_window"
        raise fields.error(field, f"a window of {window} positions, shorter than the "
                                  f"sequence ({seq}): sliding-window attention is not "
                                  "supported (a window at least --seq long is)")


def _dropout(fields, names, no_dropout):
    """Dropout probabilities: 0 is honoured; another is refused unless the user chose to
    train without dropout (--no-dropout: Hugging Face's eval-mode function)."""
    for field in names:
        if fields.take(field, 0.0) != 0.0 and not no_dropout:
            raise fields.error(field, "dropout is not supported (set it to 0.0, or pass "
                                      "--no-dropout to train without it)")


def _family(fields):
    """The config's model_type, checked against its architectures."""
    family = fields.take("model_type")
    if family not in ARCHITECTURES:
        raise fields.error("model_type", "supported: " + ", ".join(sorted(ARCHITECTURES)))
    archs = fields.take("architectures", [ARCHITECTURES[family]])
    if archs != [ARCHITECTURES[family]]:
        raise fields.error("architectures", f"expected [\"{ARCHITECTURES[family]}\"] (a "
                                            "causal language model)")
    return family


def _refuse_leftover(fields, family):
    leftover = fields.leftover()
    if leftover:
        raise fields.error(leftover[0], f"unknown to fsdp-import-hf for {family}: it may "
                                        "change the model, so it is not ignored")


def model_spec(fields, seq, no_dropout=False):
    """The LlamaSpec or Gpt2Spec of a config for sequences of `seq`."""
    family = _family(fields)
    if family == "gpt2":
        return _gpt2_spec(fields, seq, no_dropout)
    return _llama_spec(fields, family, seq, no_dropout)


def _llama_spec(fields, family, seq, no_dropout):
    """The LlamaSpec of a Llama, Mistral or Qwen2 config."""
    dim, heads = fields.required("hidden_size"), fields.required("num_attention_heads")
    kv_heads = fields.take("num_key_value_heads", heads, int)
    if heads % kv_heads:
        raise fields.error("num_key_value_heads", f"must divide num_attention_heads ({heads})")
    if fields.has("head_dim"):
        head_dim = fields.required("head_dim")
    elif dim % heads:
        raise fields.error("hidden_size", f"not a multiple of num_attention_heads ({heads})")
    else:
        head_dim = dim // heads
    if head_dim % 2:
        raise fields.error("head_dim", "the rotary embedding pairs features: must be even")
    fields.require_value("hidden_act", ("silu",), "only silu (SwiGLU) is supported", "silu")
    _dropout(fields, ("attention_dropout", "hidden_dropout", "resid_pdrop", "embd_pdrop"),
             no_dropout)
    max_positions = fields.take("max_position_embeddings", None, int)
    if max_positions is not None and seq > max_positions:
        raise fields.error("max_position_embeddings", f"--seq {seq} is longer")
    theta, scaling = _rope(fields)
    _sliding_window(fields, family, seq)
    attention_bias = fields.take("attention_bias", False)
    if family == "qwen2":
        # Qwen2 always has q, k, v biases and no o bias.
        qkv_bias, o_bias = True, False
    else:
        qkv_bias = o_bias = bool(attention_bias)
    spec = LlamaSpec(
        family=family, vocab=fields.required("vocab_size"), dim=dim,
        layers=fields.required("num_hidden_layers"), heads=heads, kv_heads=kv_heads,
        head_dim=head_dim, ffn=fields.required("intermediate_size"),
        rms_eps=float(fields.take("rms_norm_eps", 1e-6, (int, float))),
        tied=bool(fields.take("tie_word_embeddings", False)),
        rope_theta=theta, llama3_scaling=scaling, qkv_bias=qkv_bias, o_bias=o_bias,
        mlp_bias=bool(fields.take("mlp_bias", False)),
        init_std=float(fields.take("initializer_range", 0.02, (int, float))))
    _refuse_leftover(fields, family)
    return spec


def _gpt2_spec(fields, seq, no_dropout):
    """The Gpt2Spec of a GPT-2 config."""
    dim, heads = fields.required("n_embd"), fields.required("n_head")
    if dim % heads:
        raise fields.error("n_embd", f"not a multiple of n_head ({heads})")
    positions = fields.required("n_positions")
    if fields.has("n_ctx") and fields.take("n_ctx") != positions:
        raise fields.error("n_ctx", f"differs from n_positions ({positions})")
    fields.ignore("n_ctx")
    if seq > positions:
        raise fields.error("n_positions", f"--seq {seq} is longer")
    fields.require_value("activation_function", GPT2_GELU,
                         "only the tanh GELU (gelu_new, gelu_pytorch_tanh) is supported",
                         "gelu_new")
    _dropout(fields, ("resid_pdrop", "embd_pdrop", "attn_pdrop"), no_dropout)
    # GPT2DoubleHeadsModel's classifier; the language model has none.
    fields.ignore(*GPT2_SUMMARY)
    # Scores in float32 with the scaling folded in another order: the same product,
    # and fsdp.attention computes its scores in float32 whatever the model's dtype.
    fields.take("reorder_and_upcast_attn", False)
    ffn = fields.take("n_inner", 4 * dim, int)
    spec = Gpt2Spec(
        vocab=fields.required("vocab_size"), dim=dim, layers=fields.required("n_layer"),
        heads=heads, ffn=ffn, positions=positions,
        ln_eps=float(fields.take("layer_norm_epsilon", 1e-5, (int, float))),
        tied=bool(fields.take("tie_word_embeddings", True)),
        scale_attn_weights=bool(fields.take("scale_attn_weights", True)),
        scale_by_layer=bool(fields.take("scale_attn_by_inverse_layer_idx", False)),
        init_std=float(fields.take("initializer_range", 0.02, (int, float))))
    _refuse_leftover(fields, "gpt2")
    return spec
