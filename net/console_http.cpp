#include "net/console_http.hpp"

#include <httplib.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include "net/console_assets.hpp"

namespace tb {

namespace {

// Returns the RFC 2253 subject of the verified client certificate of
// `req` (as gRPC's x509_subject names it), or "" without one.
std::string certificate_subject(const httplib::Request& req) {
  if (req.ssl == nullptr || SSL_get_verify_result(req.ssl) != X509_V_OK)
    return {};
  auto* cert = SSL_get1_peer_certificate(req.ssl);
  if (cert == nullptr)
    return {};
  std::string result;
  if (auto* bio = BIO_new(BIO_s_mem())) {
    if (X509_NAME_print_ex(bio, X509_get_subject_name(cert), 0,
                           XN_FLAG_RFC2253) >= 0) {
      char* data = nullptr;
      auto n = BIO_get_mem_data(bio, &data);
      result.assign(data, static_cast<size_t>(n));
    }
    BIO_free(bio);
  }
  X509_free(cert);
  return result;
}

} // namespace

http_request console_request(const httplib::Request& req) {
  http_request result;
  result.method = req.method;
  result.path = req.path;
  for (auto& [name, value] : req.params)
    result.params.emplace(name, value);
  result.authorization = req.get_header_value("Authorization");
  result.console_header = req.get_header_value("X-Tinybroker-Console");
  result.host = req.get_header_value("Host");
  result.cert_subject = certificate_subject(req);
  result.peer = req.remote_addr + ":" + std::to_string(req.remote_port);
  return result;
}

void console_headers(httplib::Response& res) {
  res.set_header("Cache-Control", "no-store");
  res.set_header("X-Content-Type-Options", "nosniff");
  res.set_header("Referrer-Policy", "no-referrer");
  res.set_header("Content-Security-Policy",
                 "default-src 'self'; img-src 'self' data:; "
                 "frame-ancestors 'none'; base-uri 'none'; form-action "
                 "'none'");
}

void serve_console_asset(const httplib::Request& req, httplib::Response& res) {
  console_headers(res);
  auto* asset = find_console_asset(req.path);
  if (asset == nullptr) {
    res.status = 404;
    res.set_content("not found\n", "text/plain; charset=utf-8");
    return;
  }
  res.set_content(std::string{asset->body}, std::string{asset->content_type});
}

} // namespace tb
