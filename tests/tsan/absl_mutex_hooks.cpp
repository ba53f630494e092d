// ThreadSanitizer builds only (TINYBROKER_SANITIZE=thread): tells TSan that
// an absl::Mutex is a lock.
//
// gRPC guards its calls, reactors and completion queues with absl::Mutex
// (grpc::internal::Mutex), from Debian's uninstrumented libabsl: TSan sees
// neither its lock nor its unlock, and reports what gRPC's own header code,
// compiled into our programs, does under it. This file interposes the
// lock, unlock and condition-variable wait entry points (the executable's
// definitions win over libabsl_synchronization's, which are looked up by
// name) and adds the acquire and release that an instrumented Abseil makes
// itself (its ABSL_TSAN_MUTEX annotations); each then runs Abseil's own
// function, found with dlsym(RTLD_NEXT).

#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>

#include <absl/synchronization/mutex.h>
#include <sanitizer/tsan_interface.h>

namespace {

// Returns Abseil's own definition of `symbol` (the next one after ours).
template <class Fn>
Fn next_absl(const char* symbol) {
  auto result = reinterpret_cast<Fn>(dlsym(RTLD_NEXT, symbol));
  if (result == nullptr) {
    std::fprintf(stderr, "absl_mutex_hooks: %s not found\n", symbol);
    std::abort();
  }
  return result;
}

using mutex_fn = void (*)(absl::Mutex*);
using try_fn = bool (*)(absl::Mutex*);

} // namespace

namespace absl {
ABSL_NAMESPACE_BEGIN

void Mutex::Lock() {
  static auto lock = next_absl<mutex_fn>("_ZN4absl7debian35Mutex4LockEv");
  lock(this);
  __tsan_acquire(this);
}

void Mutex::Unlock() {
  static auto unlock = next_absl<mutex_fn>("_ZN4absl7debian35Mutex6UnlockEv");
  __tsan_release(this);
  unlock(this);
}

bool Mutex::TryLock() {
  static auto try_lock = next_absl<try_fn>("_ZN4absl7debian35Mutex7TryLockEv");
  auto locked = try_lock(this);
  if (locked)
    __tsan_acquire(this);
  return locked;
}

void Mutex::ReaderLock() {
  static auto lock =
      next_absl<mutex_fn>("_ZN4absl7debian35Mutex10ReaderLockEv");
  lock(this);
  __tsan_acquire(this);
}

void Mutex::ReaderUnlock() {
  static auto unlock =
      next_absl<mutex_fn>("_ZN4absl7debian35Mutex12ReaderUnlockEv");
  __tsan_release(this);
  unlock(this);
}

void CondVar::Wait(Mutex* mu) {
  using fn = void (*)(CondVar*, Mutex*);
  static auto wait =
      next_absl<fn>("_ZN4absl7debian37CondVar4WaitEPNS0_5MutexE");
  __tsan_release(mu);
  wait(this, mu);
  __tsan_acquire(mu);
}

bool CondVar::WaitWithTimeout(Mutex* mu, absl::Duration timeout) {
  using fn = bool (*)(CondVar*, Mutex*, absl::Duration);
  static auto wait = next_absl<fn>(
      "_ZN4absl7debian37CondVar15WaitWithTimeoutEPNS0_5MutexENS0_8DurationE");
  __tsan_release(mu);
  auto result = wait(this, mu, timeout);
  __tsan_acquire(mu);
  return result;
}

bool CondVar::WaitWithDeadline(Mutex* mu, absl::Time deadline) {
  using fn = bool (*)(CondVar*, Mutex*, absl::Time);
  static auto wait = next_absl<fn>(
      "_ZN4absl7debian37CondVar16WaitWithDeadlineEPNS0_5MutexENS0_4TimeE");
  __tsan_release(mu);
  auto result = wait(this, mu, deadline);
  __tsan_acquire(mu);
  return result;
}

ABSL_NAMESPACE_END
} // namespace absl
