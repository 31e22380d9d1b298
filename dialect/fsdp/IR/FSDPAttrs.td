//===- FSDPAttrs.td - fsdp attributes and enums ------------*- tablegen -*-===//
//
// Initializers of parameters, optimizers, and the sharding plan.
//
//===----------------------------------------------------------------------===//

#ifndef FSDP_ATTRS_TD
#define FSDP_ATTRS_TD

include "fsdp/IR/FSDPDialect.td"
include "fsdp/IR/FSDPInterfaces.td"
include "mlir/IR/EnumAttr.td"

//===----------------------------------------------------------------------===//
// Parameters of attributes
//===----------------------------------------------------------------------===//

// A finite double, printed in its shortest form that parses back to the same value.
class F64Parameter<string desc> : APFloatParameter<desc> {
  let parser = [{ ::mlir::fsdp::parseF64Parameter($_parser) }];
  let printer = [{ ::mlir::fsdp::printF64Parameter($_printer, $_self) }];
}
class DefaultF64Parameter<string value, string desc> : F64Parameter<desc> {
  let defaultValue = "::llvm::APFloat(" # value # ")";
}
class DefaultI64Parameter<string value, string desc>
    : DefaultValuedParameter<"int64_t", value, desc>;
// `true` or `false`.
class DefaultBoolParameter<string desc> : DefaultValuedParameter<"bool", "false", desc> {
  let parser = [{ ::mlir::fsdp::parseBoolParameter($_parser) }];
  let printer = [{ $_printer << ($_self ? "true" : "false") }];
}
// An enum keyword; a wrong one is reported with the list of valid keywords.
class DefaultEnumParameter<EnumAttrInfo enum, string value>
    : EnumParameter<enum> {
  let defaultValue = enum.cppNamespace # "::" # enum.className # "::" # value;
  let parser = "::mlir::fsdp::parseEnumParameter<" # enum.cppNamespace # "::"
               # enum.className # ">($_parser, ::mlir::fsdp::getMaxEnumValFor"
               # enum.className # "())";
}

// Device grid: `[N]` (shard axis) or `[R, S]` (replicate x shard).
def FSDP_GridParameter : ArrayRefParameter<"int64_t", "device grid"> {
  let parser = [{ ::mlir::fsdp::parseIntegerListParameter($_parser) }];
  let printer = [{ ::mlir::fsdp::printIntegerListParameter($_printer, $_self) }];
}

//===----------------------------------------------------------------------===//
// Enums of the plan
//===----------------------------------------------------------------------===//

def FSDP_Strategy : I32EnumAttr<"Strategy", "sharding strategy", [
    I32EnumAttrCase<"FullShard", 0, "full_shard">,
    I32EnumAttrCase<"ShardGradOp", 1, "shard_grad_op">,
    I32EnumAttrCase<"NoShard", 2, "no_shard">,
    I32EnumAttrCase<"HybridShard", 3, "hybrid_shard">]> {
  let cppNamespace = "::mlir::fsdp";
  let genSpecializedAttr = 0;
}

def FSDP_DType : I32EnumAttr<"DType", "floating-point storage type", [
    I32EnumAttrCase<"F32", 0, "f32">,
    I32EnumAttrCase<"BF16", 1, "bf16">]> {
  let cppNamespace = "::mlir::fsdp";
  let genSpecializedAttr = 0;
}

// Collectives: how values combine, and over which ranks.
def FSDP_Reduction : I32EnumAttr<"Reduction", "reduction of a collective", [
    I32EnumAttrCase<"Sum", 0, "sum">,
    I32EnumAttrCase<"Avg", 1, "avg">]> {
  let cppNamespace = "::mlir::fsdp";
}

def FSDP_Group : I32EnumAttr<"Group", "ranks of a collective", [
    I32EnumAttrCase<"World", 0, "world">,
    I32EnumAttrCase<"Shard", 1, "shard">,
    I32EnumAttrCase<"Replica", 2, "replica">,
    I32EnumAttrCase<"Tensor", 3, "tensor">]> {
  let cppNamespace = "::mlir::fsdp";
}

