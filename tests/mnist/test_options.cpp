// The MNIST example's numeric flags at and past their limits: the limits themselves are
// taken, one step beyond them, non-finite reals and numbers CLI11 alone would saturate or
// misread are refused with CLI11's bad-value code (105), naming the flag and its range.

#include <catch2/catch.hpp>
#include <cstdint>
#include <string>
#include <vector>

#include "options.hpp"

namespace {

struct Parsed {
  int code = 0;         ///< 0, or the exit code CLI11 gives the error
  std::string message;  ///< the error's message
  mnist::Options options;
};

Parsed parse(const std::vector<std::string>& args) {
  CLI::App app;
  Parsed p;
  mnist::add_flags(app, p.options);
  std::vector<std::string> reversed(args.rbegin(), args.rend());  // CLI11 takes them last first
  try {
    app.parse(reversed);
  } catch (const CLI::ParseError& e) {
    p.code = e.get_exit_code();
    p.message = e.what();
  }
  return p;
}

void refused(const std::string& flag, const std::string& value, const std::string& range) {
  INFO(flag << " " << value);
  const Parsed p = parse({flag, value});
  CHECK(p.code == 105);
  CHECK_THAT(p.message, Catch::Contains(flag) && Catch::Contains(range) && Catch::Contains("got " + value));
}

}  // namespace

TEST_CASE("mnist options: whole-number flags take their limits and refuse one past them", "[mnist][options]") {
  struct Limit {
    std::string flag, lo, hi, below, above, range;
  };
  const std::vector<Limit> limits = {
      {"--batch-size", "1", "65536", "0", "65537", "from 1 to 65536"},
      {"--test-batch-size", "1", "65536", "0", "65537", "from 1 to 65536"},
      {"--epochs", "1", "100000", "0", "100001", "from 1 to 100000"},
      {"--log-interval", "1", "1000000000", "0", "1000000001", "from 1 to 1000000000"},
      {"--limit-train-batches", "1", "1000000000", "0", "1000000001", "from 1 to 1000000000"},
      {"--threads", "1", "1024", "0", "1025", "from 1 to 1024"},
      {"--seed", "0", "18446744073709551615", "-1", "18446744073709551616", "from 0 to 18446744073709551615"},
  };
  for (const Limit& l : limits) {
    INFO(l.flag);
    CHECK(parse({l.flag, l.lo}).code == 0);
    CHECK(parse({l.flag, l.hi}).code == 0);
    refused(l.flag, l.below, l.range);
    refused(l.flag, l.above, l.range);
  }
  const mnist::Options hi =
      parse({"--batch-size", "65536", "--threads", "1024", "--seed", "18446744073709551615"}).options;
  CHECK(hi.batch_size == 65536);
  CHECK(hi.threads == 1024);
  CHECK(hi.seed == UINT64_MAX);
}

TEST_CASE("mnist options: numbers CLI11 alone would saturate or misread are refused or read in decimal",
          "[mnist][options]") {
  // strtoll turns these into INT64_MAX; a batch count of INT64_MAX once overflowed to 0.
  refused("--batch-size", "9223372036854775807", "from 1 to 65536");
  refused("--test-batch-size", "99999999999999999999", "from 1 to 65536");
  refused("--epochs", "4294967297", "from 1 to 100000");  // int's range wrapped around
  refused("--batch-size", "0x40", "from 1 to 65536");
  refused("--batch-size", "64.5", "from 1 to 65536");
  refused("--batch-size", "", "from 1 to 65536");
  CHECK(parse({"--epochs", "010"}).options.epochs == 10);  // strtoll's base 0 would read octal 8
  CHECK(parse({"--batch-size", "+32"}).options.batch_size == 32);
}

TEST_CASE("mnist options: real-number flags take their limits and refuse beyond them, inf and nan",
          "[mnist][options]") {
  struct Limit {
    std::string flag, lo, hi, below, above, range;
  };
  const std::vector<Limit> limits = {
      {"--lr", "1e-300", "1000", "0", "1000.001", "(0, 1000]"},
      {"--gamma", "0", "1", "-0.001", "1.001", "[0, 1]"},
      {"--momentum", "0", "1", "-0.001", "1.001", "[0, 1]"},
      {"--dist-timeout", "1", "86400", "0.999", "86400.5", "[1, 86400]"},
  };
  for (const Limit& l : limits) {
    INFO(l.flag);
    CHECK(parse({l.flag, l.lo}).code == 0);
    CHECK(parse({l.flag, l.hi}).code == 0);
    refused(l.flag, l.below, l.range);
    refused(l.flag, l.above, l.range);
    for (const char* bad : {"inf", "-inf", "nan", "1e400", "abc"}) refused(l.flag, bad, l.range);
  }
  CHECK(parse({"--dist-timeout", "86400"}).options.dist_timeout == 86400);
  CHECK(parse({"--lr", "1000"}).options.lr == 1000);
}
