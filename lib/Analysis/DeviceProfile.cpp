//===- DeviceProfile.cpp - built-in device profiles and profile files -----===//
//
// The built-in figures are planning figures, not peaks: what large cuBLAS
// products, copy kernels and NCCL rings reach on the hardware (sources in
// docs/CostModel.md). A measured profile file replaces them.
//
//===----------------------------------------------------------------------===//

#include "Analysis/DeviceProfile.h"

#include "mlir/Support/LLVM.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/ErrorHandling.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"

#include <algorithm>
#include <cmath>
#include <limits>

using namespace mlir;
using namespace mlir::fsdp;

namespace {

constexpr int64_t kMiB = 1024 * 1024;

/// The runtime's own device memory on a GPU, beside the arena. The CUDA
/// context with the trainer's fat binary loaded takes about 500 MiB on
/// Hopper; NCCL allocates per communicator and channel (4 MiB
/// NCCL_BUFFSIZE, send and receive, up to 32 channels on NVLink): the shard,
/// replica and world communicators together stay under 1 GiB; cuBLAS keeps a
/// 32 MiB workspace per handle on Hopper, cuBLASLt one of its own.
constexpr RuntimeMemory kCudaRuntimeMemory{/*context=*/512 * kMiB, /*collectives=*/1024 * kMiB,
                                           /*workspace=*/64 * kMiB};

/// An H100 SXM5 80 GB in an 8-GPU node (NVLink 4 through NVSwitch), one
/// 400 Gb/s InfiniBand NIC per GPU between nodes.
DeviceProfile h100Sxm() {
  DeviceProfile profile;
  profile.name = "h100-sxm";
  profile.description = "NVIDIA H100 SXM5 80 GB, 8 per node on NVLink 4, 400 Gb/s "
                        "InfiniBand per GPU between nodes";
  profile.matmulFlopsF32 = 50e12;   // FP32 without tensor cores: 67 TFLOP/s peak
  profile.matmulFlopsBF16 = 700e12; // dense BF16 tensor cores: 989 TFLOP/s peak
  // cuDNN 9.19's fused attention at Llama-2-70B's shape (heads of 128,
  // 4096 tokens, causal), through the runtime on an H200 (2026-11-28,
  // docs/CUDA.md): 573 and 466 TFLOP/s. Heads of 64 run slower (383 and 312).
  profile.attentionFlopsForward = 550e12;
  profile.attentionFlopsBackward = 450e12;
  // At the 1B Llama's heads of 64 the same runs measured 383 and 312 TFLOP/s:
  // 0.668 and 0.670 of the rates at 128, what a fixed 126.5 elements of work
  // per query row beside the head's gives.
  profile.attentionHeadDim = 128;
  profile.attentionRowOverhead = 126.5;
  profile.vectorFlops = 50e12;
  profile.vectorDivides = 6e12;     // MUFU reciprocals and roots: 1/8 of the FMA pipes
  // fsdp-cuda-form-kernels gives every row of a reduction a thread of its own:
  // no chain holds the device.
  profile.scalarFlops = profile.vectorFlops;
  profile.dependentFlops = std::numeric_limits<double>::infinity();
  profile.memoryBandwidth = 2.8e12; // HBM3: 3.35 TB/s peak
  profile.opOverhead = 5e-6;        // a kernel launch from the host
  // 132 multiprocessors. The small Llama's column sums (a thread per column,
  // 2,048 rows in order, 2 blocks) took 0.152 ms a launch and its embedding
  // gradient's scatter (2,048 positions in order) 0.428 ms (ncu on an H200,
  // 2026-11-28, docs/CUDA.md section 4): 74 and 209 ns an iteration.
  profile.multiprocessors = 132;
  profile.serialIterationSeconds = 74e-9;
  profile.memoryCarriedIterationSeconds = 209e-9;
  profile.ranksPerNode = 8;
  // NCCL's rings reduce as they move (in the copy kernels): both kinds at
  // the link's rate.
  AlphaBeta nvlink{/*latency=*/3e-6, /*bandwidth=*/360e9}; // NCCL ring bus bandwidth
  AlphaBeta infiniband{/*latency=*/10e-6, /*bandwidth=*/45e9}; // 400 Gb/s = 50 GB/s
  // One NIC per GPU (rail-optimised): a ring of all 8 GPUs of each node
  // crosses over 8 NICs at once, 360 GB/s.
  profile.nicsPerNode = 8;
  profile.intraNode = {nvlink, nvlink};
  profile.interNode = {infiniband, infiniband};
  profile.hostDeviceBandwidth = 50e9; // PCIe Gen5 x16, pinned memory
  // Two sockets of 8-channel DDR5 (about 600 GB/s) and about 100 cores shared
  // by 8 ranks: what a threaded, vectorised update gets of them.
  profile.hostMemoryBandwidth = 60e9;
  profile.hostVectorFlops = 200e9;
  profile.hostVectorDivides = 20e9;
  profile.asyncCollectives = true;
  profile.runtime = kCudaRuntimeMemory;
  return profile;
}

/// An H200 141 GB in an 8-GPU node: an H100 SXM5's compute, links and
/// multiprocessors with HBM3e at 4.0 TB/s (4.8 peak, in the H100 profile's
/// proportion).
DeviceProfile h200() {
  DeviceProfile profile = h100Sxm();
  profile.name = "h200";
  profile.description = "NVIDIA H200 141 GB, 8 per node on NVLink 4, 400 Gb/s InfiniBand per "
                        "GPU between nodes";
  profile.memoryBandwidth = 4.0e12;
  return profile;
}

/// One core per rank of a machine these builds ran on (AMD EPYC, 2 cores,
/// AVX-512 with BF16 and no AMX: bench/measure_cpu_profile.py, 2026-11-25;
/// the collectives' rates 2026-11-26), two ranks per node. A measured profile of the machine at hand does better.
DeviceProfile cpu() {
  DeviceProfile profile;
  profile.name = "cpu";
  profile.description = "one core per rank of an AVX-512 server, 2 ranks per node, MPI over "
                        "shared memory moved along by the runtime's progress thread";
  profile.matmulFlopsF32 = 100e9;
  profile.matmulFlopsBF16 = 200e9;
  profile.vectorFlops = 40e9;
  profile.vectorDivides = 7e9;
  profile.scalarFlops = 7.4e9;
  profile.dependentFlops = 1.2e9; // an addition's latency: 3 cycles
  profile.memoryBandwidth = 11e9;
  profile.opOverhead = 0.4e-6;
  profile.ranksPerNode = 2;
  // MPI's reduce-scatter (Open MPI over shared memory, f32 sums of a
  // gradient just written) runs at a third of its all-gather's rate.
  profile.intraNode = {/*gather=*/{0.6e-6, 4.0e9}, /*reduce=*/{0.76e-6, 1.34e9}};
  profile.interNode = {/*gather=*/{5e-6, 10e9}, /*reduce=*/{5e-6, 3.4e9}};
  profile.asyncCollectives = true;
  profile.hostMemoryBandwidth = profile.memoryBandwidth;
  profile.hostVectorFlops = profile.vectorFlops;
  profile.hostVectorDivides = profile.vectorDivides;
  return profile;
}

/// A profile file's error: its path, then what is wrong.
llvm::Error profileFileError(StringRef path, const llvm::Twine &message) {
  return llvm::createStringError(path + ": " + message);
}

/// Reads a profile file's JSON object into a DeviceProfile, section by
/// section, keeping the first thing wrong with the file.
class ProfileFileReader {
public:
  explicit ProfileFileReader(const llvm::json::Object *object) : object(object) {}

