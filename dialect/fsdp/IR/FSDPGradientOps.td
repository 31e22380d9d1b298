//===- FSDPGradientOps.td - backward-pass ops --------------*- tablegen -*-===//
//
// Ops that `fsdp-autodiff` emits for gradient rules that are not short
// compositions of model ops. Included from FSDPOps.td.
//
//===----------------------------------------------------------------------===//

class FSDP_ActivationGradOp<string mnemonic, string forward>
    : FSDP_Op<mnemonic, [Pure, SameOperandsAndResultType]> {
  let summary = "Gradient of fsdp." # forward;
  let description = [{
    `dx = dy * f'(x)` for the forward input `x` and the incoming gradient `dy`.

    ```mlir
    %dx = fsdp.}] # mnemonic # [{ %x, %dy : tensor<8x16xf32>
    ```
  }];
  let arguments = (ins FSDP_Tensor:$input, FSDP_Tensor:$grad);
  let results = (outs FSDP_Tensor:$result);
  let assemblyFormat = "$input `,` $grad attr-dict `:` type($input)";
}

def FSDP_ReluGradOp : FSDP_ActivationGradOp<"relu_grad", "relu">;
def FSDP_GeluGradOp : FSDP_ActivationGradOp<"gelu_grad", "gelu">;
def FSDP_SiluGradOp : FSDP_ActivationGradOp<"silu_grad", "silu">;

def FSDP_SoftmaxGradOp : FSDP_Op<"softmax_grad", [Pure, SameOperandsAndResultType]> {
  let summary = "Gradient of fsdp.softmax";
  let description = [{
    `dx = y * (dy - sum(dy * y, dim))` from the forward output `y`.

    ```mlir
    %dx = fsdp.softmax_grad %y, %dy dim 3 : tensor<2x4x16x16xf32>
    ```
  }];
  let arguments = (ins FSDP_Tensor:$output, FSDP_Tensor:$grad,
                       ConfinedAttr<I64Attr, [IntNonNegative]>:$dim);
  let results = (outs FSDP_Tensor:$result);
  let assemblyFormat = "$output `,` $grad `dim` $dim attr-dict `:` type($output)";
  let hasVerifier = 1;
}

def FSDP_CausalMaskGradOp : FSDP_Op<"causal_mask_grad", [Pure, SameOperandsAndResultType]> {
  let summary = "Gradient of fsdp.causal_mask";
  let description = [{
    The incoming gradient with every masked (future) position set to zero:
    masked scores are constants.

    ```mlir
    %ds = fsdp.causal_mask_grad %dm : tensor<2x4x16x16xf32>
    ```
  }];
  let arguments = (ins FSDP_Tensor:$grad);
  let results = (outs FSDP_Tensor:$result);
  let assemblyFormat = "$grad attr-dict `:` type($grad)";
  let hasVerifier = 1;
}

def FSDP_LayerNormGradOp : FSDP_Op<"layer_norm_grad",
    [Pure, AllTypesMatch<["input", "grad", "input_grad"]>,
     AllTypesMatch<["gamma", "gamma_grad", "beta_grad"]>]> {
  let summary = "Gradient of fsdp.layer_norm";
  let description = [{
    From the forward input `x`, the scale `gamma` and the incoming gradient
    `dy`, the gradients of `x`, `gamma` and `beta` (the statistics are
    recomputed, not stored).

    ```mlir
    %dx, %dg, %db = fsdp.layer_norm_grad %x, %g, %dy : tensor<8x16x64xf32>, tensor<64xf32>
    ```
  }];
  let arguments = (ins FSDP_Tensor:$input, FSDP_Tensor:$gamma, FSDP_Tensor:$grad,
                       DefaultValuedAttr<F64Attr, "1.0e-5">:$eps);
  let results = (outs FSDP_Tensor:$input_grad, FSDP_Tensor:$gamma_grad,
                      FSDP_Tensor:$beta_grad);
  let assemblyFormat = [{
    $input `,` $gamma `,` $grad (`eps` custom<F64>($eps)^)? attr-dict `:` type($input) `,` type($gamma)
  }];
  let hasVerifier = 1;
}

def FSDP_RMSNormGradOp : FSDP_Op<"rms_norm_grad",
    [Pure, AllTypesMatch<["input", "grad", "input_grad"]>,
     AllTypesMatch<["gamma", "gamma_grad"]>]> {
  let summary = "Gradient of fsdp.rms_norm";
  let description = [{
    ```mlir
    %dx, %dg = fsdp.rms_norm_grad %x, %g, %dy : tensor<8x16x64xf32>, tensor<64xf32>
    ```
  }];
  let arguments = (ins FSDP_Tensor:$input, FSDP_Tensor:$gamma, FSDP_Tensor:$grad,
                       DefaultValuedAttr<F64Attr, "1.0e-5">:$eps);
  let results = (outs FSDP_Tensor:$input_grad, FSDP_Tensor:$gamma_grad);
  let assemblyFormat = [{
    $input `,` $gamma `,` $grad (`eps` custom<F64>($eps)^)? attr-dict `:` type($input) `,` type($gamma)
  }];
  let hasVerifier = 1;
}

