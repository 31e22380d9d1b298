"""A Hugging Face config.json read into the model it states, every field accounted for.

Each field is either honoured (it shapes the model), known not to change what a training
step computes (metadata, generation defaults), or refused with an error that names it. A
field the importer does not know is refused too: it may change the model.
"""
import collections
import dataclasses
import json
import math
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
                 "qwen2": "Qwen2ForCausalLM", "qwen3": "Qwen3ForCausalLM",
                 "olmo2": "Olmo2ForCausalLM", "phi3": "Phi3ForCausalLM",
                 "gemma": "GemmaForCausalLM", "gemma2": "Gemma2ForCausalLM",
                 "gemma3_text": "Gemma3ForCausalLM", "gpt2": "GPT2LMHeadModel"}
GEMMA_FAMILIES = ("gemma", "gemma2", "gemma3_text")
# GPT-2's activation_function values that are the tanh form of GELU (fsdp.gelu).
GPT2_GELU = ("gelu_new", "gelu_pytorch_tanh")
GPT2_SUMMARY = ("summary_type", "summary_use_proj", "summary_activation",
                "summary_proj_to_labels", "summary_first_dropout")


@dataclasses.dataclass(frozen=True)
class BlockNorms:
    """The RMS norms of a decoder block, by their Hugging Face names (None: absent):
    before and after the attention, before and after the MLP."""
    pre_attention: str = None
    post_attention: str = None
    pre_mlp: str = None
    post_mlp: str = None


# Llama's pre-norms (the second, before the MLP, named for where it sits after the
# attention); OLMo 2's norms of each branch's output before its residual add.
PRE_NORMS = BlockNorms(pre_attention="input_layernorm", pre_mlp="post_attention_layernorm")
POST_NORMS = BlockNorms(post_attention="post_attention_layernorm",
                        post_mlp="post_feedforward_layernorm")
# Gemma's: both, around each branch.
SANDWICH_NORMS = BlockNorms("input_layernorm", "post_attention_layernorm",
                            "pre_feedforward_layernorm", "post_feedforward_layernorm")


@dataclasses.dataclass
class LlamaSpec:
    """A decoder of the Llama family: RMSNorm blocks of grouped-query attention with
    rotary positions and a SwiGLU MLP, with the variations of its descendants."""
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
    # (factor, beta_fast, beta_slow, original context, attention factor, truncate)
    yarn_scaling: tuple = None
    qkv_bias: bool = False
    o_bias: bool = False
    mlp_bias: bool = False
    init_std: float = 0.02
    norms: BlockNorms = PRE_NORMS
    # RMS norms of the queries and keys before rotary: over each head's features
    # ("head": Qwen3's q_norm and k_norm of [head_dim]) or over the whole projection
    # ("projection": OLMo 2's, of [heads * head_dim]).
    qk_norm: str = None
    # Phi-3: q, k, v as one product (qkv_proj) and gate, up as one (gate_up_proj).
    fused: bool = False
    # The features each head rotates (Phi-3's partial_rotary_factor); None: all.
    rotary_dim: int = None
    # Each layer's sliding window (query t sees keys t - W < s <= t), None where the
    # layer attends to every earlier position; () for no layer.
    windows: tuple = ()
    # Gemma: each layer's rotary base (its local layers' differs; () for rope_theta
    # everywhere), the embedding times sqrt(dim), RMS norms with the gain 1 + w, GeGLU
    # ("gelu": the tanh GELU) for SwiGLU, the scores' scale, the logits soft-capped as
    # cap tanh(logits / cap).
    thetas: tuple = ()
    embed_scale: float = None
    norm_offset: float = 0.0
    activation: str = "silu"
    attention_scale: float = None
    final_softcap: float = None
    # Each layer's linear rotary scaling (positions interpolated: every frequency
    # divided by it), None where the layer has none; () for no layer.
    linear_factors: tuple = ()
    # Gemma 2's attention scores soft-capped as cap tanh(score / cap).
    attention_softcap: float = None

    def window(self, layer):
        return self.windows[layer] if self.windows else None

    def theta(self, layer):
        return self.thetas[layer] if self.thetas else self.rope_theta

    def linear_factor(self, layer):
        return self.linear_factors[layer] if self.linear_factors else None


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


