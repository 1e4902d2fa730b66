#include <functional>
#include <memory>

#include "optim/optim_test_util.hpp"

using namespace tinynet;
using namespace optim_test;

namespace {

/// Points in the plane labelled by which side of 1.5 x0 - 2 x1 + 0.3 = 0 they lie on,
/// those closer than 0.2 to the line dropped: linearly separable with a margin.
struct SeparableData {
  Tensor x, y;
  std::int64_t n = 0;

  SeparableData() {
    Generator gen(2024);
    const Tensor raw = randn({400, 2}, {.dtype = DType::float32}, gen);
    std::vector<float> xs;
    std::vector<std::int64_t> ys;
    for (std::int64_t i = 0; i < 400; ++i) {
      const float a = raw.at<float>({i, 0}), b = raw.at<float>({i, 1});
      const double margin = (1.5 * a - 2.0 * b + 0.3) / std::sqrt(1.5 * 1.5 + 2.0 * 2.0);
      if (std::abs(margin) < 0.2) continue;
      xs.push_back(a);
      xs.push_back(b);
      ys.push_back(margin > 0 ? 1 : 0);
    }
    n = static_cast<std::int64_t>(ys.size());
    x = from_vector(xs, {n, 2});
    y = from_vector(ys, {n});
  }
};

/// Trains a two-class logistic regression (linear + cross-entropy, full batch) with the
/// optimizer `make(params)` gives, and returns the train accuracy after `steps` steps.
double train_accuracy(const SeparableData& data,
                      const std::function<std::unique_ptr<optim::Optimizer>(std::vector<Tensor>)>& make, int steps,
                      double& first_loss, double& last_loss) {
  Tensor w = zeros({2, 2}, {.requires_grad = true}), b = zeros({2}, {.requires_grad = true});
  auto opt = make({w, b});
  for (int s = 0; s < steps; ++s) {
    opt->zero_grad();
    const Tensor loss = cross_entropy(linear(data.x, w, b), data.y);
    (s == 0 ? first_loss : last_loss) = loss.item();
    loss.backward();
    opt->step();
  }
  const Tensor pred = argmax(linear(data.x, w, b), 1);
  std::int64_t correct = 0;
  for (std::int64_t i = 0; i < data.n; ++i) correct += pred.at<std::int64_t>({i}) == data.y.at<std::int64_t>({i});
  return static_cast<double>(correct) / static_cast<double>(data.n);
}

}  // namespace

TEST_CASE("convergence: logistic regression on separable data reaches 100% train accuracy", "[optim][convergence]") {
  const SeparableData data;
  REQUIRE(data.n > 200);
  using Make = std::function<std::unique_ptr<optim::Optimizer>(std::vector<Tensor>)>;
  const std::vector<std::pair<std::string, Make>> cases = {
      {"SGD", [](auto p) { return std::make_unique<optim::SGD>(p, optim::SGDOptions{.lr = 0.5}); }},
      {"SGD momentum",
       [](auto p) { return std::make_unique<optim::SGD>(p, optim::SGDOptions{.lr = 0.2, .momentum = 0.9}); }},
      {"SGD nesterov",
       [](auto p) {
         return std::make_unique<optim::SGD>(
             p, optim::SGDOptions{.lr = 0.2, .momentum = 0.9, .weight_decay = 1e-4, .nesterov = true});
       }},
      {"Adadelta", [](auto p) { return std::make_unique<optim::Adadelta>(p); }},
      {"Adam", [](auto p) { return std::make_unique<optim::Adam>(p, optim::AdamOptions{.lr = 0.05}); }},
      {"Adam amsgrad",
       [](auto p) { return std::make_unique<optim::Adam>(p, optim::AdamOptions{.lr = 0.05, .amsgrad = true}); }},
      {"AdamW", [](auto p) { return std::make_unique<optim::AdamW>(p, optim::AdamWOptions{.lr = 0.05}); }},
  };
  for (const auto& [label, make] : cases) {
    INFO(label);
    double first = 0, last = 0;
    const double acc = train_accuracy(data, make, 300, first, last);
    CHECK(acc == 1.0);
    CHECK(last < 0.5 * first);
  }
}
