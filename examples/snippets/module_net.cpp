// docs/networks.md: the same network written free-form, like a PyTorch nn.Module.
#include <cstdio>
#include <tinynet/tinynet.hpp>

using namespace tinynet;

// [module]
struct Net : nn::Module<Net> {
  nn::Conv2d<32, 3> conv1{1};  // template: out channels, kernel; argument: in channels
  nn::Conv2d<64, 3> conv2{32};
  nn::Dropout dropout1{0.25};
  nn::Dropout dropout2{0.5};
  nn::Linear<128> fc1{9216};  // template: out features; argument: in features
  nn::Linear<10> fc2{128};

  Tensor forward(const Tensor& x) {
    Tensor h = relu(conv1(x));
    h = max_pool2d(relu(conv2(h)), 2);
    h = dropout1(h).flatten(1);
    h = dropout2(relu(fc1(h)));
    return log_softmax(fc2(h), 1);
  }

  // Names every child once: parameters(), state_dict(), train()/eval() and
  // load_state_dict() all follow from this list ("conv1.weight", "fc2.bias", ...).
  template <class V>
  void visit(V&& v) {
    v("conv1", conv1);
    v("conv2", conv2);
    v("dropout1", dropout1);
    v("dropout2", dropout2);
    v("fc1", fc1);
    v("fc2", fc2);
  }
};
// [module]

int main() {
  manual_seed(1);
  Net net;
  const Tensor loss = nll_loss(net(randn({4, 1, 28, 28})), from_vector<std::int64_t>({0, 1, 2, 3}, {4}));
  loss.backward();
  for (const auto& [name, p] : net.named_parameters())
    std::printf("%-12s %-16s grad %s\n", name.c_str(), p.shape().str().c_str(), p.grad().defined() ? "yes" : "no");
  net.eval();
  return net.num_parameters() == 1'199'882 ? 0 : 1;
}