def _rope_params(fields):
    """(where, the rotary parameters, theta): rope_parameters (transformers 5) or
    rope_scaling and rope_theta at the top (transformers 4)."""
    if fields.has("rope_parameters"):
        params = fields.take("rope_parameters", kind=dict)
        if fields.has("rope_scaling") and fields.data["rope_scaling"] != params:
            raise fields.error("rope_scaling", "given beside rope_parameters, and different")
        fields.ignore("rope_scaling")
        theta = params.get("rope_theta", fields.take("rope_theta", 10000.0))
        return "rope_parameters", params, theta
    params = fields.take("rope_scaling", kind=dict) or {}
    return "rope_scaling", params, fields.take("rope_theta", 10000.0)


def _partial_rotary_factor(fields, where, params):
    """Phi-3's partial_rotary_factor: in the rotary parameters (transformers 5) or at the
    top (transformers 4); 1.0 (every feature rotates) unless given."""
    top = fields.take("partial_rotary_factor", None, (int, float))
    inner = params.get("partial_rotary_factor")
    if top is not None and inner is not None and top != inner:
        raise fields.error("partial_rotary_factor", f"differs from {where}'s")
    factor = inner if inner is not None else top if top is not None else 1.0
    if not isinstance(factor, (int, float)) or isinstance(factor, bool) or \
            not 0 < factor <= 1:
        raise fields.error("partial_rotary_factor", "expected a number in (0, 1]")
    return float(factor)


YARN_FIELDS = ("factor", "original_max_position_embeddings", "beta_fast", "beta_slow",
               "attention_factor", "mscale", "mscale_all_dim", "truncate")


def _yarn_scale(factor, mscale=1.0):
    """YaRN's attention factor of a context extended `factor` times (get_mscale)."""
    return 1.0 if factor <= 1 else 0.1 * mscale * math.log(factor) + 1.0


def _number(fields, where, params, name, default=None):
    value = params.get(name)
    if value is None:
        return default
    if not isinstance(value, (int, float)) or isinstance(value, bool) or not value > 0:
        raise fields.error(where, f"yarn scaling's {name} must be a positive number")
    return float(value)


def _yarn(fields, where, params, known):
    """(factor, beta_fast, beta_slow, original context, attention factor, truncate) of a
    yarn rotary scaling, resolved as Hugging Face's _compute_yarn_parameters does: the
    context from rope's original_max_position_embeddings, else max_position_embeddings;
    a null factor from their ratio; the attention factor given, or from mscale and
    mscale_all_dim, or 0.1 ln(factor) + 1."""
    extra = sorted(set(params) - known - set(YARN_FIELDS))
    if extra:
        raise fields.error(where, f"field {extra[0]} of the yarn scaling is not understood")
    if "factor" not in params:
        raise fields.error(where, "yarn scaling needs factor")
    context = params.get("original_max_position_embeddings",
                         fields.data.get("max_position_embeddings"))
    if not isinstance(context, int) or isinstance(context, bool) or context < 1:
        raise fields.error(where, "yarn scaling needs original_max_position_embeddings (or "
                                  "max_position_embeddings), a positive integer")
    factor = _number(fields, where, params, "factor")
    if factor is None:
        factor = fields.data.get("max_position_embeddings", context) / context
    if factor < 1:
        raise fields.error(where, "yarn scaling's factor must be at least 1")
    mscale = _number(fields, where, params, "mscale")
    mscale_all = _number(fields, where, params, "mscale_all_dim")
    attention = _number(fields, where, params, "attention_factor")
    if attention is None:
        attention = _yarn_scale(factor, mscale) / _yarn_scale(factor, mscale_all) \
            if mscale and mscale_all else _yarn_scale(factor)
    fast = _number(fields, where, params, "beta_fast", 32.0)
    slow = _number(fields, where, params, "beta_slow", 1.0)
    if not slow < fast:
        raise fields.error(where, "yarn scaling needs beta_slow < beta_fast")
    truncate = params.get("truncate", True)
    if not isinstance(truncate, bool):
        raise fields.error(where, "yarn scaling's truncate must be true or false")
    return factor, fast, slow, context, attention, truncate


# A rotary embedding: its base, at most one scaling (Llama 3's, YaRN's or a linear
# factor) and the share of each head's features that turn.
Rope = collections.namedtuple("Rope", "theta llama3 yarn linear partial")