// A user's choice for one parameter over fsdp-split-tensors' layout.
def FSDP_TensorLayout : I32EnumAttr<"TensorLayout", "how the tensor ranks hold a parameter", [
    I32EnumAttrCase<"Whole", 0, "whole">,
    I32EnumAttrCase<"Cut", 1, "cut">]> {
  let cppNamespace = "::mlir::fsdp";
}

def FSDP_RematPolicy : I32EnumAttr<"RematPolicy", "activation recompute policy", [
    I32EnumAttrCase<"None", 0, "none">,
    I32EnumAttrCase<"Selective", 1, "selective">,
    I32EnumAttrCase<"Unit", 2, "unit">]> {
  let cppNamespace = "::mlir::fsdp";
  let genSpecializedAttr = 0;
}

def FSDP_Accumulation : I32EnumAttr<"Accumulation",
    "how the gradients of micro-batches are accumulated", [
    I32EnumAttrCase<"ReduceScatter", 0, "reduce_scatter">,
    I32EnumAttrCase<"NoSync", 1, "no_sync">]> {
  let cppNamespace = "::mlir::fsdp";
  let genSpecializedAttr = 0;
}

def FSDP_Offload : I32EnumAttr<"Offload", "what lives in host memory on a GPU target", [
    I32EnumAttrCase<"None", 0, "none">,
    I32EnumAttrCase<"Optimizer", 1, "optimizer">]> {
  let cppNamespace = "::mlir::fsdp";
  let genSpecializedAttr = 0;
}

def FSDP_UnitPolicy : I32EnumAttr<"UnitPolicy", "how parameters form FSDP units", [
    I32EnumAttrCase<"Explicit", 0, "explicit">,
    I32EnumAttrCase<"AutoWrap", 1, "auto_wrap">]> {
  let cppNamespace = "::mlir::fsdp";
  let genSpecializedAttr = 0;
}

//===----------------------------------------------------------------------===//
// Initializers
//===----------------------------------------------------------------------===//

class FSDP_InitAttr<string name, string mnemonic, list<Trait> traits = [FSDP_InitializerAttrInterface]>
    : FSDP_Attr<name, mnemonic, traits>;
// Fan-in initializers only apply to parameters with an input dimension.
class FSDP_FanInInitAttr<string name, string mnemonic>
    : FSDP_InitAttr<name, mnemonic,
        [DeclareAttrInterfaceMethods<FSDP_InitializerAttrInterface, ["verifyForType"]>]>;

def FSDP_ZerosAttr : FSDP_InitAttr<"Zeros", "zeros"> {
  let summary = "Initializes every element to 0";
  let description = [{
    ```mlir
    fsdp.param @fc.b : tensor<10xf32> = #fsdp.zeros
    ```
  }];
}

def FSDP_OnesAttr : FSDP_InitAttr<"Ones", "ones"> {
  let summary = "Initializes every element to 1";
  let description = [{
    The usual initializer of normalisation scales.

    ```mlir
    fsdp.param @ln.g : tensor<64xf32> = #fsdp.ones
    ```
  }];
}

def FSDP_ConstantAttr : FSDP_InitAttr<"Constant", "constant"> {
  let summary = "Initializes every element to one value";
  let description = [{
    ```mlir
    fsdp.param @gate : tensor<8xf32> = #fsdp.constant<0.5>
    ```
  }];
  let parameters = (ins F64Parameter<"the value">:$value);
  let assemblyFormat = "`<` $value `>`";
  let genVerifyDecl = 1;
}

def FSDP_NormalAttr : FSDP_InitAttr<"Normal", "normal"> {
  let summary = "Draws each element from a normal distribution";
  let description = [{
    `mean` defaults to 0; `std` must be positive.

    ```mlir
    fsdp.param @wte : tensor<256x64xf32> = #fsdp.normal<std = 0.02>
    fsdp.param @b : tensor<64xf32> = #fsdp.normal<mean = 1.0, std = 0.1>
    ```
  }];
  let parameters = (ins DefaultF64Parameter<"0.0", "mean">:$mean,
                        F64Parameter<"standard deviation">:$std);
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
}

