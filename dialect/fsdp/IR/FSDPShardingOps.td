//===- FSDPShardingOps.td - sharded parameters and collectives -*- tablegen -*-===//
//
// What `fsdp-partition` and `fsdp-insert-collectives` add to a training step:
// units as flat sharded buffers, the gathers that rebuild them just in time,
// and the reductions of their gradients. Included from FSDPOps.td.
//
//===----------------------------------------------------------------------===//

def FSDP_UnitOp : FSDP_Op<"unit", [Symbol, HasParent<"::mlir::ModuleOp">]> {
  let summary = "An FSDP unit: its parameters as one flat sharded buffer";
  let description = [{
    The parameters whose `unit` is this op's name, back to back at their
    `at` offsets (in elements) in one flat buffer of `numel` elements, padded
    to `shard * ranks` elements and split into `ranks` shards of `shard`
    elements: rank `r` of the shard group owns elements
    `[r * shard, (r + 1) * shard)`. `fsdp-partition` creates it.

    ```mlir
    fsdp.param @fc1.w unit "fc1" at 0 : tensor<784x256xf32> = #fsdp.fan_in_uniform
    fsdp.param @fc1.b unit "fc1" at 200704 : tensor<256xf32> = #fsdp.zeros
    fsdp.unit @fc1 numel 200960 shard 100480 ranks 2 : f32
    ```
  }];
  let arguments = (ins SymbolNameAttr:$sym_name, I64Attr:$numel, I64Attr:$shard,
                       I64Attr:$ranks, TypeAttrOf<AnyFloat>:$element_type);
  let assemblyFormat = [{
    $sym_name `numel` $numel `shard` $shard `ranks` $ranks `:` $element_type attr-dict
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// The whole flat buffer, padding included: what an all-gather rebuilds.
    ::mlir::RankedTensorType getFlatType();
    /// One rank's part of it.
    ::mlir::RankedTensorType getShardType();
    /// The parameters of the unit, in declaration order.
    ::llvm::SmallVector<ParamOp> getMembers();
  }];
}

def FSDP_AllGatherOp : FSDP_Op<"all_gather",
    [DeclareOpInterfaceMethods<SymbolUserOpInterface>]> {
  let summary = "Rebuilds a unit's flat buffer from the shards of every rank";
  let description = [{
    The whole flat buffer of unit `@name`, gathered from the parameter shards
    of the shard group. Each gather is a collective every rank of the group
    runs at the same point; two gathers of one unit are two transfers. A
    result in a narrower float type than the unit's (bf16 for f32: mixed
    precision) means each shard is rounded to it before it travels.

    ```mlir
    %fc1 = fsdp.all_gather @fc1 : tensor<200960xf32>
    %fc2 = fsdp.all_gather @fc2 : tensor<65792xbf16>
    ```
  }];
  let arguments = (ins FlatSymbolRefAttr:$unit);
  let results = (outs FSDP_Tensor:$result);
  let assemblyFormat = "$unit attr-dict `:` type($result)";
}

def FSDP_ParamViewOp : FSDP_Op<"view",
    [Pure, DeclareOpInterfaceMethods<SymbolUserOpInterface>]> {
  let summary = "A parameter inside its unit's gathered flat buffer";
  let description = [{
    The parameter `@name`, read from its offset in the flat buffer `gathered`
    of its unit, in the gathered buffer's element type. It replaces
    `fsdp.use` once the unit is sharded.

    ```mlir
    %w = fsdp.view @fc1.w in %fc1 : tensor<200960xf32> -> tensor<784x256xf32>
    ```
  }];
  let arguments = (ins FlatSymbolRefAttr:$param, FSDP_Tensor:$gathered);
  let results = (outs FSDP_Tensor:$result);
  let assemblyFormat = "$param `in` $gathered attr-dict `:` type($gathered) `->` type($result)";
}

def FSDP_FreeOp : FSDP_Op<"free"> {
  let summary = "Ends the life of a gathered flat buffer";
  let description = [{
    Marks the point after which the gathered buffer is no longer needed: its
    memory returns to the plan. It comes after every other use.

    ```mlir
    fsdp.free %fc1 : tensor<200960xf32>
    ```
  }];
  let arguments = (ins FSDP_Tensor:$gathered);
  let assemblyFormat = "$gathered attr-dict `:` type($gathered)";
  let hasVerifier = 1;
}

def FSDP_FlattenOp : FSDP_Op<"flatten",
    [Pure, DeclareOpInterfaceMethods<SymbolUserOpInterface>]> {
  let summary = "Packs the gradients of a unit's parameters into its flat layout";
  let description = [{
    One gradient per parameter of unit `@name`, in declaration order, placed
    at the parameters' offsets; the padding is zero. The flat gradient's
    element type is the one it is reduced in; bf16 gradients are widened
    into an f32 one exactly.

    ```mlir
    %g = fsdp.flatten @fc1 (%dw, %db) : tensor<784x256xf32>, tensor<256xf32> -> tensor<200960xf32>
    ```
  }];
  let arguments = (ins FlatSymbolRefAttr:$unit, Variadic<FSDP_Tensor>:$grads);
  let results = (outs FSDP_Tensor:$result);
  let assemblyFormat = [{
    $unit `(` $grads `)` attr-dict `:` type($grads) `->` type($result)
  }];
}

def FSDP_ReduceScatterOp : FSDP_Op<"reduce_scatter"> {
  let summary = "Reduces a flat gradient over the shard group, keeping this rank's shard";
  let description = [{
    The elementwise `sum` (or `avg`: the sum divided by the group size) of
    `input` over the ranks of the shard group, of which this rank keeps block
    `r` (its rank in the group) of `result`'s size.

    ```mlir
    %s = fsdp.reduce_scatter %g avg : tensor<200960xf32> -> tensor<100480xf32>
    ```
  }];
  let arguments = (ins FSDP_Tensor:$input, FSDP_Reduction:$reduction);
  let results = (outs FSDP_Tensor:$result);
  let assemblyFormat = "$input $reduction attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
}

def FSDP_AllReduceOp : FSDP_Op<"all_reduce", [SameOperandsAndResultType]> {
  let summary = "Reduces a tensor over a group of ranks";
  let description = [{
    The elementwise `sum` or `avg` of `input` over the ranks of `group`:
    `shard` (the ranks sharing one copy of the model), `replica` (the ranks
    holding the same shard) or `world`. Every rank of the group gets it.

    ```mlir
    %s = fsdp.all_reduce %partial sum over shard : tensor<f32>
    %g = fsdp.all_reduce %grads avg over replica : tensor<100480xf32>
    ```
  }];
  let arguments = (ins FSDP_Tensor:$input, FSDP_Reduction:$reduction,
                       FSDP_Group:$group);
  let results = (outs FSDP_Tensor:$result);
  let assemblyFormat = "$input $reduction `over` $group attr-dict `:` type($input)";
}
