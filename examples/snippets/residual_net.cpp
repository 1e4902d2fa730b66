// docs/networks.md: residual blocks (a ResNet-20 as one Sequential), and a free-form module
// with a list of children and an optional one. Trains each a few steps on one batch; exits
// non-zero unless the loss falls.
#include <cstdio>
#include <optional>
#include <tinynet/tinynet.hpp>

#include "../resnet/models.hpp"

using namespace tinynet;

// The ResNet-20 of examples/resnet/models.hpp, for 1x28x28 images.
using ResNet20 = resnet::ResNet20<1, 28, 28>;

// [module-list]
struct Stack : nn::Module<Stack> {
  nn::ModuleList<nn::Linear<16>> layers;  // "layers.0.weight", "layers.1.weight", ...
  std::optional<nn::Linear<10>> head;     // an optional child

  Stack(int depth, bool with_head) {
    layers.emplace_back(8);
    for (int i = 1; i < depth; ++i) layers.emplace_back(16);
    if (with_head) head.emplace(16);
  }
  Tensor forward(Tensor x) {
    for (auto& layer : layers) x = relu(layer(x));
    return head ? (*head)(x) : x;
  }
  template <class V>
  void visit(V&& v) {
    v("layers", layers);
    if (head) v("head", *head);  // absent: no entries, no parameters
  }
};
// [module-list]

// [own-layer]
// A learned scale per channel: y[n, c, h, w] = x[n, c, h, w] * weight[c].
class ChannelScale : public nn::Module<ChannelScale> {
 public:
  // The shape rule Sequential checks at compile time: output sample and parameter count.
  template <class In>
  struct shape;
  template <std::int64_t C, std::int64_t H, std::int64_t W>
  struct shape<nn::Sample<C, H, W>> {
    using output = nn::Sample<C, H, W>;
    static constexpr std::int64_t parameters = C;
  };

  // Sequential builds each layer from its input sample's extents ([C, H, W] here).
  explicit ChannelScale(nn::SampleDims in) : weight_(ones({in[0]}, {.requires_grad = true})) {}

  Tensor forward(const Tensor& x) { return x * weight_.view({1, weight_.numel(), 1, 1}); }

  template <class V>
  void visit(V&& v) {
    v("weight", weight_, nn::TensorKind::parameter);
  }

 private:
  Tensor weight_;
};

using Scaled =
    nn::Sequential<nn::Input<3, 8, 8>, nn::Conv2d<4, 3>, ChannelScale, nn::ReLU, nn::Flatten, nn::Linear<10>>;
static_assert(Scaled::parameter_count == (4 * 3 * 9 + 4) + 4 + (10 * 144 + 10));
// [own-layer]

template <class Model>
bool loss_falls(Model& model, const Tensor& x, const Tensor& target, const char* name) {
  optim::SGD sgd(model.parameters(), {.lr = 0.05, .momentum = 0.9});
  double first = 0, last = 0;
  for (int step = 0; step < 8; ++step) {
    sgd.zero_grad();
    const Tensor loss = cross_entropy(model(x), target);
    loss.backward();
    sgd.step();
    (step == 0 ? first : last) = loss.item();
  }
  std::printf("%s: %lld parameters, loss %.4f -> %.4f\n", name, static_cast<long long>(model.num_parameters()), first,
              last);
  return last < first;
}

int main() {
  manual_seed(1);
  ResNet20 resnet;
  const Tensor images = randn({16, 1, 28, 28});
  const Tensor labels = from_vector<std::int64_t>({0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 0, 1, 2, 3, 4, 5}, {16});
  Stack stack(3, true);
  Scaled scaled;
  const bool ok = loss_falls(resnet, images, labels, "ResNet-20") &&
                  loss_falls(scaled, randn({16, 3, 8, 8}), labels, "Scaled") &&
                  loss_falls(stack, randn({16, 8}), labels, "Stack") && Stack(3, false).state_dict().size() == 6 &&
                  stack.state_dict().size() == 8;
  return ok ? 0 : 1;
}
