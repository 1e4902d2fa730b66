#pragma once
/// \file
/// Whether ops record on the tape, per thread; NoGradGuard turns recording off in a scope.

namespace tinynet {

class GradMode {
 public:
  static bool is_enabled() { return flag(); }
  static void set_enabled(bool on) { flag() = on; }

 private:
  static bool& flag() {
    thread_local bool enabled = true;
    return enabled;
  }
};

/// Stops recording for its lifetime (like torch.no_grad()); restores the previous mode.
class NoGradGuard {
 public:
  NoGradGuard() : prev_(GradMode::is_enabled()) { GradMode::set_enabled(false); }
  ~NoGradGuard() { GradMode::set_enabled(prev_); }
  NoGradGuard(const NoGradGuard&) = delete;
  NoGradGuard& operator=(const NoGradGuard&) = delete;

 private:
  bool prev_;
};

}  // namespace tinynet