def FSDP_AttentionGradOp : FSDP_Op<"attention_grad",
    [Pure, AllTypesMatch<["query", "output", "grad", "query_grad"]>,
     AllTypesMatch<["key", "key_grad"]>, AllTypesMatch<["value", "value_grad"]>,
     AllTypesMatch<["lse", "lse_grad"]>]> {
  let summary = "Gradient of fsdp.attention";
  let description = [{
    From the forward operands, its output `o`, its log-sum-exp `lse` and the
    incoming gradients of the output (`do`) and of the log-sum-exp (`dlse`,
    zeros when it is not used), the gradients of the query, key and value. The scores are
    recomputed one block of keys at a time from `lse` (FlashAttention-2's
    backward): `P = exp(scale * Q K^T - lse)`, `dV = P^T dO`,
    `dS = P * (dO V^T - rowsum(dO * O) + dlse)`, `dQ = scale * dS K`,
    `dK = scale * dS^T Q`, summed over the query heads of a group. `causal`
    and `window` mask the scores as the forward's did; with `softcap C`, `P` is
    recomputed from the capped scores `c = C tanh(s / C)` and `dS` is
    multiplied by the cap's derivative `1 - (c / C)^2`.

    ```mlir
    %dq, %dk, %dv = fsdp.attention_grad %q, %k, %v, %o, %lse, %do, %dlse causal
        : tensor<2x8x16x64xf32>, tensor<2x2x16x64xf32>, tensor<2x2x16x64xf32>, tensor<2x8x16xf32>
    ```
  }];
  let arguments = (ins FSDP_Tensor:$query, FSDP_Tensor:$key, FSDP_Tensor:$value,
                       FSDP_Tensor:$output, FSDP_Tensor:$lse, FSDP_Tensor:$grad,
                       FSDP_Tensor:$lse_grad,
                       UnitAttr:$causal,
                       OptionalAttr<ConfinedAttr<I64Attr, [IntPositive]>>:$window,
                       OptionalAttr<F64Attr>:$scale,
                       OptionalAttr<F64Attr>:$softcap,
                       OptionalAttr<ConfinedAttr<I64Attr, [IntPositive]>>:$key_block);
  let results = (outs FSDP_Tensor:$query_grad, FSDP_Tensor:$key_grad,
                      FSDP_Tensor:$value_grad);
  let assemblyFormat = [{
    $query `,` $key `,` $value `,` $output `,` $lse `,` $grad `,` $lse_grad
    (`causal` $causal^)? (`window` $window^)? (`scale` custom<F64>($scale)^)?
    (`softcap` custom<F64>($softcap)^)? (`key_block` $key_block^)? attr-dict
    `:` type($query) `,` type($key) `,` type($value) `,` type($lse)
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// As fsdp.attention's.
    double getScaleValue() { return attentionScale(getScale(), getQuery().getType()); }
    int64_t getKeyBlockValue() { return getKeyBlock().value_or(kDefaultAttentionKeyBlock); }
  }];
}

def FSDP_EmbeddingGradOp : FSDP_Op<"embedding_grad", [Pure]> {
  let summary = "Gradient of fsdp.embedding with respect to the table";
  let description = [{
    Scatter-adds each row of the incoming gradient into the table row its
    index selects.

    ```mlir
    %dt = fsdp.embedding_grad %ids, %de : tensor<8x16xi32>, tensor<8x16x64xf32> -> tensor<256x64xf32>
    ```
  }];
  let arguments = (ins FSDP_IndexTensor:$indices, FSDP_Tensor:$grad);
  let results = (outs FSDP_Tensor:$result);
  let assemblyFormat = [{
    $indices `,` $grad attr-dict `:` type($indices) `,` type($grad) `->` type($result)
  }];
  let hasVerifier = 1;
}

def FSDP_SliceGradOp : FSDP_Op<"slice_grad", [Pure, AllElementTypesMatch<["grad", "result"]>]> {
  let summary = "Gradient of fsdp.slice";
  let description = [{
    The incoming gradient placed at `offset` along dimension `dim` of the
    forward input's shape (the result type), zeros elsewhere.

    ```mlir
    %dqkv = fsdp.slice_grad %dk dim 2 offset 64 : tensor<8x16x64xf32> -> tensor<8x16x192xf32>
    ```
  }];
  let arguments = (ins FSDP_Tensor:$grad, ConfinedAttr<I64Attr, [IntNonNegative]>:$dim,
                       ConfinedAttr<I64Attr, [IntNonNegative]>:$offset);
  let results = (outs FSDP_Tensor:$result);
  let assemblyFormat = [{
    $grad `dim` $dim `offset` $offset attr-dict `:` type($grad) `->` type($result)
  }];
  let hasVerifier = 1;
}

def FSDP_CrossEntropyGradOp : FSDP_Op<"cross_entropy_grad",
    [Pure, AllTypesMatch<["logits", "result"]>]> {
  let summary = "Gradient of fsdp.cross_entropy with respect to the logits";
  let description = [{
    `(softmax(logits) - onehot(targets)) * dl / positions`, computed in f32
    from the f32 loss gradient `dl`; the result has the logits' type.

    ```mlir
    %dz = fsdp.cross_entropy_grad %z, %y, %dl : tensor<64x10xf32>, tensor<64xi32>, tensor<f32>
    ```
  }];
  let arguments = (ins FSDP_Tensor:$logits, FSDP_IndexTensor:$targets, FSDP_Loss:$grad);
  let results = (outs FSDP_Tensor:$result);
  let assemblyFormat = [{
    $logits `,` $targets `,` $grad attr-dict `:` type($logits) `,` type($targets) `,` type($grad)
  }];
  let hasVerifier = 1;
}
