#include "op_testing.hpp"
#include "thread_count_restorer.hpp"

using namespace tinynet;
using namespace tinynet::testing;

namespace {

// Naive batch norm over [N, C, ...] with per-channel mean and biased variance.
std::vector<double> reference_batch_norm(const Tensor& x, const Tensor& w, const Tensor& b, double eps) {
  const auto n = x.size(0), c = x.size(1), hw = x.numel() / (n * c);
  const std::vector<double> xv = values(x), wv = values(w), bv = values(b);
  std::vector<double> out(xv.size());
  for (std::int64_t ch = 0; ch < c; ++ch) {
    double mean = 0, var = 0;
    for (std::int64_t i = 0; i < n; ++i)
      for (std::int64_t j = 0; j < hw; ++j) mean += xv[static_cast<std::size_t>((i * c + ch) * hw + j)];
    mean /= static_cast<double>(n * hw);
    for (std::int64_t i = 0; i < n; ++i)
      for (std::int64_t j = 0; j < hw; ++j) {
        const double d = xv[static_cast<std::size_t>((i * c + ch) * hw + j)] - mean;
        var += d * d;
      }
    var /= static_cast<double>(n * hw);
    for (std::int64_t i = 0; i < n; ++i)
      for (std::int64_t j = 0; j < hw; ++j) {
        const auto k = static_cast<std::size_t>((i * c + ch) * hw + j);
        out[k] =
            (xv[k] - mean) / std::sqrt(var + eps) * wv[static_cast<std::size_t>(ch)] + bv[static_cast<std::size_t>(ch)];
      }
  }
  return out;
}

}  // namespace

TEST_CASE("batch_norm: training forward matches a naive reference", "[ops][batch_norm]") {
  const Tensor x = random_input({3, 4, 5, 2}, 1, false, -2.0, 3.0);
  const Tensor w = random_input({4}, 2, false), b = random_input({4}, 3, false);
  const Tensor y = batch_norm(x, Tensor(), Tensor(), w, b, true, 0.1, 1e-5);
  check_close(y, reference_batch_norm(x, w, b, 1e-5), 1e-12);
  // [N, C, L] (BatchNorm1d's sequences): statistics over N and L.
  const Tensor seq = random_input({3, 4, 7}, 10, false, -2.0, 3.0);
  check_close(batch_norm(seq, Tensor(), Tensor(), w, b, true, 0.1, 1e-5), reference_batch_norm(seq, w, b, 1e-5), 1e-12);
}

TEST_CASE("batch_norm: gradients in training and evaluation mode", "[ops][batch_norm][gradcheck]") {
  for (const Shape& shape : {Shape{2, 3, 4, 5}, Shape{1, 2, 3, 3}, Shape{5, 3}, Shape{3, 2, 4}}) {
    INFO("input shape " << shape);
    const Tensor x = random_input(shape, 4);
    const Tensor w = random_input({shape[1]}, 5), b = random_input({shape[1]}, 6);
    check_gradients(
        [](std::span<const Tensor> in) { return batch_norm(in[0], Tensor(), Tensor(), in[1], in[2], true); },
        {x, w, b});
    const Tensor rm = random_input({shape[1]}, 7, false), rv = random_input({shape[1]}, 8, false, 0.5, 2.0);
    check_gradients([&](std::span<const Tensor> in) { return batch_norm(in[0], rm, rv, in[1], in[2], false); },
                    {x, w, b});
  }
}

TEST_CASE("batch_norm: float32 planes of any length match float64, identically on 1 and 2 threads",
          "[ops][batch_norm]") {
  // The float32 kernels sum planes in vectors (planes of at least a vector, tails masked,
  // runs of 1024 elements) split over threads by plane; shorter planes go element by
  // element. One case has a mean far above the spread.
  struct Case {
    Shape shape;
    double lo, hi;
  };
  ThreadCountRestorer restore;
  for (const Case& k : {Case{{16, 3, 50, 50}, -2.0, 3.0}, Case{{64, 16, 37}, -1.0, 1.0},
                        Case{{8, 3, 40, 40}, 99.0, 101.0}, Case{{1024, 40, 5}, -1.0, 2.0}}) {
    INFO("input shape " << k.shape << ", values in [" << k.lo << ", " << k.hi << ")");
    // float32 values, so that both runs see the same inputs.
    const auto input = [](const Shape& shape, std::uint64_t seed, double lo, double hi) {
      return random_input(shape, seed, false, lo, hi).to(DType::float32).to(DType::float64);
    };
    const Tensor x = input(k.shape, 20, k.lo, k.hi), gy = input(k.shape, 23, -1.0, 1.0);
    const Tensor w = input({k.shape[1]}, 21, -1.0, 1.0), b = input({k.shape[1]}, 22, -1.0, 1.0);
    // dw and db sum M = N * L terms of order 1 and may land near 0: compared on the scale
    // of such a sum, sqrt(M).
    const double sum_scale = 1 / std::sqrt(static_cast<double>(k.shape.numel() / k.shape[1]));
    const auto run = [&](DType dtype) {
      const Tensor xt = x.to(dtype).requires_grad_(), wt = w.to(dtype).requires_grad_(),
                   bt = b.to(dtype).requires_grad_();
      const Tensor y = batch_norm(xt, Tensor(), Tensor(), wt, bt, true);
      y.backward(gy.to(dtype));
      return std::vector<std::vector<double>>{values(y), values(xt.grad()), values(wt.grad() * sum_scale),
                                              values(bt.grad() * sum_scale)};
    };
    const auto expected = run(DType::float64);
    std::vector<std::vector<double>> first;
    for (int threads : {1, 2}) {
      INFO(threads << " threads");
      set_num_threads(threads);
      const auto got = run(DType::float32);
      for (std::size_t i = 0; i < got.size(); ++i) {
        INFO("output, dx, dw, db: " << i);
        check_close(got[i], expected[i], 1e-5);
        if (!first.empty()) check_close(got[i], first[i], 0.0);
      }
      first = got;
    }
  }
}

