//===- FSDPManifestAttrs.td - the step's facts, typed ------*- tablegen -*-===//
//
// What the lowered step tells the runtime (docs/Runtime.md, section 2), kept
// as typed attributes from convert-fsdp-to-runtime to the pipeline's last
// pass: passes read and change fields through their accessors, and
// fsdp-serialize-manifest writes the JSON the trainer reads, its keys from
// runtime/include/fsdprt/ManifestSchema.def.
//
//===----------------------------------------------------------------------===//

#ifndef FSDP_MANIFEST_ATTRS_TD
#define FSDP_MANIFEST_ATTRS_TD

// `[#fsdp.x<...>, ...]`: a list of one kind of attribute, empty when absent.
class FSDP_AttrListParameter<string attr, string desc>
    : OptionalArrayRefParameter<"::mlir::fsdp::" # attr, desc> {
  let parser = "::mlir::fsdp::parseAttrListParameter<::mlir::fsdp::" # attr # ">($_parser)";
  let printer = "::mlir::fsdp::printAttrListParameter($_printer, $_self)";
}
// `[2, 3]`: a tensor's dimensions.
def FSDP_ShapeParameter : ArrayRefParameter<"int64_t", "dimensions"> {
  let parser = [{ ::mlir::fsdp::parseIntegerListParameter($_parser) }];
  let printer = [{ ::mlir::fsdp::printIntegerListParameter($_printer, $_self) }];
}
def FSDP_SplitPartsParameter
    : OptionalArrayRefParameter<"int64_t", "the whole sizes of the split dimension's parts"> {
  let parser = [{ ::mlir::fsdp::parseIntegerListParameter($_parser) }];
  let printer = [{ ::mlir::fsdp::printIntegerListParameter($_printer, $_self) }];
}
def FSDP_PlanParameter : AttrParameter<"::mlir::fsdp::PlanAttr", "the plan"> {
  let printer = "$_printer.printAttribute($_self)";
}
class FSDP_BoolParameter<string desc> : AttrOrTypeParameter<"bool", desc> {
  let parser = [{ ::mlir::fsdp::parseBoolParameter($_parser) }];
  let printer = [{ $_printer << ($_self ? "true" : "false") }];
}
// `#fsdp.x<...>`, printed whole (as a reader finds it in the dialect's
// reference), or absent.
class FSDP_OptionalAttrParameter<string attr, string desc>
    : OptionalParameter<"::mlir::fsdp::" # attr, desc> {
  let printer = "$_printer.printAttribute($_self)";
}
// An integer or absent. Absent is std::nullopt, to which the printer compares
// without reading an empty optional's storage (GCC warns it may be
// uninitialised at -O1).
class FSDP_OptionalI64Parameter<string desc>
    : OptionalParameter<"::std::optional<int64_t>", desc> {
  let defaultValue = "::std::nullopt";
}

def FSDP_StateSlotAttr : FSDP_Attr<"StateSlot", "state_slot"> {
  let summary = "One optimizer slot of a unit in the step's manifest";
  let description = [{
    Where the slot's shard lies: in the arena's persistent part, or in the
    host arena for an offloaded unit (bytes).

    ```mlir
    #fsdp.state_slot<name = "exp_avg", offset = 2048>
    ```
  }];
  let parameters = (ins StringRefParameter<"momentum, exp_avg or exp_avg_sq">:$name,
                        "int64_t":$offset);
  let assemblyFormat = "`<` struct(params) `>`";
}

