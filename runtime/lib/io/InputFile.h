//===- InputFile.h - A file the trainer reads parts of ----------*- C++ -*-===//
//
// --init-from files and checkpoint shards: every rank reads only the byte
// ranges of its own shards (pread), never the whole file. Any error is fatal
// and names the flag and the file.
//
//===----------------------------------------------------------------------===//

#ifndef FSDPRT_IO_INPUTFILE_H
#define FSDPRT_IO_INPUTFILE_H

#include "abi/DType.h"

#include <cstddef>
#include <cstdint>
#include <string>

namespace fsdprt {

/// How a file stores real numbers: what --init-from converts from.
enum class StoredReal { F64, F32, F16, BF16 };

size_t storedRealSize(StoredReal type);
StoredReal storedRealOf(DType type); // f32 or bf16

class InputFile {
public:
  InputFile(std::string flag, std::string path);
  ~InputFile();
  InputFile(const InputFile &) = delete;
  InputFile &operator=(const InputFile &) = delete;

  int64_t size() const { return bytes; }
  const std::string &name() const { return path; }

  /// Reads exactly `count` bytes at `offset`; a short file is an error.
  void read(int64_t offset, void *dst, int64_t count) const;

  /// Reads `count` elements stored as `from` at `offset` into `dst` as
  /// `to` (f32 or bf16), rounding to nearest even when narrowing; through
  /// a bounded buffer when the types differ.
  void readReals(int64_t offset, StoredReal from, int64_t count, void *dst, DType to) const;

  /// Formats an error about this file: "<flag> '<path>': <what>".
  [[noreturn]] void fail(const std::string &what) const;

private:
  std::string flag;
  std::string path;
  int fd = -1;
  int64_t bytes = 0;
};

} // namespace fsdprt

#endif // FSDPRT_IO_INPUTFILE_H
