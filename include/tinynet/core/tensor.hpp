#pragma once
/// \file
/// Tensor: a handle to an n-d, row-major, contiguous block of one dtype on one device.
///
/// Copies of a Tensor share their data, like PyTorch's. Views (`view`, `reshape`,
/// `flatten`) share storage with the tensor they came from. The class is in
/// core/detail/tensor.hpp; the members that record on the autograd tape are defined by the
/// layers that own the tape, included here so that this one header gives a Tensor all of
/// whose members link.

#include "tinynet/autograd/engine.hpp"  // Tensor::backward
#include "tinynet/core/detail/tensor.hpp"
#include "tinynet/ops/view.hpp"  // Tensor::view, reshape, flatten