  /// Reads every section, in the order their errors take precedence.
  void readSections() {
    onlyFields(object, "",
               {"name",
                "description",
                "matmul_flops",
                "attention_flops",
                "vector_flops",
                "vector_divides",
                "scalar_flops",
                "dependent_flops",
                "memory_bandwidth",
                "memory_bandwidth_by_footprint",
                "op_overhead",
                "ranks_per_node",
                "nics_per_node",
                "intra_node",
                "inter_node",
                "host_device_bandwidth",
                "host",
                "async_collectives",
                "runtime_bytes",
                "kernels"},
               "a device profile");
    readProductRates();
    readLoopRates();
    readKernels();
    if (const llvm::json::Value *byFootprint = object->get("memory_bandwidth_by_footprint"))
      curve(byFootprint, "memory_bandwidth_by_footprint", profile.memoryBandwidthByFootprint);
    number(object, "op_overhead", "", profile.opOverhead, false);
    number(object, "host_device_bandwidth", "", profile.hostDeviceBandwidth, false);
    readLink("intra_node", profile.intraNode);
    readLink("inter_node", profile.interNode);
    readHost();
    number(object, "ranks_per_node", "", ranksPerNode, true);
    profile.ranksPerNode = static_cast<int64_t>(ranksPerNode);
    readRuntimeBytes();
  }

