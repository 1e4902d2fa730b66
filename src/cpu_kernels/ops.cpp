// tinynet::cpu_kernels: the ops' entry points and autograd nodes, compiled once for the CPU
// (TINYNET_OP, core/config.hpp); the vector levels' kernels they call are the other sources'.
#define TINYNET_OPS_SOURCE
#include "tinynet/ops/batch_norm.hpp"
#include "tinynet/ops/cast.hpp"
#include "tinynet/ops/cat.hpp"
#include "tinynet/ops/compare.hpp"
#include "tinynet/ops/conv2d.hpp"
#include "tinynet/ops/dropout.hpp"
#include "tinynet/ops/elementwise.hpp"
#include "tinynet/ops/index.hpp"
#include "tinynet/ops/linear.hpp"
#include "tinynet/ops/loss.hpp"
#include "tinynet/ops/pool2d.hpp"
#include "tinynet/ops/reduce.hpp"
#include "tinynet/ops/softmax.hpp"
#include "tinynet/ops/view.hpp"
