#pragma once
// Number formatting that matches the Python trainer's log lines, so that existing log
// parsers read ours unchanged.

#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace job {

/// Python's repr() of a float: the shortest digits that round-trip, in fixed notation
/// for exponents in [-4, 16) and as d.ddde±XX otherwise.
inline std::string python_repr(double v) {
  char buf[64];
  const auto res = std::to_chars(buf, buf + sizeof buf, v, std::chars_format::scientific);
  std::string sci(buf, res.ptr);  // "-d.ddde+XX" with the shortest digits
  if (sci == "inf" || sci == "-inf" || sci == "nan" || sci == "-nan") return sci == "-nan" ? "nan" : sci;
  const std::size_t e = sci.find('e');
  const int exp = std::atoi(sci.c_str() + e + 1);
  const bool neg = sci[0] == '-';
  std::string digits;
  for (std::size_t i = neg ? 1 : 0; i < e; ++i)
    if (sci[i] != '.') digits += sci[i];
  std::string out = neg ? "-" : "";
  if (exp >= -4 && exp < 16) {
    if (exp < 0) {
      out += "0." + std::string(static_cast<std::size_t>(-exp - 1), '0') + digits;
    } else if (static_cast<std::size_t>(exp) + 1 >= digits.size()) {
      out += digits + std::string(static_cast<std::size_t>(exp) + 1 - digits.size(), '0') + ".0";
    } else {
      out +=
          digits.substr(0, static_cast<std::size_t>(exp) + 1) + "." + digits.substr(static_cast<std::size_t>(exp) + 1);
    }
    return out;
  }
  out += digits.substr(0, 1);
  if (digits.size() > 1) out += "." + digits.substr(1);
  char ebuf[16];
  std::snprintf(ebuf, sizeof ebuf, "e%c%02d", exp < 0 ? '-' : '+', std::abs(exp));
  return out + ebuf;
}

/// Python's "{: 5.1f}%".format(100 * fraction): "( 13.6%)" in the log lines.
inline std::string percentage(double fraction) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "% 5.1f%%", 100.0 * fraction);
  return buf;
}

}  // namespace job
