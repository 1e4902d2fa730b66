// Writes the seed corpus for fuzz_load: valid weights and checkpoint files covering every
// dtype, ranks 0 to 6, empty tensors, an empty state_dict and odd names.
// Usage: fuzz_seeds DIR

#include <cstdio>
#include <string>

#include <tinynet/io/io.hpp>

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s DIR\n", argv[0]);
    return 2;
  }
  using namespace tinynet;
  const std::filesystem::path dir = argv[1];
  std::filesystem::create_directories(dir);

  StateDict all;
  int i = 0;
  for (DType dt : {DType::float32, DType::float64, DType::int32, DType::int64}) {
    Shape shape;
    for (int rank = 0; rank <= Shape::kMaxRank; ++rank) {
      all.insert(std::string(dtype_name(dt)) + "." + std::to_string(rank), full(shape, ++i, {.dtype = dt}));
      if (rank < Shape::kMaxRank) shape.push_back(rank % 2 + 1);
    }
  }
  save_state_dict(all, dir / "all_dtypes_ranks.tn");
  save_state_dict(StateDict{}, dir / "empty.tn");

  StateDict odd;
  odd.insert("", zeros({0, 3}));
  odd.insert(std::string("bin\0\xff", 5), ones({1}));
  save_state_dict(odd, dir / "odd_names.tn");

  StateDict layer;
  layer.insert("fc.weight", rand({4, 3}));
  layer.insert("fc.bias", rand({4}));
  save_state_dict(layer, dir / "linear.tn");

  Checkpoint c;
  c.model = layer;
  c.optimizer.insert("step", scalar_tensor(5, {.dtype = DType::int64}));
  c.optimizer.insert("momentum_buffer.0", zeros({4, 3}));
  c.scheduler.insert("last_epoch", scalar_tensor(2, {.dtype = DType::int64}));
  c.epoch = 2;
  c.step = 5;
  c.rng_seed = 42;
  c.rng_offset = 1000;
  save_checkpoint(dir / "checkpoint.ckpt", c);
  save_checkpoint(dir / "empty_checkpoint.ckpt", Checkpoint{});
  std::printf("fuzz seeds written to %s\n", dir.c_str());
  return 0;
}
