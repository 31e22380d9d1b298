"""GPT-2 (GPT2LMHeadModel) written in the fsdp dialect with Hugging Face's parameter
names and layouts: its Conv1D weights are `[in, out]`, applied with a plain
`fsdp.matmul`; the fused query-key-value product `c_attn` stays one parameter, its
output split by `fsdp.slice`; the learned positions `wpe` keep all `n_positions` rows, the
first `T` taken by `fsdp.slice` (their gradient is zero past T). So a checkpoint's tensors
are the model's parameters as they are, and an export is a copy.

One FSDP unit for the token and position embeddings, one per block, one for the final
norm (and an untied head).
"""
import math

from .mlir_text import Writer, mlir_float, module_text, tensor

EMBEDDING = "transformer.wte.weight"
POSITIONS = "transformer.wpe.weight"
# Hugging Face's GPT-2 checkpoints (the Hub's gpt2, gpt2-medium, ...) name the
# transformer's tensors without this prefix, as GPT2Model saves them.
PREFIX = "transformer."
# Buffers older checkpoints store that the model recomputes: the causal mask.
RECOMPUTED = (".attn.bias", ".attn.masked_bias")


def parameters(spec):
    """[(name, shape, unit, initializer)] in declaration order, as Hugging Face names
    them; initializers as its _init_weights: normal(0, initializer_range) for weights and
    embeddings, the residual projections (c_proj) scaled by 1/sqrt(2 n_layer), zeros for
    biases, ones and zeros for the layer norms."""
    C, F, V = spec.dim, spec.ffn, spec.vocab
    normal = f"#fsdp.normal<std = {mlir_float(spec.init_std)}>"
    residual = f"#fsdp.normal<std = {mlir_float(spec.init_std / math.sqrt(2 * spec.layers))}>"
    zeros, ones = "#fsdp.zeros", "#fsdp.ones"
    table = [(EMBEDDING, (V, C), "embed", normal),
             (POSITIONS, (spec.positions, C), "embed", normal)]
    for i in range(spec.layers):
        p, u = f"transformer.h.{i}.", f"h.{i}"
        table += [(p + "ln_1.weight", (C,), u, ones), (p + "ln_1.bias", (C,), u, zeros),
                  (p + "attn.c_attn.weight", (C, 3 * C), u, normal),
                  (p + "attn.c_attn.bias", (3 * C,), u, zeros),
                  (p + "attn.c_proj.weight", (C, C), u, residual),
                  (p + "attn.c_proj.bias", (C,), u, zeros),
                  (p + "ln_2.weight", (C,), u, ones), (p + "ln_2.bias", (C,), u, zeros),
                  (p + "mlp.c_fc.weight", (C, F), u, normal),
                  (p + "mlp.c_fc.bias", (F,), u, zeros),
                  (p + "mlp.c_proj.weight", (F, C), u, residual),
                  (p + "mlp.c_proj.bias", (C,), u, zeros)]
    table += [("transformer.ln_f.weight", (C,), "head", ones),
              ("transformer.ln_f.bias", (C,), "head", zeros)]
    if not spec.tied:
        table.append(("lm_head.weight", (V, C), "head", normal))
    return table


def checkpoint_name(name, wanted):
    """The model's name for a checkpoint tensor `name`: itself, or with the transformer's
    prefix when the checkpoint leaves it out."""
    return name if name in wanted or PREFIX + name not in wanted else PREFIX + name


