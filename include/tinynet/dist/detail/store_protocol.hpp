#pragma once
/// \file
/// The wire format of the TCP store: PyTorch's c10d TCPStore protocol in the two dialects
/// torchrun speaks today, so a tinynet rank can use the store torchrun's agent hosts and
/// tinynet's server can serve PyTorch clients. Written from PyTorch's sources
/// (torch/csrc/distributed/c10d/TCPStore.cpp, TCPStoreBackend.cpp/.hpp,
/// TCPStoreLibUvBackend.cpp) and checked byte for byte against the real torch 1.13 and 2.6
/// on loopback (tests/dist/test_store_protocol.cpp holds the captured bytes; run_ranks.py's
/// torch-store and torch26-store scenarios talk to both).
///
/// Both dialects: a request is one command byte, then arguments: strings and byte vectors
/// as a uint64 length (host byte order) followed by the bytes; integers as raw int64; key
/// lists as a uint64 count followed by that many strings. Replies: GET and COMPARE_SET a
/// length-prefixed vector, ADD / GETNUMKEYS / DELETE_KEY an int64, CHECK one byte (0 ready,
/// 1 not ready), WAIT one byte (0) once every key exists.
///
/// - torch 1.13 (`Protocol::torch113`): no handshake. Commands SET 0, COMPARE_SET 1, GET 2,
///   ADD 3, CHECK 4, WAIT 5, GETNUMKEYS 6, WATCH_KEY 7 (not supported), DELETE_KEY 8.
/// - torch 2.x (`Protocol::torch2`): every connection opens with VALIDATE (0) and the uint32
///   magic 0x3C85F7CE; the server drops a connection that opens otherwise. Every later code
///   moved up by one: SET 1, COMPARE_SET 2, GET 3, ADD 4, CHECK 5, WAIT 6, GETNUMKEYS 7,
///   DELETE_KEY 8, then APPEND 9 (key, bytes; no reply), MULTI_GET 10 (key list; one vector
///   per key), MULTI_SET 11 (count, then key and value pairs; no reply), CANCEL_WAIT 12
///   (ends this connection's pending WAIT; reply 1, WAIT_CANCELED, after a 0 if the wait
///   had already finished), PING 13 (uint32 nonce; echoed). A 2.6 client sends VALIDATE
///   and PING on connecting, before its first request.
///
/// Telling them apart: a server reads a connection's first five bytes (VALIDATE + magic
/// means 2.x; 1.13 SET can never start so, its key length would exceed every bound). A
/// client opens with VALIDATE and a PING whose nonce's third byte is >= 0x80: a 2.x server
/// echoes the nonce; a 1.13 server reads those bytes as a SET whose key length is >= 2^63,
/// fails to size a buffer for it and closes the connection (it goes on serving the others),
/// after which the client reconnects speaking 1.13.

#include <array>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>

namespace tinynet::dist::detail {

enum class Protocol : std::uint8_t { torch113, torch2 };

inline const char* protocol_name(Protocol p) {
  return p == Protocol::torch2 ? "PyTorch 2.x TCPStore protocol" : "PyTorch 1.13 TCPStore protocol";
}

/// What a request asks for, whatever its wire code in the dialect.
enum class StoreCommand : std::uint8_t {
  validate,
  set,
  compare_set,
  get,
  add,
  check,
  wait,
  get_num_keys,
  delete_key,
  append,
  multi_get,
  multi_set,
  cancel_wait,
  ping,
};

inline constexpr std::uint32_t kValidationMagic = 0x3C85F7CE;
/// VALIDATE as a 2.x client's first five bytes.
inline constexpr std::array<char, 5> kValidateBytes{0, static_cast<char>(0xCE), static_cast<char>(0xF7),
                                                    static_cast<char>(0x85), 0x3C};

/// The command a wire byte means in `p`; nothing for a code `p` lacks or tinynet does not
/// serve (1.13's WATCH_KEY needs a second, callback connection).
inline std::optional<StoreCommand> decode_command(Protocol p, std::uint8_t code) {
  if (p == Protocol::torch2)
    return code <= static_cast<std::uint8_t>(StoreCommand::ping) ? std::optional(static_cast<StoreCommand>(code))
                                                                 : std::nullopt;
  switch (code) {
    case 0:
      return StoreCommand::set;
    case 1:
      return StoreCommand::compare_set;
    case 2:
      return StoreCommand::get;
    case 3:
      return StoreCommand::add;
    case 4:
      return StoreCommand::check;
    case 5:
      return StoreCommand::wait;
    case 6:
      return StoreCommand::get_num_keys;
    case 8:
      return StoreCommand::delete_key;
    default:
      return std::nullopt;
  }
}

/// The wire byte of `c` in `p`; nothing when 1.13 has no such command.
inline std::optional<std::uint8_t> encode_command(Protocol p, StoreCommand c) {
  if (p == Protocol::torch2) return static_cast<std::uint8_t>(c);
  switch (c) {
    case StoreCommand::set:
      return 0;
    case StoreCommand::compare_set:
      return 1;
    case StoreCommand::get:
      return 2;
    case StoreCommand::add:
      return 3;
    case StoreCommand::check:
      return 4;
    case StoreCommand::wait:
      return 5;
    case StoreCommand::get_num_keys:
      return 6;
    case StoreCommand::delete_key:
      return 8;
    default:
      return std::nullopt;
  }
}

inline constexpr std::uint8_t kCheckReady = 0;
inline constexpr std::uint8_t kCheckNotReady = 1;
inline constexpr std::uint8_t kWaitDone = 0;
inline constexpr std::uint8_t kWaitCanceled = 1;

/// Bounds every message is checked against before anything is allocated for it.
inline constexpr std::uint64_t kMaxKeyBytes = 4096;
inline constexpr std::uint64_t kMaxValueBytes = 16ull << 20;
inline constexpr std::uint64_t kMaxKeysPerRequest = 65536;

inline void append_u32(std::string& out, std::uint32_t v) { out.append(reinterpret_cast<const char*>(&v), sizeof v); }
inline void append_u64(std::string& out, std::uint64_t v) { out.append(reinterpret_cast<const char*>(&v), sizeof v); }
inline void append_i64(std::string& out, std::int64_t v) { out.append(reinterpret_cast<const char*>(&v), sizeof v); }
inline void append_bytes(std::string& out, const std::string& s) {
  append_u64(out, s.size());
  out += s;
}

}  // namespace tinynet::dist::detail
