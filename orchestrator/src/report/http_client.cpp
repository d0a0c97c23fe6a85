// The libcurl client behind HttpClient; without libcurl (ORCH_HAVE_CURL undefined) a stub that
// says so.
#include "report/http_client.h"

#ifdef ORCH_HAVE_CURL
#include <curl/curl.h>

#include <mutex>
#endif

namespace orch {

#ifdef ORCH_HAVE_CURL
namespace {

std::size_t append_body(char* data, std::size_t size, std::size_t count, void* out) {
  static_cast<std::string*>(out)->append(data, size * count);
  return size * count;
}

class CurlClient : public HttpClient {
 public:
  CurlClient() {
    static std::once_flag once;
    std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
    curl_ = curl_easy_init();
    if (!curl_) throw std::runtime_error("libcurl could not make a connection handle");
    headers_ = curl_slist_append(headers_, "Content-Type: application/json");
    headers_ = curl_slist_append(headers_, "Accept: application/json");
  }
  ~CurlClient() override {
    curl_slist_free_all(headers_);
    curl_easy_cleanup(curl_);
  }
  CurlClient(const CurlClient&) = delete;
  CurlClient& operator=(const CurlClient&) = delete;

  HttpResponse request(const std::string& method, const std::string& url,
                       const std::string& json_body) override {
    HttpResponse r;
    char error[CURL_ERROR_SIZE] = {};
    // One handle for every request keeps the connection alive between them; each request
    // sets every option it depends on, after a reset.
    curl_easy_reset(curl_);
    curl_easy_setopt(curl_, CURLOPT_URL, url.c_str());
    curl_easy_setopt(curl_, CURLOPT_HTTPHEADER, headers_);
    curl_easy_setopt(curl_, CURLOPT_WRITEFUNCTION, append_body);
    curl_easy_setopt(curl_, CURLOPT_WRITEDATA, &r.body);
    curl_easy_setopt(curl_, CURLOPT_ERRORBUFFER, error);
    curl_easy_setopt(curl_, CURLOPT_CONNECTTIMEOUT, 10L);
    curl_easy_setopt(curl_, CURLOPT_TIMEOUT, 120L);
    curl_easy_setopt(curl_, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(curl_, CURLOPT_FOLLOWLOCATION, 0L);
#if LIBCURL_VERSION_NUM >= 0x075500  // 7.85 replaced the bit mask with a list
    curl_easy_setopt(curl_, CURLOPT_PROTOCOLS_STR, "http,https");
#else
    curl_easy_setopt(curl_, CURLOPT_PROTOCOLS, CURLPROTO_HTTP | CURLPROTO_HTTPS);
#endif
    if (method == "POST") {
      curl_easy_setopt(curl_, CURLOPT_POST, 1L);
      curl_easy_setopt(curl_, CURLOPT_POSTFIELDS, json_body.data());
      curl_easy_setopt(curl_, CURLOPT_POSTFIELDSIZE_LARGE,
                       static_cast<curl_off_t>(json_body.size()));
    } else {
      curl_easy_setopt(curl_, CURLOPT_HTTPGET, 1L);
    }
    const CURLcode rc = curl_easy_perform(curl_);
    if (rc != CURLE_OK) {
      std::string what = curl_easy_strerror(rc);
      if (*error) what += std::string(": ") + error;
      throw HttpTransportError(what);
    }
    curl_easy_getinfo(curl_, CURLINFO_RESPONSE_CODE, &r.status);
    return r;
  }

 private:
  CURL* curl_ = nullptr;
  curl_slist* headers_ = nullptr;
};

}  // namespace

bool http_client_available() { return true; }

std::unique_ptr<HttpClient> make_http_client() { return std::make_unique<CurlClient>(); }

#else

bool http_client_available() { return false; }

std::unique_ptr<HttpClient> make_http_client() {
  throw std::runtime_error(
      "this orch was built without libcurl, so it cannot talk to an HTTP server; install "
      "libcurl's development files (Debian: libcurl4-openssl-dev, which scripts/setup.sh "
      "installs) and configure the build again");
}

#endif

}  // namespace orch
