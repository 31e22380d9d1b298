//===- DeviceProfile.cpp - built-in device profiles and profile files -----===//
//
// The built-in figures are planning figures, not peaks: what large cuBLAS
// products, copy kernels and NCCL rings reach on the hardware (sources in
// docs/CostModel.md). A measured profile file replaces them.
//
//===----------------------------------------------------------------------===//

#include "fsdp/Analysis/DeviceProfile.h"

#include "llvm/Support/ErrorHandling.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"

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
  profile.vectorFlops = 50e12;
  profile.memoryBandwidth = 2.8e12; // HBM3: 3.35 TB/s peak
  profile.opOverhead = 5e-6;        // a kernel launch from the host
  profile.ranksPerNode = 8;
  // NCCL's rings reduce as they move (in the copy kernels): both kinds at
  // the link's rate.
  AlphaBeta nvlink{/*latency=*/3e-6, /*bandwidth=*/360e9}; // NCCL ring bus bandwidth
  AlphaBeta infiniband{/*latency=*/10e-6, /*bandwidth=*/45e9}; // 400 Gb/s = 50 GB/s
  profile.intraNode = {nvlink, nvlink};
  profile.interNode = {infiniband, infiniband};
  profile.hostDeviceBandwidth = 50e9; // PCIe Gen5 x16, pinned memory
  // Two sockets of 8-channel DDR5 (about 600 GB/s) and about 100 cores shared
  // by 8 ranks: what a threaded, vectorised update gets of them.
  profile.hostMemoryBandwidth = 60e9;
  profile.hostVectorFlops = 200e9;
  profile.asyncCollectives = true;
  profile.runtime = kCudaRuntimeMemory;
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
  return profile;
}

/// Reads a profile file: every rate is required, so a misspelt key is an
/// error rather than a silent zero.
llvm::Expected<DeviceProfile> parse(StringRef path, StringRef text) {
  namespace json = llvm::json;
  auto error = [&](const llvm::Twine &message) {
    return llvm::createStringError(path + ": " + message);
  };
  llvm::Expected<json::Value> value = json::parse(text);
  if (!value)
    return error(llvm::toString(value.takeError()));
  const json::Object *object = value->getAsObject();
  if (!object)
    return error("a device profile is a JSON object");
  DeviceProfile profile;
  std::string missing;
  auto number = [&](const json::Object *o, StringRef key, StringRef where, double &out,
                    bool positive) {
    std::optional<double> x = o ? o->getNumber(key) : std::nullopt;
    if (!x || *x < 0 || (positive && *x == 0)) {
      if (missing.empty())
        missing = (where + key + (x ? " must be positive" : " is missing or not a number")).str();
      return;
    }
    out = *x;
  };
  const json::Object *flops = object->getObject("matmul_flops");
  number(flops, "f32", "matmul_flops.", profile.matmulFlopsF32, true);
  number(flops, "bf16", "matmul_flops.", profile.matmulFlopsBF16, true);
  number(object, "vector_flops", "", profile.vectorFlops, true);
  number(object, "memory_bandwidth", "", profile.memoryBandwidth, true);
  number(object, "op_overhead", "", profile.opOverhead, false);
  number(object, "host_device_bandwidth", "", profile.hostDeviceBandwidth, false);
  // A link's latency and bandwidth are its all-gather's, and its
  // reduce-scatter's unless `reduce_scatter` gives the latter's own.
  for (auto [key, link] : {std::pair<StringRef, LinkProfile *>{"intra_node", &profile.intraNode},
                           {"inter_node", &profile.interNode}}) {
    const json::Object *o = object->getObject(key);
    std::string where = (key + ".").str();
    number(o, "latency", where, link->gather.latency, false);
    number(o, "bandwidth", where, link->gather.bandwidth, true);
    link->reduce = link->gather;
    if (!o)
      continue;
    for (const auto &[field, value] : *o)
      if (field != "latency" && field != "bandwidth" && field != "reduce_scatter" &&
          missing.empty())
        missing = where + field.str() + " is not a field of a link (latency, bandwidth, " +
                  "reduce_scatter)";
    if (o->get("reduce_scatter")) {
      const json::Object *reduce = o->getObject("reduce_scatter");
      where += "reduce_scatter.";
      number(reduce, "latency", where, link->reduce.latency, false);
      number(reduce, "bandwidth", where, link->reduce.bandwidth, true);
    }
  }
  // The host's rates: required beside a device (offload's update runs
  // there); on the CPU the host is the device.
  if (const json::Object *host = object->getObject("host");
      host || profile.hostDeviceBandwidth > 0) {
    number(host, "memory_bandwidth", "host.", profile.hostMemoryBandwidth, true);
    number(host, "vector_flops", "host.", profile.hostVectorFlops, true);
  } else {
    profile.hostMemoryBandwidth = profile.memoryBandwidth;
    profile.hostVectorFlops = profile.vectorFlops;
  }
  double ranksPerNode = 0;
  number(object, "ranks_per_node", "", ranksPerNode, true);
  profile.ranksPerNode = static_cast<int64_t>(ranksPerNode);
  const json::Object *runtime = object->getObject("runtime_bytes");
  double context = 0, collectives = 0, workspace = 0;
  number(runtime, "context", "runtime_bytes.", context, false);
  number(runtime, "collectives", "runtime_bytes.", collectives, false);
  number(runtime, "workspace", "runtime_bytes.", workspace, false);
  if (!missing.empty())
    return error(missing);
  if (profile.ranksPerNode != ranksPerNode)
    return error("ranks_per_node must be a whole number");
  profile.runtime = {static_cast<int64_t>(context), static_cast<int64_t>(collectives),
                     static_cast<int64_t>(workspace)};
  std::optional<bool> async = object->getBoolean("async_collectives");
  if (!async)
    return error("async_collectives is missing or not true/false");
  profile.asyncCollectives = *async;
  profile.name = object->getString("name").value_or(path).str();
  profile.description = object->getString("description").value_or("").str();
  return profile;
}

} // namespace

StringRef DeviceProfile::builtinNames() { return "h100-sxm, cpu"; }

llvm::Expected<DeviceProfile> DeviceProfile::load(StringRef nameOrFile) {
  if (nameOrFile == "h100-sxm")
    return h100Sxm();
  if (nameOrFile == "cpu")
    return cpu();
  llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> file =
      llvm::MemoryBuffer::getFile(nameOrFile);
  if (!file)
    return llvm::createStringError(nameOrFile + ": " + file.getError().message() +
                                   " (a profile file, or one of " + builtinNames() + ")");
  return parse(nameOrFile, (*file)->getBuffer());
}

double mlir::fsdp::ringSeconds(CollectiveKind kind, int64_t groupRanks, double totalBytes,
                               const LinkProfile &link) {
  if (groupRanks <= 1)
    return 0;
  double steps = static_cast<double>(groupRanks - 1);
  auto ring = [&](const AlphaBeta &rates) {
    return steps * rates.latency +
           steps / static_cast<double>(groupRanks) * totalBytes / rates.bandwidth;
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
