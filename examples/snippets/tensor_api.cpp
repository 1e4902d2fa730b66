// docs/tensors.md: the tensor API, each block quoted there. Checks its results; exits 1 on a
// mismatch.
#include <cstdio>
#include <tinynet/tinynet.hpp>
#include <vector>

using namespace tinynet;

namespace {

int failures = 0;
void expect(bool ok, const char* what) {
  if (!ok) {
    std::printf("FAIL: %s\n", what);
    ++failures;
  }
}

}  // namespace

int main() {
  {
    // [create]
    std::vector<float> pixels(2 * 3, 0.5f);  // your buffer: copied, never borrowed
    Tensor images = from_vector(pixels, {2, 3});
    std::vector<double> raw = {1, 2, 3};
    Tensor column = from_buffer<double>(std::span<const double>(raw), {3, 1});
    Tensor labels = tensor<std::int64_t>({4, 2});
    Tensor w = zeros({3, 4}, {.dtype = DType::float64, .requires_grad = true});
    Tensor steps = arange(0, 10, 2);         // int64: 0 2 4 6 8
    Tensor grid = arange(0.0, 1.0, 0.25);    // float32: 0 0.25 0.5 0.75
    Tensor sevens = full_like(images, 7.0);  // images' shape, dtype and device
    // [create]
    expect(images.dtype() == DType::float32 && column.shape() == Shape{3, 1} && labels.dtype() == DType::int64,
           "create");
    expect(w.requires_grad() && steps.numel() == 5 && grid.numel() == 4 && sum(sevens).item() == 42.0, "create values");
  }
  {
    // [threads]
    set_num_threads(2);  // every kernel and the data loader; get_num_threads() reads it
    // [threads]
    expect(get_num_threads() == 2, "threads");
  }
  {
    // [dtypes]
    Tensor x = randn({4});
    Tensor x64 = x.to(DType::float64);  // a copy, off the tape; cast(x, dtype) records it
    Tensor mask = x > 0.0;              // DType::bool_, one byte per element
    Tensor ones_and_zeros = mask.to(DType::float32);
    const Device device = cuda::is_available() ? Device::cuda() : Device::cpu();
    Tensor there = x.to(device);  // a copy on the device
    // [dtypes]
    expect(x64.dtype() == DType::float64 && mask.dtype() == DType::bool_ && there.device() == device, "dtypes");
    expect(sum(ones_and_zeros).item() == static_cast<double>(sum(mask).item<std::int64_t>()), "bool to float");
  }
  {
    // [compare]
    Tensor output = randn({64, 10});                                    // a batch of scores
    Tensor target = argmax(randn({64, 10}), 1);                         // its labels, int64
    Tensor pred = argmax(output, 1);                                    // int64 [64]
    std::int64_t correct = sum(eq(pred, target)).item<std::int64_t>();  // a bool tensor's sum counts
    Tensor positive = output > 0.0;                                     // bool [64, 10]
    Tensor kept = where(positive, output, 0.0);                         // relu, spelled out
    // [compare]
    expect(correct >= 0 && correct <= 64 && sum(pred == target).item<std::int64_t>() == correct, "compare");
    expect(sum(ne(kept, relu(output))).item<std::int64_t>() == 0, "where");
  }
  {
    // [math]
    Tensor x = randn({8, 5}, {.requires_grad = true});
    Tensor y = clamp(x, -1.0, 1.0) + abs(x) + sqrt(abs(x) + 1.0) + maximum(x, zeros({5})) - minimum(x, x * 0.5);
    Tensor per_row = amax(x, 1);         // [8]; the gradient is shared among ties
    Tensor col_mean = mean(x, 0, true);  // [1, 5]
    Tensor smallest = argmin(x, -1);     // int64 [8]; negative dims count from the end
    (sum(y) + sum(per_row) + sum(col_mean)).backward();
    // [math]
    expect(per_row.shape() == Shape{8} && col_mean.shape() == Shape{1, 5} && smallest.dtype() == DType::int64 &&
               x.grad().defined(),
           "math");
  }
  {
    // [shape]
    Tensor x = randn({2, 3, 4});
    Tensor a = x.unsqueeze(0);        // [1, 2, 3, 4], shares x's storage (as view, reshape, squeeze)
    Tensor b = x.permute({2, 0, 1});  // [4, 2, 3], a copy: tinynet tensors are contiguous
    Tensor c = x.transpose(0, 2);     // [4, 3, 2], a copy
    Tensor d = x.narrow(2, 1, 2);     // [2, 3, 2], a copy
    Tensor e = x.select(1, 0);        // [2, 4], a copy
    Tensor f = cat({x, x}, 1);        // [2, 6, 4]
    Tensor g = stack({x, x}, 0);      // [2, 2, 3, 4]
    Tensor h = index_select(x, 2, tensor<std::int64_t>({3, 0}));  // [2, 3, 2]
    // [shape]
    expect(a.shares_storage(x) && b.shape() == Shape{4, 2, 3} && c.shape() == Shape{4, 3, 2} &&
               d.shape() == Shape{2, 3, 2} && e.shape() == Shape{2, 4} && f.shape() == Shape{2, 6, 4} &&
               g.shape() == Shape{2, 2, 3, 4} && h.shape() == Shape{2, 3, 2},
           "shape");
  }
  std::printf("tensor_api: %s\n", failures ? "FAILED" : "ok");
  return failures ? 1 : 0;
}
