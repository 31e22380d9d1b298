//===- MappedFile.h - A data file mapped read-only --------------*- C++ -*-===//
//
// Data sets (FSDPDATA and token files) are mapped, not read, so that a large
// one does not count as heap in use and a rank touches only the pages of its
// rows.
//
//===----------------------------------------------------------------------===//

#ifndef FSDPRT_IO_MAPPEDFILE_H
#define FSDPRT_IO_MAPPEDFILE_H

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>

namespace fsdprt {

class MappedFile {
public:
  /// Maps the regular file `path` (an empty one maps to no bytes); a file that
  /// cannot be opened, examined or mapped calls `fail` with what went wrong
  /// ("cannot open: ..."), which must not return.
  MappedFile(const std::string &path, const std::function<void(const std::string &)> &fail);
  ~MappedFile();
  MappedFile(const MappedFile &) = delete;
  MappedFile &operator=(const MappedFile &) = delete;

  const uint8_t *data() const { return bytes; }
  size_t size() const { return length; }

private:
  const uint8_t *bytes = nullptr;
  size_t length = 0;
};

} // namespace fsdprt

#endif // FSDPRT_IO_MAPPEDFILE_H
