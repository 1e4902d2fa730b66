#pragma once
/// \file
/// One HTTP(S) GET into a file, through libcurl, bounded in time and size. Used by the
/// fetcher; the result says why a download failed instead of throwing, so the fetcher
/// can go on to the next source and list every failure at the end.

#include <curl/curl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>
#include <string>

#include "tinynet/data/content_reader.hpp"
#include "tinynet/data/error.hpp"

namespace tinynet::data {

/// Limits of one download.
struct DownloadOptions {
  long connect_timeout_s = 15;                       ///< give up on a host that does not answer
  long timeout_s = 900;                              ///< whole transfer
  std::uint64_t max_bytes = std::uint64_t{1} << 30;  ///< refuse a body larger than this
};

/// How a download ended.
struct DownloadResult {
  std::string error;              ///< empty on success
  bool host_unreachable = false;  ///< DNS, connect or connect-timeout failure: the host is down for us
  bool ok() const { return error.empty(); }
};

namespace detail {

struct CurlGlobal {
  CurlGlobal() : ok(curl_global_init(CURL_GLOBAL_DEFAULT) == CURLE_OK) {}
  ~CurlGlobal() {
    if (ok) curl_global_cleanup();
  }
  bool ok;
};

struct WriteTarget {
  std::FILE* file;
  std::uint64_t written = 0;
  std::uint64_t max_bytes;
  bool too_big = false;
};

inline std::size_t curl_write(char* ptr, std::size_t size, std::size_t nmemb, void* user) {
  auto* t = static_cast<WriteTarget*>(user);
  const std::size_t n = size * nmemb;
  if (t->written + n > t->max_bytes) {
    t->too_big = true;
    return 0;  // makes curl stop with CURLE_WRITE_ERROR
  }
  t->written += n;
  return std::fwrite(ptr, 1, n, t->file);
}

struct CurlEasyCleanup {
  void operator()(CURL* c) const { curl_easy_cleanup(c); }
};

}  // namespace detail

/// GETs `url` into `dest` (created or truncated), following redirects; HTTP errors
/// (404, 503, ...) are failures, not files. Never throws for network trouble.
inline DownloadResult download_to_file(const std::string& url, const std::filesystem::path& dest,
                                       const DownloadOptions& opts = {}) {
  static detail::CurlGlobal global;  // curl_global_init once, before any handle
  DownloadResult result;
  if (!global.ok) {
    result.error = "libcurl failed to initialise";
    return result;
  }
  std::unique_ptr<std::FILE, detail::FileCloser> file(std::fopen(dest.c_str(), "wb"));
  if (!file) {
    result.error = "cannot write '" + dest.string() + "': " + std::strerror(errno);
    return result;
  }
  std::unique_ptr<CURL, detail::CurlEasyCleanup> curl(curl_easy_init());
  if (!curl) {
    result.error = "libcurl could not create a handle";
    return result;
  }
  detail::WriteTarget target{file.get(), 0, opts.max_bytes};
  char errbuf[CURL_ERROR_SIZE] = {};
  CURL* c = curl.get();
  curl_easy_setopt(c, CURLOPT_URL, url.c_str());
  curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(c, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 1L);
  curl_easy_setopt(c, CURLOPT_MAXREDIRS, 5L);
  curl_easy_setopt(c, CURLOPT_FAILONERROR, 1L);
  curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);  // no SIGALRM for DNS timeouts: we are not alone in this process
  curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT, opts.connect_timeout_s);
  curl_easy_setopt(c, CURLOPT_TIMEOUT, opts.timeout_s);
  // A transfer that stalls below 1 KiB/s for 60 s is dead even if the overall limit is far.
  curl_easy_setopt(c, CURLOPT_LOW_SPEED_LIMIT, 1024L);
  curl_easy_setopt(c, CURLOPT_LOW_SPEED_TIME, 60L);
  curl_easy_setopt(c, CURLOPT_USERAGENT, "tinynet-data-fetch/1");
  curl_easy_setopt(c, CURLOPT_ERRORBUFFER, errbuf);
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, &detail::curl_write);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, &target);

  const CURLcode rc = curl_easy_perform(c);
  const bool flushed = std::fflush(file.get()) == 0 && fsync(fileno(file.get())) == 0;
  if (rc != CURLE_OK) {
    result.error = errbuf[0] != '\0' ? errbuf : curl_easy_strerror(rc);
    if (target.too_big) result.error = "larger than " + std::to_string(opts.max_bytes) + " bytes: not a data file";
    result.host_unreachable = rc == CURLE_COULDNT_RESOLVE_HOST || rc == CURLE_COULDNT_RESOLVE_PROXY ||
                              rc == CURLE_COULDNT_CONNECT || (rc == CURLE_OPERATION_TIMEDOUT && target.written == 0);
    return result;
  }
  if (!flushed) result.error = "cannot write '" + dest.string() + "': " + std::strerror(errno);
  return result;
}

}  // namespace tinynet::data
