//===- OutputFile.h - A file the trainer writes -----------------*- C++ -*-===//
//
// --log-json and --export files (rank 0 writes them). A file is opened
// before the first step, so that a bad path fails at once rather than after
// the run; any write error is fatal and names the flag and the file.
//
//===----------------------------------------------------------------------===//

#ifndef FSDPRT_IO_OUTPUTFILE_H
#define FSDPRT_IO_OUTPUTFILE_H

#include <cstddef>
#include <cstdio>
#include <string>

namespace fsdprt {

class OutputFile {
public:
  OutputFile(const char *flag, std::string path);
  ~OutputFile();
  OutputFile(const OutputFile &) = delete;
  OutputFile &operator=(const OutputFile &) = delete;

  void write(const void *data, size_t bytes);
  void write(const std::string &text) { write(text.data(), text.size()); }
  void flush();
  /// Flushes and forces the bytes to the disk (fsync): what a checkpoint
  /// commits must be there before its rename.
  void sync();
  void close();

private:
  [[noreturn]] void fail(const char *what);

  const char *flag;
  std::string path;
  std::FILE *stream = nullptr;
};

} // namespace fsdprt

#endif // FSDPRT_IO_OUTPUTFILE_H
