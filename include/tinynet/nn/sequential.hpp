#pragma once
/// \file
/// Sequential<Input<C, H, W>, Layers...>: layers applied in order, every layer's input
/// shape inferred from the one before it at compile time.
///
/// \code
///   using Net = nn::Sequential<nn::Input<1, 28, 28>, nn::Conv2d<32, 3>, nn::ReLU, nn::MaxPool2d<2>,
///                              nn::Flatten, nn::Dropout, nn::Linear<10>, nn::LogSoftmax>;
///   Net net(nn::Dropout(0.25));            // parameter-free layers can be configured by example
///   static_assert(Net::parameter_count == 54'410);
///   Tensor y = net(x);                     // x: [N, 1, 28, 28] -> y: [N, 10]
/// \endcode
/// A layer that does not fit the output of the one before it is a static_assert whose
/// context names `CheckedLayer<layer index, layer, input Sample<...>>`.

#include <cstddef>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>

#include "tinynet/nn/module.hpp"
#include "tinynet/nn/sample.hpp"

namespace tinynet::nn {

namespace detail {

template <class L>
concept Layer = ModuleLike<L> && requires(L& l, const Tensor& x) {
  { l.forward(x) } -> std::convertible_to<Tensor>;
};

/// A layer that can absorb the layer after it into its own op: it declares
/// `forward_with(const Next&, x)`, returning next(layer(x)) (Conv2d does for ReLU).
template <class L, class Next>
concept Absorbs = requires(L& l, const Next& next, const Tensor& x) {
  { l.forward_with(next, x) } -> std::convertible_to<Tensor>;
};

/// Applies Layer's shape rule to InputShape; the name shows up in compile errors.

template <std::size_t LayerIndex, class LayerType, class InputShape>
struct CheckedLayer {
  static_assert(Layer<LayerType>,
                "Sequential<Input<...>, Layers...>: every entry after Input must be a tinynet layer "
                "(a Module with forward(Tensor)); see the CheckedLayer<index, type, input> line");
  using rule = typename LayerType::template shape<InputShape>;
  using output = typename rule::output;
  static constexpr std::int64_t parameters = rule::parameters;
};

template <class... Ts>
struct TypeList {};

/// Threads the sample shape through the layers: inputs of each layer, final output, parameter count.
template <std::size_t I, class S, class... Ls>
struct Chain {
  using inputs = TypeList<>;
  using output = S;
  static constexpr std::int64_t parameters = 0;
};
template <std::size_t I, class S, class L, class... Rest>
struct Chain<I, S, L, Rest...> {
  using checked = CheckedLayer<I, L, S>;
  using next = Chain<I + 1, typename checked::output, Rest...>;
  template <class... Ss>
  static TypeList<S, Ss...> prepend(TypeList<Ss...>);
  using inputs = decltype(prepend(typename next::inputs{}));
  using output = typename next::output;
  static constexpr std::int64_t parameters = checked::parameters + next::parameters;
};

template <std::size_t I, class List>
struct Nth;
template <std::size_t I, class T, class... Ts>
struct Nth<I, TypeList<T, Ts...>> : Nth<I - 1, TypeList<Ts...>> {};
template <class T, class... Ts>
struct Nth<0, TypeList<T, Ts...>> {
  using type = T;
};

/// How many of the first N types in Ts... are T.
template <class T, std::size_t N, class... Ts>
constexpr std::size_t count_before() {
  if constexpr (N == 0) {
    return 0;
  } else {
    std::size_t i = 0, n = 0;
    ((n += (std::is_same_v<T, Ts> && i < N) ? 1 : 0, ++i), ...);
    return n;
  }
}

/// The K-th element of type T in a tuple.
template <class T, std::size_t K, class Tuple, std::size_t... Is>
const T& nth_of_type(const Tuple& t, std::index_sequence<Is...>) {
  constexpr std::size_t index = [] {
    std::size_t seen = 0, found = 0;
    ((std::is_same_v<T, std::remove_cvref_t<std::tuple_element_t<Is, Tuple>>> ? (seen++ == K ? (found = Is, 0) : 0)
                                                                              : 0),
     ...);
    return found;
  }();
  return std::get<index>(t);
}

/// A chain of layers built for an input sample, applied in order: the layers of a Sequential
/// and of each path of a residual block. Arguments configure parameter-free layers by
/// example, in order of appearance (Sequential's constructor); a layer that absorbs the one
/// after it (Conv2d then ReLU) runs the pair as one op. Visited as "<prefix>0", "<prefix>1", ...
template <class... Layers>
class LayerChain {
 public:
  /// The shape rule for the input sample S: each layer's input, the output, the parameter count.
  template <class S>
  using shape = Chain<0, S, Layers...>;

  template <class S, class... Configs>
  explicit LayerChain(S, const Configs&... configs)
      : layers_(build<S>(std::index_sequence_for<Layers...>{}, std::tuple<const Configs&...>(configs...))) {
    // Only Sequential's constructor passes configs, so the message names it.
    static_assert(((count_before<Configs, sizeof...(Layers), Layers...>() >=
                    count_before<Configs, sizeof...(Configs), Configs...>()) &&
                   ...),
                  "Sequential: more constructor arguments of a layer type than layers of that type");
  }

  Tensor forward(const Tensor& x) { return forward_from<0>(x); }

  template <std::size_t I>
  auto& get() {
    return std::get<I>(layers_);
  }
  template <std::size_t I>
  const auto& get() const {
    return std::get<I>(layers_);
  }

  template <class V>
  void visit(V& v, const std::string& prefix) {
    visit_each(v, prefix, std::index_sequence_for<Layers...>{});
  }

