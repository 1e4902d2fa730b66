#pragma once
/// \file
/// StateDict files (like torch.save / torch.load of a state_dict): the header of
/// io/format.hpp followed by the payload of io/payload.hpp.
///
/// Loading checks, in order and before allocating anything sized by the file: the magic,
/// the version, the header checksum, the kind, the file size against the payload length,
/// the payload checksum; then, while decoding, every length and every product of extents
/// against the bytes that remain. No allocation is larger than the file, and the memory
/// a load takes is linear in the file's size.

#include <algorithm>
#include <cstddef>
#include <filesystem>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "tinynet/core/state_dict.hpp"
#include "tinynet/io/error.hpp"
#include "tinynet/io/file.hpp"
#include "tinynet/io/format.hpp"
#include "tinynet/io/payload.hpp"

namespace tinynet {

namespace io::detail {

/// A decoded file: its kind and its entries.
struct Decoded {
  FileKind kind = FileKind::weights;
  StateDict state_dict;
};

/// "op: 'path'", the prefix of every message about a file.
inline std::string file_source(std::string_view op, const std::filesystem::path& path) {
  return tinynet::detail::concat(op, ": '", path.string(), "'");
}

/// Decodes a whole file image held in memory.
inline Decoded decode_file(std::span<const std::byte> bytes, std::string_view source) {
  const Header h = parse_header(bytes.first(std::min(bytes.size(), kHeaderSize)), bytes.size(), source);
  const std::span<const std::byte> payload = bytes.subspan(kHeaderSize);
  check_payload_crc(h, payload, source);
  return {h.kind, decode_payload(payload, source)};
}

/// Reads and decodes the file at `path`: the header first, then a payload buffer sized
/// by the header only once the file is known to hold exactly that many bytes.
inline Decoded read_file(const std::filesystem::path& path, std::string_view op) {
  const std::string source = file_source(op, path);
  OpenedFile f = open_for_reading(path, op);
  std::byte head[kHeaderSize];
  const std::ptrdiff_t got = read_all(f.fd.get(), head, kHeaderSize);
  if (got < 0) fail_file(op, "cannot read", path, static_cast<int>(-got));
  const Header h = parse_header(std::span<const std::byte>(head, static_cast<std::size_t>(got)), f.size, source);
  std::vector<std::byte> payload(static_cast<std::size_t>(h.payload_size));
  const std::ptrdiff_t n = read_all(f.fd.get(), payload.data(), payload.size());
  if (n < 0) fail_file(op, "cannot read", path, static_cast<int>(-n));
  if (static_cast<std::uint64_t>(n) != h.payload_size)
    fail_format(source, "truncated file: it shrank while being read (", n, " of ", h.payload_size,
                " payload bytes read)");
  check_payload_crc(h, payload, source);
  return {h.kind, decode_payload(payload, source)};
}

/// The complete file image of `sd` as `kind`: the payload is encoded after room for the
/// header, which is then filled in.
inline std::vector<std::byte> encode_file(const StateDict& sd, FileKind kind) {
  std::vector<std::byte> out(kHeaderSize);
  encode_payload(sd, out);
  const auto header = encode_header(kind, std::span<const std::byte>(out).subspan(kHeaderSize));
  std::copy(header.begin(), header.end(), out.begin());
  return out;
}

/// Writes `sd` as a file of `kind` at `path`, atomically.
inline void write_file(const StateDict& sd, FileKind kind, const std::filesystem::path& path, std::string_view op) {
  write_file_atomic(path, encode_file(sd, kind), op);
}

}  // namespace io::detail

/// Writes `sd` to `path` (like torch.save of a state_dict). The write is atomic and
/// durable (io/file.hpp): on any error a file already at `path` is left untouched.
/// Tensors on a device are copied to the host. Throws FileError when the system refuses.
inline void save_state_dict(const StateDict& sd, const std::filesystem::path& path, FileKind kind = FileKind::weights) {
  io::detail::write_file(sd, kind, path, "save_state_dict");
}

/// Reads the StateDict in the file at `path`, of either kind (like torch.load); tensors
/// are on the CPU. Throws FileError when the file cannot be read and FormatError, naming
/// the file and the problem, when its bytes are not a valid tinynet file.
inline StateDict load_state_dict_file(const std::filesystem::path& path) {
  return io::detail::read_file(path, "load_state_dict_file").state_dict;
}

/// The complete file image of `sd` in memory (what save_state_dict writes).
inline std::vector<std::byte> save_state_dict_to_bytes(const StateDict& sd, FileKind kind = FileKind::weights) {
  return io::detail::encode_file(sd, kind);
}

/// Decodes a file image held in memory, with every check of load_state_dict_file;
/// `source` names it in messages. Accepts any bytes: malformed input is a FormatError.
inline StateDict load_state_dict_from_bytes(std::span<const std::byte> bytes, std::string_view source = "<memory>") {
  return io::detail::decode_file(bytes, tinynet::detail::concat("load_state_dict_from_bytes: ", source)).state_dict;
}

}  // namespace tinynet