def _rope(fields, family):
    """The Rope of rope_theta and rope_scaling, or rope_parameters."""
    where, params, theta = _rope_params(fields)
    if not isinstance(theta, (int, float)) or isinstance(theta, bool) or theta <= 1:
        raise fields.error("rope_theta", "expected a number above 1")
    known = {"rope_type", "type", "rope_theta"}
    partial = 1.0
    if family == "phi3":
        partial = _partial_rotary_factor(fields, where, params)
        known.add("partial_rotary_factor")
        # The context LongRoPE scales from; without LongRoPE it changes nothing.
        fields.ignore("original_max_position_embeddings")
    kind = params.get("rope_type", params.get("type", "default"))
    if family == "phi3" and kind in ("su", "yarn", "longrope"):
        raise fields.error(where, f"rope_type '{kind}' is Phi-3's LongRoPE scaling, which "
                                  "is not supported (the default rotary embedding is)")
    rope = Rope(float(theta), None, None, None, partial)
    if kind == "yarn":
        return rope._replace(yarn=_yarn(fields, where, params, known))
    if kind == "llama3":
        return rope._replace(llama3=_llama3(fields, where, params, known))
    return rope._replace(linear=_linear_or_default(fields, where, params, known))


def _linear_or_default(fields, where, params, known,
                       supported="default, linear, llama3 and yarn"):
    """The factor of a linear rotary scaling, None for the default rotary embedding;
    another rope_type is refused by name, with the `supported` ones."""
    kind = params.get("rope_type", params.get("type", "default"))
    if kind not in ("default", "linear"):
        raise fields.error(where, f"rope_type '{kind}' is not supported ({supported} are)")
    extra = sorted(set(params) - known - ({"factor"} if kind == "linear" else set()))
    if extra:
        raise fields.error(where, f"field {extra[0]} of the {kind} rotary embedding is not "
                                  "understood")
    if kind == "default":
        return None
    factor = params.get("factor")
    if not isinstance(factor, (int, float)) or isinstance(factor, bool) or not factor >= 1:
        raise fields.error(where, "linear scaling needs a factor of at least 1")
    return float(factor)


def _llama3(fields, where, params, known):
    """(factor, low_freq_factor, high_freq_factor, original context) of Llama 3's rotary
    scaling."""
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
    return float(factor), float(low), float(high), int(context)


WINDOW_FAMILIES = ("mistral", "qwen2", "qwen3", "phi3")
LAYER_TYPES = ("full_attention", "sliding_attention")


def _layer_types(fields, layers, sliding):
    """Each layer's type: layer_types as given, else sliding(i) says which slide."""
    types = fields.take("layer_types", None, list)
    if types is None:
        types = ["sliding_attention" if sliding(i) else "full_attention" for i in range(layers)]
    if len(types) != layers or any(t not in LAYER_TYPES for t in types):
        raise fields.error("layer_types", f"expected {layers} of " + " and ".join(LAYER_TYPES))
    return types


def _window(fields, default=None):
    """The config's sliding_window, a positive number of positions, or None (null); the
    family's `default` when the config leaves it out."""
    if "sliding_window" not in fields.data:
        return default
    window = fields.take("sliding_window", None, int)
    if window is not None and window < 1:
        raise fields.error("sliding_window", "expected a positive number of positions")
    return window


def _layer_windows(types, window, seq):
    """The window of each sliding layer of `types` (None elsewhere); a window of at least
    `seq` positions sees every earlier one, as full attention does, and is left out."""
    return tuple(window if t == "sliding_attention" and window is not None and window < seq
                 else None for t in types)


def _qwen_layer_types(fields, window, layers):
    """Qwen2's and Qwen3's layer types: layer_types as given, else sliding from
    max_window_layers on (as their configs derive it); none slides unless
    use_sliding_window is true."""
    use = fields.take("use_sliding_window", False)
    if not isinstance(use, bool):
        raise fields.error("use_sliding_window", "expected true or false")
    first = fields.take("max_window_layers", layers, int)
    types = _layer_types(fields, layers, lambda i: window is not None and i >= first)
    return types if use else ["full_attention"] * layers