def FSDP_UnitHostAttr : FSDP_Attr<"UnitHost", "unit_host"> {
  let summary = "An offloaded unit's regions of the host arena";
  let description = [{
    With `offload = optimizer`: the f32 master shard, and the gradient shard,
    which arrives in `grad_dtype` (bytes from the host arena's start).

    ```mlir
    #fsdp.unit_host<master_offset = 0, grad_offset = 4096, grad_dtype = bf16>
    ```
  }];
  let parameters = (ins "int64_t":$master_offset, "int64_t":$grad_offset,
                        "::mlir::Type":$grad_dtype);
  let assemblyFormat = "`<` struct(params) `>`";
}

def FSDP_ManifestUnitAttr : FSDP_Attr<"ManifestUnit", "manifest_unit"> {
  let summary = "A unit in the step's manifest: where its shards lie";
  let description = [{
    A unit's flat buffer of `numel` elements, `shard_numel` on each rank:
    this rank's parameter shard at `param_offset`, its gradient shard at
    `grad_offset` (a trainable unit that is not offloaded; set by
    `fsdp-assign-buffers`), its optimizer `state`; offloaded, the device's
    copy of the shard in `param_dtype` at `param_offset` and the rest in the
    host arena (`host`).

    ```mlir
    #fsdp.manifest_unit<name = "fc", dtype = f32, trainable = true, numel = 100,
                        shard_numel = 50, param_offset = 0, grad_offset = 448,
                        state = [#fsdp.state_slot<name = "momentum", offset = 256>]>
    ```
  }];
  let parameters = (ins StringRefParameter<"the unit's name">:$name,
                        "::mlir::Type":$dtype,
                        FSDP_BoolParameter<"false for a frozen unit">:$trainable,
                        "int64_t":$numel,
                        "int64_t":$shard_numel,
                        "int64_t":$param_offset,
                        FSDP_OptionalI64Parameter<"the gradient shard">:$grad_offset,
                        FSDP_AttrListParameter<"StateSlotAttr", "optimizer slots">:$state,
                        OptionalParameter<"::mlir::Type", "the device copy's dtype">:$param_dtype,
                        FSDP_OptionalAttrParameter<"UnitHostAttr", "host regions">:$host);
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    /// The same unit with its gradient shard at `offset`.
    ManifestUnitAttr withGradOffset(int64_t offset) const;
  }];
}

def FSDP_ManifestParamAttr : FSDP_Attr<"ManifestParam", "manifest_param"> {
  let summary = "A parameter in the step's manifest: its unit and initial values";
  let description = [{
    ```mlir
    #fsdp.manifest_param<name = "fc.w", shape = [4, 8], dtype = f32, unit = "fc",
                         trainable = true, init = #fsdp.zeros, unit_offset = 8>
    #fsdp.manifest_param<name = "h0.w1", shape = [64, 128], split_dim = 1, dtype = f32,
                         unit = "block0", trainable = true, init = #fsdp.zeros,
                         unit_offset = 0>
    #fsdp.manifest_param<name = "h0.c_attn", shape = [64, 96], split_dim = 1,
                         split_parts = [64, 64, 64], dtype = f32, unit = "block0",
                         trainable = true, init = #fsdp.zeros, unit_offset = 8192>
    ```
  }];
  let parameters = (ins StringRefParameter<"the parameter's name">:$name,
                        FSDP_ShapeParameter:$shape,
                        FSDP_OptionalI64Parameter<"the dimension split over tensor ranks">:$split_dim,
                        FSDP_SplitPartsParameter:$split_parts,
                        "::mlir::Type":$dtype,
                        StringRefParameter<"its unit's name">:$unit,
                        FSDP_BoolParameter<"its unit's trainable">:$trainable,
                        AttrParameter<"::mlir::fsdp::InitializerAttrInterface", "init">:$init,
                        "int64_t":$unit_offset);
  let assemblyFormat = "`<` struct(params) `>`";
}

def FSDP_ManifestInputAttr : FSDP_Attr<"ManifestInput", "manifest_input"> {
  let summary = "An input of the step in the manifest: its role and its slot";
  let description = [{
    An argument of the loss function with this rank's shape, its role
    (`features`, `regression_target`, `tokens` or `classes`), the bound of
    an integer input's values (0: none), and its slot of the arena (bytes).

    ```mlir
    #fsdp.manifest_input<shape = [4, 16], dtype = i32, role = "tokens", bound = 512,
                         offset = 1024, bytes = 256>
    ```
  }];
  let parameters = (ins FSDP_ShapeParameter:$shape,
                        "::mlir::Type":$dtype,
                        StringRefParameter<"how the model uses it">:$role,
                        DefaultI64Parameter<"0", "values lie in [0, bound)">:$bound,
                        "int64_t":$offset,
                        "int64_t":$bytes);
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
}

