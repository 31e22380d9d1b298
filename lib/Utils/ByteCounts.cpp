//===- ByteCounts.cpp - Byte counts as people read them -------------------===//

#include "Utils/ByteCounts.h"

#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"

std::string mlir::fsdp::groupedBytes(int64_t bytes) {
  std::string digits = std::to_string(bytes < 0 ? -bytes : bytes), text;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i && (digits.size() - i) % 3 == 0)
      text += ',';
    text += digits[i];
  }
  return (bytes < 0 ? "-" : "") + text;
}

double mlir::fsdp::gibibytes(int64_t bytes) {
  return static_cast<double>(bytes) / (1024.0 * 1024.0 * 1024.0);
}

std::string mlir::fsdp::gibText(int64_t bytes) {
  std::string text;
  llvm::raw_string_ostream(text) << llvm::format("%.2f GiB", gibibytes(bytes));
  return text;
}
