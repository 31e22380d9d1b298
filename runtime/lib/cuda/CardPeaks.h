//===- CardPeaks.h - The dense product rates of the GPUs we know -*- C++ -*-===//
//
// MFU divides the model's FLOPs per second by the card's peak, as NVIDIA's
// datasheets give it for dense matrices (without 2:4 sparsity): the figure
// PyTorch, torchtitan and nanoGPT users compare against. Cards are told apart
// by name, as cudaGetDeviceProperties reports it: an H100 SXM and an H100
// PCIe are both sm_90 with different clocks and SM counts.
//
//===----------------------------------------------------------------------===//

#ifndef FSDPRT_CUDA_CARDPEAKS_H
#define FSDPRT_CUDA_CARDPEAKS_H

#include "abi/Device.h"

#include <string_view>

namespace fsdprt {

/// The datasheet's dense rates of the card named `name` (`NVIDIA H100 80GB
/// HBM3`): bf16, and f32 as TF32 (`allowTf32`) or without tensor cores.
/// Rates 0 for a card not in the table.
PeakRates cardPeak(std::string_view name, bool allowTf32);

} // namespace fsdprt

#endif // FSDPRT_CUDA_CARDPEAKS_H
