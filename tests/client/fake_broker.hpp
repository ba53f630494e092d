// A stand-in broker for the client security tests: an in-process gRPC
// server that answers every Broker method, records the `authorization`
// metadata of each call, and speaks TLS (optionally requiring a client
// certificate) with certificates of `make_fake_pki`.

#pragma once

#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <grpcpp/generic/async_generic_service.h>
#include <grpcpp/grpcpp.h>

#include "tinybroker.pb.h"

namespace tb::test {

/// The PEM files of the test PKI (tests/e2e/test_certs.hpp) the fake broker
/// and its clients use: a CA, a server certificate for DNS:localhost and
/// IP:127.0.0.1, a client certificate, and a second CA that signed neither.
struct fake_pki {
  /// The directory holding the files.
  std::string dir;
  /// The CA certificate that signed the server and client certificates.
  std::string ca;
  /// A CA certificate that signed nothing here.
  std::string other_ca;
  /// The server's certificate and key.
  std::string server_cert, server_key;
  /// The client's certificate (CN client-a) and key.
  std::string client_cert, client_key;
};

/// Returns the paths of the test PKI, made once per test process.
fake_pki make_fake_pki();

/// Returns the content of the file at `path` ("" if unreadable).
std::string read_text(const std::string& path);

/// One call the fake broker received.
struct recorded_call {
  /// The full method name, e.g. "/tinybroker.v1.Broker/Publish".
  std::string method;
  /// The `authorization` metadata, or nothing if the call had none.
  std::optional<std::string> authorization;
  /// The common name of the client certificate, "" without one.
  std::string client_cn;
  /// The `tinybroker-client-name` metadata as sent, or nothing.
  std::optional<std::string> client_name;
};

/// Settings of a `fake_broker`.
struct fake_broker_options {
  /// Calls must carry `authorization: Bearer <token>`, else they end with
  /// UNAUTHENTICATED; empty accepts every call.
  std::string token;
  /// Serve TLS with these certificates (when `tls`).
  bool tls = false;
  /// The certificates for TLS.
  fake_pki certs;
  /// Require and verify a client certificate (mutual TLS).
  bool require_client_cert = false;
  /// End the first Session stream with UNAVAILABLE when its first frame
  /// arrives, as a broker restart would.
  bool end_first_session = false;
};

/// An in-process gRPC server that answers the Broker methods: unary calls
/// with an empty reply, Session streams with a Subscribed frame per
/// subscribe (an error frame with PERMISSION_DENIED for patterns starting
/// with "forbidden") and a confirm per publish that asks for one.
class fake_broker {
public:
  /// Starts the server on a free loopback port.
  explicit fake_broker(fake_broker_options options = {});

  /// Stops the server.
  ~fake_broker();

  fake_broker(const fake_broker&) = delete;
  fake_broker& operator=(const fake_broker&) = delete;

  /// Returns "127.0.0.1:PORT".
  std::string address() const;

  /// Returns "localhost:PORT".
  std::string localhost_address() const;

  /// Waits until a call whose method ends with `method` arrived and returns
  /// the first such; nothing if `timeout` passed first.
  std::optional<recorded_call> wait_call(const std::string& method,
                                         std::chrono::milliseconds timeout);

  /// Returns every call received so far.
  std::vector<recorded_call> calls() const;

  /// Records `call` (from the server's threads); returns true if it is the
  /// Session stream to end early (see `end_first_session`).
  bool record(recorded_call call);

  /// Records the Publish frame `publish` (from the server's threads).
  void record_publish(const tinybroker::v1::Publish& publish);

  /// Waits until `count` Publish frames arrived (or `timeout` passed) and
  /// returns every one received so far, in arrival order.
  std::vector<tinybroker::v1::Publish>
  wait_publishes(std::size_t count, std::chrono::milliseconds timeout);

  /// Returns true if `authorization` is what the options require.
  bool accepts(const std::optional<std::string>& authorization) const;

private:
  fake_broker_options options_;
  std::unique_ptr<grpc::CallbackGenericService> service_;
  std::unique_ptr<grpc::Server> server_;
  int port_ = 0;
  mutable std::mutex mutex_;
  std::condition_variable cv_;
  std::vector<recorded_call> calls_;
  std::vector<tinybroker::v1::Publish> publishes_;
  int sessions_ = 0;
};

} // namespace tb::test
