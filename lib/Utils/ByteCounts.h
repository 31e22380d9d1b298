//===- ByteCounts.h - Byte counts as people read them -----------*- C++ -*-===//
//
// The one way the compiler writes a byte count for people: exact, with
// thousands separators, beside its size in GiB (2^30 bytes), in the report,
// the budget's breakdown and fsdpc's messages alike.
//
//===----------------------------------------------------------------------===//

#ifndef FSDP_UTILS_BYTECOUNTS_H
#define FSDP_UTILS_BYTECOUNTS_H

#include <cstdint>
#include <string>

namespace mlir::fsdp {

/// `bytes` with thousands separators: `79,334,463,492`.
std::string groupedBytes(int64_t bytes);

/// `bytes` in GiB.
double gibibytes(int64_t bytes);

/// `bytes` in GiB, to two decimals: `73.89 GiB`.
std::string gibText(int64_t bytes);

} // namespace mlir::fsdp

#endif // FSDP_UTILS_BYTECOUNTS_H
