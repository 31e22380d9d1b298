//===- FSDPOps.td - fsdp operations ------------------------*- tablegen -*-===//

#ifndef FSDP_OPS_TD
#define FSDP_OPS_TD

include "fsdp/IR/FSDPDialect.td"
include "fsdp/IR/FSDPAttrs.td"
include "fsdp/IR/FSDPInterfaces.td"
include "mlir/IR/SymbolInterfaces.td"
include "mlir/Interfaces/InferTypeOpInterface.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

//===----------------------------------------------------------------------===//
// Type constraints
//===----------------------------------------------------------------------===//

// Model tensors have a static shape, at least one element, an element count
// that fits in int64 and no encoding.
class FSDP_ModelTensorOf<list<Type> elementTypes, string what>
    : Type<And<[TensorOf<elementTypes>.predicate,
                CPred<"::mlir::fsdp::isModelTensorType($_self)">]>,
           "non-empty statically shaped tensor of " # what,
           "::mlir::RankedTensorType">;
def FSDP_Tensor : FSDP_ModelTensorOf<[F32, BF16], "f32 or bf16">;
def FSDP_IndexTensor : FSDP_ModelTensorOf<[I32, I64], "i32 or i64">;
def FSDP_Scalar : Type<And<[FSDP_Tensor.predicate, HasAnyRankOfPred<[0]>]>,
                       "rank-0 tensor of f32 or bf16", "::mlir::RankedTensorType">;
def FSDP_Loss : Type<And<[TensorOf<[F32]>.predicate, HasAnyRankOfPred<[0]>]>,
                     "rank-0 tensor of f32", "::mlir::RankedTensorType">;
def FSDP_InitAttr : Attr<CPred<"::llvm::isa<::mlir::fsdp::InitializerAttrInterface>($_self)">,
                         "parameter initializer"> {
  let storageType = "::mlir::fsdp::InitializerAttrInterface";
  let returnType = "::mlir::fsdp::InitializerAttrInterface";
  let convertFromStorage = "$_self";
}

def FSDP_OptimizerAttr : Attr<CPred<"::llvm::isa<::mlir::fsdp::OptimizerAttrInterface>($_self)">,
                              "optimizer"> {
  let storageType = "::mlir::fsdp::OptimizerAttrInterface";
  let returnType = "::mlir::fsdp::OptimizerAttrInterface";
  let convertFromStorage = "$_self";
}

// Model ops bring their gradient rule (see FSDPGradients.cpp).
defvar FSDP_Differentiable = DeclareOpInterfaceMethods<FSDP_DifferentiableOpInterface>;

//===----------------------------------------------------------------------===//
// Parameters
//===----------------------------------------------------------------------===//

