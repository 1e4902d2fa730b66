// Writes the scalars tfevents_sample_test.py expects into a new event file in DIR and
// prints the file's path. Usage: write_tfevents_sample DIR

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <tinynet/metrics/tensorboard_writer.hpp>

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s DIR\n", argv[0]);
    return 2;
  }
  tinynet::metrics::TensorBoardWriter w(argv[1]);
  for (std::int64_t step = 0; step < 50; ++step) {
    const double t = 1700000000.0 + 0.25 * static_cast<double>(step);
    w.add_scalar("train/loss", 2.5 * std::exp(-static_cast<double>(step) / 10.0), step, t);
    w.add_scalar("test/accuracy", static_cast<double>(step) / 50.0, step, t);
  }
  // Edge cases: multi-byte varints (a large and a negative step), a UTF-8 tag, extreme values.
  w.add_scalar("edge/big_step", -1e30, std::int64_t{1} << 40, 1.5);
  w.add_scalar("edge/negative_step", 3.0, -5, 2.5);
  w.add_scalar("edge/\xc3\xbcnicode", std::numeric_limits<double>::infinity(), 7, 3.5);
  w.add_scalar("edge/nan", std::numeric_limits<double>::quiet_NaN(), 8, 4.5);
  std::printf("%s\n", w.path().c_str());
  return 0;
}
