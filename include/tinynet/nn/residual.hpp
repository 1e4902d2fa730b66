#pragma once
/// \file
/// Residual connections as Sequential entries, the blocks of a ResNet:
///
/// \code
///   // y = body(x) + x: the body keeps the sample's shape
///   nn::Residual<nn::Conv2d<16, 3, 1, 1>, nn::BatchNorm2d, nn::ReLU, nn::Conv2d<16, 3, 1, 1>, nn::BatchNorm2d>
///   // y = body(x) + shortcut(x): a projection where the body changes channels or size
///   nn::Residual<nn::Body<nn::Conv2d<32, 3, 2, 1>, nn::BatchNorm2d, nn::ReLU, nn::Conv2d<32, 3, 1, 1>,
///   nn::BatchNorm2d>,
///                nn::Shortcut<nn::Conv2d<32, 1, 2, 0>, nn::BatchNorm2d>>
/// \endcode
/// Shapes and parameter counts are checked and counted at compile time, as in Sequential
/// (a body whose output differs from its input, or from the shortcut's, is a static_assert
/// naming both). Their tensors are named "body.<i>..." and "shortcut.<i>...", as a PyTorch
/// module with `body` and `shortcut` nn.Sequential members names them. The ReLU after the
/// sum is the next Sequential entry. Outside a Sequential, build one from its input sample:
/// `Residual<...> block{nn::Sample<16, 28, 28>{}}`.

#include <type_traits>

#include "tinynet/nn/activation.hpp"
#include "tinynet/nn/module.hpp"
#include "tinynet/nn/sample.hpp"
#include "tinynet/nn/sequential.hpp"
#include "tinynet/ops/elementwise.hpp"

namespace tinynet::nn {

/// The layers of a residual block's main path (with a Shortcut, in Residual<Body<...>, Shortcut<...>>).
template <class... Layers>
struct Body {};
/// The layers of a residual block's projection shortcut (Residual<Body<...>, Shortcut<...>>).
template <class... Layers>
struct Shortcut {};

namespace detail {

/// Instantiated where the shapes of a residual block's two paths differ: the error's
/// context names both Sample<...> shapes.
template <class MainPathOutput, class ShortcutOutput, bool Same = std::is_same_v<MainPathOutput, ShortcutOutput>>
struct ResidualShapesAgree {
  static_assert(Same,
                "Residual: the body's output shape (first Sample<...> of ResidualShapesAgree<...> in this error) "
                "differs from what is added to it (the second: the block's input, or its shortcut's output); "
                "change the body, or add a projection: Residual<Body<...>, Shortcut<...>>");
  static constexpr bool value = Same;
};

}  // namespace detail

template <class... Layers>
class Residual;

/// y = body(x) + shortcut(x): the shortcut (a 1x1 convolution and a BatchNorm2d, say) maps
/// the input to the body's output shape.
template <class... BodyLayers, class... ShortcutLayers>
class Residual<Body<BodyLayers...>, Shortcut<ShortcutLayers...>>
    : public Module<Residual<Body<BodyLayers...>, Shortcut<ShortcutLayers...>>> {
  using body_chain = detail::LayerChain<BodyLayers...>;
  using shortcut_chain = detail::LayerChain<ShortcutLayers...>;

 public:
  template <class In>
  struct shape {
    using body = typename body_chain::template shape<In>;
    using shortcut = typename shortcut_chain::template shape<In>;
    static constexpr bool shapes_agree =  // instantiating the check asserts
        detail::ResidualShapesAgree<typename body::output, typename shortcut::output>::value;
    using output = typename body::output;
    static constexpr std::int64_t parameters = body::parameters + shortcut::parameters;
  };

  /// Built for the input sample S (Sequential passes it).
  template <std::int64_t... Dims>
  explicit Residual(Sample<Dims...> s) : body_(s), shortcut_(s) {
    static_assert(shape<Sample<Dims...>>::shapes_agree);
  }

  Tensor forward(const Tensor& x) { return add(body_.forward(x), shortcut_.forward(x)); }
  /// relu(forward(x)) with the sum and the ReLU as one op (add_relu): a Residual absorbs
  /// the ReLU after it (Sequential calls this for that pair).
  Tensor forward_with(const ReLU&, const Tensor& x) { return add_relu(body_.forward(x), shortcut_.forward(x)); }

  /// The two paths, each a chain of layers with visit(v, prefix) (exporters walk them).
  body_chain& body() { return body_; }
  shortcut_chain& shortcut() { return shortcut_; }

  template <class V>
  void visit(V&& v) {
    body_.visit(v, "body.");
    shortcut_.visit(v, "shortcut.");
  }

 private:
  body_chain body_;
  shortcut_chain shortcut_;
};

/// y = layers(x) + x: the layers keep the sample's shape.
template <class... Layers>
class Residual : public Module<Residual<Layers...>> {
  static_assert(sizeof...(Layers) > 0, "Residual<Layers...>: give the layers of the block's main path");
  using body_chain = detail::LayerChain<Layers...>;

 public:
  template <class In>
  struct shape {
    using body = typename body_chain::template shape<In>;
    static constexpr bool shapes_agree = detail::ResidualShapesAgree<typename body::output, In>::value;
    using output = In;
    static constexpr std::int64_t parameters = body::parameters;
  };

  /// Built for the input sample S (Sequential passes it).
  template <std::int64_t... Dims>
  explicit Residual(Sample<Dims...> s) : body_(s) {
    static_assert(shape<Sample<Dims...>>::shapes_agree);
  }

  Tensor forward(const Tensor& x) { return add(body_.forward(x), x); }
  /// relu(forward(x)) with the sum and the ReLU as one op (add_relu), as above.
  Tensor forward_with(const ReLU&, const Tensor& x) { return add_relu(body_.forward(x), x); }

  /// The main path, a chain of layers with visit(v, prefix) (exporters walk it).
  body_chain& body() { return body_; }

  template <class V>
  void visit(V&& v) {
    body_.visit(v, "body.");
  }

 private:
  body_chain body_;
};

}  // namespace tinynet::nn
