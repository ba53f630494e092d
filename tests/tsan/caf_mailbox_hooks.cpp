// ThreadSanitizer builds only (TINYBROKER_SANITIZE=thread): tells TSan that
// a CAF mailbox hands a message from its sender to its receiver.
//
// libcaf_core is an uninstrumented Debian library, and its mailbox is
// lock-free: TSan sees the sender build a message (in CAF's header
// templates, compiled into our program) and the receiver read it, but not
// the atomic exchange between them, and reports every message as a race.
// This file interposes the entry points of an actor's mailbox (the
// executable's definitions win over libcaf_core's, which are looked up by
// name): `launch` releases on the actor's address and `resume` acquires on
// it when it starts and releases when it ends (an actor runs on one worker
// after another, and sees what `spawn` and its own earlier runs did);
// `enqueue` releases on the mailbox element's address; a scheduled
// actor's `consume`, `activate` and `reactivate` and a blocking actor's
// mailbox visitor acquire on it; each then runs CAF's own function (found
// with dlsym(RTLD_NEXT)). `enqueue` also releases on a key of the actor
// that `cleanup` acquires: a terminating actor destroys the messages left
// in its mailbox without consuming them. That is exactly the
// ordering CAF's mailbox guarantees, no more: state shared outside
// messages is still checked.

#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>

#include <sanitizer/tsan_interface.h>

#include <caf/blocking_actor.hpp>
#include <caf/mailbox_element.hpp>
#include <caf/scheduled_actor.hpp>

namespace {

// The key of every message ever enqueued to `self` (see cleanup).
void* mailbox_key(void* self) {
  return static_cast<char*>(self) + 1;
}

// Returns CAF's own definition of `symbol` (the next one after ours).
template <class Fn>
Fn next_definition(const char* symbol) {
  auto result = reinterpret_cast<Fn>(dlsym(RTLD_NEXT, symbol));
  if (result == nullptr) {
    std::fprintf(stderr, "caf_mailbox_hooks: %s not found in libcaf_core\n",
                 symbol);
    std::abort();
  }
  return result;
}

} // namespace

namespace caf {

void scheduled_actor::enqueue(mailbox_element_ptr ptr, execution_unit* eu) {
  using fn = void (*)(scheduled_actor*, mailbox_element_ptr, execution_unit*);
  static auto caf_enqueue = next_definition<fn>(
      "_ZN3caf15scheduled_actor7enqueueESt10unique_ptrINS_15mailbox_"
      "elementENS_6detail8disposerEEPNS_14execution_unitE");
  if (ptr) {
    __tsan_release(ptr.get());
    __tsan_release(mailbox_key(this));
  }
  caf_enqueue(this, std::move(ptr), eu);
}

bool scheduled_actor::cleanup(error&& fail_state, execution_unit* host) {
  using fn = bool (*)(scheduled_actor*, error&&, execution_unit*);
  static auto caf_cleanup = next_definition<fn>(
      "_ZN3caf15scheduled_actor7cleanupEONS_5errorEPNS_14execution_unitE");
  __tsan_acquire(mailbox_key(this));
  return caf_cleanup(this, std::move(fail_state), host);
}

void scheduled_actor::launch(execution_unit* eu, bool lazy, bool hide) {
  using fn = void (*)(scheduled_actor*, execution_unit*, bool, bool);
  static auto caf_launch = next_definition<fn>(
      "_ZN3caf15scheduled_actor6launchEPNS_14execution_unitEbb");
  __tsan_release(this);
  caf_launch(this, eu, lazy, hide);
}

resumable::resume_result scheduled_actor::resume(execution_unit* eu,
                                                 size_t max_throughput) {
  using fn = resume_result (*)(scheduled_actor*, execution_unit*, size_t);
  static auto caf_resume = next_definition<fn>(
      "_ZN3caf15scheduled_actor6resumeEPNS_14execution_unitEm");
  __tsan_acquire(this);
  auto result = caf_resume(this, eu, max_throughput);
  __tsan_release(this);
  return result;
}

invoke_message_result scheduled_actor::consume(mailbox_element& x) {
  using fn = invoke_message_result (*)(scheduled_actor*, mailbox_element&);
  static auto caf_consume = next_definition<fn>(
      "_ZN3caf15scheduled_actor7consumeERNS_15mailbox_elementE");
  __tsan_acquire(&x);
  return caf_consume(this, x);
}

scheduled_actor::activation_result
scheduled_actor::activate(execution_unit* ctx, mailbox_element& x) {
  using fn = activation_result (*)(scheduled_actor*, execution_unit*,
                                   mailbox_element&);
  static auto caf_activate = next_definition<fn>(
      "_ZN3caf15scheduled_actor8activateEPNS_14execution_unitERNS_15mailbox_"
      "elementE");
  __tsan_acquire(&x);
  return caf_activate(this, ctx, x);
}

scheduled_actor::activation_result
scheduled_actor::reactivate(mailbox_element& x) {
  using fn = activation_result (*)(scheduled_actor*, mailbox_element&);
  static auto caf_reactivate = next_definition<fn>(
      "_ZN3caf15scheduled_actor10reactivateERNS_15mailbox_elementE");
  __tsan_acquire(&x);
  return caf_reactivate(this, x);
}

void blocking_actor::enqueue(mailbox_element_ptr ptr, execution_unit* eu) {
  using fn = void (*)(blocking_actor*, mailbox_element_ptr, execution_unit*);
  static auto caf_enqueue = next_definition<fn>(
      "_ZN3caf14blocking_actor7enqueueESt10unique_ptrINS_15mailbox_"
      "elementENS_6detail8disposerEEPNS_14execution_unitE");
  if (ptr)
    __tsan_release(ptr.get());
  caf_enqueue(this, std::move(ptr), eu);
}

intrusive::task_result
blocking_actor::mailbox_visitor::operator()(mailbox_element& x) {
  using fn = intrusive::task_result (*)(mailbox_visitor*, mailbox_element&);
  static auto caf_visit = next_definition<fn>(
      "_ZN3caf14blocking_actor15mailbox_visitorclERNS_15mailbox_elementE");
  __tsan_acquire(&x);
  return caf_visit(this, x);
}

} // namespace caf
