#pragma once
/// \file
/// backward(): runs the recorded tape in reverse from a tensor.

#include <algorithm>
#include <unordered_map>
#include <vector>

#include "tinynet/autograd/node.hpp"
#include "tinynet/backend/cpu/elementwise.hpp"
#include "tinynet/backend/cuda/elementwise.hpp"  // empty in builds without CUDA

namespace tinynet::autograd {

namespace detail {

inline void run_leaf_hooks(const std::shared_ptr<tinynet::detail::TensorImpl>& leaf) {
  if (leaf->post_accumulate_hooks.empty()) return;
  Tensor t(leaf);
  for (auto& hook : leaf->post_accumulate_hooks) hook(t);
}

inline void accumulate_into_leaf(const std::shared_ptr<tinynet::detail::TensorImpl>& leaf, const Tensor& g);

}  // namespace detail

/// Runs the tape backwards from `root`, seeded with `seed` (ones for a one-element root
/// when omitted). Leaf gradients accumulate until zeroed; a post-accumulate hook on a
/// leaf fires as soon as every contribution to it in this pass has been added. Saved
/// tensors are freed as each node finishes, so a second backward through the same
/// graph is an error.
inline void backward(const Tensor& root, const Tensor& seed = Tensor()) {
  TINYNET_CHECK(Error, root.defined(), "backward() on an undefined tensor");
  TINYNET_CHECK(Error, root.requires_grad(), "backward(): tensor does not require grad and has no grad_fn (shape ",
                root.shape(), ")");
  Tensor grad = seed;
  if (!grad.defined()) {
    TINYNET_CHECK(ShapeError, root.numel() == 1,
                  "backward(): a seed gradient is needed for a non-scalar output of shape ", root.shape(),
                  "; pass one of the same shape or reduce the output (sum, mean) first");
    grad = Tensor(root.shape(), root.options()).fill_(1.0);
  } else {
    TINYNET_CHECK(ShapeError, grad.shape() == root.shape(), "backward(): seed gradient has shape ", grad.shape(),
                  ", output has shape ", root.shape());
    TINYNET_CHECK(TypeError, grad.dtype() == root.dtype(), "backward(): seed gradient is ", grad.dtype(),
                  ", output is ", root.dtype());
  }

  if (root.is_leaf()) {
    detail::accumulate_into_leaf(root.impl_ptr(), grad);
    detail::run_leaf_hooks(root.impl_ptr());
    return;
  }

  // Collect the nodes reachable from root, and how many edges reach each leaf.
  std::vector<Node*> nodes;
  std::unordered_map<Node*, bool> seen;
  std::unordered_map<tinynet::detail::TensorImpl*, int> leaf_pending;
  std::vector<Node*> stack{root.grad_fn().get()};
  seen[stack.back()] = true;
  while (!stack.empty()) {
    Node* n = stack.back();
    stack.pop_back();
    TINYNET_CHECK(Error, !n->released, "backward(): trying to run backward through the graph a second time (the ",
                  n->name(), " node's saved tensors were freed by the first backward)");
    nodes.push_back(n);
    for (const Edge& e : n->next) {
      if (e.fn && !seen[e.fn.get()]) {
        seen[e.fn.get()] = true;
        stack.push_back(e.fn.get());
      }
      if (e.leaf) ++leaf_pending[e.leaf.get()];
    }
  }
  // Reverse tape order is a valid topological order: a consumer always ran after its inputs.
  std::sort(nodes.begin(), nodes.end(), [](Node* a, Node* b) { return a->sequence_nr > b->sequence_nr; });

  root.grad_fn()->grad_out = grad;
  for (Node* n : nodes) {
    if (n->grad_out.defined()) n->backward(n->grad_out);
    n->grad_out = Tensor();
    n->release();
    n->released = true;
    for (const Edge& e : n->next)
      if (e.leaf && --leaf_pending[e.leaf.get()] == 0 && e.leaf->grad) detail::run_leaf_hooks(e.leaf);
  }
}

namespace detail {

inline void accumulate_into_leaf(const std::shared_ptr<tinynet::detail::TensorImpl>& leaf, const Tensor& g) {
  if (!leaf->grad) {
    leaf->grad = g.clone().impl_ptr();
    return;
  }
  Tensor dst(leaf->grad);
  TINYNET_CHECK(ShapeError, dst.shape() == g.shape(), "backward(): accumulated grad has shape ", dst.shape(),
                ", new gradient ", g.shape());
  TINYNET_CHECK(TypeError, dst.device() == g.device(), "backward(): accumulated grad is on ", dst.device(),
                ", new gradient on ", g.device());
  backend::dispatch(dst.device(), dst.dtype(), "backward",
                    [&]<typename T>(auto be) { copy_or_add(be, g.data<T>(), dst.data<T>(), dst.numel(), true); });
}

}  // namespace detail
}  // namespace tinynet::autograd

namespace tinynet {

inline void Tensor::backward(const Tensor& grad) const { autograd::backward(*this, grad); }

}  // namespace tinynet
