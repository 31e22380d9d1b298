//===- TestMatrices.h - Small row-major matrices for product tests -*- C++ -*-===//

#ifndef FSDPRT_TEST_SUPPORT_TESTMATRICES_H
#define FSDPRT_TEST_SUPPORT_TESTMATRICES_H

#include <cstddef>
#include <cstdint>
#include <vector>

namespace test {

/// Row-major storage of a rows x cols matrix with row stride `ld`, filled with
/// small integers so that float products are exact; padding holds -1000.
inline std::vector<float> matrix(int64_t rows, int64_t cols, int64_t ld, int salt) {
  std::vector<float> m(static_cast<size_t>(rows * ld), -1000.0f);
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j)
      m[i * ld + j] = static_cast<float>((i * 7 + j * 3 + salt) % 11 - 5);
  return m;
}

} // namespace test

#endif // FSDPRT_TEST_SUPPORT_TESTMATRICES_H