def _sliding_windows(fields, family, seq, layers):
    """Each layer's sliding window (None: full causal attention) in the families that
    have one: Mistral and Phi-3 on every layer, Qwen2 and Qwen3 on their sliding layers."""
    if family not in WINDOW_FAMILIES:
        return (None,) * layers
    window = _window(fields)
    types = _qwen_layer_types(fields, window, layers) if family in ("qwen2", "qwen3") \
        else ["sliding_attention"] * layers
    return _layer_windows(types, window, seq)


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
    if family in GEMMA_FAMILIES:
        return _gemma_spec(fields, family, seq, no_dropout)
    return _llama_spec(fields, family, seq, no_dropout)


# Families whose configs choose the projections' biases (attention_bias: q, k, v and o;
# mlp_bias: gate, up and down); the others' biases are fixed by the family.
ATTENTION_BIAS_FAMILIES = ("llama", "qwen3", "olmo2") + GEMMA_FAMILIES
MLP_BIAS_FAMILIES = ("llama",)
# The biases fixed by the family: (q/k/v, o). Qwen2 always has q, k, v biases.
FIXED_BIASES = {"qwen2": (True, False)}
# Qwen3's head_dim when its config leaves it out (Qwen3Config's default, which need not
# be hidden_size / num_attention_heads).
QWEN3_HEAD_DIM = 128
# RMS norms' epsilon when the config leaves it out (each family's config default).
RMS_EPS = {"olmo2": 1e-5, "phi3": 1e-5}


def _bias_flag(fields, field, family, families):
    """A bias switch: honoured for `families`; elsewhere false is what the family has,
    and true is refused."""
    if family in families:
        return bool(fields.take(field, False))
    if fields.take(field, False):
        raise fields.error(field, f"{family}'s projections have no such biases")
    return False


def _biases(fields, family):
    """(q/k/v bias, o bias, MLP bias) of a Llama-family config."""
    attention = _bias_flag(fields, "attention_bias", family, ATTENTION_BIAS_FAMILIES)
    qkv, o = FIXED_BIASES.get(family, (attention, attention))
    return qkv, o, _bias_flag(fields, "mlp_bias", family, MLP_BIAS_FAMILIES)


def _head_dim(fields, family, dim, heads):
    if fields.has("head_dim"):
        head_dim = fields.required("head_dim")
    elif family == "qwen3":
        head_dim = QWEN3_HEAD_DIM
    elif dim % heads:
        raise fields.error("hidden_size", f"not a multiple of num_attention_heads ({heads})")
    else:
        head_dim = dim // heads
    if head_dim % 2:
        raise fields.error("head_dim", "the rotary embedding pairs features: must be even")
    return head_dim


def _rotary_dim(fields, head_dim, partial):
    """The features each head rotates: int(head_dim * partial_rotary_factor), as Phi-3
    computes it (None: all of them)."""
    if partial == 1.0:
        return None
    rotary = int(head_dim * partial)
    if rotary < 2 or rotary % 2:
        raise fields.error("partial_rotary_factor", f"rotates {rotary} of {head_dim} "
                                                    "features: must be a positive even number")
    return rotary


# The parts of each family's block beyond Llama's: its norms, query-key norms and fused
# products.
BLOCKS = {"qwen3": dict(qk_norm="head"), "olmo2": dict(norms=POST_NORMS, qk_norm="projection"),
          "phi3": dict(fused=True)}


