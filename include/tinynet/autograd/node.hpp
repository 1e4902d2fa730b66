#pragma once
/// \file
/// A node on the autograd tape: one recorded op, its inputs' edges and what it saved.
///
/// The tape is the sequence of nodes in the order ops ran; every node carries its
/// position (`sequence_nr`). Nodes are owned by the tensors they produced rather than by
/// a global list, so a graph nobody runs backward through frees itself.

#include <atomic>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "tinynet/autograd/grad_mode.hpp"
#include "tinynet/core/detail/tensor.hpp"

namespace tinynet::autograd {

class Node;

/// Where an input's gradient goes: into the node that produced it, or into a leaf's grad.
struct Edge {
  std::shared_ptr<Node> fn;
  std::shared_ptr<detail::TensorImpl> leaf;
  Shape shape;
  DType dtype = DType::float32;
  Device device;
  bool needed() const { return fn != nullptr || leaf != nullptr; }
};

/// Destination of one input's gradient during backward: kernels write `grad` when
/// `accumulate` is false and add into it when true (backward always accumulates, so
/// fan-out and shared weights need no special case).
struct GradSlot {
  Tensor grad;
  bool accumulate = false;

  /// The gradient's data, or null when the input needs no gradient (kernels skip it).
  template <typename T>
  T* data_or_null() const {
    return grad.defined() ? grad.data<T>() : nullptr;
  }
};

class Node {
 public:
  /// Frees the chain of producers iteratively: destroyed through the edges, a long graph (a
  /// loss summed over many steps) would take one stack frame per node.
  virtual ~Node() {
    std::vector<std::shared_ptr<Node>> pending;
    const auto take_edges = [&pending](std::vector<Edge>& edges) {
      for (Edge& e : edges)
        if (e.fn) pending.push_back(std::move(e.fn));
    };
    take_edges(next);
    while (!pending.empty()) {
      std::shared_ptr<Node> n = std::move(pending.back());
      pending.pop_back();
      // The last owner: n dies at the end of this iteration with its producers already
      // moved out, so its own destructor does not recurse.
      if (n.use_count() == 1) take_edges(n->next);
    }
  }
  /// The op's name, used in error messages ("conv2d", "linear", ...).
  virtual const char* name() const = 0;
  /// Adds dL/d(input i) for every needed input, given dL/d(output).
  virtual void backward(const Tensor& grad_out) = 0;
  /// Drops saved tensors once backward has run.
  virtual void release() {}

  std::uint64_t sequence_nr = 0;
  std::vector<Edge> next;
  Tensor grad_out;  // dL/d(output), accumulated by consumers during backward
  bool released = false;

  bool needs_input_grad(std::size_t i) const { return i < next.size() && next[i].needed(); }

  /// The gradient slot of input `i`. A slot that holds no gradient yet is allocated
  /// uninitialised (accumulate = false) unless another input of this node targets the
  /// same gradient, in which case it is zero-filled so both contributions add up.
  GradSlot input_grad(std::size_t i) {
    const Edge& e = next[i];
    Tensor existing = e.fn ? e.fn->grad_out : Tensor(e.leaf->grad);
    if (existing.defined()) {
      TINYNET_CHECK(ShapeError, existing.shape() == e.shape, name(), " backward: gradient of input ", i, " has shape ",
                    existing.shape(), " but the input has shape ", e.shape);
      return {existing, true};
    }
    bool shared = false;
    for (std::size_t j = 0; j < next.size(); ++j)
      if (j != i && same_target(next[j], e)) shared = true;
    const TensorOptions opts{e.dtype, e.device, false};
    Tensor fresh(e.shape, opts);
    if (shared) fresh.zero_();
    if (e.fn)
      e.fn->grad_out = fresh;
    else
      e.leaf->grad = fresh.impl_ptr();
    return {fresh, shared};
  }

 private:
  static bool same_target(const Edge& a, const Edge& b) {
    return (a.fn && a.fn == b.fn) || (a.leaf && a.leaf == b.leaf);
  }
};

namespace detail {
inline std::atomic<std::uint64_t>& sequence_counter() {
  static std::atomic<std::uint64_t> c{0};
  return c;
}
}  // namespace detail

/// True when an op on `t` must be recorded.
inline bool needs_grad(const Tensor& t) { return GradMode::is_enabled() && t.defined() && t.requires_grad(); }

template <typename... Ts>
bool any_needs_grad(const Ts&... ts) {
  return GradMode::is_enabled() && (... || (ts.defined() && ts.requires_grad()));
}

/// Records `node` as the producer of `out`, with edges to `inputs` (undefined inputs,
/// and inputs that do not require grad, get empty edges).
inline void record(Tensor& out, std::shared_ptr<Node> node, std::span<const Tensor* const> inputs) {
  node->next.reserve(inputs.size());
  for (const Tensor* in : inputs) {
    Edge e;
    if (in != nullptr && in->defined() && in->requires_grad()) {
      if (in->grad_fn())
        e.fn = in->grad_fn();
      else
        e.leaf = in->impl_ptr();
      e.shape = in->shape();
      e.dtype = in->dtype();
      e.device = in->device();
    }
    node->next.push_back(std::move(e));
  }
  node->sequence_nr = detail::sequence_counter().fetch_add(1);
  out.impl().grad_fn = std::move(node);
  out.impl().requires_grad = true;
}

/// record() for a fixed list of inputs: `record(y, node, {&a, &b})`.
inline void record(Tensor& out, std::shared_ptr<Node> node, std::initializer_list<const Tensor*> inputs) {
  record(out, std::move(node), std::span<const Tensor* const>(inputs.begin(), inputs.size()));
}

}  // namespace tinynet::autograd
