// The fixture of the token tests: a real broker started from a config file
// with tokens, and clients that present them.

#pragma once

#include <chrono>
#include <csignal>
#include <fstream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include "auth/token_table.hpp"
#include "broker_process.hpp"
#include "client/connection.hpp"
#include "tinybroker.grpc.pb.h"

namespace tb::test {

namespace pb = tinybroker::v1;

/// The secrets of the test's tokens.
inline const std::string orders_secret = "orders-secret-7f3a9c1e5b";
/// The secret of the token that may only subscribe (under `svc.>`).
inline const std::string listener_secret = "listener-secret-2c8e4a6d1f";
inline const std::string ops_secret = "ops-secret-2d8e4b6a0c9f";
inline const std::string late_secret = "late-secret-5c1e9a7b3d";

/// A Session stream that presents a token; blocking, bounded by a deadline.
class token_session {
public:
  /// Opens a stream on `channel` presenting `token` (none if empty).
  token_session(const std::shared_ptr<grpc::Channel>& channel,
                const std::string& token) {
    if (!token.empty())
      ctx_.AddMetadata("authorization", "Bearer " + token);
    ctx_.set_deadline(std::chrono::system_clock::now() +
                      std::chrono::seconds(30));
    stub_ = pb::Broker::NewStub(channel);
    stream_ = stub_->Session(&ctx_);
  }

  /// Sends `frame`; false once the stream is broken.
  bool send(const pb::ClientFrame& frame) {
    return stream_->Write(frame);
  }

  /// Subscribes as `id` to `pattern` (in `group` if given).
  bool subscribe(uint64_t id, const std::string& pattern,
                 const std::string& group = {}) {
    pb::ClientFrame frame;
    frame.set_request_id(id);
    frame.mutable_subscribe()->set_subscription_id(id);
    frame.mutable_subscribe()->set_pattern(pattern);
    frame.mutable_subscribe()->set_group(group);
    return send(frame);
  }

  /// Publishes one message per topic of `topics`, asking for a confirm.
  bool publish(uint64_t request_id, const std::vector<std::string>& topics) {
    pb::ClientFrame frame;
    frame.set_request_id(request_id);
    frame.mutable_publish()->set_confirm(true);
    for (auto& topic : topics) {
      auto* msg = frame.mutable_publish()->add_messages();
      msg->set_topic(topic);
      msg->set_payload(topic);
    }
    return send(frame);
  }

  /// Reads the next frame; nothing once the stream ended.
  std::optional<pb::ServerFrame> read() {
    pb::ServerFrame frame;
    if (!stream_->Read(&frame))
      return std::nullopt;
    return frame;
  }

  /// Reads until a frame of `kind`; nothing if the stream ends first.
  std::optional<pb::ServerFrame> read_until(pb::ServerFrame::KindCase kind) {
    for (;;) {
      auto frame = read();
      if (!frame || frame->kind_case() == kind)
        return frame;
    }
  }

  /// Reads what is left and returns the stream's final status.
  grpc::Status finish() {
    pb::ServerFrame ignored;
    while (stream_->Read(&ignored))
      continue;
    return stream_->Finish();
  }

private:
  grpc::ClientContext ctx_;
  std::unique_ptr<pb::Broker::Stub> stub_;
  std::unique_ptr<grpc::ClientReaderWriter<pb::ClientFrame, pb::ServerFrame>>
      stream_;
};

/// Returns the [auth] config of the tests: "orders" may publish under
/// `orders.>`, subscribe under `orders.eu.>` and join `billing`;
/// "listener" may only subscribe under `svc.>`; "ops" may do everything,
/// admin calls included. `extra` is appended.
inline std::string auth_config_text(const std::string& extra = {}) {
  return "[auth]\n"
         "[[auth.tokens]]\n"
         "name = \"orders\"\n"
         "secret = \"" +
         orders_secret +
         "\"\n"
         "publish = [\"orders.>\"]\n"
         "subscribe = [\"orders.eu.>\"]\n"
         "groups = [\"billing\"]\n"
         "[[auth.tokens]]\n"
         "name = \"listener\"\n"
         "secret = \"" +
         listener_secret +
         "\"\n"
         "subscribe = [\"svc.>\"]\n"
         "[[auth.tokens]]\n"
         "name = \"ops\"\n"
         "secret_sha256 = \"" +
         sha256_hex(ops_secret) +
         "\"\n"
         "publish = [\">\"]\n"
         "subscribe = [\">\", \"$dlq.>\"]\n"
         "admin = true\n" +
         extra;
}

/// A broker with the tokens of `auth_config_text`, in a config file the
/// test may rewrite and reload.
class AuthTest : public ::testing::Test {
protected:
  static constexpr std::chrono::seconds patience{10};

  void SetUp() override {
    config_path_ = write_temp_file(auth_config_text(), ".toml");
    broker_ = std::make_unique<broker_process>(
        std::vector<std::string>{"--config", config_path_});
    ASSERT_TRUE(broker_->wait_ready()) << broker_->output();
    channel_ = client::make_channel(broker_->address());
  }

  /// Rewrites the config file with `text` and sends SIGHUP; waits for the
  /// broker to log the outcome (`expect` in its output, `count` times).
  void reload(const std::string& text, const std::string& expect,
              std::size_t count = 1) {
    std::ofstream{config_path_, std::ios::trunc} << text;
    ASSERT_EQ(::kill(broker_->pid(), SIGHUP), 0);
    ASSERT_TRUE(broker_->wait_for_occurrences(expect, count, patience))
        << broker_->output();
  }

  /// Makes a context that presents `token` (none if empty).
  static std::unique_ptr<grpc::ClientContext>
  context(const std::string& token) {
    auto ctx = std::make_unique<grpc::ClientContext>();
    if (!token.empty())
      ctx->AddMetadata("authorization", "Bearer " + token);
    ctx->set_deadline(std::chrono::system_clock::now() + patience);
    return ctx;
  }

  /// Publishes one message per topic with the unary call.
  grpc::Status publish(const std::string& token,
                       const std::vector<std::string>& topics,
                       pb::PublishReply* reply = nullptr) {
    pb::PublishRequest req;
    for (auto& topic : topics) {
      auto* msg = req.add_messages();
      msg->set_topic(topic);
      msg->set_payload(topic);
    }
    pb::PublishReply ignored;
    auto ctx = context(token);
    return pb::Broker::NewStub(channel_)->Publish(ctx.get(), req,
                                                  reply ? reply : &ignored);
  }

  /// Returns the broker's Stats, asked with the admin token.
  pb::StatsReply stats() {
    pb::StatsReply reply;
    auto ctx = context(ops_secret);
    auto status = pb::Broker::NewStub(channel_)->Stats(
        ctx.get(), pb::StatsRequest{}, &reply);
    EXPECT_TRUE(status.ok()) << status.error_message();
    return reply;
  }

  std::string config_path_;
  std::unique_ptr<broker_process> broker_;
  std::shared_ptr<grpc::Channel> channel_;
};

} // namespace tb::test
