// Tests of the process-wide gRPC settings the broker and the relay apply
// before they start a server.

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

} // namespace
