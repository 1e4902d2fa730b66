#pragma once
/// \file
/// The vector instruction level the CPU kernels run at, chosen once per process from the
/// CPU: AMX (tiles, with AVX512-BF16 beside them), AVX-512 (F, VL, BW, DQ) with AVX512-BF16,
/// or AVX-512 without it, where the CPU and the OS have it, else AVX2 + FMA, else the
/// portable loops (x86-64 baseline). Each level is
/// compiled from the same kernel sources for its own target (backend/cpu/kernels_for_isa.hpp),
/// whatever the compiler flags, so a default-flags build runs the same kernels as a
/// `-march=native` one; `avx512_bf16` adds autocast's bfloat16 products on `vdpbf16ps`
/// (simd/bf16_products.inl), which the avx512 level rounds in its float32 kernels instead;
/// `amx` runs the larger of those products on AMX tiles (simd/amx_products.inl). Linux grants
/// a process the tiles' registers only on request (`arch_prctl`): where it refuses, the
/// level falls back to the one it would choose below amx, with a one-line notice on stderr.
///
/// Where `vdpbf16ps` multiplies no faster than the CPU's FMAs (Intel's cores:
/// cpu_bf16_dot_outpaces_fma(), whose rule tests/at_avx512_bf16.sh repeats), the avx512_bf16
/// level is not chosen by itself: avx512 runs instead, rounding autocast's operands for its
/// float32 kernels, which is faster there.
///
/// `TINYNET_CPU_ISA=amx|avx512_bf16|avx512|avx2|baseline` caps the level (as oneDNN's `ONEDNN_MAX_CPU_ISA`
/// does): for comparisons, and for tests that run every level on one machine. A level the
/// CPU has runs as named; one it lacks falls back to the best it would choose, with a
/// one-line notice on stderr; any other value is an error naming it.

#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <string_view>

#include "tinynet/core/config.hpp"

#if defined(TINYNET_CPU_X86)
#include <cpuid.h>
#endif
#if defined(__linux__)
#include <sys/syscall.h>
#include <unistd.h>
#endif

/// Level numbers for `#if` inside the per-level kernel sources (TINYNET_ISA_LEVEL).
#define TINYNET_ISA_BASELINE 0
#define TINYNET_ISA_AVX2 1
#define TINYNET_ISA_AVX512 2
#define TINYNET_ISA_AVX512_BF16 3
#define TINYNET_ISA_AMX 4

