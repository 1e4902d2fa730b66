#pragma once
/// \file
/// Umbrella header: core, autograd, ops, nn and optim. The file formats (io/) and
/// distributed training (dist/) pull in heavier dependencies and are included explicitly.

#include "tinynet/core/allocator.hpp"
#include "tinynet/core/creation.hpp"
#include "tinynet/core/device.hpp"
#include "tinynet/core/dtype.hpp"
#include "tinynet/core/error.hpp"
#include "tinynet/core/fp_mode.hpp"
#include "tinynet/core/random.hpp"
#include "tinynet/core/shape.hpp"
#include "tinynet/core/state_dict.hpp"
#include "tinynet/core/tensor.hpp"
#include "tinynet/core/threading.hpp"

#include "tinynet/autograd/engine.hpp"
#include "tinynet/autograd/grad_mode.hpp"
#include "tinynet/autograd/gradcheck.hpp"

#include "tinynet/ops/batch_norm.hpp"
#include "tinynet/ops/conv2d.hpp"
#include "tinynet/ops/dropout.hpp"
#include "tinynet/ops/elementwise.hpp"
#include "tinynet/ops/linear.hpp"
#include "tinynet/ops/loss.hpp"
#include "tinynet/ops/pool2d.hpp"
#include "tinynet/ops/reduce.hpp"
#include "tinynet/ops/softmax.hpp"
#include "tinynet/ops/view.hpp"

#include "tinynet/nn.hpp"

#include "tinynet/optim/adadelta.hpp"
#include "tinynet/optim/adam.hpp"
#include "tinynet/optim/lr_scheduler.hpp"
#include "tinynet/optim/optimizer.hpp"
#include "tinynet/optim/sgd.hpp"
