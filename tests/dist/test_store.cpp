#include <atomic>
#include <catch2/catch.hpp>
#include <random>
#include <thread>
#include <tinynet/dist/tcp_store.hpp>
#include <tinynet/dist/tcp_store_server.hpp>

using namespace tinynet::dist;
using namespace std::chrono_literals;

namespace {

struct Server {
  std::vector<std::string> log;
  std::mutex mu;
  TCPStoreServer server;
  explicit Server(Milliseconds incomplete = 10'000ms)
      : server(TCPStoreServerOptions{.incomplete_message_timeout = incomplete, .log = [this](const std::string& m) {
                                       std::lock_guard lock(mu);
                                       log.push_back(m);
                                     }}) {}
  std::string joined_log() {
    std::lock_guard lock(mu);
    std::string s;
    for (auto& l : log) s += l + "\n";
    return s;
  }
};

// A raw connection to the server, for sending what no client would.
detail::Fd raw_connect(int port) {
  return detail::connect_with_retry("127.0.0.1", port, detail::Clock::now() + 5s, "test");
}

void wait_for_drops(const TCPStoreServer& s, std::int64_t n) {
  for (int i = 0; i < 200 && s.dropped_connections() < n; ++i) std::this_thread::sleep_for(10ms);
}

}  // namespace

TEST_CASE("store: set, get, add, check, wait", "[store]") {
  Server s;
  TCPStore a("127.0.0.1", s.server.port(), 5s, "client a");
  TCPStore b("127.0.0.1", s.server.port(), 5s, "client b");
  a.set("k", std::string("v\0w", 3));
  CHECK(b.get("k") == std::string("v\0w", 3));
  a.set("k", "");  // overwrite, empty value
  CHECK(b.get("k").empty());
  CHECK(a.add("n", 5) == 5);
  CHECK(b.add("n", -7) == -2);
  CHECK(a.get("n") == "-2");
  CHECK(a.check({"k", "n"}));
  CHECK_FALSE(a.check({"k", "missing"}));
  b.wait({"k", "n"}, 1s);
}

TEST_CASE("store: get blocks until another client sets the key", "[store]") {
  Server s;
  TCPStore a("127.0.0.1", s.server.port(), 5s);
  std::thread setter([port = s.server.port()] {
    std::this_thread::sleep_for(200ms);
    TCPStore b("127.0.0.1", port, 5s);
    b.set("late", "here");
  });
  const auto t0 = std::chrono::steady_clock::now();
  CHECK(a.get("late") == "here");
  CHECK(std::chrono::steady_clock::now() - t0 >= 150ms);
  setter.join();
}

TEST_CASE("store: wait and get time out naming the key", "[store]") {
  Server s;
  TCPStore a("127.0.0.1", s.server.port(), 300ms, "rank 3");
  const auto t0 = std::chrono::steady_clock::now();
  CHECK_THROWS_WITH(a.get("never"), Catch::Contains("rank 3") && Catch::Contains("'never'") &&
                                        Catch::Contains("not set within 300 ms"));
  CHECK(std::chrono::steady_clock::now() - t0 < 3s);
  CHECK_THROWS_AS(a.wait({"never"}, 100ms), DistTimeoutError);
}

TEST_CASE("store: connecting to a port nobody listens on times out with the address", "[store]") {
  int port;
  {
    TCPStoreServer probe;
    port = probe.port();
  }
  CHECK_THROWS_WITH(TCPStore("127.0.0.1", port, 300ms, "rank 1"),
                    Catch::Contains("rank 1") && Catch::Contains("127.0.0.1:" + std::to_string(port)) &&
                        Catch::Contains("could not connect"));
}

TEST_CASE("store: hostile connections are dropped and logged, clients unaffected", "[store][hostile]") {
  Server s(300ms);
  const int port = s.server.port();
  TCPStore good("127.0.0.1", port, 5s);
  good.set("before", "1");

  std::mt19937 rng(7);
  auto random_bytes = raw_connect(port);  // garbage: the first byte is not a command
  std::string junk(4096, '\0');
  for (auto& c : junk) c = static_cast<char>(0x40 + rng() % 64);
  detail::send_all(random_bytes.get(), junk.data(), junk.size(), detail::Clock::now() + 1s, "test");

  auto oversized = raw_connect(port);  // a SET announcing a 2^60-byte key: rejected before allocating
  std::string big(1, '\0');
  detail::append_u64(big, 1ull << 60);
  detail::send_all(oversized.get(), big.data(), big.size(), detail::Clock::now() + 1s, "test");

  auto half_open = raw_connect(port);  // half a message, then silence
  std::string partial(1, '\2');
  detail::append_u64(partial, 10);
  partial += "abc";
  detail::send_all(half_open.get(), partial.data(), partial.size(), detail::Clock::now() + 1s, "test");

  for (int i = 0; i < 20; ++i) raw_connect(port);  // a port scan: connect, close

  auto missing = raw_connect(port);  // GET of a key nobody set (PyTorch's server drops these too)
  std::string get(1, '\2');
  detail::append_bytes(get, "nope");
  detail::send_all(missing.get(), get.data(), get.size(), detail::Clock::now() + 1s, "test");

  // The legitimate client is served while the half-open one is still pending.
  good.set("during", "2");
  CHECK(good.get("before") == "1");
  wait_for_drops(s.server, 4);
  const std::string log = s.joined_log();
  INFO(log);
  CHECK(s.server.dropped_connections() == 4);
  CHECK_THAT(log, Catch::Contains("unknown or unsupported command byte"));
  CHECK_THAT(log, Catch::Contains("exceeds the limit"));
  CHECK_THAT(log, Catch::Contains("incomplete message"));
  CHECK_THAT(log, Catch::Contains("GET of a key that does not exist"));
  CHECK_THAT(log, Catch::Contains("dropped connection from 127.0.0.1:"));
  CHECK(good.get("during") == "2");
  CHECK(good.add("n", 1) == 1);
}

TEST_CASE("store: a second server on a used port names the port and the launcher case", "[store]") {
  TCPStoreServer first;
  CHECK_THROWS_WITH(
      TCPStoreServer(TCPStoreServerOptions{.port = first.port()}),
      Catch::Contains("port " + std::to_string(first.port())) && Catch::Contains("TORCHELASTIC_USE_AGENT_STORE"));
}

TEST_CASE("store: a connection flood is capped, connected clients unaffected", "[store][hostile]") {
  std::vector<std::string> log;
  std::mutex mu;
  TCPStoreServer server(TCPStoreServerOptions{.max_connections = 16, .log = [&](const std::string& m) {
                                                std::lock_guard lock(mu);
                                                log.push_back(m);
                                              }});
  TCPStore good("127.0.0.1", server.port(), 5s);
  std::vector<detail::Fd> flood;
  for (int i = 0; i < 40; ++i) flood.push_back(raw_connect(server.port()));
  wait_for_drops(server, 25);  // the good client and 15 of the flood fill the 16 places
  CHECK(server.dropped_connections() == 25);
  {
    std::lock_guard lock(mu);
    REQUIRE_FALSE(log.empty());
    CHECK_THAT(log.back(), Catch::Contains("already serving 16 connections"));
  }
  good.set("k", "v");
  CHECK(good.get("k") == "v");
}