def FSDP_ManifestCollectiveAttr : FSDP_Attr<"ManifestCollective", "manifest_collective"> {
  let summary = "A collective the step starts, and the unit it moves";
  let description = [{
    ```mlir
    #fsdp.manifest_collective<kind = "all_gather", unit = "block0">
    ```
  }];
  let parameters = (ins StringRefParameter<"all_gather, reduce_scatter or all_reduce">:$kind,
                        StringRefParameter<"the unit; empty for none", "\"\"">:$unit);
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
}

def FSDP_RecomputeAttr : FSDP_Attr<"Recompute", "recompute"> {
  let summary = "What rematerialisation adds to a step";
  let description = [{
    Recorded by `fsdp-remat` on the module (`fsdp.recompute`), scaled by
    `fsdp-accumulate-micro-batches`, then carried in the manifest: the ops
    computed again, the matrix products among them and their FLOPs, the
    elements the other ops compute, the FLOPs of all the step's products, and
    the forward products of the recomputed attentions, as key-block loops
    compute them and as fused calls would (the causal half of the square, a
    window's band; a soft-capped one's loops, which are never fused).

    ```mlir
    #fsdp.recompute<ops = 4, products = 2, product_flops = 1024, other_elements = 64,
                    step_product_flops = 4352, attention_flops = 0,
                    fused_attention_flops = 0>
    ```
  }];
  let parameters = (ins "int64_t":$ops, "int64_t":$products, "int64_t":$product_flops,
                        "int64_t":$other_elements, "int64_t":$step_product_flops,
                        "int64_t":$attention_flops, "int64_t":$fused_attention_flops);
  let assemblyFormat = "`<` struct(params) `>`";
  let extraClassDeclaration = [{
    /// Every count times `factor` (the micro-batches of a step).
    RecomputeAttr scaled(int64_t factor) const;
  }];
}

