"""A Llama-family decoder (Llama, Mistral, Qwen2, Qwen3, OLMo 2, Phi-3, Gemma) written
in the fsdp dialect with Hugging Face's parameter names and layouts: every projection's
weight `[out, in]` as a `torch.nn.Linear` holds it, applied with `fsdp.matmul ...
transpose_rhs`, so a checkpoint's tensors are the model's parameters as they are, and an
export is a copy.

One FSDP unit for the token embedding, one per decoder layer, one for the final norm and
the head (a tied head reads the embedding's unit again).
"""
from .mlir_text import Writer, mlir_float, module_text, tensor

# Buffers some checkpoints store that the model recomputes: fsdp.rope's angles.
RECOMPUTED = (".rotary_emb.inv_freq",)


def norm_initializer(spec):
    """A norm's gain starts at 1: the weight itself, or 0 where the gain is 1 + w."""
    return "#fsdp.zeros" if spec.norm_offset else "#fsdp.ones"


def _attention_parameters(spec, p, u, normal):
    """Layer `p`'s attention parameters in unit `u`: q, k, v and o (Phi-3: qkv fused),
    their biases, the query-key norms."""
    C, D = spec.dim, spec.head_dim
    Q, KV = spec.heads * D, spec.kv_heads * D
    projections = [("qkv_proj", Q + 2 * KV, C, False)] if spec.fused else \
        [("q_proj", Q, C, spec.qkv_bias), ("k_proj", KV, C, spec.qkv_bias),
         ("v_proj", KV, C, spec.qkv_bias)]
    table = []
    for proj, out, inp, bias in projections + [("o_proj", C, Q, spec.o_bias)]:
        table.append((p + f"self_attn.{proj}.weight", (out, inp), u, normal))
        if bias:
            table.append((p + f"self_attn.{proj}.bias", (out,), u, "#fsdp.zeros"))
    if spec.qk_norm:
        whole = spec.qk_norm == "projection"
        gain = norm_initializer(spec)
        table += [(p + "self_attn.q_norm.weight", (Q if whole else D,), u, gain),
                  (p + "self_attn.k_norm.weight", (KV if whole else D,), u, gain)]
    return table


def _mlp_parameters(spec, p, u, normal):
    """Layer `p`'s SwiGLU parameters in unit `u` (Phi-3: gate and up fused)."""
    C, F = spec.dim, spec.ffn
    products = [("gate_up_proj", 2 * F, C)] if spec.fused else \
        [("gate_proj", F, C), ("up_proj", F, C)]
    table = []
    for proj, out, inp in products + [("down_proj", C, F)]:
        table.append((p + f"mlp.{proj}.weight", (out, inp), u, normal))
        if spec.mlp_bias:
            table.append((p + f"mlp.{proj}.bias", (out,), u, "#fsdp.zeros"))
    return table