  /// The profile read, or the first thing wrong with the file.
  llvm::Expected<DeviceProfile> finish(StringRef path) {
    if (!missing.empty())
      return profileFileError(path, missing);
    if (profile.ranksPerNode != ranksPerNode)
      return profileFileError(path, "ranks_per_node must be a whole number");
    if (object->get("nics_per_node")) {
      std::optional<int64_t> nics = object->getInteger("nics_per_node");
      if (!nics || *nics < 1)
        return profileFileError(path, "nics_per_node must be a whole number of at least 1");
      profile.nicsPerNode = *nics;
    }
    profile.runtime = {static_cast<int64_t>(context), static_cast<int64_t>(collectives),
                       static_cast<int64_t>(workspace)};
    std::optional<bool> async = object->getBoolean("async_collectives");
    if (!async)
      return profileFileError(path, "async_collectives is missing or not true/false");
    profile.asyncCollectives = *async;
    for (StringRef text : {"name", "description"})
      if (object->get(text) && !object->getString(text))
        return profileFileError(path, text + " must be a string");
    profile.name = object->getString("name").value_or(path).str();
    profile.description = object->getString("description").value_or("").str();
    return std::move(profile);
  }

private:
  void fail(const llvm::Twine &why) {
    if (missing.empty())
      missing = why.str();
  }

  void number(const llvm::json::Object *o, StringRef key, StringRef where, double &out,
              bool positive) {
    std::optional<double> x = o ? o->getNumber(key) : std::nullopt;
    if (!x || *x < 0 || (positive && *x == 0))
      return fail(where + key + (x ? " must be positive" : " is missing or not a number"));
    out = *x;
  }

  /// A curve: [size, value] pairs, both positive, sizes ascending.
  void curve(const llvm::json::Value *v, const std::string &where, SizeCurve &out) {
    const llvm::json::Array *points = v ? v->getAsArray() : nullptr;
    auto bad = [&](StringRef why) { fail(where + " " + why); };
    if (!points || points->empty())
      return bad("must be a non-empty array of [size, value] pairs");
    for (const llvm::json::Value &point : *points) {
      const llvm::json::Array *pair = point.getAsArray();
      std::optional<double> size = pair && pair->size() == 2 ? (*pair)[0].getAsNumber()
                                                              : std::nullopt;
      std::optional<double> value = size ? (*pair)[1].getAsNumber() : std::nullopt;
      if (!value || *size <= 0 || *value <= 0)
        return bad("must be a non-empty array of [size, value] pairs, both positive");
      if (!out.empty() && *size <= out.back().first)
        return bad("must be in ascending order of size");
      out.emplace_back(*size, *value);
    }
  }