namespace tinynet::backend::cpu {

enum class Isa {
  baseline = TINYNET_ISA_BASELINE,
  avx2 = TINYNET_ISA_AVX2,
  avx512 = TINYNET_ISA_AVX512,
  avx512_bf16 = TINYNET_ISA_AVX512_BF16,
  amx = TINYNET_ISA_AMX
};

/// "amx", "avx512_bf16", "avx512", "avx2" or "baseline": the names TINYNET_CPU_ISA takes.
inline const char* isa_name(Isa level) {
  switch (level) {
    case Isa::amx:
      return "amx";
    case Isa::avx512_bf16:
      return "avx512_bf16";
    case Isa::avx512:
      return "avx512";
    case Isa::avx2:
      return "avx2";
    default:
      return "baseline";
  }
}

/// Whether the CPU has AMX-TILE and AMX-BF16 (CPUID leaf 7, EDX bits 24 and 22; the OS's
/// part is request_amx_tiles()).
inline bool cpu_has_amx_bf16() {
#if defined(TINYNET_CPU_X86)
  unsigned a = 0, b = 0, c = 0, d = 0;
  return __get_cpuid_count(7, 0, &a, &b, &c, &d) != 0 && (d >> 24 & 1u) != 0 && (d >> 22 & 1u) != 0;
#else
  return false;
#endif
}

/// Whether the CPU's vdpbf16ps makes more products per cycle than its float32 FMAs, so that
/// autocast's products pay on it. Not on Intel's cores: they issue one 512-bit vdpbf16ps a
/// cycle (32 products), as many as their two 16-lane FMAs, so the roundings and pairings
/// around the products are pure cost (docs/performance.md: bfloat16 at avx512_bf16 0.81-0.84x
/// bfloat16 at avx512 on a Xeon with AMX). AMD's Zen 4 splits 512-bit FMAs in two halves,
/// and gains.
inline bool cpu_bf16_dot_outpaces_fma() {
#if defined(TINYNET_CPU_X86)
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (__get_cpuid(0, &a, &b, &c, &d) == 0) return true;
  // The vendor string "GenuineIntel" in EBX, EDX, ECX.
  return !(b == 0x756e6547u && d == 0x49656e69u && c == 0x6c65746eu);
#else
  return true;
#endif
}

/// The level to run of those the CPU supports up to `best`: `best`, unless it is
/// avx512_bf16 on a CPU whose vdpbf16ps does not outpace its FMAs, then avx512.
inline Isa preferred_isa(Isa best, bool bf16_dot_pays) {
  return best == Isa::avx512_bf16 && !bf16_dot_pays ? Isa::avx512 : best;
}

/// The best level this CPU and OS support among those compiled in (the OS must save the
/// vector registers: __builtin_cpu_supports checks XCR0 as well as CPUID).
inline Isa detected_isa() {
#if defined(TINYNET_CPU_X86)
  __builtin_cpu_init();
  const bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  if (avx2 && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl") &&
      __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512dq"))
    return !__builtin_cpu_supports("avx512bf16") ? Isa::avx512 : cpu_has_amx_bf16() ? Isa::amx : Isa::avx512_bf16;
  if (avx2) return Isa::avx2;
#endif
  return Isa::baseline;
}

/// The level to run given the value of TINYNET_CPU_ISA (null or empty: no cap), the
/// detected one and whether vdpbf16ps pays (preferred_isa()). `notice` receives a line to
/// print when the cap asks for more than the CPU has. Throws std::invalid_argument for an
/// unknown value.
inline Isa choose_isa(const char* cap, Isa detected, std::string& notice, bool bf16_dot_pays) {
  notice.clear();
  if (cap == nullptr || *cap == '\0') return preferred_isa(detected, bf16_dot_pays);
  const std::string_view v(cap);
  std::string names;
  for (int i = TINYNET_ISA_AMX; i >= TINYNET_ISA_BASELINE; --i) {
    const Isa wanted = static_cast<Isa>(i);
    if (v != isa_name(wanted)) {
      names += (names.empty() ? "" : i == TINYNET_ISA_BASELINE ? " or " : ", ") + std::string(isa_name(wanted));
      continue;
    }
    if (i <= static_cast<int>(detected)) return wanted;
    const Isa level = preferred_isa(detected, bf16_dot_pays);
    notice = "tinynet: TINYNET_CPU_ISA=" + std::string(v) + " but this CPU has at most " + isa_name(detected) +
             "; using " + isa_name(level);
    return level;
  }
  throw std::invalid_argument("TINYNET_CPU_ISA=" + std::string(v) + ": expected " + names);
}

/// Asks Linux for this process's use of the AMX tiles' registers (their state is too large
/// to be saved for every process, so it is granted on request), then checks it was granted.
/// False elsewhere, and where the kernel refuses or predates AMX (Linux 5.16).
inline bool request_amx_tiles() {
#if defined(__linux__) && defined(TINYNET_CPU_X86)
  constexpr long kGetPermission = 0x1022, kRequestPermission = 0x1023;  // ARCH_GET/REQ_XCOMP_PERM
  constexpr unsigned long kTileData = 18;                               // XFEATURE_XTILEDATA
  if (syscall(SYS_arch_prctl, kRequestPermission, kTileData) != 0) return false;
  unsigned long granted = 0;
  return syscall(SYS_arch_prctl, kGetPermission, &granted) == 0 && (granted >> kTileData & 1u) != 0;
#else
  return false;
#endif
}

/// The level the CPU kernels run at in this process (decided on the first call).
inline Isa isa() {
  static const Isa chosen = [] {
    std::string notice;
    const bool bf16_dot_pays = cpu_bf16_dot_outpaces_fma();
    Isa level = choose_isa(std::getenv("TINYNET_CPU_ISA"), detected_isa(), notice, bf16_dot_pays);
    if (!notice.empty()) std::fprintf(stderr, "%s\n", notice.c_str());
    if (level == Isa::amx && !request_amx_tiles()) {
      level = preferred_isa(Isa::avx512_bf16, bf16_dot_pays);
      std::fprintf(stderr, "tinynet: the OS did not grant the AMX tiles (arch_prctl); using %s\n", isa_name(level));
    }
    return level;
  }();
  return chosen;
}

}  // namespace tinynet::backend::cpu
