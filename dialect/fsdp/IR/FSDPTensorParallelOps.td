//===- FSDPTensorParallelOps.td - tensor-parallel regions --*- tablegen -*-===//
//
// What `fsdp-split-tensors` puts around the parts of a model that the tensor
// ranks compute in blocks (Megatron-LM's f and g): a region is entered by
// `fsdp.tensor_copy` and left by `fsdp.tensor_sum`, each the other's
// gradient. Included from FSDPOps.td.
//
//===----------------------------------------------------------------------===//

def FSDP_TensorCopyOp : FSDP_Op<"tensor_copy",
    [Pure, FSDP_Differentiable, SameOperandsAndResultType]> {
  let summary = "Enters a tensor-parallel region: its value on every tensor rank";
  let description = [{
    The input itself: every tensor rank holds the same value and computes its
    block of what follows from it (a column-parallel product, say). Its
    gradient is the sum over the tensor ranks of their blocks' gradients
    (`fsdp.tensor_sum`), which is what makes the input's gradient whole:
    Megatron-LM's `f`.

    ```mlir
    %x = fsdp.tensor_copy %h : tensor<4x32x64xf32>
    ```
  }];
  let arguments = (ins FSDP_Tensor:$input);
  let results = (outs FSDP_Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input)";
}

// Pure although it communicates: every rank runs the same step, so removing or
// merging one removes or merges it on every rank of the group.
def FSDP_TensorSumOp : FSDP_Op<"tensor_sum",
    [Pure, FSDP_Differentiable, SameOperandsAndResultType]> {
  let summary = "Leaves a tensor-parallel region: the sum of the tensor ranks' parts";
  let description = [{
    The elementwise sum of `input` over the ranks of the tensor group (an
    all-reduce), each of which computed a partial sum (a row-parallel
    product, say); every rank gets the whole. Its gradient is the result's
    gradient itself, which every rank holds whole: Megatron-LM's `g`.

    ```mlir
    %y = fsdp.tensor_sum %partial : tensor<4x32x64xf32>
    ```
  }];
  let arguments = (ins FSDP_Tensor:$input);
  let results = (outs FSDP_Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input)";
}
