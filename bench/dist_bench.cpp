// All-reduce of the MNIST example's gradient (1,199,882 float32) through tinynet's
// GlooGroup against Gloo's own allreduce called directly on a context of its own, same
// data, alternating, medians. Each variant's result is checked against the exact sum
// before anything is timed. One rank of a job: bench/dist_bench.py starts the ranks.
//   dist_bench [--elements N] [--reps R]

#include <gloo/allreduce.h>
#include <gloo/math.h>
#include <gloo/rendezvous/context.h>
#include <gloo/transport/tcp/device.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <tinynet/dist/dist.hpp>
#include <tinynet/tinynet.hpp>
#include <vector>

using namespace tinynet;
using Clock = std::chrono::steady_clock;

namespace {

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

void fill(float* p, std::int64_t n, int rank) {
  for (std::int64_t i = 0; i < n; ++i) p[i] = static_cast<float>(rank + 1) + static_cast<float>(i % 7) * 0.5f;
}

bool exact(const float* p, std::int64_t n, int world) {
  for (std::int64_t i = 0; i < n; ++i)
    if (p[i] !=
        static_cast<float>(world * (world + 1) / 2) + static_cast<float>(world) * static_cast<float>(i % 7) * 0.5f)
      return false;
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  std::int64_t n = 1'199'882;
  int reps = 30;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (std::string(argv[i]) == "--elements") n = std::stoll(argv[i + 1]);
    if (std::string(argv[i]) == "--reps") reps = std::stoi(argv[i + 1]);
  }
  auto pg = dist::init_process_group("gloo", "env://", std::chrono::seconds(60));
  const int rank = pg->rank(), world = pg->size();

  // Gloo directly: its own full mesh, over the same store, on the same interface.
  const dist::LaunchEnv env = dist::read_launch_env();
  gloo::transport::tcp::attr attr;
  attr.hostname = dist::detail::local_address_toward(env.master_addr);
  auto device = gloo::transport::tcp::CreateDevice(attr);
  auto context = std::make_shared<gloo::rendezvous::Context>(rank, world);
  dist::GlooStore store(std::make_shared<dist::PrefixStore>(
      "bench-direct", std::shared_ptr<dist::Store>(&pg->store(), [](dist::Store*) {})));
  context->connectFullMesh(store, device);

  Tensor t = empty({n});
  std::vector<float> raw(static_cast<std::size_t>(n));
  std::uint32_t tag = 1000;
  auto run_tinynet = [&] { pg->allreduce(t, dist::ReduceOp::sum); };
  auto run_gloo = [&] {
    gloo::AllreduceOptions o(context);
    o.setOutput(raw.data(), raw.size());
    o.setReduceFunction(static_cast<void (*)(void*, const void*, const void*, std::size_t)>(&gloo::sum<float>));
    o.setTag(tag++);
    gloo::allreduce(o);
  };
  fill(t.data<float>(), n, rank);
  fill(raw.data(), n, rank);
  run_tinynet();
  run_gloo();
  if (!exact(t.data<float>(), n, world) || !exact(raw.data(), n, world)) {
    std::fprintf(stderr, "rank %d: a variant gave a wrong sum\n", rank);
    return 1;
  }
  std::vector<double> tn, gl;
  for (int r = 0; r < reps; ++r) {
    pg->barrier();
    auto t0 = Clock::now();
    run_tinynet();
    tn.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
    pg->barrier();
    t0 = Clock::now();
    run_gloo();
    gl.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
  }
  if (rank == 0)
    std::printf(
        "{\"elements\": %lld, \"world_size\": %d, \"reps\": %d, \"tinynet_ms\": %.4f, \"gloo_ms\": %.4f, "
        "\"ratio\": %.4f}\n",
        static_cast<long long>(n), world, reps, median(tn), median(gl), median(tn) / median(gl));
  pg->barrier();
  return 0;
}
