//===- TempPath.h - A file name of the running test -------------*- C++ -*-===//

#ifndef FSDPRT_TEST_SUPPORT_TEMPPATH_H
#define FSDPRT_TEST_SUPPORT_TEMPPATH_H

#include <gtest/gtest.h>

#include <cstdio>
#include <string>

namespace fsdprt::test {

/// A path unique to the running test (the same in a death test's child),
/// removed when the test is done.
class TempPath {
public:
  explicit TempPath(const char *suffix = ".bin") {
    const testing::TestInfo *info = testing::UnitTest::GetInstance()->current_test_info();
    path = testing::TempDir() + "fsdprt-" + info->test_suite_name() + "-" + info->name() + suffix;
  }
  ~TempPath() { std::remove(path.c_str()); }
  operator const std::string &() const { return path; }
  const char *c_str() const { return path.c_str(); }

private:
  std::string path;
};

} // namespace fsdprt::test

#endif // FSDPRT_TEST_SUPPORT_TEMPPATH_H
