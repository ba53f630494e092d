// The tinybroker.v1.Broker gRPC service: the calls' handlers, and their
// form on gRPC's callback API.

#pragma once

#include <atomic>
#include <mutex>
#include <vector>

#include <caf/actor_system.hpp>

#include "actors/broker_context.hpp"
#include "net/auth_gate.hpp"
#include "net/console_api.hpp"
#include "net/log_actor.hpp"
#include "net/session_reactor.hpp"
#include "net/stats_collector.hpp"
#include "net/unary_done.hpp"
#include "tinybroker.grpc.pb.h"

namespace tb {

/// The generated callback service with raw Session and Publish methods: the
/// broker parses their requests itself, so that one that does not parse is
/// answered with INVALID_ARGUMENT naming why (gRPC would end a Session
/// stream as if the client had closed it, and answer a Publish call with an
/// empty UNIMPLEMENTED).
using broker_callback_service =
    tinybroker::v1::Broker::WithCallbackMethod_Request<
        tinybroker::v1::Broker::WithRawCallbackMethod_Publish<
            tinybroker::v1::Broker::WithRawCallbackMethod_Session<
                tinybroker::v1::Broker::WithCallbackMethod_CreateGroup<
                    tinybroker::v1::Broker::WithCallbackMethod_DeleteGroup<
                        tinybroker::v1::Broker::WithCallbackMethod_PurgeGroup<
                            tinybroker::v1::Broker::
                                WithCallbackMethod_ListGroups<
                                    tinybroker::v1::Broker::
                                        WithCallbackMethod_Stats<
                                            tinybroker::v1::Broker::
                                                WithCallbackMethod_Info<
                                                    tinybroker::v1::Broker::
                                                        Service>>>>>>>>>;

/// Serves the Broker service: each Session stream gets a reactor and a
/// session actor; unary Publish calls go to a small pool of publisher actors.
/// Handlers run on gRPC threads and never block.
class broker_service final : public broker_callback_service {
public:
  /// Creates the service; `publishers` serve unary Publish calls;
  /// `group_defaults` fill in what CreateGroup leaves out; `auth` holds the
  /// tokens every call and stream is checked against.
  broker_service(caf::actor_system& sys, broker_context ctx,
                 std::vector<session_actor> publishers,
                 group_settings group_defaults, const auth_config& auth);

  /// Replaces the tokens (a SIGHUP reload): streams whose token is gone end
  /// with UNAUTHENTICATED, the others take their token's permissions as
  /// they are now. Refuses to turn auth on or off.
  error_info reload_auth(const auth_config& auth);

  /// Sends refusals of calls and streams to `logger` from now on. Call
  /// before the server starts.
  void set_logger(log_actor logger) {
    logger_ = std::move(logger);
  }

  /// Sets what the Info call answers besides the version, the uptime and
  /// whether auth is on (which the service knows): the addresses, limits
  /// and TLS settings, once the ports are bound. Thread-safe.
  void set_info(const tinybroker::v1::InfoReply& info) {
    std::lock_guard<std::mutex> guard{info_mutex_};
    info_ = info;
  }

  /// Sets the cluster actor whose view Stats adds (docs/cluster.md); none
  /// on a single node. Call before the server starts.
  void set_cluster(cluster_actor cluster) {
    cluster_ = std::move(cluster);
  }

  /// Refuses new calls and ends every stream with UNAVAILABLE.
  void shut_down();

  /// Waits until every stream and unary call ended, or `deadline`.
  bool wait_idle(std::chrono::system_clock::time_point deadline) {
    return sessions_.wait_idle(deadline);
  }

  /// Collects the counters `request` asks for and hands them to `done` (on
  /// a CAF thread); used by the Stats call, the metrics endpoint and the
  /// periodic log summary.
  void collect_stats(const tinybroker::v1::StatsRequest& request,
                     stats_callback done, bool by_load = false,
                     std::shared_ptr<group_totals> group_sums = nullptr);

  /// Returns what the console's requests are served from (issue 27): the
  /// stats in the console's order (`by_load`), the group actions through
  /// the router, and this service's tokens. They refer to this service.
  console_sources console();

  /// Checks a new Session stream at the door: the broker is not shutting
  /// down, `ctx` authenticates (into `who`) and names the client usably
  /// (into `client_name`). Returns (and reports) the refusal otherwise.
  /// Both transports call it (net/session_cq.hpp is the other).
  error_info admit_session(const grpc::ServerContextBase& ctx,
                           auth_outcome& who, std::string& client_name);

  /// Returns what a Session stream is opened with (net/session_open.hpp);
  /// it refers to this service.
  session_parts stream_parts();

  /// Returns the number of open Session streams.
  std::size_t open_sessions() const {
    return sessions_.size();
  }

  // -- the unary calls, whichever gRPC API serves them ------------------------
  // Each checks the caller (`ctx`), fills `reply` and ends the call through
  // `done`, once, on any thread; none blocks. The callback API's methods
  // below and the completion-queue transport (net/cq_server.hpp) call them.

  /// Publish, raw: the request is parsed here, so that one that does not
  /// parse is answered with INVALID_ARGUMENT naming why.
  void serve_publish(const grpc::ServerContextBase& ctx,
                     const grpc::ByteBuffer* req, grpc::ByteBuffer* reply,
                     unary_done done);

  /// A unary request/reply call, served by the publisher pool
  /// (net/broker_request.cpp).
  void serve_request(const grpc::ServerContextBase& ctx,
                     const tinybroker::v1::Request* req,
                     tinybroker::v1::Response* reply, unary_done done);

