#include <catch2/catch.hpp>
#include <tinynet/tinynet.hpp>

using namespace tinynet;

TEST_CASE("tensor: creation fills shape, dtype, device and values", "[tensor]") {
  const Tensor z = zeros({2, 3});
  CHECK(z.shape() == Shape{2, 3});
  CHECK(z.dtype() == DType::float32);
  CHECK(z.device() == Device::cpu());
  CHECK(z.numel() == 6);
  for (int i = 0; i < 6; ++i) CHECK(z.data<float>()[i] == 0.0f);

  const Tensor f = full({4}, 2.5, {.dtype = DType::float64});
  CHECK(f.dtype() == DType::float64);
  for (int i = 0; i < 4; ++i) CHECK(f.data<double>()[i] == 2.5);

  const Tensor b = from_vector<float>({1, 2, 3, 4, 5, 6}, {2, 3});
  CHECK(b.at<float>({1, 2}) == 6.0f);
  CHECK(b.at<float>({0, 1}) == 2.0f);
}

TEST_CASE("tensor: views share storage and reshape infers -1", "[tensor]") {
  Tensor a = from_vector<float>({1, 2, 3, 4, 5, 6}, {2, 3});
  Tensor v = a.view({3, -1});
  CHECK(v.shape() == Shape{3, 2});
  CHECK(v.shares_storage(a));
  v.at<float>({2, 1}) = 42.0f;
  CHECK(a.at<float>({1, 2}) == 42.0f);
  CHECK(a.flatten().shape() == Shape{6});
  const Tensor x = zeros({2, 3, 4, 5});
  CHECK(x.flatten(1).shape() == Shape{2, 60});
  CHECK(x.flatten(1, 2).shape() == Shape{2, 12, 5});
}

TEST_CASE("tensor: misuse throws errors that name the problem", "[tensor][errors]") {
  const Tensor a = zeros({2, 3});
  CHECK_THROWS_WITH(a.view({4, 2}), Catch::Contains("[2, 3]") && Catch::Contains("[4, 2]"));
  CHECK_THROWS_AS(a.view({4, 2}), ShapeError);
  CHECK_THROWS_AS(a.view({-1, -1}), ShapeError);
  CHECK_THROWS_AS(a.at<float>({2, 0}), IndexError);
  CHECK_THROWS_WITH(a.at<float>({2, 0}), Catch::Contains("index 2 out of range for dim 0"));
  CHECK_THROWS_AS(a.at<float>({0}), IndexError);
  CHECK_THROWS_AS(a.data<double>(), TypeError);
  CHECK_THROWS_AS(a.size(2), IndexError);
  CHECK_THROWS_AS(a.item(), ShapeError);
  CHECK_THROWS_AS(from_vector<float>({1, 2, 3}, {2, 2}), ShapeError);
  CHECK_THROWS_AS(zeros({2}, {.dtype = DType::int64, .requires_grad = true}), TypeError);
}

TEST_CASE("tensor: cuda devices are a clear error without the CUDA build", "[tensor][device]") {
  CHECK(Device::parse("cuda:1") == Device::cuda(1));
  CHECK_THROWS_AS(Device::parse("gpu"), ValueError);
#if !defined(TINYNET_WITH_CUDA)
  CHECK_THROWS_WITH(zeros({2}, {.device = Device::cuda(0)}), Catch::Contains("without CUDA"));
#endif
}

TEST_CASE("tensor: to(dtype) converts and clone copies", "[tensor]") {
  const Tensor a = from_vector<float>({1.5f, -2.0f}, {2});
  const Tensor d = a.to(DType::float64);
  CHECK(d.dtype() == DType::float64);
  CHECK(d.data<double>()[0] == 1.5);
  Tensor c = a.clone();
  CHECK_FALSE(c.shares_storage(a));
  c.fill_(7);
  CHECK(a.data<float>()[0] == 1.5f);
}

TEST_CASE("tensor: add_ adds a scalar in place, unrecorded, and refuses what autograd tracks", "[tensor]") {
  Tensor steps = zeros(Shape{}, {DType::int64});
  steps.add_(1).add_(2);
  CHECK(steps.item<std::int64_t>() == 3);
  Tensor f = from_vector<float>({1.5f, -2.0f}, {2});
  f.add_(0.25);
  CHECK(f.data<float>()[0] == 1.75f);
  CHECK(f.data<float>()[1] == -1.75f);
  Tensor w = zeros({2}, {.requires_grad = true});
  CHECK_THROWS_WITH(w.add_(1), Catch::Contains("requires grad"));
  CHECK_THROWS_AS(zeros({2}, {.dtype = DType::bfloat16}).add_(1), TypeError);
}
