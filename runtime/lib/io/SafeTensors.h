//===- SafeTensors.h - --export and --init-from -----------------*- C++ -*-===//
//
// The parameters in the safetensors format (github.com/huggingface/
// safetensors), which the ecosystem reads and writes: an 8-byte little-endian
// header size, a JSON header naming each tensor's dtype, shape and byte range,
// then the tensors' bytes, row-major and little-endian.
//
// --export gathers one parameter at a time to rank 0, which streams it to the
// file after a header computed from the manifest alone: no process ever holds
// the whole model. --init-from has every rank read only the elements of its
// own shards (of its blocks of split parameters), converted to the
// parameter's dtype. The file holds whole tensors at any tensor_ranks.
//
//===----------------------------------------------------------------------===//

#ifndef FSDPRT_IO_SAFETENSORS_H
#define FSDPRT_IO_SAFETENSORS_H

#include "abi/Manifest.h"
#include "trainer/HostShards.h"
#include "trainer/Ranks.h"

#include <map>
#include <string>

namespace fsdprt {

class OutputFile;

/// The bytes before the tensors of a file holding every parameter of the
/// manifest, in manifest order, as `dtype` (f32 or bf16), with `metadata`
/// as the header's __metadata__: the size, then the JSON padded with spaces
/// so that the tensors start 8-byte aligned.
std::string safetensorsHeader(const Manifest &manifest, DType dtype,
                              const std::map<std::string, std::string> &metadata);

/// Writes every parameter to `out` on rank 0 (null elsewhere) in `dtype`.
/// Collective over the ranks of replica 0 (the shards are on the host).
void exportSafetensors(const Manifest &manifest, const RankPlace &place, const HostShards &shards,
                       OutputFile *out, DType dtype,
                       const std::map<std::string, std::string> &metadata);

/// Reads the elements this rank's shard owns of its blocks of every parameter
/// (place.shardIndex, place.tensorIndex) from the safetensors file `path`
/// into the parameter shards of `shards`. The file must hold exactly the
/// model's parameters, by name, with their whole shapes, in
/// f64, f32, f16 or bf16; everything that differs is one fatal error that
/// lists it (missing, unexpected and mismatched tensors).
void initFromSafetensors(const Manifest &manifest, const std::string &path, const RankPlace &place,
                         const HostShards &shards);

} // namespace fsdprt

#endif // FSDPRT_IO_SAFETENSORS_H
