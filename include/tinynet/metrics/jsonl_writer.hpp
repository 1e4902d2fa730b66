#pragma once
/// \file
/// JSON-lines metrics: one JSON object per line, one line per call, flushed at once.
///
/// The rows are flat objects of numbers and short strings, so they are written here
/// directly rather than through a JSON library the library's users would then need.
/// A number that is not finite (a diverged loss) is written as `null`, since JSON has no
/// NaN or infinity.

#include <charconv>
#include <cmath>
#include <concepts>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <initializer_list>
#include <span>
#include <string>
#include <string_view>
#include <variant>

#include "tinynet/metrics/output_file.hpp"

namespace tinynet::metrics {

/// One `"key": value` member of a row. The key and a string value are viewed, not
/// copied: they must outlive the write() call.
struct Field {
  /// A floating-point member, written with the shortest digits that read back exactly.
  Field(std::string_view k, std::floating_point auto v) : key(k), value(static_cast<double>(v)) {}
  /// An integer member.
  Field(std::string_view k, std::integral auto v) : key(k), value(static_cast<std::int64_t>(v)) {}
  /// A string member (escaped as JSON requires).
  Field(std::string_view k, std::string_view v) : key(k), value(v) {}
  /// A string member from a literal.
  Field(std::string_view k, const char* v) : key(k), value(std::string_view(v)) {}

  std::string_view key;                                        ///< the member's name
  std::variant<double, std::int64_t, std::string_view> value;  ///< the member's value
};

/// Options of JsonlWriter.
struct JsonlOptions {
  bool append = false;  ///< add to an existing file (a resumed run) instead of starting it afresh
};

/// Writes metrics rows to a JSON-lines file.
class JsonlWriter {
 public:
  /// Creates (or with `append`, extends) the file at `path`; its directory must exist.
  /// Throws FileError when the file cannot be opened.
  explicit JsonlWriter(const std::filesystem::path& path, JsonlOptions options = {})
      : file_("JsonlWriter", path, options.append) {}

  const std::filesystem::path& path() const { return file_.path(); }

  /// Writes `{"k1": v1, "k2": v2, ...}` in the order given, then a newline, and flushes.
  /// Throws FileError when the write fails.
  void write(std::span<const Field> fields) {
    std::string line = "{";
    for (const Field& f : fields) {
      if (line.size() > 1) line += ", ";
      append_string(line, f.key);
      line += ": ";
      std::visit([&](const auto& v) { append_value(line, v); }, f.value);
    }
    line += "}\n";
    file_.write(line);
  }

  /// write() for a braced list: `w.write({{"epoch", 1}, {"loss", 0.25}})`.
  void write(std::initializer_list<Field> fields) { write(std::span<const Field>(fields.begin(), fields.size())); }

 private:
  static void append_value(std::string& out, double v) {
    if (!std::isfinite(v)) {
      out += "null";
      return;
    }
    char buf[32];
    const auto res = std::to_chars(buf, buf + sizeof buf, v);  // shortest digits that round-trip
    out.append(buf, res.ptr);
  }

  static void append_value(std::string& out, std::int64_t v) {
    char buf[24];
    const auto res = std::to_chars(buf, buf + sizeof buf, v);
    out.append(buf, res.ptr);
  }

  static void append_value(std::string& out, std::string_view s) { append_string(out, s); }

  static void append_string(std::string& out, std::string_view s) {
    out += '"';
    for (const char c : s) {
      if (c == '"' || c == '\\') {
        out += '\\';
        out += c;
      } else if (static_cast<unsigned char>(c) < 0x20) {
        char buf[8];
        std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(c));
        out += buf;
      } else {
        out += c;  // UTF-8 passes through unchanged
      }
    }
    out += '"';
  }

  detail::OutputFile file_;
};

}  // namespace tinynet::metrics
