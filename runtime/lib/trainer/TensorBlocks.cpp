//===- TensorBlocks.cpp - A split parameter's block in the whole ----------===//

#include "trainer/TensorBlocks.h"

#include <algorithm>

namespace fsdprt {

BlockLayout BlockLayout::of(const std::vector<int64_t> &shape, std::optional<int64_t> splitDim,
                            int64_t blocks, const std::vector<int64_t> &parts) {
  BlockLayout layout;
  for (int64_t dim : shape)
    layout.blockElements *= dim;
  if (!splitDim || blocks == 1) {
    layout.runElements = layout.inner = layout.blockElements;
    return layout;
  }
  layout.blocks = blocks;
  auto dim = static_cast<size_t>(*splitDim);
  for (size_t i = dim + 1; i < shape.size(); ++i)
    layout.inner *= shape[i];
  layout.runElements = shape[dim] * layout.inner;
  // One part is the whole dimension: the plain layout, on its fast path.
  if (parts.size() > 1) {
    layout.partStarts.push_back(0);
    for (int64_t part : parts)
      layout.partStarts.push_back(layout.partStarts.back() + part / blocks);
  }
  return layout;
}

size_t BlockLayout::partOf(int64_t column) const {
  // The last start not after `column` (parts are few: GPT-2's c_attn has 3).
  auto next = std::upper_bound(partStarts.begin(), partStarts.end(), column);
  return static_cast<size_t>(next - partStarts.begin()) - 1;
}

int64_t BlockLayout::wholeIndex(int64_t tensorIndex, int64_t element) const {
  int64_t block = blocks == 1 ? 0 : tensorIndex;
  int64_t run = element / runElements;
  if (partStarts.empty())
    return (run * blocks + block) * runElements + element % runElements;
  // Part i's block t lies at G_i + t x p_i / T along the whole's split
  // dimension, where G_i = T x (its start in the block).
  int64_t within = element % runElements;
  int64_t column = within / inner;
  size_t i = partOf(column);
  int64_t start = partStarts[i], size = partStarts[i + 1] - start;
  int64_t wholeColumn = blocks * start + block * size + (column - start);
  return run * blocks * runElements + wholeColumn * inner + within % inner;
}

int64_t BlockLayout::runLeft(int64_t element) const {
  int64_t within = element % runElements;
  if (partStarts.empty())
    return runElements - within;
  // To the end of the part's block in this row.
  return partStarts[partOf(within / inner) + 1] * inner - within;
}

BlockLayout::Place BlockLayout::locate(int64_t whole) const {
  int64_t stride = runElements * blocks;
  int64_t run = whole / stride, within = whole % stride;
  Place place;
  if (partStarts.empty()) {
    place.block = within / runElements;
    int64_t offset = within % runElements;
    place.element = run * runElements + offset;
    place.runLeft = runElements - offset;
    return place;
  }
  // The part whose whole columns [T x start, T x end) hold this one.
  int64_t wholeColumn = within / inner, offset = within % inner;
  size_t i = partOf(wholeColumn / blocks);
  int64_t start = partStarts[i], size = partStarts[i + 1] - start;
  int64_t intoPart = wholeColumn - blocks * start;
  place.block = intoPart / size;
  int64_t column = start + intoPart % size;
  place.element = run * runElements + column * inner + offset;
  place.runLeft = (start + size - column) * inner - offset;
  return place;
}

std::vector<int64_t> BlockLayout::partSizes() const {
  if (partStarts.empty())
    return {runElements / inner};
  std::vector<int64_t> sizes;
  for (size_t i = 0; i + 1 < partStarts.size(); ++i)
    sizes.push_back(partStarts[i + 1] - partStarts[i]);
  return sizes;
}

} // namespace fsdprt