def FSDP_ParamOp : FSDP_Op<"param", [Symbol, HasParent<"::mlir::ModuleOp">]> {
  let summary = "Declares one model parameter";
  let description = [{
    Declares a trainable (or, with `frozen`, a fixed) tensor of the model: its
    name, its static f32 or bf16 type, how it is initialised, and the FSDP unit
    it belongs to. Parameters of one unit are gathered and freed together.
    Without `unit` the parameter belongs to the root unit, or to the unit
    chosen by auto-wrap when the plan asks for it. `at` is the parameter's
    element offset in its unit's flat buffer (see `fsdp.unit`), which
    `fsdp-partition` sets.

    `split d`, which `fsdp-split-tensors` sets, says the parameter is cut
    along dimension `d` into `tensor_parallel` equal blocks, one per tensor
    rank: the type is one block's (the whole parameter's dimension `d` is
    `tensor_parallel` times it), and initial values are the whole
    parameter's. `parts [p0, p1, ...]` (with `split`) says the whole
    dimension `d` is consecutive parts of those sizes (a fused product's
    weight: its queries, keys and values), each cut into `tensor_parallel`
    blocks: tensor rank t holds the t-th block of every part, in order.

    `tensor whole` or `tensor cut`, written by the user, overrides the
    layout `fsdp-split-tensors` derives: a whole parameter is held whole by
    every tensor rank (the regions that would cut it stay whole), and one
    the layout does not cut under `tensor cut` is an error. One tensor rank
    ignores both.

    ```mlir
    fsdp.param @fc1.w unit "fc1" : tensor<784x256xf32> = #fsdp.fan_in_normal<scale = 1.0>
    fsdp.param @fc1.b unit "fc1" : tensor<256xf32> = #fsdp.zeros
    fsdp.param frozen @pos unit "embed" : tensor<128x64xf32> = #fsdp.normal<std = 0.02>
    fsdp.param @h0.mlp.w1 unit "block0" split 1 : tensor<64x128xf32> = #fsdp.normal<std = 0.02>
    // GPT-2's queries, keys and values on 2 tensor ranks: 32 of each of the 3 x 64.
    fsdp.param @h0.attn.c_attn unit "block0" split 1 parts [64, 64, 64] : tensor<64x96xf32> = #fsdp.normal<std = 0.02>
    fsdp.param @h0.mlp.w2 unit "block0" tensor whole : tensor<128x64xf32> = #fsdp.normal<std = 0.02>
    ```
  }];
  let arguments = (ins SymbolNameAttr:$sym_name,
                       TypeAttrOf<AnyRankedTensor>:$type,
                       FSDP_InitAttr:$init,
                       OptionalAttr<StrAttr>:$unit,
                       OptionalAttr<I64Attr>:$split_dim,
                       OptionalAttr<DenseI64ArrayAttr>:$split_parts,
                       OptionalAttr<I64Attr>:$offset,
                       UnitAttr:$frozen,
                       OptionalAttr<FSDP_TensorLayout>:$tensor_layout);
  let assemblyFormat = [{
    (`frozen` $frozen^)? $sym_name (`unit` $unit^)? (`tensor` $tensor_layout^)?
    (`split` $split_dim^)? (`parts` $split_parts^)? (`at` $offset^)? `:` $type `=` $init
    attr-dict
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    ::mlir::RankedTensorType getTensorType() {
      return ::llvm::cast<::mlir::RankedTensorType>(getType());
    }
    /// `parts`: with `split`, at least two, each cut into the plan's tensor
    /// ranks, summing to the whole split dimension.
    ::mlir::LogicalResult verifySplitParts();
  }];
}

def FSDP_UseOp : FSDP_Op<"use", [Pure, DeclareOpInterfaceMethods<SymbolUserOpInterface>]> {
  let summary = "Reads a parameter inside the model";
  let description = [{
    The value of the parameter `@name` at this step. Its type must be the one
    the `fsdp.param` declares.

    ```mlir
    %w = fsdp.use @fc1.w : tensor<784x256xf32>
    ```
  }];
  let arguments = (ins FlatSymbolRefAttr:$param);
  let results = (outs FSDP_Tensor:$result);
  let assemblyFormat = "$param attr-dict `:` type($result)";
}

//===----------------------------------------------------------------------===//
// Matrix products
//===----------------------------------------------------------------------===//

def FSDP_MatmulOp : FSDP_Op<"matmul", [Pure, FSDP_Differentiable, InferTypeOpAdaptor]> {
  let summary = "Matrix product of activations and a weight";
  let description = [{
    `lhs` is `[..., M, K]` (any number of leading dimensions), `rhs` is
    `[K, N]`; the result is `[..., M, N]`. `transpose_lhs` swaps the last two
    dimensions of `lhs` and `transpose_rhs` those of `rhs` before the product.

    ```mlir
    %h = fsdp.matmul %x, %w : tensor<8x16x64xf32>, tensor<64x256xf32> -> tensor<8x16x256xf32>
    %t = fsdp.matmul %a, %b transpose_rhs : tensor<4x8xf32>, tensor<16x8xf32> -> tensor<4x16xf32>
    ```
  }];
  let arguments = (ins FSDP_Tensor:$lhs, FSDP_Tensor:$rhs,
                       UnitAttr:$transpose_lhs, UnitAttr:$transpose_rhs);
  let results = (outs FSDP_Tensor:$result);
  let assemblyFormat = [{
    $lhs `,` $rhs (`transpose_lhs` $transpose_lhs^)? (`transpose_rhs` $transpose_rhs^)?
    attr-dict `:` type($lhs) `,` type($rhs) `->` type($result)
  }];
}

