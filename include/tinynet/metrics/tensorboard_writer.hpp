#pragma once
/// \file
/// TensorBoard event files ("tfevents"), written without TensorFlow or protobuf.
///
/// A file is a sequence of records, each
///   uint64 length | uint32 masked CRC-32C of the 8 length bytes | data | uint32 masked CRC-32C of data
/// (all little-endian), whose data is one serialized `Event` protocol buffer. The first
/// event names the format (file_version "brain.Event:2"); each scalar is an event with
/// wall_time (field 1, double), step (field 2, int64) and summary (field 5) holding one
/// value (field 1) with tag (field 1, string) and simple_value (field 2, float). These few
/// fields are encoded by hand below. This is the format TensorBoard reads and Weights &
/// Biases imports (`wandb sync --sync-tensorboard DIR`).

#include <unistd.h>

#include <atomic>
#include <bit>
#include <cstdint>
#include <ctime>
#include <filesystem>
#include <span>
#include <string>
#include <string_view>
#include <system_error>

#include "tinynet/core/error.hpp"
#include "tinynet/metrics/crc32c.hpp"
#include "tinynet/metrics/output_file.hpp"
#include "tinynet/metrics/wall_time.hpp"

namespace tinynet::metrics {

namespace detail {

/// Protocol-buffer wire encoding of the few field kinds an Event needs.
class ProtoWriter {
 public:
  /// A double field (wire type 1: 8 bytes).
  void fixed64(int field, double v) {
    key(field, 1);
    little_endian(std::bit_cast<std::uint64_t>(v), 8);
  }
  /// A float field (wire type 5: 4 bytes).
  void fixed32(int field, float v) {
    key(field, 5);
    little_endian(std::bit_cast<std::uint32_t>(v), 4);
  }
  /// An int64 field (wire type 0: varint of the two's-complement bits).
  void int64(int field, std::int64_t v) {
    key(field, 0);
    varint(static_cast<std::uint64_t>(v));
  }
  /// A string, bytes or embedded-message field (wire type 2: length, then the bytes).
  void bytes(int field, std::string_view b) {
    key(field, 2);
    varint(b.size());
    out_ += b;
  }
  const std::string& str() const { return out_; }

 private:
  void key(int field, int wire_type) {
    varint(static_cast<std::uint64_t>(field) << 3 | static_cast<std::uint64_t>(wire_type));
  }
  void varint(std::uint64_t v) {
    for (; v >= 0x80; v >>= 7) out_ += static_cast<char>((v & 0x7F) | 0x80);
    out_ += static_cast<char>(v);
  }
  void little_endian(std::uint64_t v, int n) {
    for (int i = 0; i < n; ++i) out_ += static_cast<char>((v >> (8 * i)) & 0xFF);
  }
  std::string out_;
};

/// `data` framed as one tfevents record.
inline std::string tfrecord(std::string_view data) {
  const auto as_bytes = [](std::string_view s) {
    return std::span<const std::uint8_t>(reinterpret_cast<const std::uint8_t*>(s.data()), s.size());
  };
  const auto le32 = [](std::uint32_t v) {
    std::string s(4, '\0');
    for (int i = 0; i < 4; ++i) s[static_cast<std::size_t>(i)] = static_cast<char>((v >> (8 * i)) & 0xFF);
    return s;
  };
  std::string length(8, '\0');
  for (int i = 0; i < 8; ++i)
    length[static_cast<std::size_t>(i)] =
        static_cast<char>((static_cast<std::uint64_t>(data.size()) >> (8 * i)) & 0xFF);
  std::string record = length + le32(masked_crc32c(as_bytes(length)));
  record += data;
  record += le32(masked_crc32c(as_bytes(data)));
  return record;
}

/// The file name for `host` and writer number `n` of this process.
inline std::string event_file_name_for(std::string_view host, int n) {
  std::string name = "events.out.tfevents.";
  name.append(std::to_string(std::time(nullptr))).append(".").append(host).append(".");
  return name.append(std::to_string(getpid())).append(".").append(std::to_string(n));
}

/// `events.out.tfevents.<unix time>.<host>.<pid>.<n>`, TensorBoard's pattern, with a
/// per-process counter so two writers never share a file.
inline std::string event_file_name() {
  static std::atomic<int> counter{0};
  char host[256] = {};
  if (gethostname(host, sizeof host - 1) != 0 || host[0] == '\0') return event_file_name_for("localhost", counter++);
  return event_file_name_for(host, counter++);
}

}  // namespace detail

/// Writes scalars to a new TensorBoard event file in a log directory, like PyTorch's
/// `SummaryWriter`. Every event is flushed as it is written.
class TensorBoardWriter {
 public:
  /// Creates `log_dir` if needed and a new event file in it, starting with the
  /// file-version event. Throws FileError when either cannot be created.
  explicit TensorBoardWriter(const std::filesystem::path& log_dir)
      : file_("TensorBoardWriter", prepare(log_dir) / detail::event_file_name(), false) {
    detail::ProtoWriter event;
    event.fixed64(1, wall_time());
    event.bytes(3, "brain.Event:2");
    file_.write(detail::tfrecord(event.str()));
  }

  /// The event file being written.
  const std::filesystem::path& path() const { return file_.path(); }

  /// Records `value` under `tag` (e.g. "train/loss"; TensorBoard groups by the part before
  /// the slash) at `step`, stamped `wall_time` (seconds since the Unix epoch). The value is
  /// stored as a float, as TensorBoard's scalars are. Throws FileError when the write fails.
  void add_scalar(std::string_view tag, double value, std::int64_t step, double wall_time = metrics::wall_time()) {
    detail::ProtoWriter summary_value;
    summary_value.bytes(1, tag);
    summary_value.fixed32(2, static_cast<float>(value));
    detail::ProtoWriter summary;
    summary.bytes(1, summary_value.str());
    detail::ProtoWriter event;
    event.fixed64(1, wall_time);
    event.int64(2, step);
    event.bytes(5, summary.str());
    file_.write(detail::tfrecord(event.str()));
  }

 private:
  static const std::filesystem::path& prepare(const std::filesystem::path& log_dir) {
    std::error_code ec;
    std::filesystem::create_directories(log_dir, ec);
    if (ec)
      throw FileError(tinynet::detail::concat("TensorBoardWriter: cannot create the log directory '", log_dir.string(),
                                              "': ", ec.message()));
    return log_dir;
  }

  detail::OutputFile file_;
};

}  // namespace tinynet::metrics