  /// Every field of an object must be one of `known`: a misspelling is an
  /// error, not a rate silently left out.
  void onlyFields(const llvm::json::Object *o, const std::string &where, ArrayRef<StringRef> known,
                  StringRef what) {
    for (const auto &[field, value] : *o)
      if (!llvm::is_contained(known, StringRef(field)))
        fail(where + StringRef(field) + " is not a field of " + what + " (" +
             llvm::join(known, ", ") + ")");
  }

  /// `o`'s field `key` as an object (null where absent); a field that is not
  /// one is an error, not a section silently left out.
  const llvm::json::Object *objectField(const llvm::json::Object *o, StringRef key,
                                        const std::string &where) {
    const llvm::json::Value *value = o ? o->get(key) : nullptr;
    const llvm::json::Object *field = value ? value->getAsObject() : nullptr;
    if (value && !field)
      fail(where + key + " must be an object");
    return field;
  }

  /// A section's object (`what`), its fields checked like the top level's.
  const llvm::json::Object *section(StringRef key, ArrayRef<StringRef> known, StringRef what) {
    const llvm::json::Object *o = objectField(object, key, "");
    if (o)
      onlyFields(o, (key + ".").str(), known, what);
    return o;
  }

  /// The matrix products' rates, and the fused attention's.
  void readProductRates() {
    const llvm::json::Object *flops = section("matmul_flops", {"f32", "bf16"}, "the product rates");
    number(flops, "f32", "matmul_flops.", profile.matmulFlopsF32, true);
    number(flops, "bf16", "matmul_flops.", profile.matmulFlopsBF16, true);
    const llvm::json::Object *attention =
        section("attention_flops", {"forward", "backward", "head_dim", "row_overhead"},
                "the fused attention's rates");
    // Optional: a profile of a device without the fused attention has none.
    if (attention) {
      number(attention, "forward", "attention_flops.", profile.attentionFlopsForward, true);
      number(attention, "backward", "attention_flops.", profile.attentionFlopsBackward, true);
      if (attention->get("head_dim") || attention->get("row_overhead")) {
        number(attention, "head_dim", "attention_flops.", profile.attentionHeadDim, true);
        number(attention, "row_overhead", "attention_flops.", profile.attentionRowOverhead, false);
      }
    }
  }

  /// The loops' arithmetic rates and the memory's.
  void readLoopRates() {
    number(object, "vector_flops", "", profile.vectorFlops, true);
    number(object, "vector_divides", "", profile.vectorDivides, true);
    profile.scalarFlops = profile.vectorFlops;
    profile.dependentFlops = std::numeric_limits<double>::infinity();
    if (object->get("scalar_flops") || object->get("dependent_flops")) {
      number(object, "scalar_flops", "", profile.scalarFlops, true);
      number(object, "dependent_flops", "", profile.dependentFlops, true);
    }
    number(object, "memory_bandwidth", "", profile.memoryBandwidth, true);
  }

  /// Optional: a GPU's parallelism, for kernels that cannot fill it.
  void readKernels() {
    const llvm::json::Object *kernels =
        section("kernels", {"multiprocessors", "serial_iteration", "memory_carried_iteration"},
                "a GPU's kernels");
    if (!kernels)
      return;
    double multiprocessors = 0;
    number(kernels, "multiprocessors", "kernels.", multiprocessors, true);
    number(kernels, "serial_iteration", "kernels.", profile.serialIterationSeconds, true);
    number(kernels, "memory_carried_iteration", "kernels.",
           profile.memoryCarriedIterationSeconds, true);
    profile.multiprocessors = static_cast<int64_t>(multiprocessors);
    if (profile.multiprocessors != multiprocessors)
      fail("kernels.multiprocessors must be a whole number");
  }

