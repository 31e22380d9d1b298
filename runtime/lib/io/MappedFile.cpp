//===- MappedFile.cpp - A data file mapped read-only ----------------------===//

#include "io/MappedFile.h"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

namespace fsdprt {

MappedFile::MappedFile(const std::string &path,
                       const std::function<void(const std::string &)> &fail) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    fail(std::string("cannot open: ") + std::strerror(errno));
  struct stat info;
  if (fstat(fd, &info) != 0) {
    int error = errno;
    ::close(fd);
    fail(std::string("cannot stat: ") + std::strerror(error));
  }
  if (!S_ISREG(info.st_mode)) {
    ::close(fd);
    fail("not a regular file");
  }
  length = static_cast<size_t>(info.st_size);
  // mmap cannot map zero bytes: an empty file is for the reader to report.
  if (length == 0) {
    ::close(fd);
    return;
  }
  void *address = mmap(nullptr, length, PROT_READ, MAP_PRIVATE, fd, 0);
  int error = errno;
  ::close(fd);
  if (address == MAP_FAILED)
    fail(std::string("cannot map: ") + std::strerror(error));
  bytes = static_cast<const uint8_t *>(address);
}

MappedFile::~MappedFile() {
  if (bytes)
    munmap(const_cast<uint8_t *>(bytes), length);
}

} // namespace fsdprt
