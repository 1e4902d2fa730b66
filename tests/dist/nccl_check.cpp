// NcclGroup is compiled and linked against the CUDA runtime and NCCL in every build that
// finds them (CPU-only CI included). Run on a machine with a GPU, it also forms a
// one-rank NCCL communicator through tinynet's store and passes a barrier; without a GPU
// it says so and reports "skipped" (exit 77) instead of passing.

#include <cstdio>
#include <tinynet/dist/init.hpp>
#include <tinynet/dist/nccl_group.hpp>

int main() {
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::printf("SKIP: no CUDA device: NcclGroup compiled and linked, not run\n");
    return 77;
  }
  using namespace tinynet::dist;
  TCPStoreServer server;
  auto store = std::make_shared<PrefixStore>(
      "/nccl-check", std::make_shared<TCPStore>("127.0.0.1", server.port(), std::chrono::seconds(30)));
  NcclGroup group(store, 0, 1, 0, std::chrono::seconds(30));
  group.barrier();
  std::printf("NcclGroup: one-rank communicator on cuda:0 formed, barrier passed\n");
  return 0;
}
