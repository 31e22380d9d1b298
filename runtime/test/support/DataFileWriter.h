//===- DataFileWriter.h - Builds FSDPDATA files byte by byte ----*- C++ -*-===//
//
// Written from the format table of docs/Runtime.md, independently of the
// reader, so that tests can also build every kind of broken file.
//
//===----------------------------------------------------------------------===//

#ifndef FSDPRT_TEST_SUPPORT_DATAFILEWRITER_H
#define FSDPRT_TEST_SUPPORT_DATAFILEWRITER_H

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

namespace fsdprt::test {

class Bytes {
public:
  template <typename T> Bytes &put(T value) {
    const auto *p = reinterpret_cast<const uint8_t *>(&value);
    data.insert(data.end(), p, p + sizeof(T));
    return *this;
  }
  Bytes &text(const char *s) {
    data.insert(data.end(), s, s + std::strlen(s));
    return *this;
  }
  /// A tensor header: dtype code, rank, per-sample dimensions.
  Bytes &tensor(uint32_t code, std::vector<int64_t> dims) {
    put<uint32_t>(code).put<uint32_t>(static_cast<uint32_t>(dims.size()));
    for (int64_t d : dims)
      put<int64_t>(d);
    return *this;
  }
  Bytes &truncate(size_t size) {
    data.resize(size);
    return *this;
  }
  size_t size() const { return data.size(); }

  /// Writes the bytes to `path`, replacing it.
  void writeTo(const std::string &path) const {
    FILE *f = std::fopen(path.c_str(), "wb");
    if (!f)
      return;
    if (!data.empty())
      std::fwrite(data.data(), 1, data.size(), f);
    std::fclose(f);
  }

private:
  std::vector<uint8_t> data;
};

} // namespace fsdprt::test

#endif // FSDPRT_TEST_SUPPORT_DATAFILEWRITER_H