def FSDP_BatchMatmulOp : FSDP_Op<"batch_matmul", [Pure, FSDP_Differentiable, InferTypeOpAdaptor]> {
  let summary = "Batched matrix product";
  let description = [{
    `lhs` is `[B..., M, K]` and `rhs` is `[B..., K, N]` with the same batch
    dimensions `B...` (at least one); the result is `[B..., M, N]`.
    `transpose_lhs` / `transpose_rhs` swap the last two dimensions of an
    operand first. Attention scores are `q @ k^T`:

    ```mlir
    %s = fsdp.batch_matmul %q, %k transpose_rhs
        : tensor<2x4x16x8xf32>, tensor<2x4x16x8xf32> -> tensor<2x4x16x16xf32>
    ```
  }];
  let arguments = (ins FSDP_Tensor:$lhs, FSDP_Tensor:$rhs,
                       UnitAttr:$transpose_lhs, UnitAttr:$transpose_rhs);
  let results = (outs FSDP_Tensor:$result);
  let assemblyFormat = [{
    $lhs `,` $rhs (`transpose_lhs` $transpose_lhs^)? (`transpose_rhs` $transpose_rhs^)?
    attr-dict `:` type($lhs) `,` type($rhs) `->` type($result)
  }];
}

//===----------------------------------------------------------------------===//
// Elementwise
//===----------------------------------------------------------------------===//

class FSDP_BinaryOp<string mnemonic, string what>
    : FSDP_Op<mnemonic, [Pure, FSDP_Differentiable, InferTypeOpAdaptor]> {
  let summary = "Elementwise " # what # " with NumPy broadcasting";
  let description = [{
    Shapes broadcast as in NumPy: aligned from the last dimension, each pair of
    sizes equal or one of them 1. Both operands have the same element type.

    ```mlir
    %z = fsdp.}] # mnemonic # [{ %x, %b : tensor<8x16xf32>, tensor<16xf32> -> tensor<8x16xf32>
    ```
  }];
  let arguments = (ins FSDP_Tensor:$lhs, FSDP_Tensor:$rhs);
  let results = (outs FSDP_Tensor:$result);
  let assemblyFormat = [{
    $lhs `,` $rhs attr-dict `:` type($lhs) `,` type($rhs) `->` type($result)
  }];
}

def FSDP_AddOp : FSDP_BinaryOp<"add", "sum">;
def FSDP_SubOp : FSDP_BinaryOp<"sub", "difference">;
def FSDP_MulOp : FSDP_BinaryOp<"mul", "product">;
def FSDP_DivOp : FSDP_BinaryOp<"div", "quotient">;

class FSDP_UnaryOp<string mnemonic, string what>
    : FSDP_Op<mnemonic, [Pure, FSDP_Differentiable, SameOperandsAndResultType]> {
  let summary = "Elementwise " # what;
  let description = [{
    ```mlir
    %y = fsdp.}] # mnemonic # [{ %x : tensor<8x16xf32>
    ```
  }];
  let arguments = (ins FSDP_Tensor:$input);
  let results = (outs FSDP_Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input)";
}

def FSDP_ReluOp : FSDP_UnaryOp<"relu", "max(x, 0)">;
def FSDP_GeluOp : FSDP_UnaryOp<"gelu",
    "GELU, tanh form: 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))">;
def FSDP_SiluOp : FSDP_UnaryOp<"silu", "SiLU (swish): x * sigmoid(x)">;
def FSDP_TanhOp : FSDP_UnaryOp<"tanh", "hyperbolic tangent">;
def FSDP_ExpOp : FSDP_UnaryOp<"exp", "exponential">;

