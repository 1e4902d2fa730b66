#pragma once
/// \file
/// ModuleList<M>: a run-time number of child modules of one type, as PyTorch's nn.ModuleList
/// (a ResNet stage's blocks, the heads of a model). Its children are named "0", "1", ... so
/// that a member `blocks` holds "blocks.0.weight", ...; it has no forward of its own: the
/// owning module calls its children.
///
/// \code
///   struct Net : nn::Module<Net> {
///     nn::ModuleList<nn::Linear<16>> layers;
///     std::optional<nn::Linear<16>> extra;   // an optional child: present or not at run time
///     Net(bool with_extra) {
///       for (int i = 0; i < 3; ++i) layers.emplace_back(16);
///       if (with_extra) extra.emplace(16);
///     }
///     Tensor forward(Tensor x) {
///       for (auto& layer : layers) x = relu(layer(x));
///       return extra ? (*extra)(x) : x;
///     }
///     template <class V> void visit(V&& v) {
///       v("layers", layers);
///       if (extra) v("extra", *extra);   // absent: no entries, no parameters
///     }
///   };
/// \endcode

#include <cstddef>
#include <string>
#include <utility>
#include <vector>

#include "tinynet/nn/module.hpp"

namespace tinynet::nn {

template <detail::ModuleLike M>
class ModuleList : public Module<ModuleList<M>> {
 public:
  ModuleList() = default;
  explicit ModuleList(std::vector<M> modules) : modules_(std::move(modules)) {}

  /// Appends a child built from `args` (build every child before making an optimizer: the
  /// list's storage may move, the parameters' tensors do not).
  template <class... Args>
  M& emplace_back(Args&&... args) {
    return modules_.emplace_back(std::forward<Args>(args)...);
  }
  void push_back(M module) { modules_.push_back(std::move(module)); }

  std::size_t size() const { return modules_.size(); }
  bool empty() const { return modules_.empty(); }
  /// The i-th child; IndexError outside [0, size()).
  M& operator[](std::size_t i) {
    TINYNET_CHECK(IndexError, i < modules_.size(), "ModuleList: index ", i, " out of range for ", modules_.size(),
                  " modules");
    return modules_[i];
  }
  const M& operator[](std::size_t i) const { return const_cast<ModuleList&>(*this)[i]; }
  auto begin() { return modules_.begin(); }
  auto end() { return modules_.end(); }
  auto begin() const { return modules_.begin(); }
  auto end() const { return modules_.end(); }

  template <class V>
  void visit(V&& v) {
    for (std::size_t i = 0; i < modules_.size(); ++i) v(std::to_string(i), modules_[i]);
  }

 private:
  std::vector<M> modules_;
};

}  // namespace tinynet::nn
