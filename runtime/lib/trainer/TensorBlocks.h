//===- TensorBlocks.h - A split parameter's block in the whole --*- C++ -*-===//
//
// With tensor_ranks > 1 (docs/Runtime.md, section 2), a parameter with a
// split_dim d is cut along d into tensor_ranks equal blocks, block t held by
// the ranks of tensor index t; the manifest's shape, and everything in the
// parameter's unit, are one block's. Read row-major, a block is a sequence of
// runs: each run is shape[d] x (the dimensions after d) elements contiguous
// in the whole parameter, and run r of block t starts at whole element
// (r x tensor_ranks + t) x run. What is the same at any tensor_ranks (initial
// values, --export, --trace-state, --init-from, checkpoints) goes through the
// whole parameter's element indices with these maps.
//
//===----------------------------------------------------------------------===//

#ifndef FSDPRT_TRAINER_TENSORBLOCKS_H
#define FSDPRT_TRAINER_TENSORBLOCKS_H

#include "abi/Manifest.h"

#include <cstdint>
#include <optional>
#include <vector>

namespace fsdprt {

/// How the blocks of one parameter lie in the whole. An unsplit parameter is
/// one block of one run: its element indices are the whole's.
struct BlockLayout {
  int64_t runElements = 1; // contiguous elements of one run
  int64_t blocks = 1;      // tensor_ranks when split, else 1
  int64_t blockElements = 1;

  /// `shape` is one block's, cut along `splitDim` (none: unsplit).
  static BlockLayout of(const std::vector<int64_t> &shape, std::optional<int64_t> splitDim,
                        int64_t blocks);
  static BlockLayout of(const ParamSpec &param) {
    return of(param.shape, param.splitDim, param.tensorBlocks);
  }

  /// The whole parameter's row-major index of element `element` of block
  /// `tensorIndex` (any tensor index of an unsplit parameter names the whole).
  int64_t wholeIndex(int64_t tensorIndex, int64_t element) const;

  /// Where whole element `whole` lies: its block, its index in the block, and
  /// how many elements from it on are contiguous in both (to its run's end).
  struct Place {
    int64_t block = 0;
    int64_t element = 0;
    int64_t runLeft = 0;
  };
  Place locate(int64_t whole) const;
};

} // namespace fsdprt

#endif // FSDPRT_TRAINER_TENSORBLOCKS_H
