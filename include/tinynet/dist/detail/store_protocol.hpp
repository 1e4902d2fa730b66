#pragma once
/// \file
/// The wire format of the TCP store: PyTorch's c10d TCPStore protocol as torch 1.13
/// speaks it (torch/csrc/distributed/c10d/TCPStore.cpp at v1.13), so a tinynet rank can
/// use the store torchrun's agent already hosts, and tinynet's server can host one.
///
/// A request is one command byte, then arguments: strings and byte vectors as a uint64
/// length (host byte order) followed by the bytes; integers as raw int64; key lists as a
/// uint64 count followed by that many strings. Replies: GET a length-prefixed vector,
/// ADD an int64, CHECK one byte (0 ready, 1 not ready), WAIT one byte (0) once every key
/// exists. No handshake, no magic number in that version (newer releases add both).

#include <cstdint>
#include <cstring>
#include <string>

namespace tinynet::dist::detail {

// The subset tinynet uses; the server rejects the others (compare_set = 1, getnumkeys = 6, ...).
enum class StoreCommand : std::uint8_t { set = 0, get = 2, add = 3, check = 4, wait = 5 };

inline constexpr std::uint8_t kCheckReady = 0;
inline constexpr std::uint8_t kCheckNotReady = 1;
inline constexpr std::uint8_t kWaitDone = 0;

/// Bounds every message is checked against before anything is allocated for it.
inline constexpr std::uint64_t kMaxKeyBytes = 4096;
inline constexpr std::uint64_t kMaxValueBytes = 16ull << 20;
inline constexpr std::uint64_t kMaxKeysPerRequest = 65536;

inline void append_u64(std::string& out, std::uint64_t v) { out.append(reinterpret_cast<const char*>(&v), sizeof v); }
inline void append_i64(std::string& out, std::int64_t v) { out.append(reinterpret_cast<const char*>(&v), sizeof v); }
inline void append_bytes(std::string& out, const std::string& s) {
  append_u64(out, s.size());
  out += s;
}

}  // namespace tinynet::dist::detail