def FSDP_UniformAttr : FSDP_InitAttr<"Uniform", "uniform"> {
  let summary = "Draws each element uniformly from [low, high)";
  let description = [{
    ```mlir
    fsdp.param @w : tensor<16x16xf32> = #fsdp.uniform<low = -0.1, high = 0.1>
    ```
  }];
  let parameters = (ins F64Parameter<"lower bound">:$low,
                        F64Parameter<"upper bound">:$high);
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
}

def FSDP_FanInNormalAttr : FSDP_FanInInitAttr<"FanInNormal", "fan_in_normal"> {
  let summary = "Normal with standard deviation scale / sqrt(fan_in)";
  let description = [{
    Draws from N(0, (scale / sqrt(fan_in))^2), where fan_in is the product of
    every dimension but the last (a weight is stored `in x out`, as the right
    operand of `fsdp.matmul`). `scale = 1` is LeCun initialisation,
    `scale = 1.41421356` (sqrt 2) is He initialisation for ReLU layers. The
    parameter must have rank 2 or more.

    ```mlir
    fsdp.param @fc1.w : tensor<784x256xf32> = #fsdp.fan_in_normal<scale = 1.41421356>
    ```
  }];
  let parameters = (ins DefaultF64Parameter<"1.0", "multiplier of 1/sqrt(fan_in)">:$scale);
  let assemblyFormat = "(`<` struct(params)^ `>`)?";
  let genVerifyDecl = 1;
}

def FSDP_FanInUniformAttr : FSDP_FanInInitAttr<"FanInUniform", "fan_in_uniform"> {
  let summary = "Uniform on [-scale / sqrt(fan_in), scale / sqrt(fan_in))";
  let description = [{
    fan_in as for `#fsdp.fan_in_normal`. `scale = 1` is the default
    initialisation of a PyTorch `nn.Linear` weight. The parameter must have
    rank 2 or more.

    ```mlir
    fsdp.param @fc1.w : tensor<784x256xf32> = #fsdp.fan_in_uniform
    ```
  }];
  let parameters = (ins DefaultF64Parameter<"1.0", "multiplier of 1/sqrt(fan_in)">:$scale);
  let assemblyFormat = "(`<` struct(params)^ `>`)?";
  let genVerifyDecl = 1;
}

//===----------------------------------------------------------------------===//
// Optimizers
//===----------------------------------------------------------------------===//

class FSDP_OptimizerAttr<string name, string mnemonic>
    : FSDP_Attr<name, mnemonic,
                [DeclareAttrInterfaceMethods<FSDP_OptimizerAttrInterface>]>;

def FSDP_SGDAttr : FSDP_OptimizerAttr<"SGD", "sgd"> {
  let summary = "Stochastic gradient descent with momentum";
  let description = [{
    `v = momentum * v + g + weight_decay * p;  p = p - lr * v`.
    `momentum` and `weight_decay` default to 0; with momentum 0 the optimizer
    keeps no state.

    ```mlir
    optimizer = #fsdp.sgd<lr = 0.1, momentum = 0.9>
    ```
  }];
  let parameters = (ins F64Parameter<"learning rate">:$lr,
                        DefaultF64Parameter<"0.0", "momentum">:$momentum,
                        DefaultF64Parameter<"0.0", "L2 weight decay">:$weight_decay);
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
}

def FSDP_AdamWAttr : FSDP_OptimizerAttr<"AdamW", "adamw"> {
  let summary = "Adam with decoupled weight decay and bias correction";
  let description = [{
    Loshchilov & Hutter's AdamW. Defaults: `beta1 = 0.9`, `beta2 = 0.999`,
    `eps = 1.0e-8`, `weight_decay = 0.01` (as in PyTorch).

    ```mlir
    optimizer = #fsdp.adamw<lr = 3.0e-4, weight_decay = 0.1>
    ```
  }];
  let parameters = (ins F64Parameter<"learning rate">:$lr,
                        DefaultF64Parameter<"0.9", "first-moment decay">:$beta1,
                        DefaultF64Parameter<"0.999", "second-moment decay">:$beta2,
                        DefaultF64Parameter<"1.0e-8", "denominator epsilon">:$eps,
                        DefaultF64Parameter<"0.01", "decoupled weight decay">:$weight_decay);
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
}

