"""A Llama-family decoder (Llama, Mistral, Qwen2) written in the fsdp dialect with Hugging
Face's parameter names and layouts: every projection's weight `[out, in]` as a
`torch.nn.Linear` holds it, applied with `fsdp.matmul ... transpose_rhs`, so a checkpoint's
tensors are the model's parameters as they are, and an export is a copy.

One FSDP unit for the token embedding, one per decoder layer, one for the final norm and
the head (a tied head reads the embedding's unit again).
"""
from .mlir_text import Writer, mlir_float, module_text, tensor

# Buffers some checkpoints store that the model recomputes: fsdp.rope's angles.
RECOMPUTED = (".rotary_emb.inv_freq",)


def parameters(spec):
    """[(name, shape, unit, initializer)] in declaration order, as Hugging Face names
    them; initializers as its _init_weights: normal(0, initializer_range) for weights and
    embeddings, zeros for biases, ones for norms."""
    C, F, V, D = spec.dim, spec.ffn, spec.vocab, spec.head_dim
    Q, KV = spec.heads * D, spec.kv_heads * D
    normal = f"#fsdp.normal<std = {mlir_float(spec.init_std)}>"
    table = [("model.embed_tokens.weight", (V, C), "embed", normal)]
    for i in range(spec.layers):
        p, u = f"model.layers.{i}.", f"layers.{i}"
        table.append((p + "input_layernorm.weight", (C,), u, "#fsdp.ones"))
        for proj, out, bias in (("q_proj", Q, spec.qkv_bias), ("k_proj", KV, spec.qkv_bias),
                                ("v_proj", KV, spec.qkv_bias), ("o_proj", C, spec.o_bias)):
            table.append((p + f"self_attn.{proj}.weight", (out, Q if proj == "o_proj" else C),
                          u, normal))
            if bias:
                table.append((p + f"self_attn.{proj}.bias", (out,), u, "#fsdp.zeros"))
        table.append((p + "post_attention_layernorm.weight", (C,), u, "#fsdp.ones"))
        for proj, out, inp in (("gate_proj", F, C), ("up_proj", F, C), ("down_proj", C, F)):
            table.append((p + f"mlp.{proj}.weight", (out, inp), u, normal))
            if spec.mlp_bias:
                table.append((p + f"mlp.{proj}.bias", (out,), u, "#fsdp.zeros"))
    table.append(("model.norm.weight", (C,), "head", "#fsdp.ones"))
    if not spec.tied:
        table.append(("lm_head.weight", (V, C), "head", normal))
    return table


def checkpoint_name(name, wanted):
    """A checkpoint tensor's name in the model: the same."""
    return name


