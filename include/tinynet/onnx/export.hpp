#pragma once
/// \file
/// ONNX export of a Sequential in eval mode (like torch.onnx.export): opset 17, IR version
/// 8, a dynamic batch dimension named "batch", float32. Every layer becomes the ONNX
/// operators of the same meaning: Conv2d -> Conv (with dilations and group where they are
/// not 1), ReLU -> Relu, LeakyReLU -> LeakyRelu, Sigmoid, Tanh, SiLU -> x * Sigmoid(x),
/// GELU -> its formula through Erf (or Tanh for approximate "tanh"; opset 17 has no Gelu),
/// MaxPool2d -> MaxPool, AvgPool2d -> AveragePool (padding counted, as tinynet and PyTorch
/// count it), AdaptiveAvgPool2d<1> -> GlobalAveragePool, BatchNorm1d / BatchNorm2d ->
/// BatchNormalization (running statistics), Residual -> its paths and an Add, Flatten,
/// Linear -> Gemm, LogSoftmax / Softmax (axis 1); Dropout and Identity are the identity in
/// eval mode and are left out. Initializers carry the state_dict's names ("3.body.0.weight"),
/// or the names a NameMap gives them (the PyTorch example's "conv1.weight", ...).
///
/// \code
///   tinynet::onnx::export_model(net, "mnist_cnn.onnx", {.names = names});
///   // python: onnxruntime.InferenceSession("mnist_cnn.onnx").run(None, {"input": x})
/// \endcode
/// A layer with no ONNX translation is a compile error naming it.

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "tinynet/io/file.hpp"
#include "tinynet/io/pytorch_model.hpp"
#include "tinynet/nn/activation.hpp"
#include "tinynet/nn/batch_norm.hpp"
#include "tinynet/nn/conv2d.hpp"
#include "tinynet/nn/dropout.hpp"
#include "tinynet/nn/flatten.hpp"
#include "tinynet/nn/linear.hpp"
#include "tinynet/nn/pool2d.hpp"
#include "tinynet/nn/residual.hpp"
#include "tinynet/onnx/protobuf.hpp"

namespace tinynet::onnx {

inline constexpr std::int64_t kOpsetVersion = 17;
inline constexpr std::int64_t kIrVersion = 8;

struct ExportOptions {
  /// tinynet name -> initializer name; empty: the state_dict's own names.
  NameMap names = {};
  std::string input_name = "input";
  std::string output_name = "output";
};

namespace detail {

// Field numbers of onnx.proto (ONNX 1.12, IR version 8).
enum ModelField {
  kModelIrVersion = 1,
  kModelProducerName = 2,
  kModelProducerVersion = 3,
  kModelGraph = 7,
  kModelOpset = 8
};
enum GraphField { kGraphNode = 1, kGraphName = 2, kGraphInitializer = 5, kGraphInput = 11, kGraphOutput = 12 };
enum NodeField { kNodeInput = 1, kNodeOutput = 2, kNodeName = 3, kNodeOpType = 4, kNodeAttribute = 5 };
enum AttributeField { kAttrName = 1, kAttrF = 2, kAttrI = 3, kAttrInts = 8, kAttrType = 20 };
enum AttributeType { kAttrTypeFloat = 1, kAttrTypeInt = 2, kAttrTypeInts = 7 };
enum TensorField { kTensorDims = 1, kTensorDataType = 2, kTensorName = 8, kTensorRawData = 9 };
enum DataType { kFloat = 1, kInt32 = 6, kInt64 = 7, kDouble = 11, kBFloat16 = 16 };

template <class>
inline constexpr bool always_false = false;

struct Node {
  std::string op, name;
  std::vector<std::string> inputs;
  std::string output;
  ProtoWriter attributes;  ///< the encoded AttributeProto fields, in order
};

inline void attribute(Node& n, std::string_view name, std::vector<std::int64_t> ints) {
  ProtoWriter a;
  a.string(kAttrName, name);
  for (std::int64_t i : ints) a.integer(kAttrInts, i);
  a.integer(kAttrType, kAttrTypeInts);
  n.attributes.message(kNodeAttribute, a);
}
inline void attribute(Node& n, std::string_view name, std::int64_t i) {
  ProtoWriter a;
  a.string(kAttrName, name).integer(kAttrI, i).integer(kAttrType, kAttrTypeInt);
  n.attributes.message(kNodeAttribute, a);
}
inline void attribute(Node& n, std::string_view name, float f) {
  ProtoWriter a;
  a.string(kAttrName, name).float32(kAttrF, f).integer(kAttrType, kAttrTypeFloat);
  n.attributes.message(kNodeAttribute, a);
}

inline int data_type(DType d) {
  switch (d) {
    case DType::float32:
      return kFloat;
    case DType::float64:
      return kDouble;
    case DType::int32:
      return kInt32;
    case DType::int64:
      return kInt64;
    case DType::bfloat16:
      return kBFloat16;
    case DType::bool_:  // no model tensor is bool
      break;
  }
  return 0;
}

/// A ValueInfoProto: a float tensor [batch, dims...].
template <std::size_t R>
ProtoWriter value_info(std::string_view name, const std::array<std::int64_t, R>& dims) {
  ProtoWriter shape;
  shape.message(1, ProtoWriter().string(2, "batch"));
  for (std::int64_t d : dims) shape.message(1, ProtoWriter().integer(1, d));
  ProtoWriter tensor_type;
  tensor_type.integer(1, kFloat).message(2, shape);
  ProtoWriter type;
  type.message(1, tensor_type);
  ProtoWriter info;
  info.string(1, name).message(2, type);
  return info;
}

/// Builds the graph from the layers of a Sequential, one visit call per layer.
class GraphBuilder {
 public:
  GraphBuilder(StateDict state, const ExportOptions& options)
      : state_(std::move(state)), options_(options), current_(options.input_name) {
    if (!options.names.empty()) renamed_ = rename_to_pytorch(state_, options.names, "export_onnx");
    for (const auto& [name, t] : state_)
      TINYNET_CHECK(TypeError, t.dtype() != DType::float64 && t.dtype() != DType::bfloat16, "export_onnx: '", name,
                    "' is ", t.dtype(), "; the exporter writes float32 models (convert with model.to(DType::float32))");
  }

