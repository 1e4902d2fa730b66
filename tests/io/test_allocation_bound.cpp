// Loading never allocates more than the file holds: files that claim absurd sizes are
// rejected before any allocation is sized from the claim. Observed through a counting
// global operator new (this translation unit replaces it for io_tests) and through the
// tensor allocator's counters.

#include <atomic>
#include <catch2/catch.hpp>
#include <cstdlib>
#include <new>

#include "io/io_test_support.hpp"

namespace {

std::atomic<bool> g_watching{false};
std::atomic<std::size_t> g_largest{0};

void note(std::size_t n) {
  if (!g_watching.load(std::memory_order_relaxed)) return;
  std::size_t seen = g_largest.load(std::memory_order_relaxed);
  while (n > seen && !g_largest.compare_exchange_weak(seen, n, std::memory_order_relaxed)) {
  }
}

}  // namespace

// Replacements of the global allocation functions, every unaligned form (a sanitizer
// runtime defines each of them, so replacing only some would mix its pairs with these).
// The aligned forms keep their own consistent pair. GCC cannot see that this new and this
// delete are a malloc/free pair.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
void* operator new(std::size_t n) {
  note(n);
  if (void* p = std::malloc(n == 0 ? 1 : n)) return p;
  throw std::bad_alloc();
}
void* operator new[](std::size_t n) { return ::operator new(n); }
void* operator new(std::size_t n, const std::nothrow_t&) noexcept {
  note(n);
  return std::malloc(n == 0 ? 1 : n);
}
void* operator new[](std::size_t n, const std::nothrow_t& t) noexcept { return ::operator new(n, t); }
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }
void operator delete(void* p, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete[](void* p, const std::nothrow_t&) noexcept { std::free(p); }
#pragma GCC diagnostic pop

namespace io_test {

AllocationWatch::AllocationWatch() : start_(tinynet::cpu_allocator().stats()) {
  g_largest.store(0);
  g_watching.store(true);
}
AllocationWatch::~AllocationWatch() { g_watching.store(false); }
std::size_t AllocationWatch::largest_new() const { return g_largest.load(); }

}  // namespace io_test

using namespace tinynet;
using namespace io_test;

namespace {

constexpr std::uint64_t k2p60 = std::uint64_t{1} << 60;

// Loads `file` from memory and from disk; both must be a FormatError containing `what`,
// with no tensor allocated and no heap allocation above max(file size, 4 KiB) (the
// slack covers the error message itself).
void expect_rejected_without_allocating(const Bytes& file, const std::string& what) {
  INFO("expecting: " << what);
  {
    AllocationWatch w;
    CHECK_THROWS_MATCHES(load_state_dict_from_bytes(file, "crafted.tn"), FormatError, Says(what) && Says("crafted.tn"));
    CHECK(w.tensor_requests() == 0);
    CHECK(w.largest_new() <= std::max<std::size_t>(file.size(), 4096));
  }
  TempDir dir;
  write_bytes(dir / "crafted.tn", file);
  {
    AllocationWatch w;
    CHECK_THROWS_MATCHES(load_state_dict_file(dir / "crafted.tn"), FormatError, Says(what));
    CHECK(w.tensor_requests() == 0);
    CHECK(w.largest_new() <= std::max<std::size_t>(file.size(), 4096));
  }
}

}  // namespace

TEST_CASE("io allocation bound: the watch sees a large allocation", "[io][alloc]") {
  // Guards the instrument itself: without this, a broken watch would pass every check below.
  AllocationWatch w;
  void* big = ::operator new (std::size_t{1} << 20);  // an explicit call: never elided
  ::operator delete(big);
  CHECK(w.largest_new() >= (std::size_t{1} << 20));
  const Tensor t = zeros({1000});
  CHECK(w.tensor_requests() == 1);
}

TEST_CASE("io allocation bound: a header claiming a 2^60-byte payload", "[io][alloc][hostile]") {
  Builder p = payload(1);
  float_entry(p, "w", 4);
  expect_rejected_without_allocating(make_file(p.bytes(), {.payload_length = k2p60}),
                                     "announces 1152921504606846976 payload bytes");
}

TEST_CASE("io allocation bound: an entry count of 2^60", "[io][alloc][hostile]") {
  Builder p = payload(k2p60);
  float_entry(p, "w", 4);
  expect_rejected_without_allocating(make_file(p.bytes()), "claims 1152921504606846976 entries");
}

TEST_CASE("io allocation bound: a name length of 2^60", "[io][alloc][hostile]") {
  Builder p = payload(1);
  p.u64(k2p60).raw(Bytes(20));  // enough bytes for one entry, so the count is plausible
  expect_rejected_without_allocating(make_file(p.bytes()), "claims a name of 1152921504606846976 bytes");
}

TEST_CASE("io allocation bound: a shape of 2^60 elements", "[io][alloc][hostile]") {
  // [2^30, 2^30] float32: 2^60 elements, 2^62 bytes, with a data length that agrees.
  Builder p = payload(1);
  p.str("w").u8(1).u8(2).i64(std::int64_t{1} << 30).i64(std::int64_t{1} << 30).u64(std::uint64_t{1} << 62);
  p.raw(Bytes(64));
  expect_rejected_without_allocating(make_file(p.bytes()), "1152921504606846976 float32 elements");
}

TEST_CASE("io allocation bound: a data length of 2^60", "[io][alloc][hostile]") {
  Builder p = payload(1);
  p.str("w").u8(1).u8(1).i64(2).u64(k2p60);
  p.raw(Bytes(8));
  expect_rejected_without_allocating(make_file(p.bytes()), "records 1152921504606846976 data bytes");
}

TEST_CASE("io allocation bound: valid files allocate at most their size at once", "[io][alloc]") {
  StateDict sd;
  sd.insert("big", rand({256, 256}));
  sd.insert("small", ones({3}, {.dtype = DType::int64}));
  const Bytes file = save_state_dict_to_bytes(sd);
  AllocationWatch w;
  const StateDict back = load_state_dict_from_bytes(file);
  CHECK(w.largest_new() <= file.size());
  CHECK(w.tensor_requests() == 2);
  CHECK(w.tensor_system_bytes() <= file.size());
  CHECK(bitwise_equal(sd, back));
}
