#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <thread>
#include <tinynet/tinynet.hpp>
#include <utility>
#include <vector>

#include "fill_uninitialized.hpp"

using namespace tinynet;

TEST_CASE("allocator: fill_uninitialized_memory starts new host tensors as NaN", "[allocator]") {
  {
    // A block with values in it, freed into the cache: the next one of its size reuses it.
    Tensor first = full({1000}, 3.0);
    const void* where = first.data<float>();
    first = Tensor();
    tinynet::testing::FillUninitialized fill;
    CHECK(fill_uninitialized_memory());
    const Tensor f = empty({1000});
    CHECK(f.data<float>() == where);
    const Tensor d = empty({10}, {.dtype = DType::float64});
    const Tensor i = empty({10}, {.dtype = DType::int64});
    for (std::int64_t k = 0; k < 1000; ++k) REQUIRE(std::isnan(f.data<float>()[k]));
    for (std::int64_t k = 0; k < 10; ++k) {
      CHECK(std::isnan(d.data<double>()[k]));
      CHECK(i.data<std::int64_t>()[k] == -1);
    }
  }
  CHECK_FALSE(fill_uninitialized_memory());  // the scope restored it
}

TEST_CASE("allocator: a freed block is handed back on the next request of its size", "[allocator]") {
  Allocator& a = cpu_allocator();
  // An odd size no other test uses: 7 MiB + 123 bytes, rounded up to a 4 KiB multiple.
  constexpr std::size_t n = (std::size_t{7} << 20) + 123;
  constexpr std::size_t rounded = (std::size_t{7} << 20) + 4096;
  const AllocatorStats s0 = a.stats();
  void* p = a.allocate(n);
  CHECK(reinterpret_cast<std::uintptr_t>(p) % 64 == 0);
  const AllocatorStats s1 = a.stats();
  CHECK(s1.system_allocs == s0.system_allocs + 1);
  CHECK(s1.system_bytes == s0.system_bytes + rounded);
  CHECK(s1.bytes_in_use == s0.bytes_in_use + rounded);
  a.deallocate(p, n);
  const AllocatorStats s2 = a.stats();
  CHECK(s2.bytes_in_use == s0.bytes_in_use);
  CHECK(s2.bytes_cached == s0.bytes_cached + rounded);

  // A request that rounds to the same size reuses the block without asking the system.
  void* q = a.allocate(n + 1000);
  CHECK(q == p);
  const AllocatorStats s3 = a.stats();
  CHECK(s3.system_allocs == s1.system_allocs);
  CHECK(s3.cache_hits == s2.cache_hits + 1);
  CHECK(s3.requests == s2.requests + 1);
  CHECK(s3.bytes_cached == s0.bytes_cached);
  a.deallocate(q, n + 1000);
}

TEST_CASE("allocator: tensors return their storage to the cache", "[allocator]") {
  Allocator& a = cpu_allocator();
  { const Tensor warm = empty({3, 1237}, {.dtype = DType::float64}); }
  const AllocatorStats before = a.stats();
  for (int i = 0; i < 10; ++i) {
    Tensor t = zeros({3, 1237}, {.dtype = DType::float64});
    Tensor v = t.view({1237, 3});  // a view shares the block: no second allocation
    CHECK(v.shares_storage(t));
  }
  const AllocatorStats after = a.stats();
  CHECK(after.system_allocs == before.system_allocs);
  CHECK(after.requests == before.requests + 10);
  CHECK(after.cache_hits == before.cache_hits + 10);
  CHECK(after.bytes_in_use == before.bytes_in_use);
}

TEST_CASE("allocator: empty_cache returns cached blocks to the system", "[allocator]") {
  Allocator& a = cpu_allocator();
  constexpr std::size_t n = (std::size_t{5} << 20) + 4096;
  a.deallocate(a.allocate(n), n);
  CHECK(a.stats().bytes_cached >= n);
  a.empty_cache();
  CHECK(a.stats().bytes_cached == 0);
  const std::uint64_t allocs = a.stats().system_allocs;
  a.deallocate(a.allocate(n), n);
  CHECK(a.stats().system_allocs == allocs + 1);
}

TEST_CASE("allocator: concurrent allocation keeps the books balanced", "[allocator]") {
  Allocator& a = cpu_allocator();
  const std::uint64_t in_use = a.stats().bytes_in_use;
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&a, t] {
      std::vector<std::pair<void*, std::size_t>> held;
      for (int i = 0; i < 500; ++i) {
        const std::size_t size = 64 * static_cast<std::size_t>(1 + (i + t) % 7);
        held.emplace_back(a.allocate(size), size);
        static_cast<char*>(held.back().first)[size - 1] = 1;  // the block really holds `size` bytes
        if (held.size() > 5) {
          a.deallocate(held.front().first, held.front().second);
          held.erase(held.begin());
        }
      }
      for (const auto& [p, size] : held) a.deallocate(p, size);
    });
  for (auto& th : threads) th.join();
  CHECK(a.stats().bytes_in_use == in_use);
}

namespace {

/// One step of a small CNN written directly with the ops, as a training loop would run it.
void cnn_training_step(Tensor& conv_w, Tensor& conv_b, Tensor& fc_w, Tensor& fc_b, Generator& gen) {
  const Tensor x = randn({8, 1, 12, 12}, {}, gen);
  Tensor target = empty({8}, {.dtype = DType::int64});
  for (std::int64_t i = 0; i < 8; ++i) target.data<std::int64_t>()[i] = (i * 7) % 10;

  const Tensor h = max_pool2d(relu(conv2d(x, conv_w, conv_b, 1, 1)), 2);  // [8, 4, 6, 6]
  const Tensor loss = nll_loss(log_softmax(linear(flatten(h, 1), fc_w, fc_b), 1), target);
  loss.backward();

  NoGradGuard no_grad;
  for (Tensor* p : {&conv_w, &conv_b, &fc_w, &fc_b}) {
    p->copy_(sub(*p, mul(p->grad(), 0.01)));
    p->set_grad(Tensor());
  }
}

}  // namespace

TEST_CASE("allocator: a training step allocates nothing new after the first", "[allocator][steady-state]") {
  Generator gen(1);
  Tensor conv_w = mul(randn({4, 1, 3, 3}, {}, gen), 0.3).requires_grad_();
  Tensor conv_b = zeros({4}, {.requires_grad = true});
  Tensor fc_w = mul(randn({10, 4 * 6 * 6}, {}, gen), 0.05).requires_grad_();
  Tensor fc_b = zeros({10}, {.requires_grad = true});

  cnn_training_step(conv_w, conv_b, fc_w, fc_b, gen);
  const AllocatorStats first = cpu_allocator().stats();
  for (int step = 2; step <= 5; ++step) {
    INFO("step " << step);
    cnn_training_step(conv_w, conv_b, fc_w, fc_b, gen);
    const AllocatorStats now = cpu_allocator().stats();
    CHECK(now.system_allocs == first.system_allocs);
    CHECK(now.system_bytes == first.system_bytes);
    CHECK(now.bytes_in_use == first.bytes_in_use);
  }
  // The loop did run the ops: every step requested memory and got it from the cache.
  CHECK(cpu_allocator().stats().cache_hits > first.cache_hits);
}
