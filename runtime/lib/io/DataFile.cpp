//===- DataFile.cpp - Training data from an FSDPDATA file -----------------===//

#include "io/DataFile.h"

#include "abi/Error.h"
#include "io/MappedFile.h"

#include <cstring>
#include <optional>

// The file is little-endian and records are copied to the arena as they are.
static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "the runtime assumes a little-endian host");

namespace fsdprt {

static constexpr char kMagic[8] = {'F', 'S', 'D', 'P', 'D', 'A', 'T', 'A'};
static constexpr uint32_t kVersion = 1;

static std::optional<DType> dtypeOfCode(uint32_t code) {
  switch (static_cast<DataFileDType>(code)) {
  case DataFileDType::F32:
    return DType::F32;
  case DataFileDType::I32:
    return DType::I32;
  case DataFileDType::I64:
    return DType::I64;
  case DataFileDType::BF16:
    return DType::BF16;
  }
  return std::nullopt;
}

namespace {
/// Reads header fields in order; the caller reports a file that ends early.
class HeaderCursor {
public:
  HeaderCursor(const uint8_t *data, size_t size) : data(data), size(size) {}

  /// Copies `n` bytes; false if the file ends first.
  bool read(void *dst, size_t n) {
    if (size - position < n)
      return false;
    std::memcpy(dst, data + position, n);
    position += n;
    return true;
  }

  size_t offset() const { return position; }

private:
  const uint8_t *data;
  size_t size;
  size_t position = 0;
};
} // namespace

DataFile::DataFile(std::string path, const Manifest &manifest, int64_t dataIndex)
    : BatchSource(RankRows(manifest, dataIndex)), path(std::move(path)), inputs(manifest.inputs) {}

DataFile::~DataFile() = default;

void DataFile::fail(const std::string &what) const {
  fatal("data file '" + path + "': " + what);
}

std::unique_ptr<DataFile> DataFile::open(const std::string &path, const Manifest &manifest,
                                         int64_t dataIndex) {
  std::unique_ptr<DataFile> file(new DataFile(path, manifest, dataIndex));
  file->mapFile();
  file->readHeader();
  file->checkIntegerBounds();
  return file;
}

void DataFile::mapFile() {
  mapped = std::make_unique<MappedFile>(path, [this](const std::string &what) { fail(what); });
  mapping = mapped->data();
  mappingBytes = mapped->size();
  if (mappingBytes == 0)
    fail("file is empty (expected the FSDPDATA header)");
}

void DataFile::readHeader() {
  HeaderCursor cursor(mapping, mappingBytes);
  auto tooShort = [&](const std::string &field) {
    fail("file is too short: it ends inside the header, at " + field + " (byte " +
         std::to_string(cursor.offset()) + " of " + std::to_string(mappingBytes) + ")");
  };
  auto readU32 = [&](const std::string &field) {
    uint32_t value;
    if (!cursor.read(&value, sizeof(value)))
      tooShort(field);
    return value;
  };

  char magic[sizeof(kMagic)];
  if (!cursor.read(magic, sizeof(magic)))
    tooShort("the magic");
  if (std::memcmp(magic, kMagic, sizeof(kMagic)) != 0)
    fail("bad magic: not an FSDPDATA file");
  uint32_t version = readU32("the version");
  if (version != kVersion)
    fail("version " + std::to_string(version) + " is not supported (expected 1)");
  uint32_t tensorCount = readU32("the number of tensors");
  if (tensorCount != inputs.size())
    fail("has " + std::to_string(tensorCount) + " tensors, but the model has " +
         std::to_string(inputs.size()) + " inputs");

  for (const InputSpec &input : inputs) {
    std::string tensor = "tensor " + std::to_string(input.index);
    uint32_t code = readU32(tensor + "'s dtype");
    std::optional<DType> dtype = dtypeOfCode(code);
    if (!dtype)
      fail(tensor + " has unknown dtype code " + std::to_string(code) +
           " (expected 0 f32, 1 i32, 2 i64 or 3 bf16)");
    if (*dtype != input.dtype)
      fail(tensor + " has dtype " + dtypeName(*dtype) + ", but model input " +
           std::to_string(input.index) + " is " + dtypeName(input.dtype));
    uint32_t rank = readU32(tensor + "'s rank");
    std::vector<int64_t> expected = input.sampleShape();
    if (rank != expected.size())
      fail(tensor + " has per-sample rank " + std::to_string(rank) + ", but model input " +
           std::to_string(input.index) + " needs per-sample shape " + formatShape(expected));
    std::vector<int64_t> shape(rank);
    for (uint32_t d = 0; d < rank; ++d)
      if (!cursor.read(&shape[d], sizeof(int64_t)))
        tooShort(tensor + "'s dimension " + std::to_string(d));
    if (shape != expected)
      fail(tensor + " has per-sample shape " + formatShape(shape) + ", but model input " +
           std::to_string(input.index) + " needs " + formatShape(expected));
    tensorOffsets.push_back(recordBytes);
    recordBytes += input.sampleBytes();
  }

  uint64_t samples;
  if (!cursor.read(&samples, sizeof(samples)))
    tooShort("the number of samples");
  if (samples == 0)
    fail("has no samples (needs at least 1)");

  size_t headerBytes = cursor.offset();
  uint64_t dataBytes = mappingBytes - headerBytes;
  unsigned __int128 neededBytes =
      static_cast<unsigned __int128>(samples) * static_cast<uint64_t>(recordBytes);
  if (neededBytes != dataBytes)
    fail(std::string(neededBytes > dataBytes ? "file is too short" : "file is too long") + ": " +
         std::to_string(samples) + " samples of " + std::to_string(recordBytes) +
         " bytes need " +
         (neededBytes > UINT64_MAX ? std::string("more than 2^64")
                                   : std::to_string(static_cast<uint64_t>(neededBytes))) +
         " bytes after the " + std::to_string(headerBytes) + "-byte header, but the file has " +
         std::to_string(dataBytes));
  sampleCount = static_cast<int64_t>(samples);
  records = mapping + headerBytes;
}

void DataFile::checkIntegerBounds() const {
  for (size_t t = 0; t < inputs.size(); ++t) {
    const InputSpec &input = inputs[t];
    if (isFloatDType(input.dtype))
      continue;
    size_t elementSize = dtypeSize(input.dtype);
    int64_t elements = input.sampleElements();
    for (int64_t n = 0; n < sampleCount; ++n) {
      const uint8_t *sample = records + n * recordBytes + tensorOffsets[t];
      for (int64_t e = 0; e < elements; ++e) {
        int64_t value = loadInteger(input.dtype, sample + e * elementSize);
        if (value < 0 || value >= input.bound)
          fail("sample " + std::to_string(n) + ", tensor " + std::to_string(t) + " (" +
               inputRoleName(input.role) + "), element " + std::to_string(e) + ": value " +
               std::to_string(value) + " is outside [0, " + std::to_string(input.bound) + ")");
      }
    }
  }
}

void DataFile::writeBatch(int64_t step, uint8_t *arena) {
  for (int64_t b = 0; b < rows.localBatch; ++b) {
    const uint8_t *sample = records + rows.sampleOf(step, b, sampleCount) * recordBytes;
    for (size_t t = 0; t < inputs.size(); ++t) {
      const InputSpec &input = inputs[t];
      int64_t bytes = input.sampleBytes();
      std::memcpy(arena + input.offset + b * bytes, sample + tensorOffsets[t],
                  static_cast<size_t>(bytes));
    }
  }
}

} // namespace fsdprt