  /// CreateGroup (net/group_admin.hpp).
  void serve_create_group(const grpc::ServerContextBase& ctx,
                          const tinybroker::v1::CreateGroupRequest* req,
                          tinybroker::v1::GroupInfo* reply, unary_done done);

  /// DeleteGroup (net/group_admin.hpp).
  void serve_delete_group(const grpc::ServerContextBase& ctx,
                          const tinybroker::v1::DeleteGroupRequest* req,
                          tinybroker::v1::DeleteGroupReply* reply,
                          unary_done done);

  /// PurgeGroup (net/group_admin.hpp).
  void serve_purge_group(const grpc::ServerContextBase& ctx,
                         const tinybroker::v1::PurgeGroupRequest* req,
                         tinybroker::v1::PurgeGroupReply* reply,
                         unary_done done);

  /// ListGroups (net/group_admin.hpp).
  void serve_list_groups(const grpc::ServerContextBase& ctx,
                         const tinybroker::v1::ListGroupsRequest* req,
                         tinybroker::v1::ListGroupsReply* reply,
                         unary_done done);

  /// Stats (net/stats_collector.hpp).
  void serve_stats(const grpc::ServerContextBase& ctx,
                   const tinybroker::v1::StatsRequest* req,
                   tinybroker::v1::StatsReply* reply, unary_done done);

  /// Info: the broker's version and limits, for any authenticated caller.
  void serve_info(const grpc::ServerContextBase& ctx,
                  const tinybroker::v1::InfoRequest* req,
                  tinybroker::v1::InfoReply* reply, unary_done done);

  // -- gRPC's callback API
  // -----------------------------------------------------

  grpc::ServerUnaryReactor* Publish(grpc::CallbackServerContext* ctx,
                                    const grpc::ByteBuffer* req,
                                    grpc::ByteBuffer* reply) override {
    return answer(ctx, &broker_service::serve_publish, req, reply);
  }

  session_stream_reactor* Session(grpc::CallbackServerContext* ctx) override;

  grpc::ServerUnaryReactor* Request(grpc::CallbackServerContext* ctx,
                                    const tinybroker::v1::Request* req,
                                    tinybroker::v1::Response* reply) override {
    return answer(ctx, &broker_service::serve_request, req, reply);
  }

  grpc::ServerUnaryReactor*
  CreateGroup(grpc::CallbackServerContext* ctx,
              const tinybroker::v1::CreateGroupRequest* req,
              tinybroker::v1::GroupInfo* reply) override {
    return answer(ctx, &broker_service::serve_create_group, req, reply);
  }

  grpc::ServerUnaryReactor*
  DeleteGroup(grpc::CallbackServerContext* ctx,
              const tinybroker::v1::DeleteGroupRequest* req,
              tinybroker::v1::DeleteGroupReply* reply) override {
    return answer(ctx, &broker_service::serve_delete_group, req, reply);
  }

  grpc::ServerUnaryReactor*
  PurgeGroup(grpc::CallbackServerContext* ctx,
             const tinybroker::v1::PurgeGroupRequest* req,
             tinybroker::v1::PurgeGroupReply* reply) override {
    return answer(ctx, &broker_service::serve_purge_group, req, reply);
  }

  grpc::ServerUnaryReactor*
  ListGroups(grpc::CallbackServerContext* ctx,
             const tinybroker::v1::ListGroupsRequest* req,
             tinybroker::v1::ListGroupsReply* reply) override {
    return answer(ctx, &broker_service::serve_list_groups, req, reply);
  }

  grpc::ServerUnaryReactor* Stats(grpc::CallbackServerContext* ctx,
                                  const tinybroker::v1::StatsRequest* req,
                                  tinybroker::v1::StatsReply* reply) override {
    return answer(ctx, &broker_service::serve_stats, req, reply);
  }

  grpc::ServerUnaryReactor* Info(grpc::CallbackServerContext* ctx,
                                 const tinybroker::v1::InfoRequest* req,
                                 tinybroker::v1::InfoReply* reply) override {
    return answer(ctx, &broker_service::serve_info, req, reply);
  }

private:
  // Serves a callback-API call with `serve`, answering through the call's
  // default reactor.
  template <class Request, class Reply>
  grpc::ServerUnaryReactor*
  answer(grpc::CallbackServerContext* ctx,
         void (broker_service::*serve)(const grpc::ServerContextBase&,
                                       const Request*, Reply*, unary_done),
         const Request* req, Reply* reply) {
    auto* reactor = ctx->DefaultReactor();
    (this->*serve)(*ctx, req, reply, finish_through(reactor));
    return reactor;
  }

  // Authenticates an admin call and checks its token may make it; answers
  // a refusal through `done` and returns true if refused.
  bool refused_admin(const grpc::ServerContextBase& ctx, const unary_done& done,
                     const char* call);

  caf::actor_system& sys_;
  broker_context ctx_;
  std::vector<session_actor> publishers_;
  group_settings group_defaults_;
  std::atomic<size_t> next_publisher_{0};
  std::atomic<bool> shutting_down_{false};
  session_registry sessions_;
  log_actor logger_;
  cluster_actor cluster_;
  auth_gate auth_;
  std::chrono::steady_clock::time_point started_ =
      std::chrono::steady_clock::now();
  std::shared_ptr<counter_floor> floor_ = std::make_shared<counter_floor>();
  std::mutex info_mutex_;
  tinybroker::v1::InfoReply info_;
};

} // namespace tb
