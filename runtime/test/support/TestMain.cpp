//===- TestMain.cpp - main() of fsdprt-tests ------------------------------===//

#include "trainer/Ranks.h"

#include <gtest/gtest.h>

int main(int argc, char **argv) {
  // Errors exit the process, so many tests are death tests. OpenBLAS starts
  // threads when it loads, and fork() without exec in a threaded process is
  // unsafe: re-execute the binary for each death test instead.
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  testing::InitGoogleTest(&argc, argv);
  int status = RUN_ALL_TESTS();
  // Tests that run the trainer in-process start MPI (on one rank).
  fsdprt::finishMpi();
  return status;
}