  // A Sequential visits its layers as (index, layer).
  template <class L>
  void operator()(std::string_view index, L& layer) {
    const std::string p(index);
    if constexpr (is_conv<L>::value) {
      using C = is_conv<L>;
      Node& n = node("Conv", p, {current_, init(p + ".weight")});
      if (state_.contains(p + ".bias")) n.inputs.push_back(init(p + ".bias"));
      attribute(n, "kernel_shape", {C::kernel, C::kernel});
      attribute(n, "strides", {C::stride, C::stride});
      attribute(n, "pads", {C::pad, C::pad, C::pad, C::pad});
      if (C::dilation != 1) attribute(n, "dilations", {C::dilation, C::dilation});
      if (C::group != 1) attribute(n, "group", C::group);
    } else if constexpr (is_pool<L>::value) {
      using P = is_pool<L>;
      Node& n = node(P::average ? "AveragePool" : "MaxPool", p, {current_});
      attribute(n, "kernel_shape", {P::kernel, P::kernel});
      attribute(n, "strides", {P::stride, P::stride});
      attribute(n, "pads", {P::pad, P::pad, P::pad, P::pad});
      if (P::average) attribute(n, "count_include_pad", std::int64_t{1});
    } else if constexpr (is_adaptive_pool<L>::value) {
      static_assert(is_adaptive_pool<L>::global,
                    "export_onnx: AdaptiveAvgPool2d exports only as AdaptiveAvgPool2d<1> (GlobalAveragePool): ONNX "
                    "has no adaptive pooling");
      node("GlobalAveragePool", p, {current_});
    } else if constexpr (is_batch_norm<L>::value) {
      static_assert(is_batch_norm<L>::affine,
                    "export_onnx: a BatchNorm with nn::no_affine has no translation (BatchNormalization takes a "
                    "scale and a shift)");
      Node& n =
          node("BatchNormalization", p,
               {current_, init(p + ".weight"), init(p + ".bias"), init(p + ".running_mean"), init(p + ".running_var")});
      attribute(n, "epsilon", static_cast<float>(layer.eps()));
    } else if constexpr (is_linear<L>::value) {
      Node& n = node("Gemm", p, {current_, init(p + ".weight")});
      if (state_.contains(p + ".bias")) n.inputs.push_back(init(p + ".bias"));
      attribute(n, "transB", std::int64_t{1});
    } else if constexpr (std::is_same_v<L, nn::Flatten>) {
      flatten(p);
    } else if constexpr (is_residual<L>::value) {
      residual(p, layer);
    } else if constexpr (std::is_same_v<L, nn::ReLU>) {
      node("Relu", p, {current_});
    } else if constexpr (std::is_same_v<L, nn::LeakyReLU>) {
      attribute(node("LeakyRelu", p, {current_}), "alpha", static_cast<float>(layer.negative_slope()));
    } else if constexpr (std::is_same_v<L, nn::SiLU>) {
      const std::string x = current_;
      node("Mul", p, {x, node("Sigmoid", p, {x}).output});
    } else if constexpr (std::is_same_v<L, nn::GELU>) {
      gelu(p, layer.approximate() == "tanh");
    } else if constexpr (std::is_same_v<L, nn::Sigmoid>) {
      node("Sigmoid", p, {current_});
    } else if constexpr (std::is_same_v<L, nn::Tanh>) {
      node("Tanh", p, {current_});
    } else if constexpr (std::is_same_v<L, nn::LogSoftmax> || std::is_same_v<L, nn::Softmax>) {
      attribute(node(std::is_same_v<L, nn::Softmax> ? "Softmax" : "LogSoftmax", p, {current_}), "axis",
                std::int64_t{1});
    } else if constexpr (std::is_same_v<L, nn::Dropout> || std::is_same_v<L, nn::Dropout2d> ||
                         std::is_same_v<L, nn::Identity>) {
      // The identity in eval mode.
    } else {
      static_assert(always_false<L>,
                    "export_onnx: this layer (see the instantiation of GraphBuilder::operator() "
                    "with L = ...) has no ONNX translation");
    }
  }
  // A Sequential owns no tensors itself; this overload completes the visitor.
  void operator()(std::string_view, Tensor&, nn::TensorKind) {}

