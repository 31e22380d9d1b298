//===- InputFile.cpp - A file the trainer reads parts of ------------------===//

#include "io/InputFile.h"

#include "abi/Error.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <vector>

namespace fsdprt {

size_t storedRealSize(StoredReal type) {
  switch (type) {
  case StoredReal::F64:
    return 8;
  case StoredReal::F32:
    return 4;
  case StoredReal::F16:
  case StoredReal::BF16:
    return 2;
  }
  return 4;
}

StoredReal storedRealOf(DType type) {
  return type == DType::BF16 ? StoredReal::BF16 : StoredReal::F32;
}

/// IEEE binary16 to double (exact): subnormals, infinities and NaN included.
static double halfToDouble(uint16_t bits) {
  int exponent = (bits >> 10) & 0x1F;
  int mantissa = bits & 0x3FF;
  double sign = (bits & 0x8000) ? -1.0 : 1.0;
  if (exponent == 0)
    return sign * std::ldexp(mantissa, -24);
  if (exponent == 31)
    return mantissa ? std::nan("") : sign * INFINITY;
  return sign * std::ldexp(mantissa + 1024, exponent - 25);
}

static double loadStored(StoredReal type, const uint8_t *src) {
  switch (type) {
  case StoredReal::F64: {
    double value;
    std::memcpy(&value, src, sizeof(value));
    return value;
  }
  case StoredReal::F32:
    return loadReal(DType::F32, src);
  case StoredReal::BF16:
    return loadReal(DType::BF16, src);
  case StoredReal::F16: {
    uint16_t bits;
    std::memcpy(&bits, src, sizeof(bits));
    return halfToDouble(bits);
  }
  }
  return 0.0;
}

InputFile::InputFile(std::string flag, std::string path)
    : flag(std::move(flag)), path(std::move(path)) {
  fd = ::open(this->path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    fail(std::string("cannot open: ") + std::strerror(errno));
  struct stat info;
  if (fstat(fd, &info) != 0)
    fail(std::string("cannot stat: ") + std::strerror(errno));
  if (!S_ISREG(info.st_mode))
    fail("not a regular file");
  bytes = static_cast<int64_t>(info.st_size);
}

InputFile::~InputFile() {
  if (fd >= 0)
    ::close(fd);
}

void InputFile::fail(const std::string &what) const {
  fatal(flag + " '" + path + "': " + what);
}

void InputFile::read(int64_t offset, void *dst, int64_t count) const {
  if (offset < 0 || count < 0 || offset > bytes || count > bytes - offset)
    fail("file is too short: needs bytes [" + std::to_string(offset) + ", " +
         std::to_string(offset + count) + ") but has " + std::to_string(bytes));
  auto *to = static_cast<uint8_t *>(dst);
  while (count > 0) {
    ssize_t got = pread(fd, to, static_cast<size_t>(count), static_cast<off_t>(offset));
    if (got <= 0)
      fail(std::string("cannot read: ") + std::strerror(got < 0 ? errno : EIO));
    count -= got;
    offset += got;
    to += got;
  }
}

void InputFile::readReals(int64_t offset, StoredReal from, int64_t count, void *dst,
                          DType to) const {
  size_t fromSize = storedRealSize(from), toSize = dtypeSize(to);
  auto *out = static_cast<uint8_t *>(dst);
  if (from == storedRealOf(to)) {
    read(offset, out, count * static_cast<int64_t>(fromSize));
    return;
  }
  // A megabyte at a time: converting never needs a copy of the whole range.
  constexpr int64_t kChunk = (1 << 20) / 8;
  std::vector<uint8_t> chunk(static_cast<size_t>(std::min(count, kChunk)) * fromSize);
  for (int64_t done = 0; done < count;) {
    int64_t n = std::min(count - done, kChunk);
    read(offset + done * static_cast<int64_t>(fromSize), chunk.data(),
         n * static_cast<int64_t>(fromSize));
    for (int64_t i = 0; i < n; ++i)
      storeReal(loadStored(from, chunk.data() + i * fromSize), to, out + (done + i) * toSize);
    done += n;
  }
}

} // namespace fsdprt
