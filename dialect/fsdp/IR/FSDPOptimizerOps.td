//===- FSDPOptimizerOps.td - optimizer ops of the step -----*- tablegen -*-===//
//
// The update half of a training step, emitted by `fsdp-autodiff` from the
// plan. Included from FSDPOps.td.
//
//===----------------------------------------------------------------------===//

def FSDP_ClipCoefficientOp : FSDP_Op<"clip_coefficient", [Pure, SameOperandsAndResultType]> {
  let summary = "Scale that clips gradients to a global norm";
  let description = [{
    From the sum of squares of every gradient, `min(1, max_norm / (sqrt(sum) + 1e-6))`,
    as PyTorch's `clip_grad_norm_`.

    ```mlir
    %c = fsdp.clip_coefficient %sumsq max_norm 1.0 : tensor<f32>
    ```
  }];
  let arguments = (ins FSDP_Scalar:$sum_of_squares, F64Attr:$max_norm);
  let results = (outs FSDP_Scalar:$result);
  let assemblyFormat = [{
    $sum_of_squares `max_norm` custom<F64>($max_norm) attr-dict `:` type($sum_of_squares)
  }];
  let hasVerifier = 1;
}

def FSDP_UpdateOp : FSDP_Op<"update",
    [DeclareOpInterfaceMethods<SymbolUserOpInterface>]> {
  let summary = "Applies the optimizer to one parameter";
  let description = [{
    Updates the parameter `@name` in place with its gradient (or, when `@name`
    is an `fsdp.unit`, this rank's shard of the unit with its gradient shard), scaled by the
    optional clipping coefficient, at step `step` (counted from 1) with
    learning rate `lr`, using `optimizer` and the optimizer's state of this
    parameter (momentum, or AdamW's moments), which it updates too.

    ```mlir
    fsdp.update @fc1.w, %g step %t lr %lr scaled %c {optimizer = #fsdp.adamw<lr = 0.001>}
        : tensor<784x256xf32>, tensor<f32>
    fsdp.update @fc1, %shard step %t lr %lr {optimizer = #fsdp.adamw<lr = 0.001>}
        : tensor<100480xf32>
    ```
  }];
  let arguments = (ins FlatSymbolRefAttr:$param, FSDP_Tensor:$grad, I64:$step, F32:$lr,
                       Optional<FSDP_Scalar>:$coefficient,
                       FSDP_OptimizerAttr:$optimizer);
  let assemblyFormat = [{
    $param `,` $grad `step` $step `lr` $lr (`scaled` $coefficient^)? attr-dict `:` type($grad)
    (`,` type($coefficient)^)?
  }];
}