class _Writer(Writer):
    def conv1d(self, out, x, prefix, n_in, n_out):
        """x [B, T, n_in] @ W + b: Hugging Face's Conv1D, W [in, out]."""
        B, T = self.B, self.T
        w = self.use(prefix + ".weight", (n_in, n_out))
        b = self.use(prefix + ".bias", (n_out,))
        Y = tensor(B, T, n_out)
        self.w(f"{out}_nb = fsdp.matmul {x}, {w} : {tensor(B, T, n_in)}, "
               f"{tensor(n_in, n_out)} -> {Y}")
        self.w(f"{out} = fsdp.add {out}_nb, {b} : {Y}, {tensor(n_out)} -> {Y}")
        return out

    def layer_norm(self, out, x, prefix):
        X, C = tensor(self.B, self.T, self.spec.dim), tensor(self.spec.dim)
        g = self.use(prefix + ".weight", (self.spec.dim,))
        b = self.use(prefix + ".bias", (self.spec.dim,))
        self.w(f"{out} = fsdp.layer_norm {x}, {g}, {b} eps {mlir_float(self.spec.ln_eps)} : "
               f"{X}, {C}, {C}")
        return out

    def embeddings(self):
        """Token embedding plus the first T learned positions."""
        s, B, T, C = self.spec, self.B, self.T, self.spec.dim
        X = tensor(B, T, C)
        wte = self.use(EMBEDDING, (s.vocab, C))
        self.w(f"%tok = fsdp.embedding {wte}[%tokens] : {tensor(s.vocab, C)}, "
               f"{tensor(B, T, e='i32')} -> {X}")
        pos = self.use(POSITIONS, (s.positions, C))
        if T < s.positions:
            self.w(f"%pos = fsdp.slice {pos} dim 0 offset 0 size {T} : "
                   f"{tensor(s.positions, C)} -> {tensor(T, C)}")
            pos = "%pos"
        self.w(f"%x0 = fsdp.add %tok, {pos} : {X}, {tensor(T, C)} -> {X}")
        return "%x0"

    def layer(self, i, x):
        s, B, T = self.spec, self.B, self.T
        C, D, H = s.dim, s.head_dim, s.heads
        p, v = f"transformer.h.{i}.", f"%h{i}_"
        X = tensor(B, T, C)
        self.lines.append(f"    // block {i}")
        h = self.layer_norm(v + "ln1", x, p + "ln_1")
        qkv = self.conv1d(v + "qkv", h, p + "attn.c_attn", C, 3 * C)
        heads = []
        for n, name in enumerate("qkv"):
            self.w(f"{v}{name} = fsdp.slice {qkv} dim 2 offset {n * C} size {C} : "
                   f"{tensor(B, T, 3 * C)} -> {X}")
            self.w(f"{v}{name}4 = fsdp.reshape {v}{name} : {X} -> {tensor(B, T, H, D)}")
            heads.append(f"{v}{name}4")
        # fsdp.attention's scale defaults to 1/sqrt(D): written only when it differs.
        scale = s.attention_scale(i)
        oc = self.heads_attention(v, *heads, H, H, None if scale == D ** -0.5 else scale)
        attn = self.conv1d(v + "attn", oc, p + "attn.c_proj", C, C)
        self.w(f"{v}x1 = fsdp.add {x}, {attn} : {X}, {X} -> {X}")
        m = self.layer_norm(v + "ln2", v + "x1", p + "ln_2")
        f = self.conv1d(v + "fc", m, p + "mlp.c_fc", C, s.ffn)
        self.w(f"{v}act = fsdp.gelu {f} : {tensor(B, T, s.ffn)}")
        down = self.conv1d(v + "proj", v + "act", p + "mlp.c_proj", s.ffn, C)
        self.w(f"{v}out = fsdp.add {v}x1, {down} : {X}, {X} -> {X}")
        return v + "out"


def write(spec, batch, seq, plan, key_block=None, header=(), frozen=frozenset()):
    """As llama.write, for a GPT-2 `spec`."""
    table = parameters(spec)
    wr = _Writer(spec, batch, seq, key_block, table)
    x = wr.embeddings()
    for i in range(spec.layers):
        x = wr.layer(i, x)
    xf = wr.layer_norm("%xf", x, "transformer.ln_f")
    wr.head_and_loss(xf, EMBEDDING if spec.tied else "lm_head.weight")
    return module_text(table, batch, seq, plan, wr, header, frozen)
