#pragma once
/// \file
/// Every layer, Module and Sequential.

#include "tinynet/nn/activation.hpp"
#include "tinynet/nn/batch_norm.hpp"
#include "tinynet/nn/bias.hpp"
#include "tinynet/nn/clip_grad.hpp"
#include "tinynet/nn/conv2d.hpp"
#include "tinynet/nn/dropout.hpp"
#include "tinynet/nn/flatten.hpp"
#include "tinynet/nn/init.hpp"
#include "tinynet/nn/linear.hpp"
#include "tinynet/nn/module.hpp"
#include "tinynet/nn/module_list.hpp"
#include "tinynet/nn/pool2d.hpp"
#include "tinynet/nn/residual.hpp"
#include "tinynet/nn/sample.hpp"
#include "tinynet/nn/sequential.hpp"
#include "tinynet/nn/summary.hpp"