def FSDP_TransientPlanAttr : FSDP_Attr<"TransientPlan", "transient_plan"> {
  let summary = "The plan of the step's transient buffers";
  let description = [{
    Set by `fsdp-assign-buffers`: the transient part's peak, its buffers, and
    at the busiest instant the bytes live by kind and by element type (a
    dictionary from the element type's name to bytes).

    ```mlir
    #fsdp.transient_plan<peak_bytes = 640, live_bytes = 576, buffers = 9,
                         live_buffers = 4, gathered_bytes = 256, gradient_bytes = 0,
                         collective_bytes = 0, gradient_shard_bytes = 64,
                         activation_bytes = 256, dtype_bytes = {f32 = 576 : i64}>
    ```
  }];
  let parameters = (ins "int64_t":$peak_bytes, "int64_t":$live_bytes, "int64_t":$buffers,
                        "int64_t":$live_buffers, "int64_t":$gathered_bytes,
                        "int64_t":$gradient_bytes, "int64_t":$collective_bytes,
                        "int64_t":$gradient_shard_bytes, "int64_t":$activation_bytes,
                        "::mlir::DictionaryAttr":$dtype_bytes);
  let assemblyFormat = "`<` struct(params) `>`";
}

def FSDP_StepFlopsAttr : FSDP_Attr<"StepFlops", "step_flops"> {
  let summary = "The floating-point work of one step of one rank";
  let description = [{
    Set by `fsdp-record-step-flops` (docs/Runtime.md, section 2): products,
    the part of them in bf16, fused attention's products, the part of both
    computed again, and every other float op of the step's loops, each
    rounded to a whole count.

    ```mlir
    #fsdp.step_flops<products = 1204224, bf16_products = 0, attention = 0,
                     recomputed = 0, other = 35280>
    ```
  }];
  let parameters = (ins "int64_t":$products, "int64_t":$bf16_products, "int64_t":$attention,
                        "int64_t":$recomputed, "int64_t":$other);
  let assemblyFormat = "`<` struct(params) `>`";
}

def FSDP_DeviceProfileAttr : FSDP_Attr<"DeviceProfile", "device_profile"> {
  let summary = "The device profile a step was planned on";
  let description = [{
    Set by fsdpc: the profile's name and product rates, FLOP/s of one rank
    (the peak a CPU trainer's MFU divides by).

    ```mlir
    #fsdp.device_profile<name = "h100-sxm", matmul_f32 = 5.1e13, matmul_bf16 = 7.5e14>
    ```
  }];
  let parameters = (ins StringRefParameter<"the profile's name">:$name,
                        F64Parameter<"f32 products">:$matmul_f32,
                        F64Parameter<"bf16 products">:$matmul_bf16);
  let assemblyFormat = "`<` struct(params) `>`";
}

def FSDP_ManifestAttr : FSDP_Attr<"Manifest", "manifest"> {
  let summary = "What the lowered step tells the runtime, typed";
  let description = [{
    The module's `fsdp.manifest`, from `convert-fsdp-to-runtime` to
    `fsdp-serialize-manifest`, which writes it as the JSON the trainer reads
    (docs/Runtime.md, section 2; every field in docs/Reference/Manifest.md).
    It holds the plan, one rank's arena (`arena_bytes`, of which
    `persistent_bytes` live across steps; `host_arena_bytes` with offload),
    the rows of each rank, the ranks sharing one copy of the model, the
    units, parameters, inputs and collectives of the step, the tokens of a
    step and where the device scalars lie (when they apply), and what later
    passes add: `recompute` (fsdp-remat), `transient` (fsdp-assign-buffers),
    `step_flops` (fsdp-record-step-flops) and `device_profile` (fsdpc).

    ```mlir
    module attributes {fsdp.manifest = #fsdp.manifest<
        plan = #fsdp.plan<grid = [2], optimizer = #fsdp.sgd<lr = 0.1>>,
        arena_bytes = 1024, persistent_bytes = 512, local_batch = 4, shard_ranks = 2,
        units = [#fsdp.manifest_unit<name = "fc", dtype = f32, trainable = true,
                 numel = 100, shard_numel = 50, param_offset = 0, grad_offset = 640>],
        params = [#fsdp.manifest_param<name = "fc.w", shape = [10, 10], dtype = f32,
                  unit = "fc", trainable = true, init = #fsdp.zeros, unit_offset = 0>],
        inputs = [#fsdp.manifest_input<shape = [4, 10], dtype = f32, role = "features",
                  offset = 256, bytes = 160>]>} {
    }
    ```
  }];
  let parameters = (ins
    FSDP_PlanParameter:$plan,
    "int64_t":$arena_bytes,
    "int64_t":$persistent_bytes,
    DefaultI64Parameter<"0", "the host arena of offload">:$host_arena_bytes,
    "int64_t":$local_batch,
    "int64_t":$shard_ranks,
    FSDP_AttrListParameter<"ManifestUnitAttr", "the units">:$units,
    FSDP_AttrListParameter<"ManifestParamAttr", "the parameters">:$params,
    FSDP_AttrListParameter<"ManifestInputAttr", "the inputs">:$inputs,
    FSDP_AttrListParameter<"ManifestCollectiveAttr", "the collectives">:$collectives,
    FSDP_OptionalI64Parameter<"tokens of one step, all ranks">:$tokens_per_step,
    FSDP_OptionalI64Parameter<"the device scalars' offset">:$device_scalars,
    FSDP_OptionalAttrParameter<"RecomputeAttr", "fsdp-remat's counts">:$recompute,
    FSDP_OptionalAttrParameter<"TransientPlanAttr", "the buffer plan">:$transient,
    FSDP_OptionalAttrParameter<"StepFlopsAttr", "the step's FLOPs">:$step_flops,
    FSDP_OptionalAttrParameter<"DeviceProfileAttr", "the profile">:$device_profile
  );
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    /// The global batch: each rank's rows times the plan's ranks.
    int64_t getBatch() const;
    /// Copies of the model: the plan's ranks over shard_ranks.
    int64_t getReplicas() const;
    /// The same manifest with the buffer plan of fsdp-assign-buffers: the
    /// arena's size, its transient part, and the units (gradient offsets).
    ManifestAttr withBufferPlan(int64_t arenaBytes, TransientPlanAttr transient,
                                ::llvm::ArrayRef<ManifestUnitAttr> units) const;
    ManifestAttr withStepFlops(StepFlopsAttr flops) const;
    ManifestAttr withDeviceProfile(DeviceProfileAttr profile) const;
  }];
}

#endif // FSDP_MANIFEST_ATTRS_TD
