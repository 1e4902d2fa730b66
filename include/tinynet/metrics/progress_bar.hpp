#pragma once
/// \file
/// A one-line progress bar for a terminal: batches done, the latest loss, images per
/// second and the time left. It draws only when its stream is a terminal, so logs sent to
/// a file or a pipe are exactly what they would be without it. The bar is ASCII with no
/// `=` in it, so `key=value` metric scrapers (Katib's) never mistake it for a metric.

#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <string>
#include <string_view>

namespace tinynet::metrics {

/// What the bar shows.
struct Progress {
  std::string_view label;                                  ///< e.g. "Epoch 3"
  std::int64_t done = 0;                                   ///< batches finished
  std::int64_t total = 0;                                  ///< batches in the epoch
  double loss = std::numeric_limits<double>::quiet_NaN();  ///< latest loss (NaN: none yet)
  double images_per_second = 0;                            ///< since the epoch started
  double elapsed_s = 0;                                    ///< seconds since the epoch started
};

/// "m:ss", or "h:mm:ss" from an hour up; "--:--" when unknown (negative, NaN or infinite).
inline std::string format_duration(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0) return "--:--";
  const auto s = static_cast<long long>(std::llround(seconds));
  char buf[32];
  if (s >= 3600)
    std::snprintf(buf, sizeof buf, "%lld:%02lld:%02lld", s / 3600, s / 60 % 60, s % 60);
  else
    std::snprintf(buf, sizeof buf, "%lld:%02lld", s / 60, s % 60);
  return buf;
}

/// Seconds left if the remaining batches go as fast as the finished ones did; NaN before
/// the first batch is done.
inline double eta_seconds(std::int64_t done, std::int64_t total, double elapsed_s) {
  if (done <= 0) return std::numeric_limits<double>::quiet_NaN();
  return elapsed_s / static_cast<double>(done) * static_cast<double>(std::max<std::int64_t>(total - done, 0));
}

/// The bar as text, at most `width` characters:
/// ```
/// Epoch 1 [#######.............]  120/938  loss 0.3123  1650 images/s  ETA 0:32
/// ```
/// The bar part shrinks to fit and is left out below 10 characters; the rest is cut at
/// `width` only on terminals narrower than the numbers.
inline std::string render_progress(const Progress& p, int width) {
  char nums[160];
  char loss[32] = "-";
  if (std::isfinite(p.loss)) std::snprintf(loss, sizeof loss, "%.4f", p.loss);
  std::snprintf(nums, sizeof nums, "  %lld/%lld  loss %s  %.0f images/s  ETA %s", static_cast<long long>(p.done),
                static_cast<long long>(p.total), loss, p.images_per_second,
                format_duration(eta_seconds(p.done, p.total, p.elapsed_s)).c_str());
  std::string line(p.label);
  const int bar = width - static_cast<int>(line.size() + std::string_view(nums).size()) - 3;
  if (bar >= 10) {
    const double fraction =
        p.total > 0 ? std::clamp(static_cast<double>(p.done) / static_cast<double>(p.total), 0.0, 1.0) : 0.0;
    const auto filled = static_cast<std::size_t>(fraction * bar);
    line.append(" [").append(filled, '#').append(static_cast<std::size_t>(bar) - filled, '.').append("]");
  }
  line += nums;
  if (width > 0 && line.size() > static_cast<std::size_t>(width)) line.resize(static_cast<std::size_t>(width));
  return line;
}

/// Draws a Progress on one terminal line, redrawing it in place.
class ProgressBar {
 public:
  /// A bar on `out` (default stdout), drawn only if `enable` and `out` is a terminal.
  /// `min_interval_s` spaces redraws so a fast loop does not flood the terminal.
  explicit ProgressBar(std::FILE* out = stdout, bool enable = true, double min_interval_s = 0.1)
      : out_(out), enabled_(enable && isatty(fileno(out)) != 0), min_interval_s_(min_interval_s) {}

  /// Whether the bar draws at all.
  bool enabled() const { return enabled_; }

  /// Whether a draw() now would show: the bar is enabled and min_interval_s has passed
  /// since the last draw. Lets callers skip gathering numbers (a device sync for the loss)
  /// that would not be shown.
  bool due() const { return enabled_ && (!drawn_ || seconds_since(last_draw_) >= min_interval_s_); }

  /// Replaces the bar's line with `p`, sized to the terminal's width.
  void draw(const Progress& p) {
    if (!enabled_) return;
    std::fputs("\r", out_);
    std::fputs(render_progress(p, terminal_width() - 1).c_str(), out_);
    std::fputs("\033[K", out_);
    std::fflush(out_);
    drawn_ = true;
    last_draw_ = Clock::now();
  }

  /// Erases the bar, leaving the cursor at the start of its line for the next output.
  void clear() {
    if (!enabled_ || !drawn_) return;
    std::fputs("\r\033[K", out_);
    std::fflush(out_);
    drawn_ = false;
  }

 private:
  using Clock = std::chrono::steady_clock;

  static double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

  int terminal_width() const {
    winsize ws{};
    return ioctl(fileno(out_), TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0 ? ws.ws_col : 80;
  }

  std::FILE* out_;
  bool enabled_;
  double min_interval_s_;
  bool drawn_ = false;
  Clock::time_point last_draw_{};
};

}  // namespace tinynet::metrics