TEST_CASE("batch_norm: running statistics use the unbiased variance", "[ops][batch_norm]") {
  const Tensor x = random_input({4, 2, 3, 3}, 9, false);
  Tensor rm = zeros({2}, {.dtype = DType::float64}), rv = ones({2}, {.dtype = DType::float64});
  batch_norm(x, rm, rv, Tensor(), Tensor(), true, 0.25);
  const std::vector<double> xv = values(x);
  for (int ch = 0; ch < 2; ++ch) {
    double mean = 0, var = 0;
    for (int i = 0; i < 4; ++i)
      for (int j = 0; j < 9; ++j) mean += xv[static_cast<std::size_t>((i * 2 + ch) * 9 + j)];
    mean /= 36;
    for (int i = 0; i < 4; ++i)
      for (int j = 0; j < 9; ++j) var += std::pow(xv[static_cast<std::size_t>((i * 2 + ch) * 9 + j)] - mean, 2);
    CHECK(rm.data<double>()[ch] == Approx(0.25 * mean).epsilon(1e-12));
    CHECK(rv.data<double>()[ch] == Approx(0.75 + 0.25 * var / 35).epsilon(1e-12));
  }
}

TEST_CASE("batch_norm: misuse names the problem", "[ops][batch_norm][errors]") {
  const Tensor x = zeros({2, 3, 4, 4});
  CHECK_THROWS_WITH(batch_norm(zeros({2, 3, 4, 4, 2}), Tensor(), Tensor()),
                    Catch::Contains("rank 2 (N, C), 3 (N, C, L) or 4") && Catch::Contains("[2, 3, 4, 4, 2]"));
  CHECK_THROWS_WITH(batch_norm(x, zeros({4}), ones({3})), Catch::Contains("[3]") && Catch::Contains("[4]"));
  CHECK_THROWS_WITH(batch_norm(x, Tensor(), Tensor(), Tensor(), Tensor(), false), Catch::Contains("running_mean"));
  CHECK_THROWS_WITH(batch_norm(zeros({1, 3, 1, 1}), Tensor(), Tensor()), Catch::Contains("more than 1 value"));
}

TEST_CASE("batch_norm_relu: relu(batch_norm) in one op, the same bits forward and backward",
          "[ops][batch_norm][gradcheck]") {
  // Planes shorter than a vector, with vector tails, of whole vectors, and [N, C]; float32
  // (the vector kernels) and float64; batch and running statistics. x also feeds a second
  // term, so that batch_norm_relu's input gradient is added to another.
  for (const Shape& shape : {Shape{2, 3, 4, 5}, Shape{4, 16, 12, 12}, Shape{3, 5, 7, 9}, Shape{6, 3}}) {
    for (const DType dtype : {DType::float32, DType::float64}) {
      for (const bool training : {true, false}) {
        INFO("shape " << shape << ", " << dtype << (training ? ", training" : ", evaluation"));
        const std::int64_t c = shape[1];
        const auto run = [&](bool fused) {
          const Tensor x = random_input(shape, 60, false, -2.0, 3.0).to(dtype).requires_grad_();
          const Tensor w = random_input({c}, 61, false).to(dtype).requires_grad_();
          const Tensor b = random_input({c}, 62, false).to(dtype).requires_grad_();
          Tensor rm = random_input({c}, 63, false).to(dtype), rv = random_input({c}, 64, false, 0.5, 2.0).to(dtype);
          const Tensor y = fused ? batch_norm_relu(x, rm, rv, w, b, training, 0.1, 1e-5)
                                 : relu(batch_norm(x, rm, rv, w, b, training, 0.1, 1e-5));
          CHECK(y.grad_fn()->name() == std::string(fused ? "batch_norm_relu" : "relu"));
          add(sum(mul(y, random_input(shape, 65, false).to(dtype))), sum(mul(x, x))).backward();
          return std::vector<std::vector<double>>{values(y),        values(x.grad()), values(w.grad()),
                                                  values(b.grad()), values(rm),       values(rv)};
        };
        const auto fused = run(true), separate = run(false);
        for (std::size_t i = 0; i < fused.size(); ++i) {
          INFO("y, dx, dw, db, running mean, running var: " << i);
          CHECK(fused[i] == separate[i]);
        }
      }
    }
  }
  // Away from the ReLU's kink, the float64 gradients are the numerical ones (every output
  // of these inputs is checked to lie away from it first).
  const Tensor x = random_input({3, 2, 3, 4}, 66), w = random_input({2}, 67), b = random_input({2}, 68);
  {
    const std::vector<double> pre = values(batch_norm(x, Tensor(), Tensor(), w, b));
    for (double v : pre) REQUIRE(std::abs(v) > 1e-3);
  }
  check_gradients([](std::span<const Tensor> in) { return batch_norm_relu(in[0], Tensor(), Tensor(), in[1], in[2]); },
                  {x, w, b});
  CHECK_THROWS_WITH(batch_norm_relu(zeros({2, 3, 4, 4, 2}), Tensor(), Tensor()),
                    Catch::Contains("batch_norm_relu: expected input of rank 2 (N, C), 3 (N, C, L) or 4"));
}