def parameters(spec):
    """[(name, shape, unit, initializer)] in declaration order, as Hugging Face names
    them; initializers as its _init_weights: normal(0, initializer_range) for weights and
    embeddings, zeros for biases, ones for norms."""
    C, V = spec.dim, spec.vocab
    normal = f"#fsdp.normal<std = {mlir_float(spec.init_std)}>"
    norms = spec.norms
    table = [("model.embed_tokens.weight", (V, C), "embed", normal)]
    for i in range(spec.layers):
        p, u = f"model.layers.{i}.", f"layers.{i}"

        def norm(name):
            return [(p + name + ".weight", (C,), u, norm_initializer(spec))] if name else []
        table += (norm(norms.pre_attention) + _attention_parameters(spec, p, u, normal) +
                  norm(norms.post_attention) + norm(norms.pre_mlp) +
                  _mlp_parameters(spec, p, u, normal) + norm(norms.post_mlp))
    table.append(("model.norm.weight", (C,), "head", norm_initializer(spec)))
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

    def split_heads(self, out, flat, n, to, gain=None):
        """[B, T, n * D] -> [B, T, to, D]: n heads, each RMS-normed over its D features
        by the parameter `gain` if given (Qwen3's q_norm, k_norm), then repeated to / n
        times (grouped-query heads broadcast for the explicit attention)."""
        B, T, D = self.B, self.T, self.spec.head_dim
        if gain is None:
            if n == to:
                self.w(f"{out}4 = fsdp.reshape {flat} : {tensor(B, T, n * D)} -> "
                       f"{tensor(B, T, n, D)}")
                return out + "4"
            self.w(f"{out}5 = fsdp.reshape {flat} : {tensor(B, T, n * D)} -> "
                   f"{tensor(B, T, n, 1, D)}")
            return self.broadcast_heads(out, n, to)
        self.w(f"{out}s = fsdp.reshape {flat} : {tensor(B, T, n * D)} -> {tensor(B, T, n, D)}")
        normed = self.rms_norm(out + "sn", out + "s", gain, (B, T, n, D))
        if n == to:
            return normed
        self.w(f"{out}5 = fsdp.reshape {normed} : {tensor(B, T, n, D)} -> "
               f"{tensor(B, T, n, 1, D)}")
        return self.broadcast_heads(out, n, to)

    def broadcast_heads(self, out, n, to):
        """out + "5" [B, T, n, 1, D] -> [B, T, to, D]: each head repeated to / n times."""
        B, T, D = self.B, self.T, self.spec.head_dim
        G = to // n
        self.w(f"{out}g = fsdp.broadcast {out}5 : {tensor(B, T, n, 1, D)} -> "
               f"{tensor(B, T, n, G, D)}")
        self.w(f"{out}4 = fsdp.reshape {out}g : {tensor(B, T, n, G, D)} -> "
               f"{tensor(B, T, to, D)}")
        return out + "4"

    def rms_norm(self, out, x, weight, shape=None):
        """x's RMS norm over its last dimension (`shape`: [B, T, C] unless given) with
        the gain parameter `weight` (Gemma: 1 + weight, added in f32 as it does)."""
        shape = shape or (self.B, self.T, self.spec.dim)
        g = self.use(weight, shape[-1:])
        if self.spec.norm_offset:
            G = tensor(shape[-1])
            self.w(f"{g}_offset = arith.constant dense<{mlir_float(self.spec.norm_offset)}> : {G}")
            self.w(f"{g}_gain = fsdp.add {g}, {g}_offset : {G}, {G} -> {G}")
            g += "_gain"
        self.w(f"{out} = fsdp.rms_norm {x}, {g} eps {mlir_float(self.spec.rms_eps)} : "
               f"{tensor(*shape)}, {tensor(shape[-1])}")
        return out

    def rope(self, out, x, heads, layer):
        s = self.spec
        scaling = ""
        if s.rotary_dim:
            scaling += f" rotary_dim {s.rotary_dim}"
        if s.linear_factor(layer):
            scaling += f" linear_scaling {mlir_float(s.linear_factor(layer))}"
        if s.llama3_scaling:
            factor, low, high, context = s.llama3_scaling
            scaling += (f" llama3_scaling <factor = {mlir_float(factor)}, "
                        f"low_freq_factor = {mlir_float(low)}, "
                        f"high_freq_factor = {mlir_float(high)}, "
                        f"original_max_positions = {context}>")
        if s.yarn_scaling:
            factor, fast, slow, context, attention, truncate = s.yarn_scaling
            scaling += (f" yarn_scaling <factor = {mlir_float(factor)}, "
                        f"beta_fast = {mlir_float(fast)}, beta_slow = {mlir_float(slow)}, "
                        f"original_max_positions = {context}, "
                        f"attention_factor = {mlir_float(attention)}, "
                        f"truncate = {'true' if truncate else 'false'}>")
        self.w(f"{out} = fsdp.rope {x} positions 1 theta {mlir_float(s.theta(layer))}{scaling} : "
               f"{tensor(self.B, self.T, heads, s.head_dim)}")
        return out

    def split_last(self, out, x, sizes):
        """x [B, T, sum(sizes)] cut along its last dimension into [B, T, size] pieces
        named out + "0", out + "1", ... (Phi-3's fused products)."""
        B, T, pieces, offset = self.B, self.T, [], 0
        for k, size in enumerate(sizes):
            self.w(f"{out}{k} = fsdp.slice {x} dim 2 offset {offset} size {size} : "
                   f"{tensor(B, T, sum(sizes))} -> {tensor(B, T, size)}")
            pieces.append(f"{out}{k}")
            offset += size
        return pieces

    def projections(self, p, v, h):
        """The flat queries, keys and values [B, T, n * D] of layer `p`'s input h, one at
        a time (each written where it is first read): three products, or Phi-3's one
        fused product cut in three; OLMo 2's query and key norms over the whole
        projection."""
        s, C, D = self.spec, self.spec.dim, self.spec.head_dim
        sizes = (s.heads * D, s.kv_heads * D, s.kv_heads * D)
        if s.fused:
            qkv = self.linear(v + "qkv", h, p + "self_attn.qkv_proj", C, sum(sizes))
            pieces = iter(self.split_last(v + "qkv", qkv, sizes))
        for name, size in zip("qkv", sizes):
            flat = next(pieces) if s.fused else \
                self.linear(v + name, h, p + f"self_attn.{name}_proj", C, size)
            if s.qk_norm == "projection" and name != "v":
                flat = self.rms_norm(v + name + "n", flat, p + f"self_attn.{name}_norm.weight",
                                     (self.B, self.T, size))
            yield flat

    def attention(self, i, p, v, h):
        """Layer i's (`p`) attention of its input h, through o_proj: [B, T, C]."""
        s, C, D = self.spec, self.spec.dim, self.spec.head_dim
        H, KV = s.heads, s.kv_heads
        # fsdp.attention takes the key/value heads as they are (each serves H / KV
        # query heads); the explicit form broadcasts them to all H first.
        KH = H if self.explicit else KV
        heads = {}
        for name, flat, n in zip("qkv", self.projections(p, v, h), (H, KV, KV)):
            gain = p + f"self_attn.{name}_norm.weight" \
                if s.qk_norm == "head" and name != "v" else None
            heads[name] = self.split_heads(v + name, flat, n, H if name == "q" else KH, gain)
        heads["q"] = self.rope(v + "qr", heads["q"], H, i)
        heads["k"] = self.rope(v + "kr", heads["k"], KH, i)
        self.heads_attention(v, heads["q"], heads["k"], heads["v"], H, KH,
                             scale=s.attention_scale, explicit=self.explicit,
                             window=s.window(i), softcap=s.attention_softcap)
        return self.linear(v + "attn", v + "oc", p + "self_attn.o_proj", H * D, C)

    def mlp(self, p, v, f):
        """Layer `p`'s SwiGLU of its input f: [B, T, C] (Phi-3: gate and up one product
        cut in two)."""
        s, C, F = self.spec, self.spec.dim, self.spec.ffn
        if s.fused:
            gate_up = self.linear(v + "gateup", f, p + "mlp.gate_up_proj", C, 2 * F)
            gate, up = self.split_last(v + "gu", gate_up, (F, F))
        else:
            gate = self.linear(v + "gate", f, p + "mlp.gate_proj", C, F)
            up = self.linear(v + "up", f, p + "mlp.up_proj", C, F)
        FF = tensor(self.B, self.T, F)
        self.w(f"{v}act = fsdp.{s.activation} {gate} : {FF}")
        self.w(f"{v}gu = fsdp.mul {v}act, {up} : {FF}, {FF} -> {FF}")
        return self.linear(v + "down", v + "gu", p + "mlp.down_proj", F, C)

    def residual(self, p, out, x, branch, pre, post, normed):
        """out = x + post(branch(pre(x))): one half of layer `p`, with the norms the
        family has before (`pre`, its result `normed`) and after (`post`) the branch."""
        X = tensor(self.B, self.T, self.spec.dim)
        h = self.rms_norm(normed, x, p + pre + ".weight") if pre else x
        y = branch(h)
        if post:
            y = self.rms_norm(out + "n", y, p + post + ".weight")
        self.w(f"{out} = fsdp.add {x}, {y} : {X}, {X} -> {X}")
        return out

    def layer(self, i, x):
        p, v, norms = f"model.layers.{i}.", f"%l{i}_", self.spec.norms
        self.lines.append(f"    // layer {i}")
        x1 = self.residual(p, v + "x1", x, lambda h: self.attention(i, p, v, h),
                           norms.pre_attention, norms.post_attention, v + "h")
        return self.residual(p, v + "out", x1, lambda f: self.mlp(p, v, f),
                             norms.pre_mlp, norms.post_mlp, v + "f")