class _Writer(Writer):
    explicit = False  # attention written out (write's `explicit`)

    def linear(self, out, x, prefix, n_in, n_out):
        """x [B, T, n_in] @ W^T (+ b): Hugging Face's Linear."""
        B, T = self.B, self.T
        w = self.use(prefix + ".weight", (n_out, n_in))
        y = out if prefix + ".bias" not in self.names else out + "_nb"
        self.w(f"{y} = fsdp.matmul {x}, {w} transpose_rhs : {tensor(B, T, n_in)}, "
               f"{tensor(n_out, n_in)} -> {tensor(B, T, n_out)}")
        if y != out:
            b = self.use(prefix + ".bias", (n_out,))
            self.w(f"{out} = fsdp.add {y}, {b} : {tensor(B, T, n_out)}, {tensor(n_out)} "
                   f"-> {tensor(B, T, n_out)}")
        return out

    def split_heads(self, out, flat, n, to):
        """[B, T, n * D] -> [B, T, to, D]: n heads, each repeated to / n times
        (grouped-query heads broadcast for the explicit attention)."""
        B, T, D = self.B, self.T, self.spec.head_dim
        if n == to:
            self.w(f"{out}4 = fsdp.reshape {flat} : {tensor(B, T, n * D)} -> "
                   f"{tensor(B, T, n, D)}")
            return out + "4"
        G = to // n
        self.w(f"{out}5 = fsdp.reshape {flat} : {tensor(B, T, n * D)} -> "
               f"{tensor(B, T, n, 1, D)}")
        self.w(f"{out}g = fsdp.broadcast {out}5 : {tensor(B, T, n, 1, D)} -> "
               f"{tensor(B, T, n, G, D)}")
        self.w(f"{out}4 = fsdp.reshape {out}g : {tensor(B, T, n, G, D)} -> "
               f"{tensor(B, T, to, D)}")
        return out + "4"

    def rms_norm(self, out, x, weight):
        X = tensor(self.B, self.T, self.spec.dim)
        g = self.use(weight, (self.spec.dim,))
        self.w(f"{out} = fsdp.rms_norm {x}, {g} eps {mlir_float(self.spec.rms_eps)} : {X}, "
               f"{tensor(self.spec.dim)}")
        return out

    def rope(self, out, x, heads):
        s = self.spec
        scaling = ""
        if s.llama3_scaling:
            factor, low, high, context = s.llama3_scaling
            scaling = (f" llama3_scaling <factor = {mlir_float(factor)}, "
                       f"low_freq_factor = {mlir_float(low)}, "
                       f"high_freq_factor = {mlir_float(high)}, "
                       f"original_max_positions = {context}>")
        self.w(f"{out} = fsdp.rope {x} positions 1 theta {mlir_float(s.rope_theta)}{scaling} : "
               f"{tensor(self.B, self.T, heads, s.head_dim)}")
        return out

    def layer(self, i, x):
        s, B, T, C, D = self.spec, self.B, self.T, self.spec.dim, self.spec.head_dim
        H, KV = s.heads, s.kv_heads
        p, v = f"model.layers.{i}.", f"%l{i}_"
        X = tensor(B, T, C)
        self.lines.append(f"    // layer {i}")
        h = self.rms_norm(v + "h", x, p + "input_layernorm.weight")
        heads = {}
        # fsdp.attention takes the key/value heads as they are (each serves H / KV
        # query heads); the explicit form broadcasts them to all H first.
        KH = H if self.explicit else KV
        for name, n in (("q", H), ("k", KV), ("v", KV)):
            flat = self.linear(v + name, h, p + f"self_attn.{name}_proj", C, n * D)
            heads[name] = self.split_heads(v + name, flat, n, H if name == "q" else KH)
        heads["q"] = self.rope(v + "qr", heads["q"], H)
        heads["k"] = self.rope(v + "kr", heads["k"], KH)
        self.heads_attention(v, heads["q"], heads["k"], heads["v"], H, KH,
                             explicit=self.explicit)
        attn = self.linear(v + "attn", v + "oc", p + "self_attn.o_proj", H * D, C)
        self.w(f"{v}x1 = fsdp.add {x}, {attn} : {X}, {X} -> {X}")
        f = self.rms_norm(v + "f", v + "x1", p + "post_attention_layernorm.weight")
        FF = tensor(B, T, s.ffn)
        gate = self.linear(v + "gate", f, p + "mlp.gate_proj", C, s.ffn)
        up = self.linear(v + "up", f, p + "mlp.up_proj", C, s.ffn)
        self.w(f"{v}act = fsdp.silu {gate} : {FF}")
        self.w(f"{v}gu = fsdp.mul {v}act, {up} : {FF}, {FF} -> {FF}")
        down = self.linear(v + "down", v + "gu", p + "mlp.down_proj", s.ffn, C)
        self.w(f"{v}out = fsdp.add {v}x1, {down} : {X}, {X} -> {X}")
        return v + "out"


def write(spec, batch, seq, plan, key_block=None, header=(), frozen=frozenset(),
          explicit=False):
    """The .mlir text of `spec` for global batches of `batch` sequences of `seq` tokens
    (inputs `tokens` and `targets`, [batch, seq] i32; the loss their mean cross-entropy)
    under `plan` (plan.Plan), the parameters in `frozen` declared frozen (read, never
    updated); `header`: comment lines to begin with; `explicit`: attention written out
    (Writer.heads_attention) rather than fsdp.attention."""
    table = parameters(spec)
    wr = _Writer(spec, batch, seq, key_block or min(512, seq), table)
    wr.explicit = explicit
    V, C = spec.vocab, spec.dim
    emb = wr.use("model.embed_tokens.weight", (V, C))
    wr.w(f"%x0 = fsdp.embedding {emb}[%tokens] : {tensor(V, C)}, "
         f"{tensor(batch, seq, e='i32')} -> {tensor(batch, seq, C)}")
    x = "%x0"
    for i in range(spec.layers):
        x = wr.layer(i, x)
    xf = wr.rms_norm("%xf", x, "model.norm.weight")
    wr.head_and_loss(xf, "model.embed_tokens.weight" if spec.tied else "lm_head.weight")
    return module_text(table, batch, seq, plan, wr, header, frozen)
