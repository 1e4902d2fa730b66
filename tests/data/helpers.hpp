#pragma once
// Helpers for the data tests: temporary folders, writing IDX / gzip bytes, the shared
// real data sets (loaded once per process), and a one-thread local HTTP server.

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <tinynet/data/mnist.hpp>
#include <vector>

#include "temp_dir.hpp"

namespace test_data {

namespace fs = std::filesystem;
using Bytes = std::vector<unsigned char>;

/// The real data sets (../shared/data).
inline fs::path data_root() { return fs::path(TINYNET_TEST_DATA_DIR); }

using TempDir = tinynet::testing::TempDir;

inline void write_file(const fs::path& p, const Bytes& bytes) {
  fs::create_directories(p.parent_path());
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  if (!out) throw std::runtime_error("cannot write " + p.string());
}

inline void write_text(const fs::path& p, const std::string& text) { write_file(p, Bytes(text.begin(), text.end())); }

inline Bytes read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return Bytes(std::istreambuf_iterator<char>(in), {});
}

/// The uncompressed content of a (possibly gzipped) file.
inline Bytes read_content(const fs::path& p) {
  tinynet::data::ContentReader r(p);
  Bytes out;
  unsigned char buf[1 << 16];
  for (std::size_t n; (n = r.read(buf, sizeof buf)) > 0;) out.insert(out.end(), buf, buf + n);
  return out;
}

/// `bytes` as one gzip member (zlib's deflate with a gzip wrapper).
inline Bytes gzip(const Bytes& bytes, int level = 6) {
  z_stream zs{};
  if (deflateInit2(&zs, level, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY) != Z_OK)
    throw std::runtime_error("deflateInit2 failed");
  Bytes out(deflateBound(&zs, bytes.size()));
  zs.next_in = const_cast<unsigned char*>(bytes.data());
  zs.avail_in = static_cast<uInt>(bytes.size());
  zs.next_out = out.data();
  zs.avail_out = static_cast<uInt>(out.size());
  if (deflate(&zs, Z_FINISH) != Z_STREAM_END) throw std::runtime_error("deflate failed");
  out.resize(zs.total_out);
  deflateEnd(&zs);
  return out;
}

/// An IDX header: magic 00 00 type rank, then big-endian dims.
inline Bytes idx_header(unsigned char type, const std::vector<std::uint32_t>& dims) {
  Bytes b = {0, 0, type, static_cast<unsigned char>(dims.size())};
  for (std::uint32_t d : dims)
    for (int shift = 24; shift >= 0; shift -= 8) b.push_back(static_cast<unsigned char>(d >> shift));
  return b;
}

/// A complete u8 IDX file with the given dims and element values i % 251.
inline Bytes idx_u8(const std::vector<std::uint32_t>& dims) {
  Bytes b = idx_header(0x08, dims);
  std::size_t n = 1;
  for (auto d : dims) n *= d;
  for (std::size_t i = 0; i < n; ++i) b.push_back(static_cast<unsigned char>(i % 251));
  return b;
}

