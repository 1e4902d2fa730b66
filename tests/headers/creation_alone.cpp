// Only the creation header: the tensors it makes have every member, the tape ones included.
#include <cstdio>
#include <tinynet/core/creation.hpp>

int main() {
  using namespace tinynet;
  Tensor x = ones({4, 5}, {.dtype = DType::float64, .requires_grad = true});
  x.flatten().backward(full({20}, 3.0, {.dtype = DType::float64}));
  bool ok = x.grad().defined();
  for (std::int64_t i = 0; ok && i < x.numel(); ++i) ok = x.grad().data<double>()[i] == 3.0;
  std::printf("gradient %s\n", ok ? "ok" : "WRONG");
  return ok ? 0 : 1;
}
