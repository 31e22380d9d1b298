//===- StreamEventsTest.cpp - Streams and events on the CPU backend -------===//
//
// On the CPU the step runs in program order: streams are NULL and events only
// have their use checked, with the errors the CUDA backend gives as well.
//
//===----------------------------------------------------------------------===//

#include "abi/StreamEvents.h"
#include "fsdprt/fsdprt.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

using namespace fsdprt;
using testing::ExitedWithCode;
using testing::HasSubstr;

namespace {

TEST(StreamEvents, StreamsAreNullOnTheCpu) {
  for (int32_t stream :
       {FSDPRT_STREAM_COMPUTE, FSDPRT_STREAM_ALL_GATHER, FSDPRT_STREAM_REDUCE_SCATTER})
    EXPECT_EQ(fsdprt_stream(stream), nullptr);
}

TEST(StreamEvents, AWaitFollowsARecordOfTheSameStep) {
  startStepEvents();
  fsdprt_event_record(7, FSDPRT_STREAM_ALL_GATHER);
  fsdprt_stream_wait_event(FSDPRT_STREAM_COMPUTE, 7);
  // Recorded again, waited for again, by any stream.
  fsdprt_event_record(7, FSDPRT_STREAM_COMPUTE);
  fsdprt_stream_wait_event(FSDPRT_STREAM_REDUCE_SCATTER, 7);
  fsdprt_event_record(0, FSDPRT_STREAM_REDUCE_SCATTER);
  fsdprt_event_record(kMaxEvents - 1, FSDPRT_STREAM_COMPUTE);
  fsdprt_stream_wait_event(FSDPRT_STREAM_COMPUTE, 0);
  fsdprt_stream_wait_event(FSDPRT_STREAM_COMPUTE, kMaxEvents - 1);
}

TEST(StreamEventsError, WaitWithoutRecord) {
  startStepEvents();
  EXPECT_EXIT(fsdprt_stream_wait_event(FSDPRT_STREAM_COMPUTE, 3), ExitedWithCode(1),
              HasSubstr("trainer: error: fsdprt_stream_wait_event: event 3 was not recorded "
                        "earlier in this step (each wait needs an fsdprt_event_record before it)"));
}

TEST(StreamEventsError, ARecordOfAnEarlierStepDoesNotCount) {
  startStepEvents();
  fsdprt_event_record(4, FSDPRT_STREAM_COMPUTE);
  startStepEvents();
  EXPECT_EXIT(fsdprt_stream_wait_event(FSDPRT_STREAM_ALL_GATHER, 4), ExitedWithCode(1),
              HasSubstr("event 4 was not recorded earlier in this step"));
}

TEST(StreamEventsError, UnknownStream) {
  const char *expected =
      ": unknown stream 5 (expected 0 compute, 1 all-gather, 2 reduce-scatter, 3 copy or 4 tensor)";
  EXPECT_EXIT(fsdprt_stream(5), ExitedWithCode(1),
              HasSubstr(std::string("trainer: error: fsdprt_stream") + expected));
  EXPECT_EXIT(fsdprt_event_record(0, 5), ExitedWithCode(1),
              HasSubstr(std::string("trainer: error: fsdprt_event_record") + expected));
  EXPECT_EXIT(fsdprt_stream_wait_event(5, 0), ExitedWithCode(1),
              HasSubstr(std::string("trainer: error: fsdprt_stream_wait_event") + expected));
  EXPECT_EXIT(fsdprt_stream(-1), ExitedWithCode(1), HasSubstr("fsdprt_stream: unknown stream -1"));
}

TEST(StreamEventsError, EventOutOfRange) {
  EXPECT_EXIT(fsdprt_event_record(65536, FSDPRT_STREAM_COMPUTE), ExitedWithCode(1),
              HasSubstr("trainer: error: fsdprt_event_record: event 65536 is outside [0, 65536)"));
  EXPECT_EXIT(fsdprt_event_record(-1, FSDPRT_STREAM_COMPUTE), ExitedWithCode(1),
              HasSubstr("fsdprt_event_record: event -1 is outside [0, 65536)"));
  EXPECT_EXIT(fsdprt_stream_wait_event(FSDPRT_STREAM_COMPUTE, 65536), ExitedWithCode(1),
              HasSubstr("fsdprt_stream_wait_event: event 65536 is outside [0, 65536)"));
}

} // namespace
