//===- StepCost.h - the predicted time of a compiled step -------*- C++ -*-===//
//
// Beside the exact memory plan, a prediction of the step's time: every op of
// the buffer-planned step (after fsdp-assign-buffers) gets a duration from a
// DeviceProfile (products from their FLOPs, loops from the bytes they move
// and the arithmetic they do, collectives as alpha-beta rings), and the step
// is played on the runtime's streams as it runs it: compute in program
// order, all-gathers on one communication stream and reductions on another,
// each collective from its start call, a wait holding compute until the
// collective it names is done. With offload = optimizer, copies between host
// and device run on the copy stream at the profile's host link rate, and the
// host, which launches everything else without waiting, has a clock of its
// own for what it computes itself (the updates) after waiting for each
// gradient to arrive.
//
//===----------------------------------------------------------------------===//

#ifndef FSDP_ANALYSIS_STEPCOST_H
#define FSDP_ANALYSIS_STEPCOST_H

#include "Analysis/DeviceProfile.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

#include <string>
#include <vector>

namespace mlir::fsdp {

/// The track of host work (offload's update) beside the runtime's streams.
constexpr int kHostTrack = 4;

/// One op of the predicted step, on its stream (RuntimeStream) or kHostTrack.
struct TimedOp {
  Operation *op = nullptr;
  int stream = 0;
  double start = 0, end = 0;
  /// What it is: a runtime call's name without `fsdprt_`, or the op's name.
  std::string name;
  /// Matrix-product FLOPs, and bytes moved (loops) or sent per rank (collectives).
  double flops = 0, bytes = 0;
  /// A collective's unit (its start call's `fsdp.unit`), and when the compute
  /// stream got past the wait for it.
  std::string unit;
  double waited = 0;
  /// A compute op's distinct buffers, in bytes: what its memory rate depends
  /// on (DeviceProfile::memoryBandwidthAt).
  double footprint = 0;
};

struct StepCost {
  std::vector<TimedOp> ops;
  /// The compute stream's clock as each op of the step's block begins, in
  /// block order: the time axis of analyses that follow the step op by op.
  std::vector<double> opStart;
  /// When the last op ends: the predicted step.
  double stepSeconds = 0;
  /// Busy time of the compute stream: products, fused attention and
  /// everything else; and the part of all three that is the profile's
  /// overhead per launch or call.
  double matmulSeconds = 0, attentionSeconds = 0, otherComputeSeconds = 0, launchSeconds = 0;
  /// The matrix-product FLOPs of the step's device work, recomputed products
  /// included (the model's FLOPs leave them out: StepFlops).
  double matmulFlops = 0;
  /// The fused attention's FLOPs (the products it stands for, the causal
  /// half only), forward and backward.
  double attentionFlops = 0;
  /// Busy time of the communication streams, and the part of it the compute
  /// stream spends waiting (what prefetch and overlap failed to hide).
  double communicationSeconds = 0, exposedCommunicationSeconds = 0;
  /// Offload: busy time of the copy stream, the part the compute stream
  /// waits for, and the host's updates.
  double copySeconds = 0, exposedCopySeconds = 0, hostSeconds = 0;
  /// Bytes one rank sends per step in the tensor group's all-reduces (the
  /// sums of tensor-parallel regions, as rings: 2 (T - 1) / T of each), and
  /// in its all-gathers and reduce-scatters (sequence blocks: (T - 1) / T of
  /// the whole each).
  double tensorAllReduceBytes = 0, tensorAllGatherBytes = 0, tensorReduceScatterBytes = 0;
  /// The part of communicationSeconds on the tensor group's stream.
  double tensorCommunicationSeconds = 0;
};

/// The shape of the rank grid, to tell which links a collective's group uses.
struct RankGrid {
  int64_t replicas = 1, shardRanks = 1, tensorRanks = 1;
};

/// Predicts `step` (fsdp_train_step after fsdp-assign-buffers) on `profile`.
StepCost predictStepCost(func::FuncOp step, const DeviceProfile &profile, RankGrid grid);

/// The floating-point work of one step of one rank, recomputation included:
/// what the trainer's TFLOP/s and MFU divide by time (docs/Runtime.md).
struct StepFlops {
  /// Matrix products (2 m n k each), and the part of them in bf16.
  double products = 0, bf16Products = 0;
  /// The fused attention's products (forward 2, backward 5 of 2 T S D per
  /// batch and head, the causal half only): bf16.
  double attention = 0;
  /// The part of `products` and `attention` that computes again what the
  /// step computed before: the scores of each attention backward (a fused
  /// one's, and the products fsdp-lower-gemms made of those marked
  /// kRecomputedAttr). Rematerialisation's copies are not told apart here.
  double recomputed = 0;
  /// Every other floating-point operation of the step's loops, one for each
  /// arith or math op that makes a float other than a conversion or a select
  /// (an exponential counts one).
  double other = 0;
};

/// Counts `step` (fsdp_train_step once its products are runtime calls).
StepFlops countStepFlops(func::FuncOp step);

} // namespace mlir::fsdp

#endif // FSDP_ANALYSIS_STEPCOST_H
