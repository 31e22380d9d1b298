//===- DataFileTest.cpp - FSDPDATA files: round trip and every error ------===//

#include "io/DataFile.h"
#include "support/DataFileWriter.h"
#include "support/TempPath.h"
#include "support/TestManifest.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <sys/stat.h>

using namespace fsdprt;
using fsdprt::test::Bytes;
using fsdprt::test::TempPath;
using testing::ExitedWithCode;
using testing::HasSubstr;

namespace {

/// The test manifest: features [4, 3] f32 (input 0), classes [4] i32 < 5 (input 1).
Manifest classifier() { return parseManifest(test::classifierManifest().dump()); }

Bytes header(uint64_t samples) {
  Bytes bytes;
  bytes.text("FSDPDATA").put<uint32_t>(1).put<uint32_t>(2);
  bytes.tensor(0, {3}).tensor(1, {});
  bytes.put<uint64_t>(samples);
  return bytes;
}

/// Sample n: features (n, n + 0.5, -n), class n mod 5.
Bytes validFile(uint64_t samples) {
  Bytes bytes = header(samples);
  for (uint64_t n = 0; n < samples; ++n)
    bytes.put<float>(float(n)).put<float>(n + 0.5f).put<float>(-float(n)).put<int32_t>(int32_t(n % 5));
  return bytes;
}

struct Row {
  float features[3];
  int32_t label;
};

Row rowOf(const std::vector<uint8_t> &arena, const Manifest &manifest, int b) {
  Row row;
  std::memcpy(row.features, arena.data() + manifest.inputs[0].offset + b * 12, 12);
  std::memcpy(&row.label, arena.data() + manifest.inputs[1].offset + b * 4, 4);
  return row;
}

TEST(DataFile, RoundTrip) {
  Manifest manifest = classifier();
  TempPath path;
  validFile(5).writeTo(path);
  std::unique_ptr<DataFile> file = DataFile::open(path, manifest);
  EXPECT_EQ(file->numSamples(), 5);

  std::vector<uint8_t> arena(manifest.arenaBytes, 0);
  // Step s uses samples ((s - 1) * batch + b) mod N: 0 1 2 3, then 4 0 1 2.
  const int expected[][4] = {{0, 1, 2, 3}, {4, 0, 1, 2}, {3, 4, 0, 1}};
  for (int step = 1; step <= 3; ++step) {
    file->writeBatch(step, arena.data());
    for (int b = 0; b < 4; ++b) {
      int n = expected[step - 1][b];
      Row row = rowOf(arena, manifest, b);
      EXPECT_EQ(row.features[0], float(n)) << "step " << step << " row " << b;
      EXPECT_EQ(row.features[1], n + 0.5f);
      EXPECT_EQ(row.features[2], -float(n));
      EXPECT_EQ(row.label, n % 5);
    }
  }
  // Parameters and state are not touched.
  for (int i = 0; i < manifest.inputs[0].offset; ++i)
    ASSERT_EQ(arena[i], 0) << "byte " << i;
}

TEST(DataFile, EachRankReadsItsRows) {
  // Global batch 8 on 2 ranks of 4 rows, 5 samples: step s's global rows are
  // samples (s - 1) * 8 + g mod 5; rank 1 takes g = 4 .. 7.
  Manifest manifest = parseManifest(test::shardedClassifierManifest().dump());
  TempPath path;
  validFile(5).writeTo(path);
  const int expected[2][3][4] = {{{0, 1, 2, 3}, {3, 4, 0, 1}, {1, 2, 3, 4}},
                                 {{4, 0, 1, 2}, {2, 3, 4, 0}, {0, 1, 2, 3}}};
  for (int rank = 0; rank < 2; ++rank) {
    std::unique_ptr<DataFile> file = DataFile::open(path, manifest, rank);
    std::vector<uint8_t> arena(manifest.arenaBytes, 0);
    for (int step = 1; step <= 3; ++step) {
      file->writeBatch(step, arena.data());
      for (int b = 0; b < 4; ++b) {
        int n = expected[rank][step - 1][b];
        Row row = rowOf(arena, manifest, b);
        EXPECT_EQ(row.features[0], float(n)) << "rank " << rank << " step " << step << " row " << b;
        EXPECT_EQ(row.label, n % 5);
      }
    }
  }
}

TEST(DataFile, StepsBeyond64BitSampleIndices) {
  Manifest manifest = classifier();
  TempPath path;
  validFile(5).writeTo(path);
  std::unique_ptr<DataFile> file = DataFile::open(path, manifest);
  std::vector<uint8_t> arena(manifest.arenaBytes, 0);
  // (2^63 - 2) * 4 = 4 (mod 5): samples 4 0 1 2.
  file->writeBatch(INT64_MAX, arena.data());
  const int expected[] = {4, 0, 1, 2};
  for (int b = 0; b < 4; ++b)
    EXPECT_EQ(rowOf(arena, manifest, b).label, expected[b]);
}

TEST(DataFile, OtherDTypes) {
  nlohmann::json m = test::classifierManifest();
  m["inputs"][0]["dtype"] = "bf16";
  m["inputs"][0]["bytes"] = 24;
  m["inputs"][1]["dtype"] = "i64";
  m["inputs"][1]["bytes"] = 32;
  Manifest manifest = parseManifest(m.dump());
  Bytes bytes;
  bytes.text("FSDPDATA").put<uint32_t>(1).put<uint32_t>(2);
  bytes.tensor(3, {3}).tensor(2, {}).put<uint64_t>(1);
  bytes.put<uint16_t>(0x3F80).put<uint16_t>(0x4000).put<uint16_t>(0xBF80).put<int64_t>(4);
  TempPath path;
  bytes.writeTo(path);
  std::vector<uint8_t> arena(manifest.arenaBytes, 0);
  DataFile::open(path, manifest)->writeBatch(1, arena.data());
  for (int b = 0; b < 4; ++b) {
    uint16_t features[3];
    int64_t label;
    std::memcpy(features, arena.data() + 384 + b * 6, 6);
    std::memcpy(&label, arena.data() + 448 + b * 8, 8);
    EXPECT_EQ(features[0], 0x3F80);
    EXPECT_EQ(features[1], 0x4000);
    EXPECT_EQ(features[2], 0xBF80);
    EXPECT_EQ(label, 4);
  }
}

/// Opening `bytes` as a data file fails with `message` after the file name.
void expectDataError(const Bytes &bytes, const std::string &message) {
  TempPath path;
  bytes.writeTo(path);
  Manifest manifest = classifier();
  EXPECT_EXIT(DataFile::open(path, manifest), ExitedWithCode(1),
              HasSubstr("trainer: error: data file '" + std::string(path) + "': " + message));
}

TEST(DataFileError, MissingFile) {
  Manifest manifest = classifier();
  TempPath path(".missing");
  std::remove(path.c_str());
  EXPECT_EXIT(DataFile::open(path, manifest), ExitedWithCode(1),
              HasSubstr("trainer: error: data file '" + std::string(path) +
                        "': cannot open: No such file or directory"));
}

TEST(DataFileError, Directory) {
  Manifest manifest = classifier();
  TempPath path(".dir");
  mkdir(path.c_str(), 0700);
  EXPECT_EXIT(DataFile::open(path, manifest), ExitedWithCode(1),
              HasSubstr("data file '" + std::string(path) + "': not a regular file"));
}

TEST(DataFileError, EmptyFile) { expectDataError(Bytes(), "file is empty"); }

TEST(DataFileError, ShortMagic) {
  expectDataError(Bytes().text("FSDP"),
                  "file is too short: it ends inside the header, at the magic (byte 0 of 4)");
}

TEST(DataFileError, BadMagic) {
  expectDataError(Bytes().text("FSDPDATX").put<uint32_t>(1), "bad magic: not an FSDPDATA file");
}

TEST(DataFileError, BadVersion) {
  expectDataError(Bytes().text("FSDPDATA").put<uint32_t>(2).put<uint32_t>(2),
                  "version 2 is not supported (expected 1)");
}

TEST(DataFileError, ShortVersion) {
  expectDataError(Bytes().text("FSDPDATA").put<uint16_t>(1),
                  "file is too short: it ends inside the header, at the version");
}

TEST(DataFileError, WrongTensorCount) {
  expectDataError(Bytes().text("FSDPDATA").put<uint32_t>(1).put<uint32_t>(3),
                  "has 3 tensors, but the model has 2 inputs");
}

TEST(DataFileError, UnknownDTypeCode) {
  Bytes bytes;
  bytes.text("FSDPDATA").put<uint32_t>(1).put<uint32_t>(2).tensor(9, {3});
  expectDataError(bytes, "tensor 0 has unknown dtype code 9 (expected 0 f32, 1 i32, 2 i64 or 3 bf16)");
}

TEST(DataFileError, WrongDType) {
  Bytes bytes;
  bytes.text("FSDPDATA").put<uint32_t>(1).put<uint32_t>(2).tensor(3, {3});
  expectDataError(bytes, "tensor 0 has dtype bf16, but model input 0 is f32");
}

TEST(DataFileError, WrongIntegerDType) {
  Bytes bytes;
  bytes.text("FSDPDATA").put<uint32_t>(1).put<uint32_t>(2).tensor(0, {3}).tensor(2, {});
  expectDataError(bytes, "tensor 1 has dtype i64, but model input 1 is i32");
}

TEST(DataFileError, WrongRank) {
  Bytes bytes;
  bytes.text("FSDPDATA").put<uint32_t>(1).put<uint32_t>(2).tensor(0, {3}).tensor(1, {1});
  expectDataError(bytes, "tensor 1 has per-sample rank 1, but model input 1 needs per-sample shape []");
}

TEST(DataFileError, WrongShape) {
  Bytes bytes;
  bytes.text("FSDPDATA").put<uint32_t>(1).put<uint32_t>(2).tensor(0, {4});
  expectDataError(bytes, "tensor 0 has per-sample shape [4], but model input 0 needs [3]");
}

TEST(DataFileError, ShortDimensions) {
  Bytes bytes;
  bytes.text("FSDPDATA").put<uint32_t>(1).put<uint32_t>(2).put<uint32_t>(0).put<uint32_t>(1);
  bytes.put<uint32_t>(3);
  expectDataError(bytes, "file is too short: it ends inside the header, at tensor 0's dimension 0");
}

TEST(DataFileError, ShortSampleCount) {
  expectDataError(header(5).truncate(44),
                  "file is too short: it ends inside the header, at the number of samples");
}

TEST(DataFileError, NoSamples) { expectDataError(header(0), "has no samples (needs at least 1)"); }

TEST(DataFileError, ShortRecords) {
  Bytes bytes = validFile(5);
  bytes.truncate(bytes.size() - 8);
  expectDataError(bytes, "file is too short: 5 samples of 16 bytes need 80 bytes after the "
                         "48-byte header, but the file has 72");
}

TEST(DataFileError, TrailingBytes) {
  Bytes bytes = validFile(2);
  bytes.put<uint8_t>(0);
  expectDataError(bytes, "file is too long: 2 samples of 16 bytes need 32 bytes after the "
                         "48-byte header, but the file has 33");
}

TEST(DataFileError, SampleCountOverflow) {
  expectDataError(header(uint64_t(1) << 62),
                  "file is too short: 4611686018427387904 samples of 16 bytes need more than "
                  "2^64 bytes");
}

TEST(DataFileError, ClassAtTheBound) {
  Bytes bytes = header(5);
  for (int n = 0; n < 5; ++n)
    bytes.put<float>(0).put<float>(0).put<float>(0).put<int32_t>(n == 3 ? 5 : 0);
  expectDataError(bytes, "sample 3, tensor 1 (classes), element 0: value 5 is outside [0, 5)");
}

TEST(DataFileError, NegativeClass) {
  Bytes bytes = header(2);
  bytes.put<float>(0).put<float>(0).put<float>(0).put<int32_t>(0);
  bytes.put<float>(0).put<float>(0).put<float>(0).put<int32_t>(-1);
  expectDataError(bytes, "sample 1, tensor 1 (classes), element 0: value -1 is outside [0, 5)");
}

TEST(DataFileError, TokenOutOfRange) {
  // Tokens [4, 6] i64 < 100: sample 1, element 2 is too large.
  nlohmann::json m = test::classifierManifest();
  m["inputs"] = nlohmann::json::parse(R"([
    {"index": 0, "shape": [4, 6], "dtype": "i64", "role": "tokens", "bound": 100,
     "offset": 640, "bytes": 192}])");
  m["arena_bytes"] = 832;
  m["persistent_bytes"] = 832;
  Manifest manifest = parseManifest(m.dump());
  Bytes bytes;
  bytes.text("FSDPDATA").put<uint32_t>(1).put<uint32_t>(1).tensor(2, {6}).put<uint64_t>(2);
  for (int n = 0; n < 2; ++n)
    for (int t = 0; t < 6; ++t)
      bytes.put<int64_t>(n == 1 && t == 2 ? 100 : 99);
  TempPath path;
  bytes.writeTo(path);
  EXPECT_EXIT(DataFile::open(path, manifest), ExitedWithCode(1),
              HasSubstr("data file '" + std::string(path) +
                        "': sample 1, tensor 0 (tokens), element 2: value 100 is outside [0, 100)"));
}

} // namespace