inline Bytes concat(Bytes a, const Bytes& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

/// MD5SUMS of the shared data: "mnist/t10k-images-idx3-ubyte" -> md5.
inline std::map<std::string, std::string> md5sums() {
  std::map<std::string, std::string> out;
  std::ifstream in(data_root() / "MD5SUMS");
  std::string md5, name;
  while (in >> md5 >> name) out[name] = md5;
  return out;
}

/// The real data sets, loaded once per process and shared by the tests that read them.
inline const tinynet::data::MNIST& mnist(bool train) {
  static const tinynet::data::MNIST tr(data_root(), {.train = true});
  static const tinynet::data::MNIST te(data_root(), {.train = false});
  return train ? tr : te;
}
inline const tinynet::data::FashionMNIST& fashion(bool train) {
  static const tinynet::data::FashionMNIST tr(data_root(), {.train = true});
  static const tinynet::data::FashionMNIST te(data_root(), {.train = false});
  return train ? tr : te;
}

/// One tar member: a ustar header (octal fields, its checksum) and `data` padded to 512-byte
/// blocks. `type` '0' is a file, '5' a directory, 'L' GNU's long name of the next member.
inline Bytes tar_member(const std::string& name, const Bytes& data, char type = '0') {
  Bytes h(512, 0);
  auto put = [&](std::size_t at, const std::string& text) { std::copy(text.begin(), text.end(), h.begin() + at); };
  auto octal = [](std::uint64_t v, int width) {
    std::ostringstream o;
    o.width(width);
    o.fill('0');
    o << std::oct << v;
    return o.str();
  };
  put(0, name.substr(0, 100));
  put(100, octal(0644, 7));
  put(108, octal(0, 7));
  put(116, octal(0, 7));
  put(124, octal(data.size(), 11));
  put(136, octal(0, 11));
  h[156] = static_cast<unsigned char>(type);
  put(257, std::string("ustar") + '\0' + "00");
  put(148, "        ");
  unsigned sum = 0;
  for (unsigned char b : h) sum += b;
  put(148, octal(sum, 6) + std::string(1, '\0') + " ");
  Bytes out = h;
  out.insert(out.end(), data.begin(), data.end());
  out.resize(out.size() + (512 - data.size() % 512) % 512, 0);
  return out;
}

/// The two zero blocks that end a tar archive.
inline Bytes tar_end() { return Bytes(1024, 0); }

/// Links data_dir/subdir/<name>.gz to the shared copy of each file (nothing is copied).
inline void link_shared(const fs::path& data_dir, const std::string& subdir, const std::vector<std::string>& names) {
  fs::create_directories(data_dir / subdir);
  for (const auto& n : names) fs::create_symlink(data_root() / subdir / (n + ".gz"), data_dir / subdir / (n + ".gz"));
}

/// A TCP port on 127.0.0.1 that refuses connections: bound (so no other test running in
/// parallel can take it) but never listening.
class ClosedPort {
 public:
  ClosedPort() : fd_(socket(AF_INET, SOCK_STREAM, 0)) {
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    if (bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) throw std::runtime_error("ClosedPort: bind failed");
    getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len);
    port_ = ntohs(a.sin_port);
  }
  ~ClosedPort() { close(fd_); }
  ClosedPort(const ClosedPort&) = delete;
  ClosedPort& operator=(const ClosedPort&) = delete;
  std::string url(const std::string& path) const { return "http://127.0.0.1:" + std::to_string(port_) + path; }

 private:
  int fd_;
  int port_ = 0;
};

/// A minimal HTTP/1.0 server on 127.0.0.1 answering GET path -> (status, body) from
/// `routes`, 404 otherwise; one connection at a time, stopped on destruction.
class LocalHttpServer {
 public:
  using Routes = std::map<std::string, std::pair<int, Bytes>>;
  explicit LocalHttpServer(Routes routes) : routes_(std::move(routes)) {
    fd_ = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    if (bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || listen(fd_, 8) != 0)
      throw std::runtime_error("LocalHttpServer: cannot listen");
    getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len);
    port_ = ntohs(a.sin_port);
    thread_ = std::thread([this] { serve(); });
  }
  ~LocalHttpServer() {
    stop_ = true;
    thread_.join();
    close(fd_);
  }
  std::string url(const std::string& path) const { return "http://127.0.0.1:" + std::to_string(port_) + path; }
  int requests() const { return requests_; }

 private:
  void serve() {
    while (!stop_) {
      pollfd p{fd_, POLLIN, 0};
      if (poll(&p, 1, 50) <= 0) continue;
      const int c = accept(fd_, nullptr, nullptr);
      if (c < 0) continue;
      std::string req;
      char buf[4096];
      while (req.find("\r\n\r\n") == std::string::npos) {
        const ssize_t n = recv(c, buf, sizeof buf, 0);
        if (n <= 0) break;
        req.append(buf, static_cast<std::size_t>(n));
      }
      ++requests_;
      std::istringstream line(req);
      std::string method, path;
      line >> method >> path;
      const auto it = routes_.find(path);
      const int status = it == routes_.end() ? 404 : it->second.first;
      const Bytes body = it == routes_.end() ? Bytes{'n', 'o'} : it->second.second;
      const std::string head = "HTTP/1.0 " + std::to_string(status) + (status == 200 ? " OK" : " Error") +
                               "\r\nContent-Length: " + std::to_string(body.size()) + "\r\nConnection: close\r\n\r\n";
      send_all(c, head.data(), head.size());
      send_all(c, body.data(), body.size());
      close(c);
    }
  }
  static void send_all(int c, const void* data, std::size_t n) {
    const char* p = static_cast<const char*>(data);
    while (n > 0) {
      const ssize_t k = send(c, p, n, MSG_NOSIGNAL);
      if (k <= 0) return;
      p += k;
      n -= static_cast<std::size_t>(k);
    }
  }

  Routes routes_;
  int fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stop_{false};
  std::atomic<int> requests_{0};
  std::thread thread_;
};

}  // namespace test_data
