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
// With split_parts (a fused product's weight: queries, keys and values side
// by side along d), d is several parts, each cut into tensor_ranks equal
// blocks, and block t is the concatenation along d of each part's t-th
// block: a row of the block along d (runElements) is then one run per part,
// each contiguous in the whole, and the runs are no longer all alike.
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
  /// The elements of one row of the block along the split dimension (its
  /// size there x the dimensions after it): one run without parts.
  int64_t runElements = 1;
  int64_t blocks = 1; // tensor_ranks when split, else 1
  int64_t blockElements = 1;
  /// The elements of one slice along the split dimension (the dimensions
  /// after it), and, with parts, where each part's block starts along it in
  /// the block: partStarts[i] = (p_0 + ... + p_{i-1}) / blocks, ending with
  /// the block's size. Empty without parts (or with one).
  int64_t inner = 1;
  std::vector<int64_t> partStarts;

  /// `shape` is one block's, cut along `splitDim` (none: unsplit); `parts`
  /// are the whole sizes of split_parts along it (empty: none).
  static BlockLayout of(const std::vector<int64_t> &shape, std::optional<int64_t> splitDim,
                        int64_t blocks, const std::vector<int64_t> &parts = {});
  static BlockLayout of(const ParamSpec &param) {
    return of(param.shape, param.splitDim, param.tensorBlocks, param.splitParts);
  }

  /// The whole parameter's row-major index of element `element` of block
  /// `tensorIndex` (any tensor index of an unsplit parameter names the whole).
  int64_t wholeIndex(int64_t tensorIndex, int64_t element) const;

  /// How many elements of a block from `element` on are contiguous in both
  /// the block and the whole (to its run's end).
  int64_t runLeft(int64_t element) const;

  /// Where whole element `whole` lies: its block, its index in the block, and
  /// how many elements from it on are contiguous in both (to its run's end).
  struct Place {
    int64_t block = 0;
    int64_t element = 0;
    int64_t runLeft = 0;
  };
  Place locate(int64_t whole) const;

  /// A split layout's (blocks > 1) parts' block sizes along the split
  /// dimension, in order; without parts, one: the block's size (what each
  /// strided copy of a part moves).
  std::vector<int64_t> partSizes() const;

private:
  /// The part holding coordinate `column` along the split dimension of a
  /// block (with parts).
  size_t partOf(int64_t column) const;
};

} // namespace fsdprt

#endif // FSDPRT_TRAINER_TENSORBLOCKS_H
