// Tests of the process-wide gRPC settings the broker and the relay apply
// before they start a server.

#include <climits>
#include <cstdlib>
#include <string>

#include <absl/synchronization/mutex.h>
#include <gtest/gtest.h>

#include "net/grpc_settings.hpp"

namespace {

// Takes `first` then `second`, and releases both.
void lock_in_order(absl::Mutex& first, absl::Mutex& second) {
  first.Lock();
  second.Lock();
  second.Unlock();
  first.Unlock();
}

// Debian's abseil (built without NDEBUG) tracks the order of every lock
// gRPC takes and aborts the process on an inversion. After
// skip_lock_order_checks() it tracks nothing: an inversion, harmless here
// (one thread), passes.
TEST(GrpcSettings, LockOrderChecksAreOffAfterSkipping) {
#if defined(__SANITIZE_THREAD__)
  GTEST_SKIP() << "ThreadSanitizer reports lock-order inversions itself";
#else
  tb::skip_lock_order_checks();
  absl::Mutex a;
  absl::Mutex b;
  lock_in_order(a, b);
  lock_in_order(b, a); // aborts while the checks are on
  SUCCEED();
#endif
}

// gRPC 1.51 reads GRPC_EXPERIMENTS once; the broker turns tcp_read_chunks
// off there unless the variable already names it.
TEST(GrpcSettings, SizedReadsTurnTheReadChunksExperimentOff) {
  unsetenv("GRPC_EXPERIMENTS");
  tb::prefer_sized_reads();
  EXPECT_EQ(std::string{std::getenv("GRPC_EXPERIMENTS")}, "-tcp_read_chunks");
  setenv("GRPC_EXPERIMENTS", "tcp_read_chunks", 1);
  tb::prefer_sized_reads();
  EXPECT_EQ(std::string{std::getenv("GRPC_EXPERIMENTS")}, "tcp_read_chunks");
  unsetenv("GRPC_EXPERIMENTS");
}

// Issue 26: the frame limit follows limits.max_message_bytes and
// max_publish_batch, with headroom for framing.
TEST(GrpcSettings, FrameLimitFollowsTheMessageAndBatchLimits) {
  constexpr std::size_t mib = 1 << 20;
  constexpr std::size_t headroom = tb::frame_headroom_bytes;
  tb::limits_config defaults;
  // 4096 messages of 1 MiB would be 4 GiB: batches get 64 MiB.
  EXPECT_EQ(tb::grpc_frame_limit(defaults), 64 * mib + headroom);
  tb::limits_config large;
  large.max_message_bytes = 100 * mib;
  // One message of the largest size always fits, with its topic and framing.
  EXPECT_EQ(tb::grpc_frame_limit(large),
            100 * mib + large.max_topic_bytes + 64 + headroom);
  tb::limits_config single;
  single.max_publish_batch = 1;
  // A frame can hold no more than one message of 1 MiB.
  EXPECT_EQ(tb::grpc_frame_limit(single),
            mib + single.max_topic_bytes + 64 + headroom);
  tb::limits_config huge;
  huge.max_message_bytes = std::size_t{8} << 30;
  huge.max_publish_batch = std::size_t{1} << 40;
  EXPECT_EQ(tb::grpc_frame_limit(huge), std::size_t{INT_MAX})
      << "gRPC takes an int";
}

// gRPC reads a quarter more than the frame limit, so that the session sees
// a frame just over it and refuses it naming the limit.
TEST(GrpcSettings, GrpcReadsAQuarterMoreThanTheFrameLimit) {
  tb::limits_config defaults;
  EXPECT_EQ(tb::grpc_receive_limit(defaults),
            tb::grpc_frame_limit(defaults) * 5 / 4);
  EXPECT_EQ(tb::grpc_receive_limit(defaults), std::size_t{90} << 20);
  tb::limits_config huge;
  huge.max_message_bytes = std::size_t{1800} << 20;
  EXPECT_LT(tb::grpc_frame_limit(huge), std::size_t{INT_MAX});
  EXPECT_EQ(tb::grpc_receive_limit(huge), std::size_t{INT_MAX})
      << "gRPC takes an int";
}

} // namespace
