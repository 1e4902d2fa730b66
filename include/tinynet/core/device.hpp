#pragma once
/// \file
/// Where a tensor's storage lives.

#include <ostream>
#include <string>

#include "tinynet/core/config.hpp"
#include "tinynet/core/error.hpp"

namespace tinynet {

enum class DeviceType : unsigned char { cpu, cuda };

/// A device: the CPU, or CUDA device `index`. Printed and parsed as "cpu" / "cuda:N".
struct Device {
  DeviceType type = DeviceType::cpu;
  int index = 0;

  static constexpr Device cpu() { return {DeviceType::cpu, 0}; }
  static constexpr Device cuda(int index = 0) { return {DeviceType::cuda, index}; }

  constexpr bool is_cpu() const { return type == DeviceType::cpu; }
  constexpr bool is_cuda() const { return type == DeviceType::cuda; }
  friend constexpr bool operator==(Device, Device) = default;

  std::string str() const { return is_cpu() ? std::string("cpu") : "cuda:" + std::to_string(index); }

  /// Parses "cpu", "cuda" or "cuda:N".
  static Device parse(const std::string& s) {
    if (s == "cpu") return cpu();
    if (s == "cuda") return cuda(0);
    if (s.rfind("cuda:", 0) == 0 && s.size() > 5) {
      std::size_t used = 0;
      int idx = -1;
      try {
        idx = std::stoi(s.substr(5), &used);
      } catch (const std::exception&) {
        used = 0;
      }
      if (used == s.size() - 5 && idx >= 0) return cuda(idx);
    }
    throw ValueError("invalid device string '" + s + "' (expected cpu, cuda or cuda:N)");
  }
};

inline std::ostream& operator<<(std::ostream& os, Device d) { return os << d.str(); }

/// Throws TypeError unless this translation unit was compiled with code for `device`: the
/// one place where a build without CUDA refuses a CUDA device, for memory and kernels alike.
/// `what` names the caller ("device", an op).
inline void require_compiled(Device device, const char* what) {
#if !defined(TINYNET_WITH_CUDA)
  TINYNET_CHECK(TypeError, device.is_cpu(), what, ": ", device,
                " requested, but this translation unit was compiled without CUDA "
                "(compile it with nvcc so that TINYNET_WITH_CUDA is defined; see docs/gpu.md)");
#else
  (void)device;
  (void)what;
#endif
}

}  // namespace tinynet
