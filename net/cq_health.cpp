#include "net/cq_health.hpp"

namespace tb {

namespace {

// The handle the server keeps: gRPC's interface onto the table.
class health_control final : public grpc::HealthCheckServiceInterface {
public:
  explicit health_control(cq_health& table) : table_(table) {
    // nop
  }

  void SetServingStatus(const std::string& name, bool serving) override {
    table_.set(name, serving);
  }

  void SetServingStatus(bool serving) override {
    table_.set_all(serving);
  }

  void Shutdown() override {
    table_.shut_down();
  }

private:
  cq_health& table_;
};

} // namespace

// -- one Watch call -----------------------------------------------------------

/// One Watch stream: sends the name's status when it arrives and again on
/// each change, one write at a time (a change during a write waits for it,
/// and only the latest is sent). It never finishes by itself: it ends when
/// the client cancels or the server stops, and deletes itself on the
/// polling thread once that notification and its last write are back.
class cq_health::watcher {
public:
  /// Waits for the next Watch call of `table`.
  static void listen(cq_health& table) {
    auto* w = new watcher(table);
    w->context_.AsyncNotifyWhenDone(&w->done_ev_);
    table.service_.RequestWatch(&w->context_, &w->request_, &w->writer_,
                                table.cq_, table.cq_, &w->arrive_ev_);
  }

  /// Sends `status` unless it was the last one sent. Under the table's lock.
  void send(check_response::ServingStatus status) {
    if (writing_) {
      next_ = status;
      has_next_ = true;
      return;
    }
    if (sent_any_ && status == sent_)
      return;
    response_.set_status(status);
    if (table_.gate_->pass([&] { writer_.Write(response_, &write_ev_); })) {
      writing_ = true;
      sent_any_ = true;
      sent_ = status;
    }
  }

  /// The name this call watches.
  const std::string& name() const {
    return request_.service();
  }

private:
  // One kind of completion of this call.
  class event final : public cq_event {
  public:
    event(watcher* owner, void (watcher::*handler)(bool))
        : owner_(owner), handler_(handler) {
      // nop
    }

    void proceed(bool ok) override {
      (owner_->*handler_)(ok);
    }

  private:
    watcher* owner_;
    void (watcher::*handler_)(bool);
  };

  explicit watcher(cq_health& table) : table_(table) {
    // nop
  }

  void on_arrive(bool ok) {
    if (!ok) { // the server stops; no done notification follows
      delete this;
      return;
    }
    listen(table_);
    std::lock_guard<std::mutex> guard{table_.mutex_};
    table_.watchers_.insert(this);
    send(table_.status_of(name()));
  }

  void on_write(bool) {
    std::unique_lock<std::mutex> guard{table_.mutex_};
    writing_ = false;
    if (done_) {
      guard.unlock();
      delete this;
      return;
    }
    if (has_next_) {
      has_next_ = false;
      send(next_);
    }
  }

  void on_done(bool) {
    std::unique_lock<std::mutex> guard{table_.mutex_};
    table_.watchers_.erase(this);
    done_ = true;
    if (writing_)
      return; // deleted when the write is back
    guard.unlock();
    delete this;
  }

  cq_health& table_;
  grpc::ServerContext context_;
  check_request request_;
  grpc::ServerAsyncWriter<check_response> writer_{&context_};
  check_response response_;
  event arrive_ev_{this, &watcher::on_arrive};
  event write_ev_{this, &watcher::on_write};
  event done_ev_{this, &watcher::on_done};
  // Under the table's lock:
  bool writing_ = false;
  bool done_ = false;
  bool sent_any_ = false;
  check_response::ServingStatus sent_ = check_response::UNKNOWN;
  bool has_next_ = false;
  check_response::ServingStatus next_ = check_response::UNKNOWN;
};

// -- cq_health ----------------------------------------------------------------

cq_health::cq_health() {
  serving_.emplace("", true);
}

std::unique_ptr<grpc::HealthCheckServiceInterface> cq_health::control() {
  return std::make_unique<health_control>(*this);
}

void cq_health::start(grpc::ServerCompletionQueue* cq,
                      std::shared_ptr<cq_unary_gate> gate) {
  cq_ = cq;
  gate_ = std::move(gate);
  check_method_.request =
      [this, cq](grpc::ServerContext* ctx, check_request* req,
                 grpc::ServerAsyncResponseWriter<check_response>* responder,
                 void* tag) {
        service_.RequestCheck(ctx, req, responder, cq, cq, tag);
      };
  check_method_.serve = [this](const grpc::ServerContextBase&,
                               const check_request* req, check_response* reply,
                               unary_done done) {
    check(req, reply, done);
  };
  check_method_.gate = gate_;
  cq_unary_call<check_request, check_response>::listen(check_method_);
  watcher::listen(*this);
}

void cq_health::set(const std::string& name, bool serving) {
  std::lock_guard<std::mutex> guard{mutex_};
  if (shut_down_)
    return;
  serving_[name] = serving;
  notify(name);
}

void cq_health::set_all(bool serving) {
  std::lock_guard<std::mutex> guard{mutex_};
  if (!shut_down_)
    set_every(serving);
}

void cq_health::shut_down() {
  std::lock_guard<std::mutex> guard{mutex_};
  if (shut_down_)
    return;
  set_every(false);
  shut_down_ = true;
}

void cq_health::set_every(bool serving) {
  for (auto& [name, status] : serving_) {
    status = serving;
    notify(name);
  }
}

cq_health::check_response::ServingStatus
cq_health::status_of(const std::string& name) const {
  auto i = serving_.find(name);
  if (i == serving_.end())
    return check_response::SERVICE_UNKNOWN;
  return i->second ? check_response::SERVING : check_response::NOT_SERVING;
}

void cq_health::check(const check_request* req, check_response* reply,
                      const unary_done& done) {
  check_response::ServingStatus status;
  {
    std::lock_guard<std::mutex> guard{mutex_};
    status = status_of(req->service());
  }
  if (status == check_response::SERVICE_UNKNOWN) {
    done(grpc::Status{grpc::StatusCode::NOT_FOUND,
                      "no service \"" + req->service() + "\" is known"});
    return;
  }
  reply->set_status(status);
  done(grpc::Status::OK);
}

void cq_health::notify(const std::string& name) {
  auto status = status_of(name);
  for (auto* w : watchers_)
    if (w->name() == name)
      w->send(status);
}

} // namespace tb