//===----------------------------------------------------------------------===//
// Sharding plan
//===----------------------------------------------------------------------===//

def FSDP_PlanAttr : FSDP_Attr<"Plan", "plan"> {
  let summary = "How a model is sharded and trained";
  let description = [{
    Attached to the module as `fsdp.plan`. Only `grid` and `optimizer` are
    required; every other field has the default below and is printed only
    when it differs from it.

    | field | meaning | default |
    |---|---|---|
    | `grid` | `[N]`: N ranks along the shard axis; `[R, S]`: R replicas of S-way sharding (`hybrid_shard` only): the data-parallel ranks, each with its rows of the batch | required |
    | `tensor_parallel` | T ranks along the tensor axis beside each data-parallel rank (`fsdp-split-tensors`): they read the same rows and each holds 1/T of every split parameter (Megatron's layout, docs/Sharding.md); the world is the grid's ranks times T | `1` |
    | `sequence_parallel` | `true` (needs `tensor_parallel` above 1): between the tensor-parallel regions (norms, residual adds, biases) each tensor rank holds and computes its block of the sequence, gathered before column-parallel products and reduce-scattered after row-parallel ones (`fsdp-split-sequence`, docs/Sharding.md); `false`: every tensor rank holds those activations whole | `false` |
    | `strategy` | `full_shard` (ZeRO-3), `shard_grad_op` (ZeRO-2), `no_shard` (DDP), `hybrid_shard` | `full_shard` |
    | `optimizer` | `#fsdp.sgd<...>` or `#fsdp.adamw<...>`, with its learning rate | required |
    | `param_dtype` | `f32` or `bf16`: dtype of gathered parameters and compute | `f32` |
    | `reduce_dtype` | `f32` or `bf16`: dtype of gradient reductions | `f32` |
    | `clip_grad_norm` | clip gradients to this global L2 norm; 0 disables | `0.0` |
    | `prefetch` | units gathered ahead of the one computing | `1` |
    | `max_inflight_gathers` | cap on all-gathers in flight | `2` |
    | `remat` | activation recompute (`fsdp-remat`): `none`; `unit` (keep only what each unit's part of the forward pass hands to the rest, recompute the rest in backward); `selective` (keep the outputs of matrix products too, recompute the cheap ops) | `none` |
    | `remat_every` | recompute every k-th unit of the forward pass (the 1st, the (k+1)-th, ...; 1: all) | `1` |
    | `remat_units` | recompute only these units, e.g. `["block0", "block2"]` (instead of `remat_every`) | all |
    | `micro_batches` | the step runs its batch (per rank) as this many micro-batches, one forward and backward each, and updates once with their mean gradient (`fsdp-accumulate-micro-batches`) | `1` |
    | `accumulate` | with micro-batches: `reduce_scatter` (each micro-batch's gradient is reduced at once and summed into an f32 shard: least memory) or `no_sync` (the unsharded flat gradients are summed in `reduce_dtype` and reduced once: less traffic) | `reduce_scatter` |
    | `units` | `explicit` (the `unit` of each param) or `auto_wrap` (group params in declaration order until `min_unit_params`) | `explicit` |
    | `min_unit_params` | parameter count that closes an auto-wrapped unit (`auto_wrap` only) | `0` |
    | `offload` | `optimizer` (CUDA target, ZeRO-Offload): f32 master shards and optimizer state in pinned host memory, gradient shards copied to the host after their reduce-scatter, the update on host cores, the updated shard copied back in `param_dtype` (`docs/Offload.md`); `none` | `none` |
    | `allow_tf32` | `true`: f32 matrix products may run on TF32 tensor cores (CUDA target; inputs rounded to 10 mantissa bits, f32 sums); the CPU has no TF32 and stays exact | `false` |
    | `approximate_math` | `true`: GPU kernels may use the hardware's approximate square root and reciprocal square root (`sqrt.approx`, `rsqrt.approx`); `false`: IEEE-rounded ones, as on the CPU (the CPU's are always exact) | `false` |
    | `deterministic` | `true`: the GPU's fused attention (bf16, CUDA target) computes its gradient with cuDNN's deterministic algorithm, the same bits on every run, at the cost of a bf16 workspace of batch x heads x T x T per attention and about 10% of its backward time; `false`: the gradient's last bits depend on the GPU's scheduling (the CPU is always deterministic) | `false` |
    | `device_memory` | memory of one rank's device (one GPU; on the CPU target, the host memory a rank may use), e.g. `"80GB"`, `"79.5GiB"`: `fsdpc` refuses a plan whose planned peak plus the runtime's own memory exceeds it, and lists the changes that fit (`docs/CostModel.md`) | none |

    ```mlir
    module attributes {fsdp.plan = #fsdp.plan<grid = [2, 4], strategy = hybrid_shard,
        optimizer = #fsdp.adamw<lr = 3.0e-4>, param_dtype = bf16,
        clip_grad_norm = 1.0, units = auto_wrap, min_unit_params = 1000000>} {
    }
    // 16 ranks: 2-way FSDP of each block of 8-way tensor parallelism.
    module attributes {fsdp.plan = #fsdp.plan<grid = [2], tensor_parallel = 8,
        optimizer = #fsdp.adamw<lr = 3.0e-4>>} {
    }
    ```
  }];
  let parameters = (ins
    FSDP_GridParameter:$grid,
    DefaultI64Parameter<"1", "tensor-parallel ranks">:$tensor_parallel,
    DefaultBoolParameter<"sequence blocks between tensor-parallel regions">:$sequence_parallel,
    DefaultEnumParameter<FSDP_Strategy, "FullShard">:$strategy,
    AttrParameter<"::mlir::fsdp::OptimizerAttrInterface", "optimizer">:$optimizer,
    DefaultEnumParameter<FSDP_DType, "F32">:$param_dtype,
    DefaultEnumParameter<FSDP_DType, "F32">:$reduce_dtype,
    DefaultF64Parameter<"0.0", "global gradient-norm clip">:$clip_grad_norm,
    DefaultI64Parameter<"1", "prefetch depth">:$prefetch,
    DefaultI64Parameter<"2", "cap on gathers in flight">:$max_inflight_gathers,
    DefaultEnumParameter<FSDP_RematPolicy, "None">:$remat,
    DefaultI64Parameter<"1", "recompute every k-th unit">:$remat_every,
    OptionalParameter<"::mlir::ArrayAttr", "the units to recompute">:$remat_units,
    DefaultI64Parameter<"1", "micro-batches per step">:$micro_batches,
    DefaultEnumParameter<FSDP_Accumulation, "ReduceScatter">:$accumulate,
    DefaultEnumParameter<FSDP_UnitPolicy, "Explicit">:$units,
    DefaultI64Parameter<"0", "auto-wrap threshold">:$min_unit_params,
    StringRefParameter<"device memory per rank", "\"\"">:$device_memory,
    DefaultEnumParameter<FSDP_Offload, "None">:$offload,
    DefaultBoolParameter<"TF32 tensor cores for f32 products">:$allow_tf32,
    DefaultBoolParameter<"approximate square roots in GPU kernels">:$approximate_math,
    DefaultBoolParameter<"bitwise-repeatable GPU attention gradients">:$deterministic
  );
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    /// Number of ranks in the whole mesh: the grid's times tensor_parallel.
    int64_t getWorldSize() const;
    /// Number of data-parallel ranks (the grid's), each with its own rows.
    int64_t getDataRanks() const;
    /// `device_memory` in bytes; none when the plan sets no budget.
    std::optional<int64_t> getDeviceMemoryBytes() const;
    /// Every field, to build a changed copy with `get(ctx, fields, ...)`.
    PlanFields getFields() const;
    static PlanAttr get(::mlir::MLIRContext *context, const PlanFields &fields,
                        ::llvm::function_ref<::mlir::InFlightDiagnostic()> emitError);
    /// The same plan on another grid; null, with a diagnostic, when the plan
    /// would be invalid (e.g. a 2-D grid without hybrid_shard).
    PlanAttr withGrid(::llvm::ArrayRef<int64_t> grid,
                      ::llvm::function_ref<::mlir::InFlightDiagnostic()> emitError) const;
  }];
}

