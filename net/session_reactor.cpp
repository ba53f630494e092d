#include "net/session_reactor.hpp"

#include <algorithm>

#include <caf/send.hpp>

#include "net/log.hpp"
#include "net/session_bridge.hpp"
#include "net/status.hpp"
#include "net/tsan.hpp"

namespace tb {

session_reactor::session_reactor(const session_parts& parts,
                                 grpc::CallbackServerContext* call,
                                 auth_outcome who, std::string client_name)
    : bridge_(
          make_session_bridge(this, call->peer(), who, std::move(client_name))),
      registry_(*parts.registry), call_(call) {
  if (auto err = open_session(parts, bridge_, who.grant)) {
    tsan_release(this);
    Finish(to_grpc_status(err));
  }
}

void session_reactor::start_read(grpc::ByteBuffer* bytes) {
  tsan_release(this);
  StartRead(bytes);
}

void session_reactor::start_write(const grpc::ByteBuffer* bytes,
                                  grpc::WriteOptions options) {
  tsan_release(this);
  StartWrite(bytes, options);
}

void session_reactor::finish(const grpc::Status& status) {
  tsan_release(this);
  Finish(status);
}

void session_reactor::OnReadDone(bool ok) {
  tsan_acquire(this); // see net/tsan.hpp
  // gRPC marks a cancelled call before it fails the read, so a failed read
  // tells a cancel (or a broken connection) from a half-close.
  bridge_->on_read_done(ok, !ok && call_->IsCancelled());
  tsan_release(this);
}

void session_reactor::OnWriteDone(bool ok) {
  tsan_acquire(this); // see net/tsan.hpp
  bridge_->on_write_done(ok);
  tsan_release(this);
}

void session_reactor::OnDone() {
  tsan_acquire(this); // see net/tsan.hpp
  bridge_->on_done();
  registry_.remove(bridge_);
  delete this;
}

void session_reactor::OnCancel() {
  // nop
}

error_info
session_registry::add(const std::shared_ptr<session_bridge>& bridge) {
  std::lock_guard<std::mutex> guard{mutex_};
  if (shutting_down_)
    return make_error_info(ec::shutting_down, "the broker is shutting down");
  if (bridges_.size() >= max_sessions_)
    return make_error_info(ec::limit_exceeded,
                           "the broker serves limits.max_sessions = " +
                               std::to_string(max_sessions_) +
                               " sessions already");
  bridges_.push_back(bridge);
  return {};
}

void session_registry::remove(const std::shared_ptr<session_bridge>& bridge) {
  std::lock_guard<std::mutex> guard{mutex_};
  auto i = std::find(bridges_.begin(), bridges_.end(), bridge);
  if (i != bridges_.end()) {
    std::swap(*i, bridges_.back());
    bridges_.pop_back();
  }
  if (bridges_.empty() && calls_ == 0)
    idle_.notify_all();
}

void session_registry::call_started() {
  std::lock_guard<std::mutex> guard{mutex_};
  ++calls_;
}

void session_registry::call_done() {
  std::lock_guard<std::mutex> guard{mutex_};
  if (--calls_ == 0 && bridges_.empty())
    idle_.notify_all();
}

bool session_registry::wait_idle(
    std::chrono::system_clock::time_point deadline) {
  std::unique_lock<std::mutex> guard{mutex_};
  return idle_.wait_until(guard, deadline,
                          [this] { return bridges_.empty() && calls_ == 0; });
}

void session_registry::shut_down() {
  std::vector<std::shared_ptr<session_bridge>> live;
  {
    std::lock_guard<std::mutex> guard{mutex_};
    shutting_down_ = true;
    live = bridges_;
  }
  for (auto& bridge : live)
    bridge->finish(ec::shutting_down, "the broker is shutting down");
}

std::size_t session_registry::size() const {
  std::lock_guard<std::mutex> guard{mutex_};
  return bridges_.size();
}

std::vector<session_actor> session_registry::actors() const {
  std::vector<session_actor> result;
  std::lock_guard<std::mutex> guard{mutex_};
  result.reserve(bridges_.size());
  for (auto& bridge : bridges_)
    if (auto actor = bridge->actor())
      result.push_back(std::move(actor));
  return result;
}

std::size_t session_registry::reauthorize(const token_table& tokens) {
  std::vector<std::shared_ptr<session_bridge>> live;
  {
    std::lock_guard<std::mutex> guard{mutex_};
    live = bridges_;
  }
  std::size_t ended = 0;
  for (auto& bridge : live) {
    auto grant = tokens.lookup(bridge->credential());
    if (!grant) {
      log::info("token revoked; ending its session",
                {{"peer", bridge->peer()}, {"token", bridge->token()}});
      bridge->revoke("token \"" + bridge->token() + "\" was revoked");
      ++ended;
    } else if (auto actor = bridge->actor()) {
      caf::anon_send(actor, auth_atom_v, std::move(*grant));
    }
  }
  return ended;
}

} // namespace tb
