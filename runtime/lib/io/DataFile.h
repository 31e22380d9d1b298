//===- DataFile.h - Training data from an FSDPDATA file ---------*- C++ -*-===//
//
// The file format of docs/Runtime.md, section 4: a header describing one
// tensor per model input (per-sample shape and dtype), then N sample records.
// The file is mapped, not read, so that a large data set does not count as
// heap in use, and it is validated completely (header, size, every integer
// value) before the first step.
//
//===----------------------------------------------------------------------===//

#ifndef FSDPRT_IO_DATAFILE_H
#define FSDPRT_IO_DATAFILE_H

#include "abi/Manifest.h"
#include "trainer/BatchSource.h"

#include <memory>
#include <string>
#include <vector>

namespace fsdprt {

class MappedFile;

/// The dtype codes of the file format.
enum class DataFileDType : uint32_t { F32 = 0, I32 = 1, I64 = 2, BF16 = 3 };

class DataFile final : public BatchSource {
public:
  /// Opens `path` and checks it against the model's inputs. A missing, short
  /// or mismatched file, or an integer outside its input's bound, is fatal and
  /// reported with the file name (and the sample). `dataIndex` chooses the
  /// rows written (RankRows); every rank reads the same file.
  static std::unique_ptr<DataFile> open(const std::string &path, const Manifest &manifest,
                                        int64_t dataIndex = 0);

  ~DataFile() override;
  DataFile(const DataFile &) = delete;
  DataFile &operator=(const DataFile &) = delete;

  int64_t numSamples() const override { return sampleCount; }

  /// Local row b of step `step` holds sample RankRows::sampleOf(step, b, N).
  void writeBatch(int64_t step, uint8_t *arena) override;

private:
  DataFile(std::string path, const Manifest &manifest, int64_t dataIndex);
  void mapFile();
  void readHeader();
  void checkIntegerBounds() const;
  [[noreturn]] void fail(const std::string &what) const;

  std::string path;
  std::vector<InputSpec> inputs;

  std::unique_ptr<MappedFile> mapped;
  const uint8_t *mapping = nullptr;
  size_t mappingBytes = 0;
  const uint8_t *records = nullptr;
  int64_t sampleCount = 0;
  int64_t recordBytes = 0;
  /// Byte offset of each tensor inside a sample record.
  std::vector<int64_t> tensorOffsets;
};

} // namespace fsdprt

#endif // FSDPRT_IO_DATAFILE_H
