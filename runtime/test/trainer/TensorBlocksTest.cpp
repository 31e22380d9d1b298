//===- TensorBlocksTest.cpp - A split parameter's block in the whole ------===//
//
// BlockLayout against blocks built by hand: the whole parameter holding its
// own element indices 0..N-1, each part of the split dimension sliced into
// tensor_ranks blocks, block t the concatenation of every part's t-th slice.
//
//===----------------------------------------------------------------------===//

#include "trainer/TensorBlocks.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

using namespace fsdprt;

namespace {

/// A row-major tensor of element indices and its shape.
struct Tensor {
  std::vector<int64_t> shape;
  std::vector<int64_t> values;
};

int64_t elementsOf(const std::vector<int64_t> &shape) {
  int64_t count = 1;
  for (int64_t dim : shape)
    count *= dim;
  return count;
}

/// Element `index` (row-major) of a tensor of shape `shape`, as coordinates.
std::vector<int64_t> coordinatesOf(const std::vector<int64_t> &shape, int64_t index) {
  std::vector<int64_t> at(shape.size());
  for (size_t d = shape.size(); d-- > 0;) {
    at[d] = index % shape[d];
    index /= shape[d];
  }
  return at;
}

int64_t indexOf(const std::vector<int64_t> &shape, const std::vector<int64_t> &at) {
  int64_t index = 0;
  for (size_t d = 0; d < shape.size(); ++d)
    index = index * shape[d] + at[d];
  return index;
}

/// The whole parameter: element i holds i.
Tensor iota(const std::vector<int64_t> &shape) {
  Tensor whole{shape, {}};
  for (int64_t i = 0; i < elementsOf(shape); ++i)
    whole.values.push_back(i);
  return whole;
}

/// `tensor`[..., begin:end, ...] along `dim`.
Tensor slice(const Tensor &tensor, size_t dim, int64_t begin, int64_t end) {
  Tensor out{tensor.shape, {}};
  out.shape[dim] = end - begin;
  for (int64_t e = 0; e < elementsOf(out.shape); ++e) {
    std::vector<int64_t> at = coordinatesOf(out.shape, e);
    at[dim] += begin;
    out.values.push_back(tensor.values[static_cast<size_t>(indexOf(tensor.shape, at))]);
  }
  return out;
}

/// `a` and `b` side by side along `dim`.
Tensor concatenate(const Tensor &a, const Tensor &b, size_t dim) {
  Tensor out{a.shape, {}};
  out.shape[dim] += b.shape[dim];
  for (int64_t e = 0; e < elementsOf(out.shape); ++e) {
    std::vector<int64_t> at = coordinatesOf(out.shape, e);
    const Tensor &from = at[dim] < a.shape[dim] ? a : b;
    if (&from == &b)
      at[dim] -= a.shape[dim];
    out.values.push_back(from.values[static_cast<size_t>(indexOf(from.shape, at))]);
  }
  return out;
}

/// Block `t` of `blocks` of the whole `shape` split along `dim` into `parts`
/// (whole sizes): every part's t-th slice, in order.
Tensor blockByHand(const std::vector<int64_t> &shape, size_t dim, const std::vector<int64_t> &parts,
                   int64_t blocks, int64_t t) {
  Tensor whole = iota(shape);
  Tensor block;
  int64_t start = 0;
  for (int64_t part : parts) {
    int64_t size = part / blocks;
    Tensor piece = slice(whole, dim, start + t * size, start + (t + 1) * size);
    block = block.shape.empty() ? piece : concatenate(block, piece, dim);
    start += part;
  }
  return block;
}

/// Checks `layout` (of a block of the whole `shape` split along `dim` over
/// `blocks` tensor ranks) against the blocks built by hand from `parts`:
/// every element's whole index, locate() inverting it, and each run from any
/// element contiguous in both, ending where the block's next element lies
/// elsewhere in the whole.
void expectBlocksByHand(const BlockLayout &layout, const std::vector<int64_t> &shape, size_t dim,
                        const std::vector<int64_t> &parts, int64_t blocks) {
  for (int64_t t = 0; t < blocks; ++t) {
    Tensor block = blockByHand(shape, dim, parts, blocks, t);
    ASSERT_EQ(layout.blockElements, elementsOf(block.shape));
    for (int64_t e = 0; e < layout.blockElements; ++e) {
      int64_t whole = layout.wholeIndex(t, e);
      ASSERT_EQ(whole, block.values[static_cast<size_t>(e)]) << "block " << t << ", element " << e;
      BlockLayout::Place place = layout.locate(whole);
      ASSERT_EQ(place.block, t) << "whole element " << whole;
      ASSERT_EQ(place.element, e) << "whole element " << whole;
      ASSERT_EQ(place.runLeft, layout.runLeft(e)) << "block " << t << ", element " << e;
      ASSERT_GE(place.runLeft, 1);
      ASSERT_LE(e + place.runLeft, layout.blockElements);
      for (int64_t k = 1; k < place.runLeft; ++k)
        ASSERT_EQ(layout.wholeIndex(t, e + k), whole + k)
            << "block " << t << ", element " << e << " + " << k;
      int64_t after = e + place.runLeft;
      if (after < layout.blockElements) {
        ASSERT_NE(layout.wholeIndex(t, after), whole + place.runLeft)
            << "block " << t << ", element " << e << ": the run stops short";
      }
    }
  }
}

/// One block's shape: the whole's, its split dimension cut into `blocks`.
std::vector<int64_t> blockShape(std::vector<int64_t> shape, size_t dim, int64_t blocks) {
  shape[dim] /= blocks;
  return shape;
}

// GPT-2's c_attn in small: [4, 2, 6] along the split dimension of 12, each
// part cut into 2 blocks, so a block holds 2 + 1 + 3 of its 6.
TEST(TensorBlocks, PartsAreEachCutIntoBlocks) {
  std::vector<int64_t> parts = {4, 2, 6};
  struct Case {
    std::vector<int64_t> whole;
    size_t dim;
  };
  for (const Case &c : {Case{{3, 12}, 1}, Case{{12, 3}, 0}, Case{{2, 12, 2}, 1}}) {
    SCOPED_TRACE(testing::Message() << "whole " << formatShape(c.whole) << " along " << c.dim);
    std::vector<int64_t> block = blockShape(c.whole, c.dim, 2);
    BlockLayout layout = BlockLayout::of(block, static_cast<int64_t>(c.dim), 2, parts);
    EXPECT_EQ(layout.partSizes(), (std::vector<int64_t>{2, 1, 3}));
    expectBlocksByHand(layout, c.whole, c.dim, parts, 2);
  }
}

// Without parts, or with one (the whole dimension), the layout is the plain
// one: block t holds the t-th slice of the whole dimension.
TEST(TensorBlocks, NoPartsIsThePlainLayout) {
  std::vector<int64_t> whole = {4, 6, 3};
  for (int64_t blocks : {1, 2, 3})
    for (size_t dim = 0; dim < whole.size(); ++dim) {
      if (whole[dim] % blocks != 0)
        continue;
      SCOPED_TRACE(testing::Message() << blocks << " blocks along " << dim);
      std::vector<int64_t> block = blockShape(whole, dim, blocks);
      std::vector<int64_t> one = {whole[dim]};
      for (const std::vector<int64_t> &parts : {std::vector<int64_t>{}, one}) {
        BlockLayout layout = BlockLayout::of(block, static_cast<int64_t>(dim), blocks, parts);
        EXPECT_TRUE(layout.partStarts.empty()) << "the fast path";
        if (blocks > 1) {
          EXPECT_EQ(layout.partSizes(), (std::vector<int64_t>{block[dim]}));
        }
        expectBlocksByHand(layout, whole, dim, one, blocks);
      }
    }
}

// One tensor rank holds the whole, parts or not.
TEST(TensorBlocks, OneBlockIsTheWhole) {
  BlockLayout layout = BlockLayout::of({3, 12}, 1, 1, {4, 2, 6});
  EXPECT_EQ(layout.wholeIndex(0, 17), 17);
  EXPECT_EQ(layout.locate(17).block, 0);
  EXPECT_EQ(layout.locate(17).runLeft, 36 - 17);
  EXPECT_EQ(layout.runLeft(17), 36 - 17);
}

// A parameter's layout has its split_parts.
TEST(TensorBlocks, ParamsPassTheirParts) {
  ParamSpec param;
  param.shape = {3, 6};
  param.splitDim = 1;
  param.tensorBlocks = 2;
  param.splitParts = {4, 2, 6};
  BlockLayout layout = BlockLayout::of(param);
  EXPECT_EQ(layout.partStarts, (std::vector<int64_t>{0, 2, 3, 6}));
  expectBlocksByHand(layout, {3, 12}, 1, param.splitParts, 2);
}

} // namespace
