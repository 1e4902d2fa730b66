#pragma once
/// \file
/// summary(net): a model summary like torchinfo's. One line per layer: its name and type,
/// its output shape, its parameter count; then the totals (parameters, trainable ones, and
/// the rest). A Sequential lists its layers with the output shapes its compile-time rules
/// give for a batch of `batch_size`; a free-form module lists the children its visit
/// registers, by name (their output shapes are known only where the child is a Sequential).
/// `os << net` writes summary(net).
///
/// \code
///   std::cout << nn::summary(net, 64);   // or: std::cout << net;
/// \endcode

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <ostream>
#include <sstream>
#include <string>
#include <string_view>
#include <type_traits>
#include <typeinfo>
#include <utility>
#include <vector>

#include "tinynet/nn/module.hpp"
#include "tinynet/nn/sample.hpp"

namespace tinynet::nn {

namespace detail {

/// A layer's type for the summary. A layer names itself with a static `type_name()` where the
/// compiler's spelling would mislead (an alias, a defaulted argument that depends on another:
/// GCC spells a template as it was first named in the translation unit); otherwise the type
/// as the compiler spells it, without the tinynet::nn:: qualifiers: "Conv2d<32, 3>",
/// "Linear<10, 0, Bias::none>". A Sequential is "Sequential" (its layers have lines of their own).
template <class T>
std::string layer_type() {
  if constexpr (requires {
                  typename T::input_shape;
                  typename T::output_shape;
                }) {
    return "Sequential";
  } else if constexpr (requires {
                         { T::type_name() } -> std::convertible_to<std::string>;
                       }) {
    return std::string(T::type_name());
  } else {
#if defined(__GNUC__)
    std::string_view f = __PRETTY_FUNCTION__;  // "... [with T = tinynet::nn::Conv2d<...>; ...]"
    const std::size_t begin = f.find("T = ") + 4;
    std::string name(f.substr(begin, f.find_first_of(";]", begin) - begin));
#else
    std::string name = typeid(T).name();
#endif
    for (std::string_view prefix : {"tinynet::nn::detail::", "tinynet::nn::", "tinynet::"})
      for (std::size_t at; (at = name.find(prefix)) != std::string::npos;) name.erase(at, prefix.size());
    return name;
  }
}

/// One line of a summary.
struct SummaryRow {
  std::string layer, output;  // output is "-" where unknown
  std::int64_t parameters = 0, trainable = 0;
};

/// Sample<D...> with a leading batch extent: "[64, 32, 26, 26]".
template <class S>
std::string batch_shape_string(std::int64_t batch) {
  std::string s = "[" + std::to_string(batch);
  for (std::int64_t d : S::dims) s += ", " + std::to_string(d);
  return s + "]";
}

/// Every parameter of `m` and the trainable ones (those that require grad).
template <class M>
std::pair<std::int64_t, std::int64_t> count_parameters(const M& m) {
  std::int64_t all = 0, trainable = 0;
  for (const Tensor& p : m.parameters()) {
    all += p.numel();
    if (p.requires_grad()) trainable += p.numel();
  }
  return {all, trainable};
}

template <class M>
concept SequentialLike = ModuleLike<M> && requires(M& m) {
  typename M::input_shape;
  typename M::output_shape;
  { M::size } -> std::convertible_to<std::size_t>;
  m.template get<0>();
};

template <class M, class Row>
void add_row(std::vector<SummaryRow>& rows, std::string label, const M& m, Row&& output) {
  const auto [all, trainable] = count_parameters(m);
  rows.push_back({std::move(label) + ": " + layer_type<M>(), std::forward<Row>(output), all, trainable});
}

/// The rows of a Sequential's layers I.. given their input sample shape In.
/// (`prefix` names the Sequential within a module: "body.").
template <std::size_t I, class In, class Net>
void sequential_rows(const Net& net, std::int64_t batch, const std::string& prefix, std::vector<SummaryRow>& rows) {
  if constexpr (I < Net::size) {
    using L = std::remove_cvref_t<decltype(net.template get<I>())>;
    using Out = typename L::template shape<In>::output;
    add_row(rows, prefix + std::to_string(I), net.template get<I>(), batch_shape_string<Out>(batch));
    sequential_rows<I + 1, Out>(net, batch, prefix, rows);
  }
}

/// Collects a row per child module that a visit registers, and one per layer of a child
/// Sequential.
struct ChildRows {
  std::vector<SummaryRow>& rows;
  std::int64_t batch;
  void operator()(std::string_view, Tensor&, TensorKind) const {}  // the module's own tensors count in the total
  template <ModuleLike C>
  void operator()(std::string_view name, C& child) const {
    if constexpr (SequentialLike<C>) {
      add_row(rows, std::string(name), child, batch_shape_string<typename C::output_shape>(batch));
      sequential_rows<0, typename C::input_shape>(child, batch, std::string(name) + ".", rows);
    } else {
      add_row(rows, std::string(name), child, std::string("-"));
    }
  }
};

/// 1234567 -> "1,234,567".
inline std::string with_commas(std::int64_t n) {
  std::string digits = std::to_string(n < 0 ? -n : n), out;
  for (std::size_t i = 0; i < digits.size(); ++i) {
    if (i && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return n < 0 ? "-" + out : out;
}

inline std::string format_summary(const std::string& title, const std::vector<SummaryRow>& rows, std::int64_t total,
                                  std::int64_t trainable) {
  std::size_t name_w = 16, shape_w = 12;
  for (const SummaryRow& r : rows) {
    name_w = std::max(name_w, r.layer.size());
    shape_w = std::max(shape_w, r.output.size());
  }
  const auto pad = [](std::string s, std::size_t w) { return s + std::string(w > s.size() ? w - s.size() : 0, ' '); };
  const std::string rule(name_w + shape_w + 16, '='), thin(name_w + shape_w + 16, '-');
  std::ostringstream os;
  os << title << '\n' << rule << '\n';
  os << pad("Layer (name: type)", name_w) << "  " << pad("Output shape", shape_w) << "  "
     << "Param #\n"
     << rule << '\n';
  for (const SummaryRow& r : rows)
    os << pad(r.layer, name_w) << "  " << pad(r.output, shape_w) << "  " << with_commas(r.parameters) << '\n';
  os << rule << '\n'
     << "Total params: " << with_commas(total) << '\n'
     << "Trainable params: " << with_commas(trainable) << '\n'
     << "Non-trainable params: " << with_commas(total - trainable) << '\n'
     << thin << '\n';
  return os.str();
}

}  // namespace detail

/// The summary of `net` as text. For a Sequential, output shapes are those of a batch of
/// `batch_size` samples of its declared Input<...>; for a free-form module, one line per
/// registered child ("-" as the output shape where it is not a Sequential).
template <detail::ModuleLike M>
std::string summary(const M& net, std::int64_t batch_size = 1) {
  TINYNET_CHECK(ValueError, batch_size >= 1, "summary: batch_size must be positive, got ", batch_size);
  std::vector<detail::SummaryRow> rows;
  std::string title(detail::type_name<M>());
  if constexpr (detail::SequentialLike<M>) {
    title = "Sequential, input " + detail::batch_shape_string<typename M::input_shape>(batch_size);
    detail::sequential_rows<0, typename M::input_shape>(net, batch_size, "", rows);
  } else {
    const_cast<M&>(net).visit(detail::ChildRows{rows, batch_size});  // visit reads; it has no const twin
  }
  const auto [total, trainable] = detail::count_parameters(net);
  return detail::format_summary(title, rows, total, trainable);
}

/// summary(net) into `os`.
template <detail::ModuleLike M>
std::ostream& summary(std::ostream& os, const M& net, std::int64_t batch_size = 1) {
  return os << summary(net, batch_size);
}

/// Writes summary(net).
template <detail::ModuleLike M>
std::ostream& operator<<(std::ostream& os, const M& net) {
  return summary(os, net);
}

}  // namespace tinynet::nn
