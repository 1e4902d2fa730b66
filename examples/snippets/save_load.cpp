// docs/file-format.md: saving weights, tensors and checkpoints.
#include <cstdio>
#include <filesystem>
#include <tinynet/io/io.hpp>
#include <tinynet/tinynet.hpp>

using namespace tinynet;

using Model = nn::Sequential<nn::Input<4>, nn::Linear<8>, nn::ReLU, nn::Linear<2>>;

int main() {
  const auto dir = std::filesystem::temp_directory_path() / "tinynet-snippet-save-load";
  std::filesystem::create_directories(dir);
  std::filesystem::current_path(dir);
  Model model;
  optim::Adadelta optimizer(model.parameters());
  optim::StepLR scheduler(optimizer, 1, 0.7);
  const std::int64_t epoch = 3, step = 120;
  const StateDict sd = model.state_dict();

  // [files]
  // Weights (torch.save(model.state_dict(), f) / model.load_state_dict(torch.load(f))).
  tinynet::save(model, "mnist_cnn.tn");
  tinynet::load(model, "mnist_cnn.tn");  // StateDictError naming each mismatched tensor

  // A bare StateDict.
  tinynet::save_state_dict(sd, "tensors.tn");
  tinynet::StateDict back = tinynet::load_state_dict_file("tensors.tn");

  // Checkpoints: one line to save, one to resume.
  tinynet::save_checkpoint("run.ckpt", model, optimizer, scheduler, tinynet::default_generator(),
                           {.epoch = epoch, .step = step});
  auto [resumed_epoch, resumed_step] =
      tinynet::load_checkpoint("run.ckpt", model, optimizer, scheduler, tinynet::default_generator());
  // [files]
  std::printf("%zu tensors, resumed at epoch %lld step %lld\n", back.size(), static_cast<long long>(resumed_epoch),
              static_cast<long long>(resumed_step));
  std::filesystem::current_path(std::filesystem::temp_directory_path());
  std::filesystem::remove_all(dir);
  return back.size() == sd.size() && resumed_epoch == epoch && resumed_step == step ? 0 : 1;
}
