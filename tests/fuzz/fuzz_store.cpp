// libFuzzer target for the TCP store's request parser (detail::StoreEngine), both dialects
// (PyTorch 1.13's and 2.x's): the input is a script of deliveries to four connections,
// each record `<connection byte> <length byte> <that many bytes>` (a short last record
// delivers what is left), so that requests arrive split, interleaved, and WAITs are woken
// by other connections. A connection the engine refuses (StoreProtocolError) is closed and
// opened again, as TCPStoreServer drops it; any other exception, a crash or a sanitizer
// report is a finding. Built and run by run_fuzz.cmake (TARGET=fuzz_store, seeds in
// tests/fuzz/seeds/store: exchanges recorded from the real torch 1.13 and 2.6 clients).

#include <cstddef>
#include <cstdint>
#include <string>
#include <tinynet/dist/detail/store_engine.hpp>

using tinynet::dist::detail::StoreEngine;
using tinynet::dist::detail::StoreProtocolError;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  constexpr int kConnections = 4;
  StoreEngine engine;
  std::string in[kConnections];
  for (int c = 0; c < kConnections; ++c) engine.open(c);
  std::size_t pos = 0;
  while (pos + 2 <= size) {
    const int conn = data[pos] % kConnections;
    const std::size_t len = std::min<std::size_t>(data[pos + 1], size - pos - 2);
    in[conn].append(reinterpret_cast<const char*>(data + pos + 2), len);
    pos += 2 + len;
    try {
      engine.feed(conn, in[conn]);
    } catch (const StoreProtocolError& e) {
      if (e.reason.empty()) __builtin_trap();  // a refusal must say why
      engine.close(conn);
      engine.open(conn);
      in[conn].clear();
    }
    engine.output(conn).clear();  // the client read its replies
    if (engine.bytes() > StoreEngine::kMaxStoreBytes) __builtin_trap();
  }
  return 0;
}
