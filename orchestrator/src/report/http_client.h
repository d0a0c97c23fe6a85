// A small HTTP client for JSON APIs (`orch export --to mlflow`), over libcurl. The exporter
// talks to an HttpClient, so its tests can answer in place of a server.
#pragma once

#include <memory>
#include <stdexcept>
#include <string>

namespace orch {

struct HttpResponse {
  long status = 0;   ///< the HTTP status code (200, 404, 500, ...)
  std::string body;  ///< the response body as received
};

/// The request never got an HTTP answer: the host could not be resolved or reached, the
/// connection was refused or reset, TLS failed, or the time limit passed. The message is
/// libcurl's, e.g. "Couldn't connect to server: Failed to connect to localhost port 9 ...".
class HttpTransportError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class HttpClient {
 public:
  virtual ~HttpClient() = default;
  /// Sends `method` (GET or POST) to `url`; a POST sends `json_body` as application/json.
  /// Returns whatever status the server answered; throws HttpTransportError when none came.
  virtual HttpResponse request(const std::string& method, const std::string& url,
                               const std::string& json_body) = 0;
};

/// True when this orch was built with libcurl (CMake found it); without it
/// make_http_client() throws, saying so.
bool http_client_available();

/// A libcurl client: 10 s to connect, 120 s for a whole request; redirects are not followed
/// (a POST must not turn into a GET on the way). Throws std::runtime_error when this orch was
/// built without libcurl.
std::unique_ptr<HttpClient> make_http_client();

}  // namespace orch
