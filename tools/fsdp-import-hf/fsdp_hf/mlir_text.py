"""Pieces of the model files the families write (llama.py, gpt2.py): types, numbers,
the parameter declarations and the loss function's lines."""
import fnmatch

from . import HfError


def tensor(*dims, e="f32"):
    return "tensor<" + "x".join(map(str, dims)) + "x" + e + ">"


def mlir_float(x):
    """A float as MLIR's parser reads it: shortest round trip, with a '.' in it
    (MLIR takes 1.0e-05, not 1e-05)."""
    text = repr(float(x))
    mantissa, e, exponent = text.partition("e")
    if "." not in mantissa:
        mantissa += ".0"
    return mantissa + e + exponent


def frozen_names(table, patterns):
    """The parameters of `table` ([(name, ...)]) matching any of the glob `patterns`
    (fnmatch, e.g. 'model.embed_tokens.weight' or 'model.layers.0.*'); a pattern that
    matches none is an error."""
    names = [name for name, *_ in table]
    frozen = set()
    for pattern in patterns:
        matched = fnmatch.filter(names, pattern)
        if not matched:
            raise HfError(f"--freeze {pattern}: matches no parameter of the model (e.g. "
                          f"{names[0]}, {names[1]})")
        frozen.update(matched)
    return frozen


class Writer:
    """The lines of a loss function's body, with the parameters' names at hand."""

    def __init__(self, spec, batch, seq, key_block, table):
        """`key_block`: as --key-block gave it, or None for the default (the sequence, at
        most 512)."""
        self.spec, self.B, self.T = spec, batch, seq
        self.key_block, self.key_block_given = key_block or min(512, seq), bool(key_block)
        self.lines, self.names = [], set(n for n, *_ in table)

    def w(self, line):
        self.lines.append("    " + line)

    def use(self, name, shape, value=None):
        value = value or "%" + name.replace(".", "_")
        self.w(f"{value} = fsdp.use @{name} : {tensor(*shape)}")
        return value

    def heads_attention(self, v, q, k, v_, heads, kv_heads, scale=None, explicit=False,
                        window=None, softcap=None):
        """Causal attention of heads laid out [B, T, n, D] (q, k, v_): transposed to
        [B, n, T, D] and back; the result [B, T, heads * D] is `v`oc. fsdp.attention
        (with a sliding `window` and scores soft-capped at `softcap` if given), or with
        `explicit` its definition written out
        (scores, scale, causal_mask, softmax, every T x T score matrix kept for backward;
        keys and values already broadcast to every query head)."""
        B, T, D = self.B, self.T, self.spec.head_dim
        for name, value, n in (("q", q, heads), ("k", k, kv_heads), ("v", v_, kv_heads)):
            self.w(f"{v}{name}h = fsdp.transpose {value} [0, 2, 1, 3] : "
                   f"{tensor(B, T, n, D)} -> {tensor(B, n, T, D)}")
        QH = tensor(B, heads, T, D)
        if explicit:
            assert window is None and softcap is None, \
                "the explicit form has no sliding window and no soft cap"
            S = tensor(B, heads, T, T)
            self.w(f"{v}s = fsdp.batch_matmul {v}qh, {v}kh transpose_rhs : {QH}, {QH} -> {S}")
            self.w(f"{v}ss = fsdp.scale {v}s by {mlir_float(scale or D ** -0.5)} : {S}")
            self.w(f"{v}m = fsdp.causal_mask {v}ss : {S}")
            self.w(f"{v}p = fsdp.softmax {v}m dim 3 : {S}")
            self.w(f"{v}o = fsdp.batch_matmul {v}p, {v}vh : {S}, {QH} -> {QH}")
        else:
            # A window's blocks of queries reach window + block - 1 keys: blocks no
            # longer than the window keep that near the band (unless --key-block says).
            block = self.key_block if window is None or self.key_block_given else \
                min(self.key_block, window)
            scaled = "" if window is None else f" window {window}"
            scaled += "" if scale is None else f" scale {mlir_float(scale)}"
            scaled += "" if softcap is None else f" softcap {mlir_float(softcap)}"
            self.w(f"{v}o, {v}lse = fsdp.attention {v}qh, {v}kh, {v}vh causal{scaled} "
                   f"key_block {block} : {QH}, {tensor(B, kv_heads, T, D)}, "
                   f"{tensor(B, kv_heads, T, D)} -> {QH}, {tensor(B, heads, T)}")
        self.w(f"{v}ot = fsdp.transpose {v}o [0, 2, 1, 3] : {tensor(B, heads, T, D)} -> "
               f"{tensor(B, T, heads, D)}")
        self.w(f"{v}oc = fsdp.reshape {v}ot : {tensor(B, T, heads, D)} -> "
               f"{tensor(B, T, heads * D)}")
        return v + "oc"

    def head_and_loss(self, xf, head_name):
        """Logits from the final hidden state `xf` and the [V, C] head `head_name` (a
        tied head reads the embedding again where it is needed, its unit gathered a
        second time, rather than kept gathered through every layer), then the loss."""
        B, T, V, C = self.B, self.T, self.spec.vocab, self.spec.dim
        head = self.use(head_name, (V, C), "%tied_head" if self.spec.tied else None)
        I = tensor(B, T, e="i32")
        L = tensor(B, T, V)
        self.w(f"%logits = fsdp.matmul {xf}, {head} transpose_rhs : {tensor(B, T, C)}, "
               f"{tensor(V, C)} -> {L}")
        logits = "%logits"
        cap = getattr(self.spec, "final_softcap", None)
        if cap:
            # Gemma's soft cap: cap tanh(logits / cap).
            self.w(f"%logits_in = fsdp.scale %logits by {mlir_float(1.0 / cap)} : {L}")
            self.w(f"%logits_tanh = fsdp.tanh %logits_in : {L}")
            self.w(f"%logits_capped = fsdp.scale %logits_tanh by {mlir_float(cap)} : {L}")
            logits = "%logits_capped"
        self.w(f"%loss = fsdp.cross_entropy {logits}, %targets : {L}, {I} -> tensor<f32>")
        self.w("return %loss : tensor<f32>")


def module_text(table, batch, seq, plan, writer, header, frozen):
    """The .mlir text: `header` comment lines, the module with `plan`'s attribute, the
    parameters of `table` ([(name, shape, unit, initializer)]; those in `frozen`
    declared frozen) and the loss function of inputs `tokens` and `targets` ([batch,
    seq] i32) whose body `writer` holds."""
    out = [f"// {line}" for line in header]
    out.append(f"module attributes {{fsdp.plan = {plan.attribute()}}} {{")
    for name, shape, unit, init in table:
        keyword = "fsdp.param frozen" if name in frozen else "fsdp.param"
        out.append(f'  {keyword} @{name} unit "{unit}" : {tensor(*shape)} = {init}')
    out.append("")
    I = tensor(batch, seq, e="i32")
    out.append(f"  func.func @loss(%tokens: {I}, %targets: {I}) -> tensor<f32> {{")
    out += writer.lines
    out += ["  }", "}"]
    return "\n".join(out) + "\n"