def _llama_spec(fields, family, seq, no_dropout):
    """The LlamaSpec of a Llama, Mistral, Qwen2, Qwen3, OLMo 2 or Phi-3 config."""
    dim, heads = fields.required("hidden_size"), fields.required("num_attention_heads")
    kv_heads = fields.take("num_key_value_heads", heads, int)
    if heads % kv_heads:
        raise fields.error("num_key_value_heads", f"must divide num_attention_heads ({heads})")
    head_dim = _head_dim(fields, family, dim, heads)
    fields.require_value("hidden_act", ("silu",), "only silu (SwiGLU) is supported", "silu")
    _dropout(fields, ("attention_dropout", "hidden_dropout", "resid_pdrop", "embd_pdrop"),
             no_dropout)
    max_positions = fields.take("max_position_embeddings", None, int)
    if max_positions is not None and seq > max_positions:
        raise fields.error("max_position_embeddings", f"--seq {seq} is longer")
    rope = _rope(fields, family)
    layers = fields.required("num_hidden_layers")
    windows = _sliding_windows(fields, family, seq, layers)
    qkv_bias, o_bias, mlp_bias = _biases(fields, family)
    spec = LlamaSpec(
        family=family, vocab=fields.required("vocab_size"), dim=dim,
        layers=layers, heads=heads, kv_heads=kv_heads, windows=windows,
        head_dim=head_dim, ffn=fields.required("intermediate_size"),
        rms_eps=float(fields.take("rms_norm_eps", RMS_EPS.get(family, 1e-6), (int, float))),
        tied=bool(fields.take("tie_word_embeddings", False)),
        qkv_bias=qkv_bias, o_bias=o_bias, mlp_bias=mlp_bias,
        init_std=float(fields.take("initializer_range", 0.02, (int, float))),
        rotary_dim=_rotary_dim(fields, head_dim, rope.partial), **_rope_fields(rope, layers),
        **BLOCKS.get(family, {}))
    _refuse_leftover(fields, family)
    return spec


def _rope_fields(rope, layers):
    """The LlamaSpec fields of a Rope that every layer has."""
    return dict(rope_theta=rope.theta, llama3_scaling=rope.llama3, yarn_scaling=rope.yarn,
                linear_factors=() if rope.linear is None else (rope.linear,) * layers)


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


# Gemma 3's rotary bases where its config leaves them out (Gemma3TextConfig.default_theta),
# by layer type.
GEMMA3_THETA = {"full_attention": 1000000.0, "sliding_attention": 10000.0}
GEMMA3_ROPES = "default and linear"


def _gemma3_ropes(fields):
    """{layer type: Rope}: rope_parameters by layer type (transformers 5), or rope_theta,
    rope_scaling (the global layers') and rope_local_base_freq (transformers 4). Each
    kind of layer takes the default rotary embedding or a linear scaling (Gemma 3 4B and
    up scale their global layers' 8 times)."""
    if not fields.has("rope_parameters"):
        scaling = fields.take("rope_scaling", None, dict) or {}
        known = {"rope_type", "type"}
        return {"full_attention": Rope(float(fields.take(
                    "rope_theta", GEMMA3_THETA["full_attention"], (int, float))), None, None,
                    _linear_or_default(fields, "rope_scaling", scaling, known,
                                       GEMMA3_ROPES), 1.0),
                "sliding_attention": Rope(float(fields.take(
                    "rope_local_base_freq", GEMMA3_THETA["sliding_attention"], (int, float))),
                    None, None, None, 1.0)}
    params = fields.take("rope_parameters", kind=dict)
    fields.ignore("rope_scaling")
    extra = sorted(set(params) - set(LAYER_TYPES))
    if extra:
        raise fields.error("rope_parameters", f"expected one entry per layer type "
                                              f"({', '.join(LAYER_TYPES)}), not {extra[0]}")
    ropes = {}
    for kind in LAYER_TYPES:
        entry = params.get(kind) or {}
        linear = _linear_or_default(fields, "rope_parameters", entry,
                                    {"rope_type", "type", "rope_theta"}, GEMMA3_ROPES)
        ropes[kind] = Rope(float(entry.get("rope_theta", GEMMA3_THETA[kind])), None, None,
                           linear, 1.0)
    return ropes


def _gemma_layers(fields, family, layers, seq):
    """The LlamaSpec fields of Gemma 2's and 3's local and global layers: each layer's
    window and rotary embedding (Gemma 2: every other layer local, one rotary embedding;
    Gemma 3: every sliding_window_pattern-th layer global, each kind its own)."""
    if family == "gemma2":
        types = _layer_types(fields, layers, lambda i: (i + 1) % 2)
        fields_of_rope = _rope_fields(_rope(fields, family), layers)
    else:
        # transformers 5 saves the pattern it read as _sliding_window_pattern.
        pattern = fields.take("sliding_window_pattern",
                              fields.take("_sliding_window_pattern", 6, int), int)
        types = _layer_types(fields, layers, lambda i: (i + 1) % pattern)
        ropes = _gemma3_ropes(fields)
        fields_of_rope = dict(
            rope_theta=ropes["full_attention"].theta,
            thetas=tuple(ropes[t].theta for t in types),
            linear_factors=tuple(ropes[t].linear for t in types)
            if any(r.linear for r in ropes.values()) else ())
    return dict(windows=_layer_windows(types, _window(fields, GEMMA_WINDOW), seq),
                **fields_of_rope)


