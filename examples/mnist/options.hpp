#pragma once
// Command-line flags: PyTorch's MNIST example's flags and defaults, plus tinynet's own.

#include <CLI/CLI.hpp>
#include <string>

#include "../common/flags.hpp"

namespace mnist {

struct Options : job::JobOptions {
  // The PyTorch example's defaults; its flags are the shared ones plus --gamma.
  Options() : JobOptions({.batch_size = 64, .epochs = 5, .lr = 1.0, .model_path = "mnist_cnn.tnet"}) {}
  double gamma = 0.7;
  // tinynet's additions.
  std::string dataset = "mnist";
  std::string model = "net";
  std::string optimizer = "adadelta";
  double momentum = 0.0;
  std::string normalize = "auto";
  std::string evaluate;
  std::string save_pytorch;
  std::string export_onnx;
  std::string predictions_png;
  std::string confusion_png;
};

/// Declares every flag on `app`, writing into `o`.
inline void add_flags(CLI::App& app, Options& o) {
  job::add_job_flags(app, o);
  app.add_option("--gamma", o.gamma, "learning rate step gamma (StepLR, every epoch)")
      ->check(job::real_number_in(0, 1, true))
      ->capture_default_str();
  app.add_option("--dataset", o.dataset, "data set")
      ->check(CLI::IsMember({"mnist", "fashion-mnist"}))
      ->capture_default_str();
  app.add_option("--model", o.model, "network: net (PyTorch's example) or lenet")
      ->check(CLI::IsMember({"net", "lenet"}))
      ->capture_default_str();
  app.add_option("--optimizer", o.optimizer, "optimizer")
      ->check(CLI::IsMember({"adadelta", "sgd", "adam"}))
      ->capture_default_str();
  app.add_option("--momentum", o.momentum, "SGD momentum")
      ->check(job::real_number_in(0, 1, true))
      ->capture_default_str();
  app.add_option("--normalize", o.normalize,
                 "normalise inputs with the data set's mean and std: auto (MNIST yes, Fashion-MNIST no, as in "
                 "the PyTorch and Kubeflow examples), yes or no")
      ->check(CLI::IsMember({"auto", "yes", "no"}))
      ->capture_default_str();
  app.add_option("--evaluate", o.evaluate,
                 "evaluate the model in this file on the test set, without training: a tinynet model file "
                 "(--save-model) or a PyTorch state_dict (torch.save(model.state_dict(), FILE)), told apart by "
                 "content")
      ->check(CLI::ExistingFile);
  app.add_option("--save-pytorch", o.save_pytorch,
                 "after training, write the model to this file as a PyTorch state_dict with the PyTorch example's "
                 "names (conv1.weight, ..., fc2.bias), which torch.load(FILE, weights_only=True) reads");
  app.add_option("--export-onnx", o.export_onnx,
                 "after training (or after loading --evaluate's file), write the model in eval mode as ONNX "
                 "(opset 17, dynamic batch, input \"input\" [N, 1, 28, 28], output \"output\" [N, 10])");
  app.add_option("--predictions-png", o.predictions_png,
                 "after training (or --evaluate), draw the first 100 test images with their predicted (P) and true "
                 "(T) labels into this PNG file, misclassified ones framed in red");
  app.add_option("--confusion-png", o.confusion_png,
                 "after training (or --evaluate), draw the test set's confusion matrix into this PNG file");
}

}  // namespace mnist
