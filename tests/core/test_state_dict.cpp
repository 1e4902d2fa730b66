#include <catch2/catch.hpp>
#include <tinynet/tinynet.hpp>
#include <type_traits>
#include <utility>

using namespace tinynet;

namespace {

StateDict make_dict() {
  StateDict sd;
  sd.insert("w", from_vector(std::vector<float>{1.5f, -2.0f, 3.25f}, Shape{3}));
  sd.insert_int("step", 7);
  return sd;
}

}  // namespace

// A reference into a temporary dictionary dangles at the end of the full expression;
// these pin the overloads that prevent it (model.state_dict().at(name) is the common case).
static_assert(std::is_same_v<decltype(std::declval<const StateDict&>().at("w")), const Tensor&>,
              "at() on a named dictionary returns a reference into it");
static_assert(std::is_same_v<decltype(std::declval<StateDict>().at("w")), Tensor>,
              "at() on a temporary must return the handle by value");
static_assert(std::is_same_v<decltype(std::declval<const StateDict>().at("w")), Tensor>,
              "at() on a const temporary must return the handle by value");
template <class D>
concept Iterable = requires(D&& d) {
  std::forward<D>(d).begin();
  std::forward<D>(d).end();
};
static_assert(Iterable<const StateDict&>, "a named dictionary gives iterators");
static_assert(!Iterable<StateDict>, "iterators into a temporary must not compile");

TEST_CASE("state_dict: at() on a temporary gives a handle that outlives the dictionary", "[state_dict]") {
  // Before the by-value overload this bound to an entry freed at the semicolon
  // (ASan: heap-use-after-free, tests/nn/test_module.cpp's pattern).
  const Tensor& w = make_dict().at("w");
  REQUIRE(w.defined());
  CHECK(w.shape() == Shape{3});
  CHECK(w.data<float>()[0] == 1.5f);
  CHECK(w.data<float>()[2] == 3.25f);
  CHECK(make_dict().integer("step") == 7);
  CHECK_THROWS_WITH(make_dict().at("missing"), Catch::Contains("no entry named 'missing'"));
}

TEST_CASE("state_dict: at() on a temporary shares the entry's storage, not a copy of it", "[state_dict]") {
  StateDict sd = make_dict();
  Tensor by_value = std::move(sd).at("w");  // copies the handle; sd keeps its entry
  CHECK(by_value.raw_data() == sd.at("w").raw_data());
  by_value.data<float>()[1] = 9.0f;
  CHECK(sd.at("w").data<float>()[1] == 9.0f);
}

TEST_CASE("state_dict: a range-for over a temporary still iterates every entry", "[state_dict]") {
  std::vector<std::string> names;
  for (const auto& [name, t] : make_dict()) names.push_back(name);
  CHECK(names == std::vector<std::string>{"w", "step"});
}