def _gemma_activation(fields, family):
    """Gemma's GeGLU takes the tanh GELU: Gemma 1's hidden_act (whose "gelu" transformers
    reads as the tanh form) beside its older hidden_activation, the later ones'
    hidden_activation."""
    why = "only the tanh GELU (gelu_pytorch_tanh) is supported"
    if family == "gemma":
        fields.require_value("hidden_act", GPT2_GELU + ("gelu",), why, "gelu_pytorch_tanh")
        if fields.has("hidden_activation"):
            fields.require_value("hidden_activation", GPT2_GELU, why)
        fields.ignore("hidden_activation")
    else:
        fields.require_value("hidden_activation", GPT2_GELU, why, "gelu_pytorch_tanh")


# Gemma 2's and 3's local window where their configs leave it out.
GEMMA_WINDOW = 4096
# Gemma 2's soft caps where its config leaves them out: (attention scores, logits).
GEMMA2_SOFTCAPS = (50.0, 30.0)


def _softcap(fields, field, default):
    """A soft cap: the config's (null: none), else the family's `default`."""
    if field in fields.data and fields.data[field] is None:
        fields.ignore(field)
        return None
    cap = fields.take(field, default, (int, float))
    if cap is not None and not cap > 0:
        raise fields.error(field, "expected a positive number (or null: no cap)")
    return None if cap is None else float(cap)


def _gemma_spec(fields, family, seq, no_dropout):
    """The LlamaSpec of a Gemma text decoder: RMS norms with gains 1 + w, the embedding
    times sqrt(hidden_size), GeGLU, a tied head; Gemma 2 and 3: norms around each branch
    too, scores scaled by query_pre_attn_scalar^-1/2, local layers with a sliding window,
    scores and logits soft-capped where the config says (Gemma 2 by default); Gemma 3:
    query-key norms over each head, local layers with their own rotary base."""
    dim, heads = fields.required("hidden_size"), fields.required("num_attention_heads")
    kv_heads = fields.take("num_key_value_heads", heads, int)
    if heads % kv_heads:
        raise fields.error("num_key_value_heads", f"must divide num_attention_heads ({heads})")
    _gemma_activation(fields, family)
    _dropout(fields, ("attention_dropout",), no_dropout)
    max_positions = fields.take("max_position_embeddings", None, int)
    if max_positions is not None and seq > max_positions:
        raise fields.error("max_position_embeddings", f"--seq {seq} is longer")
    if fields.take("use_bidirectional_attention", False):
        raise fields.error("use_bidirectional_attention", "only causal attention is supported")
    layers = fields.required("num_hidden_layers")
    bias = _bias_flag(fields, "attention_bias", family, ATTENTION_BIAS_FAMILIES)
    if family == "gemma":
        parts = _rope_fields(_rope(fields, family), layers)
    else:
        caps = GEMMA2_SOFTCAPS if family == "gemma2" else (None, None)
        parts = dict(
            _gemma_layers(fields, family, layers, seq), norms=SANDWICH_NORMS,
            attention_scale=float(fields.take("query_pre_attn_scalar", 256, (int, float)))
            ** -0.5, attention_softcap=_softcap(fields, "attn_logit_softcapping", caps[0]),
            final_softcap=_softcap(fields, "final_logit_softcapping", caps[1]),
            qk_norm="head" if family == "gemma3_text" else None)
    spec = LlamaSpec(
        family=family, vocab=fields.required("vocab_size"), dim=dim, layers=layers,
        heads=heads, kv_heads=kv_heads, head_dim=fields.take("head_dim", 256, int),
        ffn=fields.required("intermediate_size"),
        rms_eps=float(fields.take("rms_norm_eps", 1e-6, (int, float))),
        tied=bool(fields.take("tie_word_embeddings", True)), qkv_bias=bias, o_bias=bias,
        init_std=float(fields.take("initializer_range", 0.02, (int, float))),
        embed_scale=math.sqrt(dim), norm_offset=1.0, activation="gelu", **parts)
    _refuse_leftover(fields, family)
    return spec
