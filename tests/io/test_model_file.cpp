// save(model, path) / load(model, path) for any Stateful type, and the mismatch errors
// that name each tensor.

#include <catch2/catch.hpp>

#include "io/io_test_support.hpp"

using namespace tinynet;
using namespace io_test;

namespace {

// A two-layer model written as a PyTorch user would: members and a state_dict.
struct Mlp {
  Tensor fc1_weight, fc1_bias, fc2_weight, fc2_bias;
  int load_calls = 0;

  Mlp(std::int64_t in, std::int64_t hidden, std::int64_t out, Generator& g)
      : fc1_weight(uniform({hidden, in}, -1, 1, {}, g)),
        fc1_bias(uniform({hidden}, -1, 1, {}, g)),
        fc2_weight(uniform({out, hidden}, -1, 1, {}, g)),
        fc2_bias(uniform({out}, -1, 1, {}, g)) {}

  StateDict state_dict() const {
    StateDict sd;
    sd.insert("fc1.weight", fc1_weight);
    sd.insert("fc1.bias", fc1_bias);
    sd.insert("fc2.weight", fc2_weight);
    sd.insert("fc2.bias", fc2_bias);
    return sd;
  }
  void load_state_dict(const StateDict& sd) {
    ++load_calls;
    fc1_weight.copy_(sd.at("fc1.weight"));
    fc1_bias.copy_(sd.at("fc1.bias"));
    fc2_weight.copy_(sd.at("fc2.weight"));
    fc2_bias.copy_(sd.at("fc2.bias"));
  }
};

struct OnlySaves {
  StateDict state_dict() const { return {}; }
};
struct NonConstStateDict {
  StateDict state_dict() { return {}; }
  void load_state_dict(const StateDict&) {}
};

static_assert(Stateful<Mlp>);
static_assert(!Stateful<OnlySaves>, "load_state_dict is required");
static_assert(!Stateful<NonConstStateDict>, "state_dict() must be callable on a const object");
static_assert(!Stateful<int>);

}  // namespace

TEST_CASE("io model: save then load into a fresh model restores every parameter", "[io][model]") {
  Generator g1(1), g2(2);
  const Mlp a(4, 8, 3, g1);
  Mlp b(4, 8, 3, g2);
  REQUIRE_FALSE(bitwise_equal(a.state_dict(), b.state_dict()));
  TempDir dir;
  save(a, dir / "mlp.tn");
  load(b, dir / "mlp.tn");
  CHECK(b.load_calls == 1);
  CHECK(bitwise_equal(a.state_dict(), b.state_dict()));
}

TEST_CASE("io model: mismatches name the tensor and leave the model untouched", "[io][model]") {
  Generator g(3);
  TempDir dir;
  Mlp model(4, 8, 3, g);
  const StateDict original = model.state_dict();
  const Bytes snapshot = save_state_dict_to_bytes(original);  // deep copy of the values
  const auto path = dir / "other.tn";
  auto expect_untouched = [&] {
    CHECK(model.load_calls == 0);
    CHECK(bitwise_equal(model.state_dict(), load_state_dict_from_bytes(snapshot)));
  };

  SECTION("shape") {
    Mlp wider(4, 9, 3, g);
    save(wider, path);
    CHECK_THROWS_MATCHES(load(model, path), StateDictError,
                         Says("load: '" + path.string() + "': the file does not match the model") &&
                             Says("entry 'fc1.weight' has shape [9, 4] in the file, [8, 4] in the model") &&
                             Says("entry 'fc1.bias' has shape [9] in the file, [8] in the model") &&
                             Says("entry 'fc2.weight' has shape [3, 9] in the file, [3, 8] in the model"));
    expect_untouched();
  }
  SECTION("dtype") {
    StateDict changed;
    for (const auto& [name, t] : original) changed.insert(name, name == "fc2.bias" ? t.to(DType::float64) : t);
    save_state_dict(changed, path);
    CHECK_THROWS_MATCHES(load(model, path), StateDictError,
                         Says("entry 'fc2.bias' is float64 in the file, float32 in the model"));
    expect_untouched();
  }
  SECTION("missing entry") {
    StateDict partial;
    for (const auto& [name, t] : original)
      if (name != "fc1.bias") partial.insert(name, t);
    save_state_dict(partial, path);
    CHECK_THROWS_MATCHES(load(model, path), StateDictError,
                         Says("missing entry 'fc1.bias' (the model has float32 [8])"));
    expect_untouched();
  }
  SECTION("unexpected entry") {
    StateDict extra = original;
    extra.insert("fc3.weight", zeros({2, 2}));
    save_state_dict(extra, path);
    CHECK_THROWS_MATCHES(load(model, path), StateDictError,
                         Says("unexpected entry 'fc3.weight' (float32 [2, 2]), which the model does not have"));
    expect_untouched();
  }
  SECTION("several problems at once are all listed") {
    StateDict sd;
    sd.insert("fc1.weight", zeros({8, 4}, {.dtype = DType::float64}));
    sd.insert("fc1.bias", zeros({8}));
    sd.insert("fc2.weight", zeros({3, 8}));
    sd.insert("head.bias", zeros({3}));
    save_state_dict(sd, path);
    CHECK_THROWS_MATCHES(load(model, path), StateDictError,
                         Says("'fc1.weight' is float64 in the file") && Says("missing entry 'fc2.bias'") &&
                             Says("unexpected entry 'head.bias'"));
    expect_untouched();
  }
  SECTION("a checkpoint file is not a weights file") {
    Checkpoint c;
    c.model = original;
    save_checkpoint(path, c);
    CHECK_THROWS_MATCHES(load(model, path), FormatError,
                         Says("is a checkpoint file, not a weights file: read it with load_checkpoint"));
    expect_untouched();
  }
  SECTION("a corrupt file") {
    save(model, path);
    Bytes b = read_bytes(path);
    b[b.size() - 2] ^= std::byte{1};
    write_bytes(path, b);
    CHECK_THROWS_MATCHES(load(model, path), FormatError,
                         Says("load: '" + path.string() + "'") && Says("payload checksum mismatch"));
    expect_untouched();
  }
}

TEST_CASE("io model: a long list of mismatches is cut short", "[io][model]") {
  StateDict expected, file;
  for (int i = 0; i < 30; ++i) expected.insert(tinynet::detail::concat("p", i), zeros({1}));
  CHECK_THROWS_MATCHES(io::detail::check_state_dict_matches(expected, file, "src"), StateDictError,
                       Says("missing entry 'p19'") && Says("and 10 more") && !Says("missing entry 'p20'"));
}
