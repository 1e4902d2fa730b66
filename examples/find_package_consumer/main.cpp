// Fits y = 3x - 2 with a one-feature linear model, using only the installed headers.
#include <cstdio>
#include <tinynet/tinynet.hpp>

int main() {
  using namespace tinynet;
  manual_seed(0);
  const Tensor x = randn({256, 1});
  const Tensor y = x * 3.0 - 2.0;
  Tensor w = zeros({1, 1}, {.requires_grad = true});
  Tensor b = zeros({1}, {.requires_grad = true});

  double first = 0, last = 0;
  for (int step = 0; step < 200; ++step) {
    const Tensor loss = mean(pow(linear(x, w, b) - y, 2.0));
    w.set_grad(Tensor());
    b.set_grad(Tensor());
    loss.backward();
    NoGradGuard no_grad;
    w.copy_(w - w.grad() * 0.1);
    b.copy_(b - b.grad() * 0.1);
    (step == 0 ? first : last) = loss.item();
  }
  std::printf("loss %.6f -> %.6f, w=%.4f b=%.4f\n", first, last, w.item(), b.item());
  return (last < 1e-6 && std::abs(w.item() - 3.0) < 1e-3) ? 0 : 1;
}
