// What the metrics listener needs to serve the console over httplib
// (net/metrics_server.cpp): a console request from an httplib request, the
// headers of every console answer, and the page's files from memory.

#pragma once

#include "net/console_api.hpp"

namespace httplib {
struct Request;
struct Response;
} // namespace httplib

namespace tb {

/// Returns what the console needs of `req`: method, path, parameters, the
/// `Authorization` and `X-Tinybroker-Console` headers, the subject of a
/// verified client certificate (RFC 2253, as gRPC's x509_subject names it)
/// and the peer.
http_request console_request(const httplib::Request& req);

/// Sets the headers every console answer carries: no caching, no framing,
/// nothing loaded from elsewhere (Content-Security-Policy), no sniffing.
void console_headers(httplib::Response& res);

/// Serves the file of the console's page at `req.path` from memory
/// (net/console_assets.hpp), or 404.
void serve_console_asset(const httplib::Request& req, httplib::Response& res);

} // namespace tb