  /// A kind's rates, and its measured times where given.
  void rates(const llvm::json::Object *o, const std::string &where, AlphaBeta &out) {
    number(o, "latency", where, out.latency, false);
    number(o, "bandwidth", where, out.bandwidth, true);
    const llvm::json::Object *measured = objectField(o, "measured", where);
    if (!measured)
      return;
    std::string at = where + "measured.";
    onlyFields(measured, at, {"ranks", "seconds_by_bytes"}, "measured times");
    double ranks = 0;
    number(measured, "ranks", at, ranks, true);
    out.measuredRanks = static_cast<int64_t>(ranks);
    if (out.measuredRanks != ranks || (ranks != 0 && ranks < 2))
      fail(at + "ranks must be a whole number of at least 2");
    curve(measured->get("seconds_by_bytes"), at + "seconds_by_bytes", out.measuredSeconds);
  }

  /// A link's latency and bandwidth are its all-gather's, and its
  /// reduce-scatter's unless `reduce_scatter` gives the latter's own.
  void readLink(StringRef key, LinkProfile &link) {
    const llvm::json::Object *o =
        section(key, {"latency", "bandwidth", "measured", "reduce_scatter"}, "a link");
    std::string where = (key + ".").str();
    rates(o, where, link.gather);
    link.reduce = link.gather;
    if (o && o->get("reduce_scatter")) {
      const llvm::json::Object *reduce = objectField(o, "reduce_scatter", where);
      where += "reduce_scatter.";
      link.reduce = AlphaBeta();
      if (reduce)
        onlyFields(reduce, where, {"latency", "bandwidth", "measured"}, "a collective's rates");
      rates(reduce, where, link.reduce);
    }
  }

  /// The host's rates: required beside a device (offload's update runs
  /// there); on the CPU the host is the device.
  void readHost() {
    if (const llvm::json::Object *host =
            section("host", {"memory_bandwidth", "vector_flops", "vector_divides"}, "the host");
        host || profile.hostDeviceBandwidth > 0) {
      number(host, "memory_bandwidth", "host.", profile.hostMemoryBandwidth, true);
      number(host, "vector_flops", "host.", profile.hostVectorFlops, true);
      number(host, "vector_divides", "host.", profile.hostVectorDivides, true);
    } else {
      profile.hostMemoryBandwidth = profile.memoryBandwidth;
      profile.hostVectorFlops = profile.vectorFlops;
      profile.hostVectorDivides = profile.vectorDivides;
    }
  }

  /// The runtime's own device memory beside the arena.
  void readRuntimeBytes() {
    const llvm::json::Object *runtime =
        section("runtime_bytes", {"context", "collectives", "workspace"}, "the runtime's memory");
    number(runtime, "context", "runtime_bytes.", context, false);
    number(runtime, "collectives", "runtime_bytes.", collectives, false);
    number(runtime, "workspace", "runtime_bytes.", workspace, false);
  }

  const llvm::json::Object *object;
  DeviceProfile profile;
  // The first thing wrong with the file.
  std::string missing;
  // ranks_per_node as read (finish checks that it is whole), and the
  // runtime's bytes.
  double ranksPerNode = 0;
  double context = 0, collectives = 0, workspace = 0;
};

/// Reads a profile file: every rate is required, so a misspelt key is an
/// error rather than a silent zero.
llvm::Expected<DeviceProfile> parse(StringRef path, StringRef text) {
  llvm::Expected<llvm::json::Value> value = llvm::json::parse(text);
  if (!value)
    return profileFileError(path, llvm::toString(value.takeError()));
  const llvm::json::Object *object = value->getAsObject();
  if (!object)
    return profileFileError(path, "a device profile is a JSON object");
  ProfileFileReader reader(object);
  reader.readSections();
  return reader.finish(path);
}

} // namespace

StringRef DeviceProfile::builtinNames() { return "h100-sxm, h200, cpu"; }

