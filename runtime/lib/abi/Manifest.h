//===- Manifest.h - The manifest a generated trainer embeds -----*- C++ -*-===//
//
// The JSON manifest (docs/Runtime.md, section 2, version 2) read into plain
// structs and validated once, so that the rest of the runtime can trust every
// offset, shape and bound in it. Offsets and shapes are those of one rank:
// every rank has the same arena layout.
//
//===----------------------------------------------------------------------===//

#ifndef FSDPRT_ABI_MANIFEST_H
#define FSDPRT_ABI_MANIFEST_H

#include "abi/DType.h"
#include "fsdprt/fsdprt.h"

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace fsdprt {

enum class InitKind { Zeros, Ones, Constant, Normal, Uniform, FanInNormal, FanInUniform };

struct InitSpec {
  InitKind kind = InitKind::Zeros;
  double value = 0.0; // constant
  double mean = 0.0;  // normal
  double std = 0.0;   // normal
  double low = 0.0;   // uniform
  double high = 0.0;  // uniform
  double scale = 0.0; // fan_in_normal, fan_in_uniform
};

struct ParamSpec {
  std::string name;
  std::vector<int64_t> shape;
  DType dtype = DType::F32;
  std::string unit;
  bool trainable = true;
  InitSpec init;
  /// Element offset of the parameter inside its unit's flat buffer.
  int64_t unitOffset = 0;
  /// Position of its unit in Manifest::units.
  size_t unitIndex = 0;
  /// split_dim: the dimension of the whole parameter cut into `tensorBlocks`
  /// blocks (the manifest's tensor_ranks), of which `shape` is one. None:
  /// every tensor rank holds the whole parameter, and tensorBlocks is 1.
  std::optional<int64_t> splitDim;
  int64_t tensorBlocks = 1;
  /// split_parts: the whole sizes of the parts of splitDim, each cut into
  /// tensorBlocks blocks of which `shape` holds the concatenation (a fused
  /// product's weight; TensorBlocks.h). Empty when absent.
  std::vector<int64_t> splitParts;

  /// The elements and bytes of this rank's block (the whole parameter when
  /// it is not split): what its unit holds.
  int64_t numElements() const;
  int64_t bytes() const;
  /// The whole parameter's shape: `shape`, times tensorBlocks along splitDim.
  std::vector<int64_t> wholeShape() const;
  int64_t wholeElements() const;
};

enum class OptimizerKind { SGD, AdamW };

struct OptimizerSpec {
  OptimizerKind kind = OptimizerKind::SGD;
  double lr = 0.0;
  double momentum = 0.0;    // sgd
  double beta1 = 0.0;       // adamw
  double beta2 = 0.0;       // adamw
  double eps = 0.0;         // adamw
  double weightDecay = 0.0; // both
};

/// The slots the optimizer keeps for every trainable unit, in this order
/// (AdamW: exp_avg, exp_avg_sq; SGD with momentum: momentum; else none).
std::vector<std::string> optimizerSlots(const OptimizerSpec &optimizer);

/// One optimizer slot of a unit: shard_numel elements at `offset`, the same
/// element range as the unit's parameter shard.
struct SlotSpec {
  std::string slot;
  int64_t offset = 0;
};

/// A unit: parameters flattened into one buffer of shard_ranks * shardNumel
/// elements (zero padding after the last parameter), of which the rank with
/// shard index k holds elements [k * shardNumel, (k + 1) * shardNumel).
struct UnitSpec {
  std::string name;
  DType dtype = DType::F32;
  bool trainable = true;
  int64_t numel = 0;      // elements of its parameters, without padding
  int64_t shardNumel = 0; // elements each rank holds
  int64_t paramOffset = 0;
  int64_t gradOffset = 0; // trainable units only
  std::vector<SlotSpec> state;
  /// offload = optimizer: paramOffset (the f32 master shard), gradOffset and
  /// the state's offsets are in the host arena; the gradient arrives there
  /// in gradDType (bf16 with reduce_dtype = bf16; its place has room for
  /// f32). The device keeps the shard in deviceParamDType at
  /// deviceParamOffset of the arena: what its gathers read.
  bool offloaded = false;
  DType gradDType = DType::F32;
  int64_t deviceParamOffset = 0;
  DType deviceParamDType = DType::F32;

  /// Bytes of one shard in the unit's dtype.
  int64_t shardBytes() const;
};

enum class InputRole { Features, RegressionTarget, Tokens, Classes };

const char *inputRoleName(InputRole role);

struct InputSpec {
  int64_t index = 0;
  std::vector<int64_t> shape; // this rank's shape: shape[0] is local_batch
  DType dtype = DType::F32;
  InputRole role = InputRole::Features;
  int64_t bound = 0; // integer inputs: values lie in [0, bound)
  int64_t offset = 0;
  int64_t bytes = 0;

  /// The shape of one sample: the shape without the batch dimension.
  std::vector<int64_t> sampleShape() const;
  int64_t sampleElements() const;
  int64_t sampleBytes() const;
};

/// Where a step that runs from a recording (a CUDA graph, which replays its
/// kernels with the arguments they were captured with) finds what changes
/// from step to step, and leaves its loss: kBytes of the persistent part
/// (device_scalars, docs/Runtime.md, section 2).
struct DeviceScalarsSpec {
  int64_t offset = 0;
  /// The region's bytes, and the first kRuntimeBytes of them, which the runtime writes
  /// before each step; the step keeps its optimizer's factors of the step in
  /// the rest (computed once a step, read by every update).
  static constexpr int64_t kBytes = FSDPRT_DEVICE_SCALARS_BYTES,
                           kRuntimeBytes = FSDPRT_DEVICE_SCALARS_RUNTIME_BYTES;
  // f32, written by the runtime before each step
  static constexpr int64_t kLr = FSDPRT_DEVICE_SCALARS_LR;
  // f32, written by the step
  static constexpr int64_t kLoss = FSDPRT_DEVICE_SCALARS_LOSS;
  // i64, written by the runtime before each step
  static constexpr int64_t kStep = FSDPRT_DEVICE_SCALARS_STEP;
};

/// A collective the step starts (collectives, optional): `all_gather`,
/// `reduce_scatter` or `all_reduce`, and the unit it moves (empty: none, as
/// the gradient norm's all-reduce).
struct CollectiveSpec {
  std::string kind;
  std::string unit;
};

/// The floating-point work of one step of one rank (step_flops, optional:
/// fsdp-record-step-flops), recomputation included: matrix products (of
/// which bf16_products in bf16), the products fused attention stands for
/// (bf16), the part of both that rematerialisation recomputes (not the
/// model's FLOPs), and every other float operation of the step's loops.
struct StepFlopsSpec {
  double products = 0, bf16Products = 0, attention = 0, recomputed = 0, other = 0;
};

/// The device profile fsdpc planned the step on (device_profile, optional):
/// its name and product rates, FLOP/s of one rank in f32 and bf16.
struct DeviceProfileSpec {
  std::string name;
  double f32 = 0, bf16 = 0;
};

/// Each CUDA kernel's places in the model's source, by kernel name: the
/// generated object's fsdp_kernel_origins (fsdp-cuda-record-kernel-origins),
/// not the JSON.
using KernelOrigins = std::map<std::string, std::string>;

/// Reads `name\tplaces` lines; null or empty gives none.
KernelOrigins parseKernelOrigins(const char *table);

struct Manifest {
  int64_t version = 0;
  int64_t arenaBytes = 0;
  /// [0, persistentBytes) holds what lives across steps (parameter, gradient
  /// and state shards, inputs); the rest is the step's transient buffers.
  int64_t persistentBytes = 0;
  /// The host arena of offload = optimizer; 0 without.
  int64_t hostArenaBytes = 0;
  int64_t batch = 0;      // global batch
  int64_t localBatch = 0; // rows of each rank: batch / dataRanks()
  /// The data-parallel grid: [N] or [replicas, shard_ranks].
  std::vector<int64_t> grid;
  /// Ranks of the tensor-parallel axis, the innermost of the world: world
  /// rank = data index x tensorRanks + tensor index (tensor_ranks, 1 when
  /// absent).
  int64_t tensorRanks = 1;
  std::string strategy;
  int64_t shardRanks = 1; // ranks sharing one copy of the model
  int64_t replicas = 1;   // copies of the model
  OptimizerSpec optimizer;
  double clipGradNorm = 0.0;
  /// Whether fp32 products may use TF32 tensor cores (allow_tf32, optional):
  /// on a GPU, faster products whose inputs keep 10 bits of mantissa.
  bool allowTf32 = false;
  /// device_scalars (CUDA trainers): the step reads lr and step from the
  /// arena and leaves its loss there, and its return value is not the loss.
  /// Absent, the step's return value is the loss.
  std::optional<DeviceScalarsSpec> deviceScalars;
  std::vector<UnitSpec> units;
  std::vector<ParamSpec> params;
  std::vector<InputSpec> inputs;
  /// The collectives the step starts, in the order it starts them: what a
  /// timed-out wait names (CollectiveTimeout.h). Empty when not given.
  std::vector<CollectiveSpec> collectives;
  std::optional<StepFlopsSpec> stepFlops;
  /// The tokens of one step, all ranks together (tokens_per_step): 0 for a
  /// model without token inputs.
  int64_t tokensPerStep = 0;
  std::optional<DeviceProfileSpec> deviceProfile;
  /// Where its kernels come from (parseKernelOrigins), when the object says.
  KernelOrigins kernelOrigins;

  /// The data indices: the product of the grid (replicas x shard_ranks).
  int64_t dataRanks() const;
  /// The number of ranks the plan runs on: dataRanks() x tensorRanks.
  int64_t worldSize() const;
};

/// Parses and validates a manifest. Any problem is fatal, reported as
/// `manifest: <path>: <what>` where path names the field (`params[1].shape`).
Manifest parseManifest(std::string_view text);

/// Empty when `a` and `b` keep the same things at the same places of the
/// arena from step to step (units, inputs, the device scalars, the
/// persistent part, the host arena, the batch and the grid), else what
/// differs first.
std::string persistentLayoutDifference(const Manifest &a, const Manifest &b);

/// Formats a shape as `[2, 3]` for messages.
std::string formatShape(const std::vector<int64_t> &shape);

} // namespace fsdprt

#endif // FSDPRT_ABI_MANIFEST_H
