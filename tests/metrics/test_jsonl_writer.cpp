// JsonlWriter: every row parses back (with nlohmann-json, an independent parser) to the
// values written, lines are complete as soon as write() returns, and errors name the file.

#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <string>
#include <tinynet/metrics/jsonl_writer.hpp>
#include <vector>

#include "temp_dir.hpp"

namespace fs = std::filesystem;
using tinynet::metrics::Field;
using tinynet::metrics::JsonlWriter;
using tinynet::testing::TempDir;

namespace {

std::vector<nlohmann::json> read_lines(const fs::path& path) {
  std::ifstream in(path);
  std::vector<nlohmann::json> rows;
  for (std::string line; std::getline(in, line);) rows.push_back(nlohmann::json::parse(line));
  return rows;
}

}  // namespace

TEST_CASE("JsonlWriter rows parse back to the values written, in order", "[metrics][jsonl]") {
  const TempDir dir("tinynet-metrics");
  const fs::path path = dir / "m.jsonl";
  const std::vector<double> doubles = {0.1, 1.0 / 3.0, 1e-300, 6.02214076e23, -2.5, 0.0, 1650.0};
  {
    JsonlWriter w(path);
    for (std::size_t i = 0; i < doubles.size(); ++i)
      w.write({{"kind", "step"}, {"epoch", 1}, {"step", static_cast<std::int64_t>(i)}, {"loss", doubles[i]}});
    w.write({{"big", std::numeric_limits<std::int64_t>::max()}, {"neg", std::int64_t{-7}}, {"f", 0.5F}});
  }
  const auto rows = read_lines(path);
  REQUIRE(rows.size() == doubles.size() + 1);
  for (std::size_t i = 0; i < doubles.size(); ++i) {
    CHECK(rows[i]["kind"] == "step");
    CHECK(rows[i]["epoch"].get<std::int64_t>() == 1);
    CHECK(rows[i]["step"].get<std::int64_t>() == static_cast<std::int64_t>(i));
    CHECK(rows[i]["loss"].get<double>() == doubles[i]);  // shortest round-trip digits: exact
  }
  CHECK(rows.back()["big"].get<std::int64_t>() == std::numeric_limits<std::int64_t>::max());
  CHECK(rows.back()["neg"].get<std::int64_t>() == -7);
  CHECK(rows.back()["f"].get<double>() == 0.5);
  // Members keep the order they were given in.
  std::ifstream in(path);
  std::string first;
  std::getline(in, first);
  CHECK(first == R"({"kind": "step", "epoch": 1, "step": 0, "loss": 0.1})");
}

TEST_CASE("JsonlWriter writes null for values JSON cannot hold, and escapes strings", "[metrics][jsonl]") {
  const TempDir dir("tinynet-metrics");
  const fs::path path = dir / "m.jsonl";
  const std::string nasty = "a \"quoted\" \\ path\nwith\ttabs, \x01 and \xc3\xa9";
  {
    JsonlWriter w(path);
    w.write({{"nan", std::numeric_limits<double>::quiet_NaN()},
             {"inf", std::numeric_limits<double>::infinity()},
             {"ninf", -std::numeric_limits<double>::infinity()},
             {"text", std::string_view(nasty)}});
  }
  const auto rows = read_lines(path);
  REQUIRE(rows.size() == 1);
  CHECK(rows[0]["nan"].is_null());
  CHECK(rows[0]["inf"].is_null());
  CHECK(rows[0]["ninf"].is_null());
  CHECK(rows[0]["text"].get<std::string>() == nasty);
}

TEST_CASE("JsonlWriter lines are complete on disk when write returns", "[metrics][jsonl]") {
  const TempDir dir("tinynet-metrics");
  const fs::path path = dir / "m.jsonl";
  JsonlWriter w(path);
  for (int i = 1; i <= 3; ++i) {
    w.write({{"step", i}});
    // The writer is still open (as in a run that is killed now): the file already holds i whole lines.
    const auto rows = read_lines(path);
    REQUIRE(rows.size() == static_cast<std::size_t>(i));
    CHECK(rows.back()["step"].get<int>() == i);
  }
}

TEST_CASE("JsonlWriter starts afresh by default and extends with append", "[metrics][jsonl]") {
  const TempDir dir("tinynet-metrics");
  const fs::path path = dir / "m.jsonl";
  JsonlWriter(path).write({{"run", 1}});
  JsonlWriter(path).write({{"run", 2}});
  CHECK(read_lines(path).size() == 1);
  JsonlWriter(path, {.append = true}).write({{"run", 3}});
  const auto rows = read_lines(path);
  REQUIRE(rows.size() == 2);
  CHECK(rows[0]["run"] == 2);
  CHECK(rows[1]["run"] == 3);
}

TEST_CASE("JsonlWriter names the file it cannot open", "[metrics][jsonl]") {
  const TempDir dir("tinynet-metrics");
  const fs::path path = dir / "no_such_dir" / "m.jsonl";
  CHECK_THROWS_AS(JsonlWriter(path), tinynet::FileError);
  CHECK_THROWS_WITH(JsonlWriter(path), Catch::Matchers::Contains("JsonlWriter: cannot open '" + path.string() + "'") &&
                                           Catch::Matchers::Contains("No such file or directory"));
}