llvm::Expected<DeviceProfile> DeviceProfile::load(StringRef nameOrFile) {
  if (nameOrFile == "h100-sxm")
    return h100Sxm();
  if (nameOrFile == "h200")
    return h200();
  if (nameOrFile == "cpu")
    return cpu();
  llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> file =
      llvm::MemoryBuffer::getFile(nameOrFile);
  if (!file)
    return llvm::createStringError(nameOrFile + ": " + file.getError().message() +
                                   " (a profile file, or one of " + builtinNames() + ")");
  return parse(nameOrFile, (*file)->getBuffer());
}

namespace {

/// The curve's value at `size` between its points, interpolated by `between`
/// (the two points and the fraction of the way); std::nullopt beyond the last.
template <typename Between>
std::optional<double> along(const SizeCurve &curve, double size, Between between) {
  if (curve.empty() || size > curve.back().first)
    return std::nullopt;
  if (size <= curve.front().first)
    return curve.front().second;
  auto above = llvm::upper_bound(curve, size, [](double s, const std::pair<double, double> &point) {
    return s <= point.first;
  });
  return between(*std::prev(above), *above, size);
}

} // namespace

double DeviceProfile::attentionRateAt(double flops, double headDim) const {
  if (attentionHeadDim <= 0 || headDim <= 0 || headDim >= attentionHeadDim)
    return flops;
  auto efficiency = [&](double d) { return d / (d + attentionRowOverhead); };
  return flops * efficiency(headDim) / efficiency(attentionHeadDim);
}

double DeviceProfile::memoryBandwidthAt(double footprint) const {
  // A rate changes with the cache level the footprint fits in, at sizes
  // spaced by factors: log-linear between the measured footprints.
  return along(memoryBandwidthByFootprint, footprint,
               [](auto low, auto high, double size) {
                 double t = std::log(size / low.first) / std::log(high.first / low.first);
                 return low.second + t * (high.second - low.second);
               })
      .value_or(memoryBandwidth);
}

LinkProfile DeviceProfile::crossNodeRing(int64_t groupRanksPerNode) const {
  double interfaces = static_cast<double>(
      std::clamp<int64_t>(groupRanksPerNode, 1, std::max<int64_t>(1, nicsPerNode)));
  // More interfaces than one help up to the ring's rate within the node.
  auto spread = [&](const AlphaBeta &nic, const AlphaBeta &within) {
    AlphaBeta rates = nic;
    rates.bandwidth =
        std::min(nic.bandwidth * interfaces, std::max(nic.bandwidth, within.bandwidth));
    return rates;
  };
  return {spread(interNode.gather, intraNode.gather), spread(interNode.reduce, intraNode.reduce)};
}

double mlir::fsdp::ringSeconds(CollectiveKind kind, int64_t groupRanks, double totalBytes,
                               const LinkProfile &link) {
  if (groupRanks <= 1)
    return 0;
  double steps = static_cast<double>(groupRanks - 1);
  double share = steps / static_cast<double>(groupRanks);
  auto ring = [&](const AlphaBeta &rates) {
    const SizeCurve &measured = rates.measuredSeconds;
    if (rates.measuredRanks == groupRanks && !measured.empty()) {
      // Linear in bytes between measured sizes, and along the last two
      // points' line beyond the largest (the bandwidth's slope with one).
      auto line = [](auto low, auto high, double size) {
        double t = (size - low.first) / (high.first - low.first);
        return low.second + t * (high.second - low.second);
      };
      if (std::optional<double> seconds = along(measured, totalBytes, line))
        return *seconds;
      return measured.size() > 1 ? line(measured.end()[-2], measured.back(), totalBytes)
                                 : measured.back().second +
                                       share * (totalBytes - measured.back().first) /
                                           rates.bandwidth;
    }
    return steps * rates.latency + share * totalBytes / rates.bandwidth;
  };
  switch (kind) {
  case CollectiveKind::AllGather:
    return ring(link.gather);
  case CollectiveKind::ReduceScatter:
    return ring(link.reduce);
  case CollectiveKind::AllReduce:
    return ring(link.reduce) + ring(link.gather);
  }
  llvm_unreachable("a collective's kind");
}