 private:
  template <class S, std::size_t I, class Cfgs>
  static auto make_layer(const Cfgs& cfgs) {
    using L = std::tuple_element_t<I, std::tuple<Layers...>>;
    using In = typename Nth<I, typename shape<S>::inputs>::type;
    constexpr std::size_t k = count_before<L, I, Layers...>();
    constexpr std::size_t given = [&]<std::size_t... Js>(std::index_sequence<Js...>) {
      return (std::size_t{0} + ... + (std::is_same_v<L, std::remove_cvref_t<std::tuple_element_t<Js, Cfgs>>> ? 1 : 0));
    }
    (std::make_index_sequence<std::tuple_size_v<Cfgs>>{});
    if constexpr (k < given) {
      return L(nth_of_type<L, k>(cfgs, std::make_index_sequence<std::tuple_size_v<Cfgs>>{}));
    } else if constexpr (std::is_constructible_v<L, In>) {  // a layer that needs the shape at compile time
      return L(In{});
    } else if constexpr (std::is_constructible_v<L, SampleDims>) {
      return L(SampleDims(In::dims));
    } else {
      return L();
    }
  }

  template <class S, std::size_t... Is, class Cfgs>
  static std::tuple<Layers...> build(std::index_sequence<Is...>, const Cfgs& cfgs) {
    return std::tuple<Layers...>(make_layer<S, Is>(cfgs)...);
  }

  /// Layers I.. applied to h; a pair that one op computes (Absorbs) runs as that op: the same
  /// values and gradients, one pass over the activation fewer.
  template <std::size_t I>
  Tensor forward_from(const Tensor& h) {
    if constexpr (I == sizeof...(Layers)) {
      return h;
    } else {
      using L = std::tuple_element_t<I, std::tuple<Layers...>>;
      if constexpr (I + 1 < sizeof...(Layers)) {
        if constexpr (Absorbs<L, std::tuple_element_t<I + 1, std::tuple<Layers...>>>) {
          Tensor y;
          try {
            y = std::get<I>(layers_).forward_with(std::get<I + 1>(layers_), h);
          } catch (Error& e) {  // named as if called on its own (Module::operator())
            e.leave_module(&std::get<I>(layers_), "", type_name<L>());
            throw;
          }
          return forward_from<I + 2>(y);
        }
      }
      return forward_from<I + 1>(std::get<I>(layers_)(h));
    }
  }

  template <class V, std::size_t... Is>
  void visit_each(V& v, const std::string& prefix, std::index_sequence<Is...>) {
    (v(prefix + std::to_string(Is), std::get<Is>(layers_)), ...);
  }

  std::tuple<Layers...> layers_;
};

}  // namespace detail

template <class InputSpec, class... Layers>
class Sequential {
  static_assert(detail::always_false<InputSpec>,
                "Sequential<Input<...>, Layers...>: the first argument must be the input shape, e.g. "
                "Sequential<Input<1, 28, 28>, Conv2d<32, 3>, ...>");
};

template <std::int64_t... Dims, class... Layers>
class Sequential<Input<Dims...>, Layers...> : public Module<Sequential<Input<Dims...>, Layers...>> {
  static_assert(sizeof...(Layers) >= 1, "Sequential<Input<...>, Layers...>: give at least one layer");
  using chain = typename detail::LayerChain<Layers...>::template shape<Sample<Dims...>>;

 public:
  using input_shape = Sample<Dims...>;
  /// Shape of one output sample.
  using output_shape = typename chain::output;
  /// Number of trainable scalars, known at compile time.
  static constexpr std::int64_t parameter_count = chain::parameters;
  static constexpr std::size_t size = sizeof...(Layers);

  /// Builds every layer for its inferred input shape. Arguments configure parameter-free
  /// layers by example, in order of appearance: Sequential<..., Dropout, ..., Dropout>
  /// net(Dropout(0.25), Dropout(0.5)).
  template <class... Configs>
  explicit Sequential(const Configs&... configs) : layers_(input_shape{}, configs...) {}

  /// Applies the layers in order. x: [N, Dims...].
  Tensor forward(const Tensor& x) {
    TINYNET_CHECK(ShapeError, x.dim() == input_shape::rank + 1 && sample_matches(x), "Sequential: expected input [N",
                  dims_str(), "], got ", x.shape(), input_hint(x));
    return layers_.forward(x);
  }

  /// The I-th layer.
  template <std::size_t I>
  auto& get() {
    return layers_.template get<I>();
  }
  template <std::size_t I>
  const auto& get() const {
    return layers_.template get<I>();
  }

  template <class V>
  void visit(V&& v) {
    layers_.visit(v, "");
  }

 private:
  static bool sample_matches(const Tensor& x) {
    for (int d = 0; d < input_shape::rank; ++d)
      if (x.size(d + 1) != input_shape::dims[static_cast<std::size_t>(d)]) return false;
    return true;
  }
  /// What a wrong input most likely lacks: a batch dimension, or a reshape.
  static std::string input_hint(const Tensor& x) {
    if (x.dim() == input_shape::rank && x.numel() == input_shape::numel) {
      bool one_sample = true;
      for (int d = 0; d < input_shape::rank; ++d)
        one_sample = one_sample && x.size(d) == input_shape::dims[static_cast<std::size_t>(d)];
      if (one_sample) return "; one sample without a batch dimension? pass x.unsqueeze(0)";
    }
    if (x.dim() >= 1 && x.size(0) > 0 && x.numel() == x.size(0) * input_shape::numel)
      return "; its samples have the right number of elements: reshape it, x.view({" + std::to_string(x.size(0)) +
             dims_str() + "})";
    return "";
  }
  static std::string dims_str() {
    std::string s;
    for (std::int64_t d : input_shape::dims) s += ", " + std::to_string(d);
    return s;
  }

  detail::LayerChain<Layers...> layers_;
};

}  // namespace tinynet::nn
