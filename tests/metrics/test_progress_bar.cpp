// The progress bar: its text (durations, ETA, rate, fitting the width), silence when the
// stream is not a terminal, and drawing in place when it is (on a pseudo-terminal).

#include <fcntl.h>
#include <pty.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cmath>
#include <cstdio>
#include <limits>
#include <string>
#include <tinynet/metrics/progress_bar.hpp>

using namespace tinynet::metrics;

TEST_CASE("format_duration writes m:ss, h:mm:ss, and --:-- when unknown", "[metrics][progress]") {
  CHECK(format_duration(0) == "0:00");
  CHECK(format_duration(59.4) == "0:59");
  CHECK(format_duration(59.6) == "1:00");
  CHECK(format_duration(754) == "12:34");
  CHECK(format_duration(3600) == "1:00:00");
  CHECK(format_duration(3 * 3600 + 25 * 60 + 7) == "3:25:07");
  CHECK(format_duration(-1) == "--:--");
  CHECK(format_duration(std::numeric_limits<double>::quiet_NaN()) == "--:--");
  CHECK(format_duration(std::numeric_limits<double>::infinity()) == "--:--");
}

TEST_CASE("eta_seconds extrapolates the pace of the finished batches", "[metrics][progress]") {
  CHECK(eta_seconds(100, 938, 10.0) == Approx(83.8).epsilon(1e-12));  // 0.1 s per batch, 838 left
  CHECK(eta_seconds(938, 938, 93.8) == 0.0);
  CHECK(eta_seconds(1000, 938, 93.8) == 0.0);  // past the end: nothing left, never negative
  CHECK(std::isnan(eta_seconds(0, 938, 0.0)));
}

TEST_CASE("render_progress shows batches, loss, rate and ETA within the width", "[metrics][progress]") {
  const Progress p{
      .label = "Epoch 1", .done = 235, .total = 938, .loss = 0.312345, .images_per_second = 1650.4, .elapsed_s = 10.0};
  const std::string line = render_progress(p, 100);
  // ETA: 10 s for 235 batches, 703 left -> 29.9 s.
  const std::string nums = "  235/938  loss 0.3123  1650 images/s  ETA 0:30";
  REQUIRE(line.size() == 100);
  CHECK(line.starts_with("Epoch 1 ["));
  CHECK(line.ends_with("]" + nums));
  const std::size_t bar = 100 - std::string("Epoch 1 []").size() - nums.size();
  const std::string inside = line.substr(9, bar);
  CHECK(inside == std::string(bar / 4, '#') + std::string(bar - bar / 4, '.'));  // 235/938 is just over a quarter
  CHECK(line.find('=') == std::string::npos);  // nothing a key=value scraper would read as a metric
}

TEST_CASE("render_progress drops the bar on narrow terminals and handles the first batch", "[metrics][progress]") {
  const Progress start{.label = "Epoch 2", .done = 0, .total = 10};
  CHECK(render_progress(start, 200).ends_with("]  0/10  loss -  0 images/s  ETA --:--"));
  const Progress p{.label = "Epoch 2", .done = 10, .total = 10, .loss = 0.5, .images_per_second = 99, .elapsed_s = 1};
  const std::string full = render_progress(p, 200);
  const std::string bar = full.substr(full.find('[') + 1, full.find(']') - full.find('[') - 1);
  CHECK(bar == std::string(bar.size(), '#'));  // complete: all filled
  const std::string narrow = render_progress(p, 50);
  CHECK(narrow == "Epoch 2  10/10  loss 0.5000  99 images/s  ETA 0:00");
  CHECK(render_progress(p, 20) == narrow.substr(0, 20));
}

TEST_CASE("ProgressBar is silent when its stream is not a terminal", "[metrics][progress]") {
  std::FILE* file = std::tmpfile();
  REQUIRE(file != nullptr);
  ProgressBar bar(file);
  CHECK_FALSE(bar.enabled());
  CHECK_FALSE(bar.due());
  bar.draw({.label = "Epoch 1", .done = 1, .total = 2});
  bar.clear();
  CHECK(std::ftell(file) == 0);
  std::fclose(file);
}

TEST_CASE("ProgressBar draws in place on a terminal, and not when disabled", "[metrics][progress]") {
  int master = -1, slave = -1;
  winsize ws{};
  ws.ws_col = 72;
  ws.ws_row = 24;
  REQUIRE(openpty(&master, &slave, nullptr, nullptr, &ws) == 0);
  std::FILE* tty = fdopen(slave, "w");
  REQUIRE(tty != nullptr);
  const auto read_master = [&] {
    std::string got;
    char buf[512];
    fcntl(master, F_SETFL, O_NONBLOCK);
    for (ssize_t n; (n = read(master, buf, sizeof buf)) > 0;) got.append(buf, static_cast<std::size_t>(n));
    return got;
  };

  ProgressBar off(tty, false);
  CHECK_FALSE(off.enabled());
  off.draw({.label = "Epoch 1", .done = 1, .total = 2});
  ProgressBar bar(tty, true, 3600.0);
  REQUIRE(bar.enabled());
  CHECK(bar.due());
  const Progress p{.label = "Epoch 1", .done = 1, .total = 2, .loss = 1.25, .images_per_second = 64, .elapsed_s = 1};
  bar.draw(p);
  CHECK_FALSE(bar.due());  // within min_interval_s of the last draw
  bar.clear();
  CHECK(bar.due());  // after a clear the next draw shows at once
  // The terminal is 72 columns: the line is drawn one narrower, so it never wraps.
  std::string expected = "\r";  // built with += : GCC 12 warns falsely (-Wrestrict) on "literal" + string
  expected += render_progress(p, 71) + "\033[K\r\033[K";
  CHECK(read_master() == expected);
  std::fclose(tty);
  close(master);
}