def FSDP_ScaleOp : FSDP_Op<"scale", [Pure, FSDP_Differentiable, SameOperandsAndResultType]> {
  let summary = "Multiplies by a constant";
  let description = [{
    ```mlir
    %y = fsdp.scale %x by 0.125 : tensor<2x4x16x16xf32>
    ```
  }];
  let arguments = (ins FSDP_Tensor:$input, F64Attr:$factor);
  let results = (outs FSDP_Tensor:$result);
  let assemblyFormat = "$input `by` custom<F64>($factor) attr-dict `:` type($input)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Normalisation and attention
//===----------------------------------------------------------------------===//

def FSDP_SoftmaxOp : FSDP_Op<"softmax", [Pure, FSDP_Differentiable, SameOperandsAndResultType]> {
  let summary = "Softmax along one dimension";
  let description = [{
    `exp(x - max) / sum(exp(x - max))` along `dim`.

    ```mlir
    %p = fsdp.softmax %s dim 3 : tensor<2x4x16x16xf32>
    ```
  }];
  let arguments = (ins FSDP_Tensor:$input, ConfinedAttr<I64Attr, [IntNonNegative]>:$dim);
  let results = (outs FSDP_Tensor:$result);
  let assemblyFormat = "$input `dim` $dim attr-dict `:` type($input)";
  let hasVerifier = 1;
}

def FSDP_LayerNormOp : FSDP_Op<"layer_norm",
    [Pure, FSDP_Differentiable, AllTypesMatch<["input", "result"]>,
     AllElementTypesMatch<["input", "gamma", "beta"]>]> {
  let summary = "Layer normalisation over the last dimension";
  let description = [{
    `(x - mean) / sqrt(var + eps) * gamma + beta`, with mean and (biased)
    variance over the last dimension C; `gamma` and `beta` are `[C]`.
    `eps` defaults to 1.0e-5.

    ```mlir
    %y = fsdp.layer_norm %x, %g, %b : tensor<8x16x64xf32>, tensor<64xf32>, tensor<64xf32>
    %z = fsdp.layer_norm %x, %g, %b eps 1.0e-6 : tensor<8x16x64xf32>, tensor<64xf32>, tensor<64xf32>
    ```
  }];
  let arguments = (ins FSDP_Tensor:$input, FSDP_Tensor:$gamma, FSDP_Tensor:$beta,
                       DefaultValuedAttr<F64Attr, "1.0e-5">:$eps);
  let results = (outs FSDP_Tensor:$result);
  let assemblyFormat = [{
    $input `,` $gamma `,` $beta (`eps` custom<F64>($eps)^)? attr-dict `:` type($input) `,` type($gamma) `,` type($beta)
  }];
  let hasVerifier = 1;
}

def FSDP_RMSNormOp : FSDP_Op<"rms_norm",
    [Pure, FSDP_Differentiable, AllTypesMatch<["input", "result"]>,
     AllElementTypesMatch<["input", "gamma"]>]> {
  let summary = "RMS normalisation over the last dimension";
  let description = [{
    `x / sqrt(mean(x^2) + eps) * gamma` over the last dimension C; `gamma` is
    `[C]`. `eps` defaults to 1.0e-5.

    ```mlir
    %y = fsdp.rms_norm %x, %g : tensor<8x16x64xf32>, tensor<64xf32>
    ```
  }];
  let arguments = (ins FSDP_Tensor:$input, FSDP_Tensor:$gamma,
                       DefaultValuedAttr<F64Attr, "1.0e-5">:$eps);
  let results = (outs FSDP_Tensor:$result);
  let assemblyFormat = [{
    $input `,` $gamma (`eps` custom<F64>($eps)^)? attr-dict `:` type($input) `,` type($gamma)
  }];
  let hasVerifier = 1;
}

def FSDP_CausalMaskOp : FSDP_Op<"causal_mask", [Pure, FSDP_Differentiable, SameOperandsAndResultType]> {
  let summary = "Masks attention scores of future positions";
  let description = [{
    The last two dimensions are (query, key) positions of one sequence and
    must be equal. Every score whose key position is after its query position
    becomes -infinity, so a following `fsdp.softmax` gives it zero weight.

    ```mlir
    %m = fsdp.causal_mask %s : tensor<2x4x16x16xf32>
    ```
  }];
  let arguments = (ins FSDP_Tensor:$input);
  let results = (outs FSDP_Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input)";
  let hasVerifier = 1;
}

def FSDP_RopeOp : FSDP_Op<"rope", [Pure, FSDP_Differentiable, SameOperandsAndResultType]> {
  let summary = "Rotary position embedding";
  let description = [{
    Rotates pairs of the last dimension (a head's features, `D`) by angles
    proportional to the position, the index along dimension `positions`
    (from 0). The first `rotary_dim` features (default `D`, even) rotate in
    the rotate-half convention of Llama and GPT-NeoX: feature `i` pairs with
    `i + rotary_dim / 2`, at frequency `f_i = theta^(-2i / rotary_dim)`
    (with `linear_scaling s`, `f_i / s`: positions interpolated `s` times, as
    Hugging Face's `rope_type = "linear"`; with `llama3_scaling`, Llama 3's:
    `#fsdp.llama3_rope`; with `yarn_scaling`, YaRN's: `#fsdp.yarn_rope`, whose
    attention factor `m` multiplies every cosine and sine; `m = 1` otherwise;
    at most one of the three), and with `a = p * f_i` at position `p`:

        y[i]        = x[i] m cos a - x[i + r/2] m sin a
        y[i + r/2]  = x[i + r/2] m cos a + x[i] m sin a

    Features from `rotary_dim` on pass unchanged. `f_i` is rounded to f32
    (Hugging Face computes it in f32 arithmetic, which can leave it an ulp
    from that) and the angle is the f32 product of the position and `f_i`,
    whose cosine and sine are taken in f32, as in Hugging Face's models; the
    tables are never stored. `inverse` rotates by `-a` (still times `m`):
    the gradient, which the transpose of `m` times a rotation is.

    ```mlir
    %q_rot = fsdp.rope %q positions 1 theta 10000.0 : tensor<2x16x8x64xf32>
    %k_rot = fsdp.rope %k positions 2 theta 10000.0 rotary_dim 32 : tensor<2x4x16x64xf32>
    %g_rot = fsdp.rope %q positions 1 theta 1000000.0 linear_scaling 8.0 : tensor<2x16x8x64xf32>
    ```
  }];
  let arguments = (ins FSDP_Tensor:$input,
                       ConfinedAttr<I64Attr, [IntNonNegative]>:$positions,
                       F64Attr:$theta,
                       OptionalAttr<ConfinedAttr<I64Attr, [IntPositive]>>:$rotary_dim,
                       OptionalAttr<F64Attr>:$linear_scaling,
                       OptionalAttr<FSDP_Llama3RopeScalingAttr>:$scaling,
                       OptionalAttr<FSDP_YarnRopeScalingAttr>:$yarn,
                       UnitAttr:$inverse);
  let results = (outs FSDP_Tensor:$result);
  let assemblyFormat = [{
    $input `positions` $positions `theta` custom<F64>($theta)
    (`rotary_dim` $rotary_dim^)? (`linear_scaling` custom<F64>($linear_scaling)^)?
    (`llama3_scaling` $scaling^)? (`yarn_scaling` $yarn^)?
    (`inverse` $inverse^)?
    attr-dict
    `:` type($input)
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// The rotated features: the attribute, else the whole last dimension.
    int64_t getRotaryDimValue();
  }];
}

def FSDP_AttentionOp : FSDP_Op<"attention", [Pure, FSDP_Differentiable, InferTypeOpAdaptor]> {
  let summary = "Scaled dot-product attention that never holds the score matrix";
  let description = [{
    `softmax(scale * query @ key^T) @ value` per batch and head, with
    `query` `[B, Hq, T, D]` and `key`, `value` `[B, Hkv, S, D]`. Grouped-query
    attention: `Hq` is a multiple of `Hkv`, and query heads `g * Hq / Hkv`
    to `(g + 1) * Hq / Hkv - 1` read key and value head `g` (`Hq = Hkv` is
    multi-head attention). With `causal` (which needs `T = S`), query `t`
    attends to keys `0..t`; with a sliding `window` of `W` positions as well
    (Mistral's, Gemma's local layers), only to the last `W` of them,
    `t - W < s <= t`. `scale` defaults to `1 / sqrt(D)`. With `softcap C`
    (Gemma 2's soft-capped scores), each scaled score `s` becomes
    `C tanh(s / C)` before the mask and the softmax: every score then lies
    in `(-C, C)`.

    The results are the attention output `[B, Hq, T, D]`, of the query's
    type, and the log-sum-exp of each query row's scaled scores `[B, Hq, T]`
    in f32, which is all the gradient needs besides the operands and the
    output (FlashAttention-2): the lowering computes the scores one block of
    keys at a time with an online softmax, and the gradient recomputes them
    block by block from the log-sum-exp, so no `T x S` matrix exists beyond a
    `T x block` tile: `key_block` keys (default 512, fewer in the last
    block). With a window, the queries are taken a block at a time too, and
    each block's scores are computed only for the keys its window can reach,
    so the work is the band's, not the whole square's. Models usually ignore
    the second result.

    ```mlir
    %o, %lse = fsdp.attention %q, %k, %v causal
        : tensor<2x8x16x64xf32>, tensor<2x2x16x64xf32>, tensor<2x2x16x64xf32>
          -> tensor<2x8x16x64xf32>, tensor<2x8x16xf32>
    %wo, %wlse = fsdp.attention %q, %k, %v causal window 4 key_block 8
        : tensor<2x8x16x64xf32>, tensor<2x2x16x64xf32>, tensor<2x2x16x64xf32>
          -> tensor<2x8x16x64xf32>, tensor<2x8x16xf32>
    %co, %clse = fsdp.attention %q, %k, %v causal scale 0.0625 softcap 50.0
        : tensor<2x8x16x64xf32>, tensor<2x2x16x64xf32>, tensor<2x2x16x64xf32>
          -> tensor<2x8x16x64xf32>, tensor<2x8x16xf32>
    ```
  }];
  let arguments = (ins FSDP_Tensor:$query, FSDP_Tensor:$key, FSDP_Tensor:$value,
                       UnitAttr:$causal,
                       OptionalAttr<ConfinedAttr<I64Attr, [IntPositive]>>:$window,
                       OptionalAttr<F64Attr>:$scale,
                       OptionalAttr<F64Attr>:$softcap,
                       OptionalAttr<ConfinedAttr<I64Attr, [IntPositive]>>:$key_block);
  let results = (outs FSDP_Tensor:$result, FSDP_Tensor:$lse);
  let assemblyFormat = [{
    $query `,` $key `,` $value (`causal` $causal^)? (`window` $window^)?
    (`scale` custom<F64>($scale)^)? (`softcap` custom<F64>($softcap)^)?
    (`key_block` $key_block^)? attr-dict
    `:` type($query) `,` type($key) `,` type($value) `->` type($result) `,` type($lse)
  }];
  let extraClassDeclaration = [{
    /// The scale of the scores: the attribute, else 1 / sqrt(D).
    double getScaleValue() { return attentionScale(getScale(), getQuery().getType()); }
    /// Keys per block of the lowering: the attribute, else 512.
    int64_t getKeyBlockValue() { return getKeyBlock().value_or(kDefaultAttentionKeyBlock); }
  }];
}

//===----------------------------------------------------------------------===//
// Lookup and layout
//===----------------------------------------------------------------------===//

def FSDP_EmbeddingOp : FSDP_Op<"embedding", [Pure, FSDP_Differentiable, InferTypeOpAdaptor]> {
  let summary = "Looks up rows of a table";
  let description = [{
    `table` is `[V, D]`; `indices` holds integers in [0, V); the result has
    the shape of `indices` followed by D. An out-of-range index is an error
    reported by the trainer at run time.

    ```mlir
    %e = fsdp.embedding %wte[%tokens] : tensor<256x64xf32>, tensor<8x16xi32> -> tensor<8x16x64xf32>
    ```
  }];
  let arguments = (ins FSDP_Tensor:$table, FSDP_IndexTensor:$indices);
  let results = (outs FSDP_Tensor:$result);
  let assemblyFormat = [{
    $table `[` $indices `]` attr-dict `:` type($table) `,` type($indices) `->` type($result)
  }];
}

def FSDP_ReshapeOp : FSDP_Op<"reshape", [Pure, FSDP_Differentiable, AllElementTypesMatch<["input", "result"]>]> {
  let summary = "Reinterprets the shape, keeping row-major element order";
  let description = [{
    ```mlir
    %h = fsdp.reshape %x : tensor<8x16x64xf32> -> tensor<8x16x4x16xf32>
    ```
  }];
  let arguments = (ins FSDP_Tensor:$input);
  let results = (outs FSDP_Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
}

def FSDP_TransposeOp : FSDP_Op<"transpose", [Pure, FSDP_Differentiable, InferTypeOpAdaptor]> {
  let summary = "Permutes dimensions";
  let description = [{
    Dimension `i` of the result is dimension `permutation[i]` of the input.

    ```mlir
    %t = fsdp.transpose %x [0, 2, 1, 3] : tensor<8x16x4x16xf32> -> tensor<8x4x16x16xf32>
    ```
  }];
  let arguments = (ins FSDP_Tensor:$input, DenseI64ArrayAttr:$permutation);
  let results = (outs FSDP_Tensor:$result);
  let assemblyFormat = "$input $permutation attr-dict `:` type($input) `->` type($result)";
}

def FSDP_SliceOp : FSDP_Op<"slice", [Pure, FSDP_Differentiable, InferTypeOpAdaptor]> {
  let summary = "Takes a contiguous range of one dimension";
  let description = [{
    The `size` entries of dimension `dim` from `offset` on, the other
    dimensions whole: GPT-2's query, key and value from its fused `[C, 3C]`
    projection, or the first `T` rows of a table of learned positions. The
    range must lie within the dimension. Slicing the batch dimension (0) of a
    batched value is refused by `fsdp-partition`, which splits that dimension
    across ranks.

    ```mlir
    %k = fsdp.slice %qkv dim 2 offset 64 size 64 : tensor<8x16x192xf32> -> tensor<8x16x64xf32>
    ```
  }];
  let arguments = (ins FSDP_Tensor:$input, ConfinedAttr<I64Attr, [IntNonNegative]>:$dim,
                       ConfinedAttr<I64Attr, [IntNonNegative]>:$offset,
                       ConfinedAttr<I64Attr, [IntPositive]>:$size);
  let results = (outs FSDP_Tensor:$result);
  let assemblyFormat = [{
    $input `dim` $dim `offset` $offset `size` $size attr-dict `:` type($input) `->` type($result)
  }];
}

//===----------------------------------------------------------------------===//
// Reductions
//===----------------------------------------------------------------------===//

class FSDP_ReduceOp<string mnemonic, string what>
    : FSDP_Op<mnemonic, [Pure, FSDP_Differentiable, InferTypeOpAdaptor]> {
  let summary = what # " over dimensions";
  let description = [{
    Reduces the listed dimensions (increasing, distinct) and drops them from
    the shape; reducing every dimension gives a rank-0 tensor.

    ```mlir
    %s = fsdp.}] # mnemonic # [{ %x dims [1] : tensor<8x16x64xf32> -> tensor<8x64xf32>
    ```
  }];
  let arguments = (ins FSDP_Tensor:$input, DenseI64ArrayAttr:$dims);
  let results = (outs FSDP_Tensor:$result);
  let assemblyFormat = "$input `dims` $dims attr-dict `:` type($input) `->` type($result)";
}

def FSDP_ReduceSumOp : FSDP_ReduceOp<"reduce_sum", "Sum">;
def FSDP_ReduceMeanOp : FSDP_ReduceOp<"reduce_mean", "Mean">;

//===----------------------------------------------------------------------===//
// Losses
//===----------------------------------------------------------------------===//

def FSDP_CrossEntropyOp : FSDP_Op<"cross_entropy", [Pure, FSDP_Differentiable, InferTypeOpAdaptor]> {
  let summary = "Mean softmax cross-entropy against integer targets";
  let description = [{
    `logits` is `[..., C]` and `targets` `[...]` (the same leading shape) with
    class indices in [0, C). The result is the mean over all positions of
    `logsumexp(logits) - logits[target]`. The loss is f32 whatever the
    logits' type: computed in f32, never rounded (docs/MixedPrecision.md).

    ```mlir
    %l = fsdp.cross_entropy %logits, %y : tensor<8x16x256xf32>, tensor<8x16xi32> -> tensor<f32>
    ```
  }];
  let arguments = (ins FSDP_Tensor:$logits, FSDP_IndexTensor:$targets);
  let results = (outs FSDP_Loss:$result);
  let assemblyFormat = [{
    $logits `,` $targets attr-dict `:` type($logits) `,` type($targets) `->` type($result)
  }];
}

def FSDP_MSEOp : FSDP_Op<"mse", [Pure, FSDP_Differentiable, InferTypeOpAdaptor]> {
  let summary = "Mean squared error";
  let description = [{
    The mean over all elements of `(prediction - target)^2`; both operands
    have the same type. The loss is f32 whatever their type: computed in f32,
    never rounded (docs/MixedPrecision.md).

    ```mlir
    %l = fsdp.mse %p, %t : tensor<64x1xf32>, tensor<64x1xf32> -> tensor<f32>
    ```
  }];
  let arguments = (ins FSDP_Tensor:$prediction, FSDP_Tensor:$target);
  let results = (outs FSDP_Loss:$result);
  let assemblyFormat = [{
    $prediction `,` $target attr-dict `:` type($prediction) `,` type($target) `->` type($result)
  }];
}

def FSDP_BroadcastOp : FSDP_Op<"broadcast",
    [Pure, FSDP_Differentiable, AllElementTypesMatch<["input", "result"]>]> {
  let summary = "Broadcasts to a larger shape, as NumPy does";
  let description = [{
    Repeats the input along new leading dimensions and along dimensions of
    size 1, as NumPy's `broadcast_to`.

    ```mlir
    %b = fsdp.broadcast %x : tensor<8x1x64xf32> -> tensor<4x8x16x64xf32>
    ```
  }];
  let arguments = (ins FSDP_Tensor:$input);
  let results = (outs FSDP_Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
}

def FSDP_ConvertOp : FSDP_Op<"convert",
    [Pure, FSDP_Differentiable, AllShapesMatch<["input", "result"]>]> {
  let summary = "Converts elements to another float type";
  let description = [{
    Each element of `input` as the element type of the result: f32 to bf16
    rounds to nearest even (docs/MixedPrecision.md), bf16 to f32 is exact.
    `fsdp-lower-precision` inserts these where a bf16 step reads f32 values
    (inputs, parameters of unsharded units) and where its gradients return to
    the f32 master state; its gradient converts back.

    ```mlir
    %h = fsdp.convert %x : tensor<8x16xf32> -> tensor<8x16xbf16>
    ```
  }];
  let arguments = (ins FSDP_Tensor:$input);
  let results = (outs FSDP_Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasFolder = 1;
}

include "fsdp/IR/FSDPShardingOps.td"
include "fsdp/IR/FSDPTensorParallelOps.td"
include "fsdp/IR/FSDPGradientOps.td"
include "fsdp/IR/FSDPOptimizerOps.td"

#endif // FSDP_OPS_TD