def write(spec, batch, seq, plan, key_block=None, header=(), frozen=frozenset(),
          explicit=False):
    """The .mlir text of `spec` for global batches of `batch` sequences of `seq` tokens
    (inputs `tokens` and `targets`, [batch, seq] i32; the loss their mean cross-entropy)
    under `plan` (plan.Plan), the parameters in `frozen` declared frozen (read, never
    updated); `header`: comment lines to begin with; `explicit`: attention written out
    (Writer.heads_attention) rather than fsdp.attention."""
    table = parameters(spec)
    wr = _Writer(spec, batch, seq, key_block, table)
    wr.explicit = explicit
    V, C = spec.vocab, spec.dim
    emb = wr.use("model.embed_tokens.weight", (V, C))
    wr.w(f"%x0 = fsdp.embedding {emb}[%tokens] : {tensor(V, C)}, "
         f"{tensor(batch, seq, e='i32')} -> {tensor(batch, seq, C)}")
    x = "%x0"
    if spec.embed_scale:
        # Gemma's embedding times sqrt(hidden_size), in the weights' dtype.
        X = tensor(batch, seq, C)
        wr.w(f"%x0s = fsdp.scale %x0 by {mlir_float(spec.embed_scale)} : {X}")
        x = "%x0s"
    for i in range(spec.layers):
        x = wr.layer(i, x)
    xf = wr.rms_norm("%xf", x, "model.norm.weight")
    wr.head_and_loss(xf, "model.embed_tokens.weight" if spec.tied else "lm_head.weight")
    return module_text(table, batch, seq, plan, wr, header, frozen)
