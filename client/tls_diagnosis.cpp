#include "client/tls_diagnosis.hpp"

#include <algorithm>

#include <openssl/x509.h>

#include "client/detail/tls_probe.hpp"
#include "tinybroker.grpc.pb.h"

namespace tb::client {

namespace {

using detail::refusal_detail;
using detail::run_probe;

// Returns true if `text` contains `part`.
bool has(std::string_view text, std::string_view part) {
  return text.find(part) != std::string_view::npos;
}

// Returns the sentence for the broker's certificate failing verification
// with `verify`, trusted with `security.ca_file`.
connect_diagnosis server_certificate_problem(long verify,
                                             const security_options& security) {
  if (verify == X509_V_ERR_CERT_HAS_EXPIRED ||
      verify == X509_V_ERR_CERT_NOT_YET_VALID)
    return {connect_cause::server_cert_expired,
            std::string{"the broker's certificate "} +
                (verify == X509_V_ERR_CERT_HAS_EXPIRED ? "has expired"
                                                       : "is not valid yet") +
                " (certificate verify failed); the broker needs a renewed "
                "certificate"};
  std::string by = security.ca_file.empty()
                       ? std::string{"any of the system's CAs"}
                       : "the CA in \"" + security.ca_file + "\"";
  std::string text = "the broker's certificate is not trusted: it is not "
                     "signed by " +
                     by;
  if (verify != X509_V_OK)
    text += std::string{" ("} + X509_verify_cert_error_string(verify) + ")";
  return {connect_cause::server_not_trusted,
          text + "; give the CA that signed the broker's certificate with "
                 "--ca (TINYBROKER_CA)"};
}

// Returns the name in "Peer name NAME is not in peer certificate", or "".
std::string peer_name(std::string_view message) {
  constexpr std::string_view start = "Peer name ";
  auto at = message.find(start);
  if (at == std::string_view::npos)
    return {};
  at += start.size();
  auto end = message.find(" is not in peer certificate", at);
  return std::string{message.substr(at, end - at)};
}

} // namespace

connect_cause classify_grpc_message(std::string_view message) {
  if (has(message, "is not in peer certificate"))
    return connect_cause::name_mismatch;
  if (has(message, "wrong version number") ||
      has(message, "packet length too long"))
    return connect_cause::server_not_tls;
  if (has(message, "certificate verify failed"))
    return connect_cause::server_not_trusted;
  if (has(message, "Connection refused"))
    return connect_cause::refused;
  return connect_cause::unknown;
}

connect_diagnosis probe_tls(const std::string& address,
                            const security_options& security,
                            std::chrono::milliseconds timeout) {
  auto found = run_probe(address, security, timeout);
  if (!found.reached)
    return {};
  if (!security.tls())
    return found.handshake
               ? connect_diagnosis{connect_cause::server_speaks_tls,
                                   "the broker speaks TLS there and this "
                                   "client plain text; give the CA that "
                                   "signed the broker's certificate with "
                                   "--ca (TINYBROKER_CA)"}
               : connect_diagnosis{};
  if (found.not_tls)
    return {connect_cause::server_not_tls,
            "the broker does not speak TLS there (it answered in plain "
            "text); connect without --ca and --cert (TINYBROKER_CA, "
            "TINYBROKER_CERT), or to the broker's TLS port"};
  if (!found.handshake)
    return {};
  if (found.verify != X509_V_OK)
    return server_certificate_problem(found.verify, security);
  if (!found.closed_after_handshake)
    return {};
  if (security.cert_file.empty())
    return {connect_cause::client_cert_required,
            "the broker requires a client certificate (mutual TLS) and "
            "closed the connection; give one with --cert and --key "
            "(TINYBROKER_CERT, TINYBROKER_KEY)"};
  auto detail = refusal_detail(security.cert_file, found.client_ca_names);
  return {connect_cause::client_cert_refused,
          "the broker refused the client certificate \"" + security.cert_file +
              "\": " +
              (detail.empty()
                   ? std::string{"it is not signed by a CA the broker "
                                 "trusts (its client_ca), or not meant for "
                                 "client authentication"}
                   : detail)};
}

connect_diagnosis diagnose_connect_failure(const std::string& address,
                                           const security_options& security,
                                           std::string_view grpc_message,
                                           std::chrono::milliseconds timeout) {
  switch (classify_grpc_message(grpc_message)) {
  case connect_cause::refused:
    return {connect_cause::refused,
            "nothing listens there (connection refused); is tinybroker "
            "running there? (check --server or TINYBROKER_SERVER)"};
  case connect_cause::name_mismatch: {
    auto name = peer_name(grpc_message);
    return {connect_cause::name_mismatch,
            "the broker's certificate does not carry the name \"" + name +
                "\"; connect by a name the certificate carries (--server), "
                "or name one with --tls-server-name "
                "(TINYBROKER_TLS_SERVER_NAME)"};
  }
  case connect_cause::server_not_tls:
    return {connect_cause::server_not_tls,
            "the broker does not speak TLS there (it answered in plain "
            "text); connect without --ca and --cert (TINYBROKER_CA, "
            "TINYBROKER_CERT), or to the broker's TLS port"};
  case connect_cause::server_not_trusted: {
    // The probe tells an expired certificate from an untrusted one.
    auto found = run_probe(address, security, timeout);
    return server_certificate_problem(
        found.handshake ? found.verify : X509_V_OK, security);
  }
  default:
    return probe_tls(address, security, timeout);
  }
}

std::string last_connect_error(const std::shared_ptr<grpc::Channel>& channel,
                               std::chrono::milliseconds timeout) {
  auto stub = tinybroker::v1::Broker::NewStub(channel);
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + timeout);
  tinybroker::v1::InfoRequest request;
  tinybroker::v1::InfoReply reply;
  auto status = stub->Info(&ctx, request, &reply);
  return status.ok() ? std::string{} : status.error_message();
}

std::string explain_unreachable(const std::shared_ptr<grpc::Channel>& channel,
                                const std::string& server,
                                const security_options& security,
                                reach_outcome outcome,
                                std::chrono::milliseconds timeout) {
  auto fallback = [&] {
    return unreachable_message(server, outcome, timeout, security.tls());
  };
  if (outcome != reach_outcome::failed)
    return fallback();
  auto patience =
      std::min<std::chrono::milliseconds>(timeout, std::chrono::seconds(2));
  auto why = diagnose_connect_failure(
      server, security, last_connect_error(channel, patience), patience);
  if (why.cause == connect_cause::unknown)
    return fallback();
  return "cannot connect to the broker at " + server +
         (security.tls() ? " over TLS: " : ": ") + why.sentence;
}

} // namespace tb::client
