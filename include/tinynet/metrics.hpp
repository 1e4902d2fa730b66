#pragma once
/// \file
/// Watching a run: JSON-lines metrics, TensorBoard event files and a terminal progress
/// bar. Included explicitly (not by tinynet.hpp); needs nothing beyond the C++ and POSIX
/// libraries.

#include "tinynet/metrics/crc32c.hpp"
#include "tinynet/metrics/jsonl_writer.hpp"
#include "tinynet/metrics/progress_bar.hpp"
#include "tinynet/metrics/tensorboard_writer.hpp"
#include "tinynet/metrics/wall_time.hpp"