  /// The encoded GraphProto, its last node writing `output_name`.
  template <std::size_t In, std::size_t Out>
  ProtoWriter finish(const std::array<std::int64_t, In>& input_dims, const std::array<std::int64_t, Out>& output_dims) {
    if (nodes_.empty()) node("Identity", "identity", {current_});
    nodes_.back().output = options_.output_name;
    ProtoWriter g;
    for (const Node& n : nodes_) {
      ProtoWriter w;
      for (const std::string& i : n.inputs) w.string(kNodeInput, i);
      w.string(kNodeOutput, n.output).string(kNodeName, n.name).string(kNodeOpType, n.op).append(n.attributes);
      g.message(kGraphNode, w);
    }
    g.string(kGraphName, "tinynet");
    for (const auto& [name, t] : initializers_) {
      ProtoWriter w;
      for (int d = 0; d < t.dim(); ++d) w.integer(kTensorDims, t.size(d));
      w.integer(kTensorDataType, data_type(t.dtype())).string(kTensorName, name);
      w.bytes(kTensorRawData, std::span(static_cast<const std::byte*>(t.raw_data()), t.nbytes()));
      g.message(kGraphInitializer, w);
    }
    g.message(kGraphInput, value_info(options_.input_name, input_dims));
    g.message(kGraphOutput, value_info(options_.output_name, output_dims));
    return g;
  }

 private:
  template <class L>
  struct is_conv : std::false_type {};
  template <std::int64_t O, std::int64_t K, std::int64_t S, std::int64_t P, auto... Options>
  struct is_conv<nn::Conv2d<O, K, S, P, Options...>> : std::true_type {
    using layer = nn::Conv2d<O, K, S, P, Options...>;
    static constexpr std::int64_t kernel = K, stride = S, pad = P, dilation = layer::dilation, group = layer::groups;
  };
  template <class L>
  struct is_linear : std::false_type {};
  template <std::int64_t O, std::int64_t I, nn::Bias B>
  struct is_linear<nn::Linear<O, I, B>> : std::true_type {};
  template <class L>
  struct is_pool : std::false_type {};
  template <std::int64_t K, std::int64_t S, std::int64_t P>
  struct is_pool<nn::MaxPool2d<K, S, P>> : std::true_type {
    static constexpr bool average = false;
    static constexpr std::int64_t kernel = K, stride = S, pad = P;
  };
  template <std::int64_t K, std::int64_t S, std::int64_t P>
  struct is_pool<nn::AvgPool2d<K, S, P>> : std::true_type {
    static constexpr bool average = true;
    static constexpr std::int64_t kernel = K, stride = S, pad = P;
  };

  template <class L>
  struct is_adaptive_pool : std::false_type {};
  template <std::int64_t OH, std::int64_t OW>
  struct is_adaptive_pool<nn::AdaptiveAvgPool2d<OH, OW>> : std::true_type {
    static constexpr bool global = OH == 1 && OW == 1;
  };
  template <class L>
  struct is_batch_norm : std::false_type {};
  template <int D, nn::Affine A>
  struct is_batch_norm<nn::BatchNorm<D, A>> : std::true_type {
    static constexpr bool affine = A == nn::Affine::learned;
  };
  template <class L>
  struct is_residual : std::false_type {};
  template <class... Ls>
  struct is_residual<nn::Residual<Ls...>> : std::true_type {};