//===----------------------------------------------------------------------===//
// Rotary embeddings
//===----------------------------------------------------------------------===//

def FSDP_Llama3RopeScalingAttr : FSDP_Attr<"Llama3RopeScaling", "llama3_rope"> {
  let summary = "Llama-3 scaling of rotary frequencies for long contexts";
  let description = [{
    What Llama 3.1 and later call `rope_type = "llama3"`: with `L` the
    original context (`original_max_positions`), a frequency whose wavelength
    `2 pi / f` is longer than `L / low_freq_factor` is divided by `factor`,
    one shorter than `L / high_freq_factor` is kept, and one between is
    interpolated: `(1 - s) f / factor + s f` with
    `s = (L / wavelength - low_freq_factor) / (high_freq_factor - low_freq_factor)`.

    ```mlir
    %y = fsdp.rope %x positions 1 theta 500000.0
        llama3_scaling <factor = 8.0, low_freq_factor = 1.0, high_freq_factor = 4.0,
                        original_max_positions = 8192>
        : tensor<2x16x8x64xf32>
    ```
  }];
  let parameters = (ins F64Parameter<"divisor of the low frequencies">:$factor,
                        F64Parameter<"the low frequencies' bound">:$low_freq_factor,
                        F64Parameter<"the high frequencies' bound">:$high_freq_factor,
                        "int64_t":$original_max_positions);
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
}

