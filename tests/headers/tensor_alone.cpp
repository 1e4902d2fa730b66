// Only the tensor header: its members that record on the tape (backward, view, reshape,
// flatten) must compile, link and work.
#include <cstdio>
#include <tinynet/core/tensor.hpp>

int main() {
  using namespace tinynet;
  Tensor x(Shape{2, 3, 4}, {.dtype = DType::float64, .requires_grad = true});
  x.fill_(1.5);
  const Tensor flat = x.flatten(1);       // [2, 12]
  const Tensor v = flat.view({3, 8});     // [3, 8]
  const Tensor r = v.reshape(Shape{24});  // [24]
  Tensor seed(Shape{24}, {.dtype = DType::float64});
  seed.fill_(2.0);
  r.backward(seed);
  const bool shapes = flat.shape() == Shape{2, 12} && v.shape() == Shape{3, 8} && r.shape() == Shape{24};
  bool grads = x.grad().defined() && x.grad().shape() == x.shape();
  for (std::int64_t i = 0; grads && i < x.numel(); ++i) grads = x.grad().data<double>()[i] == 2.0;
  std::printf("shapes %s, gradients %s\n", shapes ? "ok" : "WRONG", grads ? "ok" : "WRONG");
  return shapes && grads ? 0 : 1;
}