  /// body(x) + x, or body(x) + shortcut(x): each path's layers named as the state_dict
  /// names them ("3.body.0", "3.shortcut.1"), then an Add.
  template <class L>
  void residual(const std::string& p, L& layer) {
    const std::string input = current_;
    layer.body().visit(*this, p + ".body.");
    const std::string body = current_;
    std::string skip = input;
    if constexpr (requires { layer.shortcut(); }) {
      current_ = input;
      layer.shortcut().visit(*this, p + ".shortcut.");
      skip = current_;
    }
    node("Add", p, {body, skip});
  }

  /// GELU from opset 17's operators: 0.5 x (1 + erf(x / sqrt(2))), or with `tanh`,
  /// 0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3))), as PyTorch computes either.
  void gelu(const std::string& p, bool tanh) {
    const std::string x = current_;
    std::string inner;
    if (tanh) {
      const std::string x3 = node("Mul", p + "/cube", {node("Mul", p + "/square", {x, x}).output, x}).output;
      const std::string sum =
          node("Add", p, {x, node("Mul", p + "/cubic", {x3, constant(p, "k", 0.044715f)}).output}).output;
      inner =
          node("Tanh", p, {node("Mul", p + "/scale", {sum, constant(p, "sqrt_2_over_pi", 0.7978845608028654f)}).output})
              .output;
    } else {
      inner = node("Erf", p, {node("Div", p, {x, constant(p, "sqrt_2", 1.4142135623730951f)}).output}).output;
    }
    const std::string one_plus = node("Add", p + "/one_plus", {inner, constant(p, "one", 1.0f)}).output;
    node("Mul", p + "/half", {node("Mul", p + "/times_x", {x, one_plus}).output, constant(p, "half", 0.5f)});
  }

  /// A float scalar initializer "<layer>/<name>", for the constants of a layer's formula.
  std::string constant(const std::string& layer, const std::string& name, float value) {
    std::string full = layer + "/" + name;
    initializers_.emplace_back(full, from_vector<float>({value}, Shape{}));
    return full;
  }

  Node& node(std::string op, const std::string& layer, std::vector<std::string> inputs) {
    Node& n = nodes_.emplace_back();
    n.name = layer + "/" + op;
    n.output = n.name + ":0";
    n.op = std::move(op);
    n.inputs = std::move(inputs);
    current_ = n.output;
    return n;
  }
  void flatten(const std::string& layer) { attribute(node("Flatten", layer, {current_}), "axis", std::int64_t{1}); }
  /// Adds the state_dict's tensor `name` as an initializer; returns its (mapped) name.
  std::string init(const std::string& name) {
    const StateDict& from = renamed_.empty() ? state_ : renamed_;
    std::string mapped = name;
    for (const auto& [ours, theirs] : options_.names)
      if (ours == name) mapped = theirs;
    initializers_.emplace_back(mapped, from.at(mapped));
    return mapped;
  }

  StateDict state_, renamed_;
  const ExportOptions& options_;
  std::string current_;
  std::vector<Node> nodes_;
  std::vector<std::pair<std::string, Tensor>> initializers_;
};

}  // namespace detail

/// The ONNX model (a serialized ModelProto) of `net`, a Sequential, as run in eval mode.
/// Throws TypeError for a model that is not float32, StateDictError when `options.names`
/// does not name every tensor, ValueError for a model of 2 GiB or more. `net` is not changed (its training mode
/// included).
template <class Net>
requires requires {
  typename Net::input_shape;
  typename Net::output_shape;
}
std::vector<std::byte> export_to_bytes(Net& net, const ExportOptions& options = {}) {
  StateDict state;
  for (const auto& [name, t] : net.state_dict()) state.insert(name, t.device().is_cpu() ? t : t.to(Device::cpu()));
  detail::GraphBuilder graph(std::move(state), options);
  net.visit(graph);
  detail::ProtoWriter opset;
  opset.string(1, "").integer(2, kOpsetVersion);
  detail::ProtoWriter model;
  model.integer(detail::kModelIrVersion, kIrVersion)
      .string(detail::kModelProducerName, "tinynet")
      .string(detail::kModelProducerVersion, "0.1.0")
      .message(detail::kModelGraph, graph.finish(Net::input_shape::dims, Net::output_shape::dims))
      .message(detail::kModelOpset, opset);
  TINYNET_CHECK(ValueError, model.data().size() < (std::size_t{1} << 31), "export_onnx: the model takes ",
                model.data().size(), " bytes; ONNX files (one protobuf message) must stay under 2 GiB");
  return std::move(model).take();
}

/// Writes export_to_bytes(net, options) to `path`, atomically (as save).
template <class Net>
void export_model(Net& net, const std::filesystem::path& path, const ExportOptions& options = {}) {
  io::detail::write_file_atomic(path, export_to_bytes(net, options), "export_onnx");
}

}  // namespace tinynet::onnx
