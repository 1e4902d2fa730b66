#pragma once
// Every path the MNIST trainer will write, tried before it loads data or joins a job
// (../common/outputs.hpp says why).

#include <string>
#include <vector>

#include "../common/outputs.hpp"
#include "options.hpp"

namespace mnist {

/// Tries every output the options name that this process writes, and removes what writes
/// cut short left beside them: all of them on rank 0 (and in a single process), none on
/// the other ranks of a data-parallel job, which write nothing. --evaluate writes only
/// the ONNX file and the pictures.
inline void check_outputs(const Options& o, bool writer) {
  if (!writer) return;
  job::check_output_file("--export-onnx", o.export_onnx);
  job::check_output_file("--predictions-png", o.predictions_png);
  job::check_output_file("--confusion-png", o.confusion_png);
  std::vector<std::string> written = {o.export_onnx, o.predictions_png, o.confusion_png};
  if (o.evaluate.empty()) {
    job::check_output_file("--save-pytorch", o.save_pytorch);
    written.push_back(o.save_pytorch);
    job::check_training_outputs(o);
  }
  for (const std::string& file : written) job::tidy(file);
}

}  // namespace mnist
