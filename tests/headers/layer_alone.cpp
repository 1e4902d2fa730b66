// Only one layer's header: the layer's forward and backward compile, link and work.
#include <cstdio>
#include <tinynet/nn/linear.hpp>

int main() {
  using namespace tinynet;
  nn::Linear<3> layer(4);
  Tensor x(Shape{2, 4}, {});
  x.fill_(1.0);
  Tensor seed(Shape{2, 3}, {});
  seed.fill_(1.0);
  layer(x).backward(seed);
  // d sum(x W^T + b) / dW[o, i] = sum_n x[n, i] = 2;  / db[o] = 2.
  bool ok = layer.weight().grad().defined() && layer.bias().grad().defined();
  for (std::int64_t i = 0; ok && i < 12; ++i) ok = layer.weight().grad().data<float>()[i] == 2.0f;
  for (std::int64_t o = 0; ok && o < 3; ++o) ok = layer.bias().grad().data<float>()[o] == 2.0f;
  std::printf("gradients %s\n", ok ? "ok" : "WRONG");
  return ok ? 0 : 1;
}
