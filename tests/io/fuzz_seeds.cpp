// Writes the seed corpus for fuzz_load: valid weights and checkpoint files covering every
// dtype, ranks 0 to 6, empty tensors, an empty state_dict and odd names; and, into
// PYTORCH_DIR, the same state_dicts as PyTorch files and their bare pickles for fuzz_pytorch.
// Usage: fuzz_seeds DIR PYTORCH_DIR

#include <cstdio>
#include <fstream>
#include <string>
#include <tinynet/io/io.hpp>

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: %s DIR PYTORCH_DIR\n", argv[0]);
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

  const std::filesystem::path pt = argv[2];
  std::filesystem::create_directories(pt);
  StateDict small;  // with storages "0" and "1" fitting fuzz_pytorch's 64-byte ones
  small.insert("fc.weight", ones({2, 3}));
  small.insert("fc.bias", zeros({2}, {.dtype = DType::int64}));
  int n = 0;
  for (const StateDict* sd : {&all, &layer, &odd, &small}) {
    const std::string name = "state_dict" + std::to_string(n++);
    save_pytorch_state_dict(*sd, pt / (name + ".pt"));
    const auto bytes = save_pytorch_state_dict_to_bytes(*sd);
    const auto entries = io::detail::read_zip_directory(bytes, name);
    const auto pkl = io::detail::zip_entry_bytes(bytes, entries.front(), name);
    std::ofstream(pt / (name + ".pkl"), std::ios::binary)
        .write(reinterpret_cast<const char*>(pkl.data()), static_cast<std::streamsize>(pkl.size()));
  }
  std::printf("fuzz seeds written to %s and %s\n", dir.c_str(), pt.c_str());
  return 0;
}