def FSDP_YarnRopeScalingAttr : FSDP_Attr<"YarnRopeScaling", "yarn_rope"> {
  let summary = "YaRN scaling of rotary frequencies for long contexts";
  let description = [{
    What Qwen, DeepSeek and others call `rope_type = "yarn"` (Peng et al.,
    2023, as Hugging Face's `_compute_yarn_parameters` computes it): with `r`
    the rotated features, `L` the original context (`original_max_positions`)
    and frequency `j`'s ramp `g_j = clamp((j - low) / (high - low), 0, 1)`
    between the features that turn `beta_fast` and `beta_slow` times over `L`,
    `low = r ln(L / (2 pi beta_fast)) / (2 ln theta)` (floored with
    `truncate`, at least 0) and `high` the same of `beta_slow` (ceiled with
    `truncate`, at most `r - 1`; `high = low` is taken as `low + 0.001`), the
    frequency is `f_j (g_j / factor + 1 - g_j)`: the low frequencies
    interpolated, the high ones kept. Each cosine and sine is then multiplied
    by `attention_factor` (the model's choice; `0.1 ln(factor) + 1` by
    default in the paper), which scales every score by its square.

    ```mlir
    %y = fsdp.rope %x positions 1 theta 1000000.0
        yarn_scaling <factor = 4.0, beta_fast = 32.0, beta_slow = 1.0,
                      original_max_positions = 32768, attention_factor = 1.138629436111989,
                      truncate = true>
        : tensor<2x16x8x64xf32>
    ```
  }];
  let parameters = (ins F64Parameter<"the context's extension">:$factor,
                        F64Parameter<"rotations over the context above which a feature is kept">:$beta_fast,
                        F64Parameter<"rotations below which a feature is interpolated">:$beta_slow,
                        "int64_t":$original_max_positions,
                        F64Parameter<"multiplier of every cosine and sine">:$attention_factor,
                        "bool":$truncate);
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    /// The ramp's ends (low, high) for `rotary` features at base `theta`.
    std::pair<double, double> rampRange(int64_t rotary, double theta) const;
  }];
}

include "fsdp/IR/FSDPManifestAttrs.td"

#endif // FSDP_ATTRS_TD
