#include "net/broker_service.hpp"

#include <caf/send.hpp>
#include <grpcpp/impl/codegen/proto_utils.h>

#include "actors/session/unary_call.hpp"
#include "net/cluster_node.hpp"
#include "net/group_admin.hpp"
#include "net/grpc_settings.hpp"
#include "net/log.hpp"
#include "net/peer_identity.hpp"
#include "net/status.hpp"

namespace tb {

namespace {

namespace pb = tinybroker::v1;

// The request and reply of one unary Publish call, parsed and serialized
// by the service (the method is raw, see broker_callback_service).
struct publish_call {
  pb::PublishRequest request;
  pb::PublishReply reply;
};

// A bidi reactor that ends its stream at once with `status`.
class refusing_reactor final : public session_stream_reactor {
public:
  explicit refusing_reactor(const grpc::Status& status) {
    Finish(status);
  }

  void OnDone() override {
    delete this;
  }
};

} // namespace

broker_service::broker_service(caf::actor_system& sys, broker_context ctx,
                               std::vector<session_actor> publishers,
                               group_settings group_defaults,
                               const auth_config& auth)
    : sys_(sys), ctx_(std::move(ctx)), publishers_(std::move(publishers)),
      group_defaults_(std::move(group_defaults)),
      sessions_(ctx_.limits.max_sessions), auth_(auth) {
  // nop
}

error_info broker_service::reload_auth(const auth_config& auth) {
  if (auto err = auth_.reload(auth))
    return err;
  auto ended = sessions_.reauthorize(*auth_.table());
  log::info("tokens reloaded",
            {{"tokens", auth.tokens.size()}, {"sessions_ended", ended}});
  return {};
}

void broker_service::shut_down() {
  shutting_down_ = true;
  sessions_.shut_down();
}

void broker_service::serve_publish(const grpc::ServerContextBase& ctx,
                                   const grpc::ByteBuffer* req,
                                   grpc::ByteBuffer* reply, unary_done done) {
  refusal_reporter report{logger_, "Publish", ctx.peer()};
  if (shutting_down_ || publishers_.empty()) {
    auto err =
        make_error_info(ec::shutting_down, "the broker is shutting down");
    report(err);
    done(to_grpc_status(err));
    return;
  }
  auto who = auth_.authenticate(ctx);
  if (who.error) {
    report(who.error);
    done(to_grpc_status(who.error));
    return;
  }
  if (auto size = req->Length(), limit = grpc_frame_limit(ctx_.limits);
      size > limit) {
    // Issue 26: as a Session frame over the limit (session_bridge).
    log::warn("Publish request over the frame limit; answering "
              "RESOURCE_EXHAUSTED",
              {{"peer", ctx.peer()}, {"bytes", size}, {"limit_bytes", limit}});
    done(grpc::Status{
        grpc::StatusCode::RESOURCE_EXHAUSTED,
        "the request has " + std::to_string(size) +
            " bytes; the broker reads requests of up to " +
            std::to_string(limit) +
            " bytes (it follows limits.max_message_bytes and "
            "limits.max_publish_batch); nothing of it was routed"});
    return;
  }
  auto parsed = std::make_shared<publish_call>();
  // gRPC owns a mutable request buffer for the call's lifetime.
  if (auto status =
          parse_request(*const_cast<grpc::ByteBuffer*>(req), parsed->request);
      !status.ok()) {
    // A client's bug, like a malformed frame on a stream (session_bridge):
    // a warning, not the info line of an ordinary refusal.
    log::warn("malformed Publish request; answering INVALID_ARGUMENT",
              {{"peer", report.peer}, {"error", status.error_message()}});
    done(status);
    return;
  }
  auto call = std::make_shared<unary_call>();
  // The publisher moves payloads out of the request instead of copying.
  call->request = &parsed->request;
  call->reply = &parsed->reply;
  call->peer = report.peer;
  call->grant = std::move(who.grant);
  sessions_.call_started();
  // A call refused as a whole (a batch beyond the limit, a stop) is logged
  // here; messages refused one by one are logged by the publisher.
  call->finish = [this, done, reply, parsed,
                  report = std::move(report)](const error_info& status) {
    report(status);
    auto result = to_grpc_status(status);
    bool own_buffer = false;
    if (result.ok())
      result = grpc::SerializationTraits<pb::PublishReply>::Serialize(
          parsed->reply, reply, &own_buffer);
    done(result);
    sessions_.call_done();
  };
  auto index = next_publisher_++ % publishers_.size();
  caf::anon_send(publishers_[index], unary_atom_v, std::move(call));
  return;
}

error_info broker_service::admit_session(const grpc::ServerContextBase& ctx,
                                         auth_outcome& who,
                                         std::string& client_name) {
  error_info err;
  if (shutting_down_)
    err = make_error_info(ec::shutting_down, "the broker is shutting down");
  else if (who = auth_.authenticate(ctx); who.error)
    err = who.error;
  else
    err = read_client_name(ctx, client_name);
  if (err)
    refusal_reporter{logger_, "Session", ctx.peer()}(err);
  return err;
}

session_parts broker_service::stream_parts() {
  session_parts parts;
  parts.system = &sys_;
  parts.context = ctx_;
  parts.registry = &sessions_;
  parts.logger = logger_;
  return parts;
}

session_stream_reactor*
broker_service::Session(grpc::CallbackServerContext* ctx) {
  auth_outcome who;
  std::string client_name;
  if (auto err = admit_session(*ctx, who, client_name))
    return new refusing_reactor(to_grpc_status(err));
  return new session_reactor(stream_parts(), ctx, std::move(who),
                             std::move(client_name));
}

void broker_service::serve_create_group(const grpc::ServerContextBase& ctx,
                                        const pb::CreateGroupRequest* req,
                                        pb::GroupInfo* reply, unary_done done) {
  if (refused_admin(ctx, done, "CreateGroup"))
    return;
  create_group_call(sys_, ctx_.router, group_defaults_, *req, reply,
                    std::move(done),
                    refusal_reporter{logger_, "CreateGroup", ctx.peer()});
  return;
}

void broker_service::serve_delete_group(const grpc::ServerContextBase& ctx,
                                        const pb::DeleteGroupRequest* req,
                                        pb::DeleteGroupReply* reply,
                                        unary_done done) {
  if (refused_admin(ctx, done, "DeleteGroup"))
    return;
  delete_group_call(sys_, ctx_.router, req->name(), reply, std::move(done),
                    refusal_reporter{logger_, "DeleteGroup", ctx.peer()});
  return;
}

void broker_service::serve_purge_group(const grpc::ServerContextBase& ctx,
                                       const pb::PurgeGroupRequest* req,
                                       pb::PurgeGroupReply* reply,
                                       unary_done done) {
  if (refused_admin(ctx, done, "PurgeGroup"))
    return;
  purge_group_call(sys_, ctx_.router, req->name(), reply, std::move(done),
                   refusal_reporter{logger_, "PurgeGroup", ctx.peer()});
  return;
}

void broker_service::serve_list_groups(const grpc::ServerContextBase& ctx,
                                       const pb::ListGroupsRequest*,
                                       pb::ListGroupsReply* reply,
                                       unary_done done) {
  if (refused_admin(ctx, done, "ListGroups"))
    return;
  list_groups_call(sys_, ctx_.router, reply, std::move(done),
                   refusal_reporter{logger_, "ListGroups", ctx.peer()});
  return;
}

bool broker_service::refused_admin(const grpc::ServerContextBase& ctx,
                                   const unary_done& done, const char* call) {
  auto err = auth_.authorize_admin(ctx, call);
  if (!err)
    return false;
  refusal_reporter{logger_, call, ctx.peer()}(err);
  done(to_grpc_status(err));
  return true;
}

void broker_service::collect_stats(const pb::StatsRequest& request,
                                   stats_callback done, bool by_load,
                                   std::shared_ptr<group_totals> group_sums) {
  stats_sources sources;
  sources.sys = &sys_;
  sources.router = ctx_.router;
  sources.sessions = sessions_.actors();
  sources.publishers = publishers_;
  sources.started = started_;
  sources.floor = floor_;
  sources.auth = &auth_.counters();
  sources.by_load = by_load;
  sources.group_sums = std::move(group_sums);
  if (cluster_)
    done = with_cluster_stats(sys_, cluster_, ctx_.router, std::move(done));
  tb::collect_stats(std::move(sources), request, std::move(done));
}

console_sources broker_service::console() {
  console_sources result;
  result.stats = [this](const pb::StatsRequest& request,
                        console_stats_callback done) {
    auto sums = std::make_shared<group_totals>();
    collect_stats(
        request,
        [sums, done = std::move(done)](pb::StatsReply& reply,
                                       const error_info& err) {
          done(reply, err, *sums);
        },
        true, sums);
  };
  result.act = [this](const group_action& action, action_callback done) {
    group_action_call(sys_, ctx_.router, group_defaults_, action,
                      std::move(done));
  };
  result.authenticate = [this](std::string_view authorization,
                               std::string_view subject) {
    return auth_.authenticate(authorization, subject);
  };
  return result;
}

void broker_service::serve_stats(const grpc::ServerContextBase& ctx,
                                 const pb::StatsRequest* req,
                                 pb::StatsReply* reply, unary_done done) {
  if (refused_admin(ctx, done, "Stats"))
    return;
  collect_stats(*req, [done, reply,
                       report = refusal_reporter{logger_, "Stats", ctx.peer()}](
                          pb::StatsReply& result, const error_info& err) {
    if (err) {
      report(err);
      done(to_grpc_status(err));
      return;
    }
    reply->Swap(&result);
    done(grpc::Status::OK);
  });
  return;
}

void broker_service::serve_info(const grpc::ServerContextBase& ctx,
                                const pb::InfoRequest*, pb::InfoReply* reply,
                                unary_done done) {
  // Any caller the broker authenticates may ask: the limits are what every
  // client must respect (docs/security.md).
  auto who = auth_.authenticate(ctx);
  if (who.error) {
    refusal_reporter{logger_, "Info", ctx.peer()}(who.error);
    done(to_grpc_status(who.error));
    return;
  }
  {
    std::lock_guard<std::mutex> guard{info_mutex_};
    *reply = info_;
  }
  reply->set_version(TINYBROKER_VERSION);
  reply->set_uptime_ms(static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::milliseconds>(
          std::chrono::steady_clock::now() - started_)
          .count()));
  reply->set_auth_enabled(auth_.enabled());
  done(grpc::Status::OK);
  return;
}

} // namespace tb
