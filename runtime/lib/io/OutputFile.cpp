//===- OutputFile.cpp - A file the trainer writes -------------------------===//

#include "io/OutputFile.h"

#include "abi/Error.h"

#include <cerrno>
#include <cstring>
#include <unistd.h>

namespace fsdprt {

OutputFile::OutputFile(const char *flag, std::string path) : flag(flag), path(std::move(path)) {
  stream = std::fopen(this->path.c_str(), "wb");
  if (!stream)
    fail("cannot open");
}

OutputFile::~OutputFile() {
  if (stream)
    std::fclose(stream);
}

void OutputFile::write(const void *data, size_t bytes) {
  if (bytes != 0 && std::fwrite(data, 1, bytes, stream) != bytes)
    fail("cannot write");
}

void OutputFile::flush() {
  if (std::fflush(stream) != 0)
    fail("cannot write");
}

void OutputFile::sync() {
  flush();
  if (::fsync(fileno(stream)) != 0)
    fail("cannot sync");
}

void OutputFile::close() {
  std::FILE *closing = stream;
  stream = nullptr;
  if (std::fclose(closing) != 0)
    fail("cannot write");
}

void OutputFile::fail(const char *what) {
  fatal(std::string(flag) + " '" + path + "': " + what + ": " + std::strerror(errno));
}

} // namespace fsdprt
