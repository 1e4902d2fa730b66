#pragma once
/// \file
/// Everything in io/: state_dict files, model weights (save / load), training
/// checkpoints, and PyTorch state_dict files. Not part of <tinynet/tinynet.hpp> (it pulls
/// in cereal and zlib): include it explicitly. The format is described in
/// docs/file-format.md, PyTorch's in docs/interop.md.

#include "tinynet/io/checkpoint.hpp"
#include "tinynet/io/error.hpp"
#include "tinynet/io/model.hpp"
#include "tinynet/io/pytorch.hpp"
#include "tinynet/io/pytorch_model.hpp"
#include "tinynet/io/state_dict_file.hpp"
