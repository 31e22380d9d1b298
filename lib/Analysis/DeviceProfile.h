//===- DeviceProfile.h - what a rank's device can do, for the cost model -*- C++ -*-===//
//
// The rates the step-time prediction (StepCost.h) divides by, and the memory
// the runtime itself takes beside the planned arena (the budget check). A
// profile is built in (`h100-sxm`, `h200`, `cpu`) or read from a JSON file, e.g. the
// one bench/measure_cpu_profile.py writes for the machine it runs on.
//
//===----------------------------------------------------------------------===//

#ifndef FSDP_ANALYSIS_DEVICEPROFILE_H
#define FSDP_ANALYSIS_DEVICEPROFILE_H

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace mlir::fsdp {

/// Measured points of a figure against a size, ascending in size: what a
/// machine's caches make of rates that a single number gets wrong for small
/// working sets (bench/measure_cpu_profile.py measures them).
using SizeCurve = std::vector<std::pair<double, double>>;

/// Alpha-beta: a message of S bytes takes latency + S / bandwidth. Where the
/// collective's time was measured on groups of `measuredRanks` ranks, a group
/// of that size takes the measured time instead, linear between the points
/// of `measuredSeconds` (total bytes, seconds), the first point's time below
/// the first, and along the last two points' line beyond the last.
struct AlphaBeta {
  double latency = 0;   // s
  double bandwidth = 0; // B/s, each direction, per rank
  int64_t measuredRanks = 0;
  SizeCurve measuredSeconds;
};

/// One kind of link between ranks, with the rates of a ring's step for each
/// kind of collective: an all-gather's only moves data, a reduce-scatter's
/// also sums what arrives (MPI's runs 3-8x slower than its all-gather on
/// these machines: bench/measure_cpu_profile.py). An all-reduce is a
/// reduce-scatter then an all-gather.
struct LinkProfile {
  AlphaBeta gather, reduce;
};

/// The device memory the runtime allocates beside the arena, by purpose.
struct RuntimeMemory {
  int64_t context = 0;     // CUDA context and loaded kernels
  int64_t collectives = 0; // NCCL's buffers, all communicators
  int64_t workspace = 0;   // cuBLAS(Lt) workspaces

  int64_t total() const { return context + collectives + workspace; }
};

struct DeviceProfile {
  std::string name, description;
  /// Rates of one rank, with every rank of its node busy.
  double matmulFlopsF32 = 0, matmulFlopsBF16 = 0; // FLOP/s on large products
  /// FLOP/s of the fused attention (fsdprt_attention_bf16), forward and
  /// backward, counting the products it stands for (the causal half only);
  /// 0: none measured, the bf16 product rate stands in.
  double attentionFlopsForward = 0, attentionFlopsBackward = 0;
  /// The head size those rates were measured at, and the work per query row
  /// that does not grow with the head size, in head elements: a head of d
  /// runs at the rates times (d / (d + overhead)) / (D / (D + overhead)) for
  /// d below the measured D (0: the rates at every head size).
  double attentionHeadDim = 0, attentionRowOverhead = 0;

  /// The fused attention's rate `flops` (forward or backward) at head size
  /// `headDim`.
  double attentionRateAt(double flops, double headDim) const;
  double vectorFlops = 0;                         // arithmetic op/s of generated loops
  /// Divisions and square roots per second in generated loops: a divider of
  /// its own, several times slower than the multiply-add pipes.
  double vectorDivides = 0;
  /// A loop nest whose innermost loop reduces floats into one accumulator is
  /// not vectorised (float addition does not reassociate): its body runs at
  /// `scalarFlops` op/s, and its accumulations one after the other at
  /// `dependentFlops` per second (the adder's latency). Without them in a
  /// profile (a GPU: a row per thread), such loops count as vectorised.
  double scalarFlops = 0, dependentFlops = 0;
  double memoryBandwidth = 0;                     // B/s read + written
  /// Optional (footprint bytes, B/s): the rate of an op whose distinct
  /// operands total the footprint, where it fits in cache (log-linear between
  /// points, the first point's rate below the first); beyond the last point,
  /// `memoryBandwidth`.
  SizeCurve memoryBandwidthByFootprint;
  double opOverhead = 0;                          // s per launch or call
  /// A GPU's parallelism, for kernels that cannot use all of it
  /// (KernelCost.h): its streaming multiprocessors (0: not a GPU, every loop
  /// fills the device), and the time of one iteration of a thread's loop
  /// whose next iteration waits for this one: for its loads (a sum in
  /// order), or for its store to the memory the next one loads (a scatter's
  /// read-modify-write).
  int64_t multiprocessors = 0;
  double serialIterationSeconds = 0, memoryCarriedIterationSeconds = 0;
  int64_t ranksPerNode = 1;
  /// `interNode`'s rates are one network interface's. A ring spanning nodes
  /// spreads its channels over the interfaces of its ranks on a node, up to
  /// `nicsPerNode` of them (NCCL's rails: each interface carries its share of
  /// the ring's crossings), but no faster than the ring within a node.
  int64_t nicsPerNode = 1;
  LinkProfile intraNode, interNode;
  double hostDeviceBandwidth = 0; // B/s each direction; 0 without a device
  /// The host cores and memory one rank's share of its node gives offload's
  /// update (the device's own figures on the CPU, where the host is the
  /// device).
  double hostMemoryBandwidth = 0, hostVectorFlops = 0, hostVectorDivides = 0;
  /// Whether collectives progress while compute runs (NCCL streams: yes; MPI
  /// nonblocking calls without a progress thread: only inside MPI calls).
  bool asyncCollectives = false;
  RuntimeMemory runtime;

  /// The link of a ring spanning nodes with `groupRanksPerNode` of its ranks
  /// on each node: `interNode` at the bandwidth of the interfaces those ranks
  /// use, the extra interfaces no faster than `intraNode` (measured times stay
  /// as measured).
  LinkProfile crossNodeRing(int64_t groupRanksPerNode) const;

  /// The rate of memory traffic of an op whose operands total `footprint`.
  double memoryBandwidthAt(double footprint) const;

  /// A built-in profile (`h100-sxm`, `h200`, `cpu`) or a JSON file (docs/CostModel.md).
  static llvm::Expected<DeviceProfile> load(llvm::StringRef nameOrFile);
  /// The names `load` knows without a file.
  static llvm::StringRef builtinNames();
};

/// A collective's kind, for its alpha-beta time.
enum class CollectiveKind { AllGather, ReduceScatter, AllReduce };

/// Seconds of a ring collective over `groupRanks` ranks, each contributing
/// (all-gather, reduce-scatter) or holding (all-reduce) its part of a total
/// of `totalBytes`, over `link`: (g - 1) steps of latency and (g - 1) / g of
/// the bytes at the kind's rates; an all-reduce is a reduce-scatter then an
/// all-gather.
double ringSeconds(CollectiveKind kind, int64_t groupRanks, double totalBytes,
                   const LinkProfile &link);

} // namespace mlir::fsdp

#endif // FSDP_ANALYSIS_DEVICEPROFILE_H
