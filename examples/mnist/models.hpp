#pragma once
// The example's two networks, composed at compile time.

#include <string>
#include <tinynet/tinynet.hpp>
#include <vector>

namespace mnist {

namespace nn = tinynet::nn;

/// PyTorch's MNIST example network: conv(1->32, 3) -> ReLU -> conv(32->64, 3) -> ReLU ->
/// max-pool 2 -> dropout 0.25 -> flatten -> linear(9216->128) -> ReLU -> dropout 0.5 ->
/// linear(128->10) -> log_softmax.
using Net = nn::Sequential<nn::Input<1, 28, 28>, nn::Conv2d<32, 3>, nn::ReLU, nn::Conv2d<64, 3>, nn::ReLU,
                           nn::MaxPool2d<2>, nn::Dropout, nn::Flatten, nn::Linear<128, 9216>, nn::ReLU, nn::Dropout,
                           nn::Linear<10>, nn::LogSoftmax>;

inline Net make_net() { return Net(nn::Dropout(0.25), nn::Dropout(0.5)); }

/// LeNet as in Caffe's and Kubeflow's examples: conv(1->20, 5) -> ReLU -> max-pool 2 ->
/// conv(20->50, 5) -> ReLU -> max-pool 2 -> linear(800->500) -> ReLU -> linear(500->10) ->
/// log_softmax.
using LeNet =
    nn::Sequential<nn::Input<1, 28, 28>, nn::Conv2d<20, 5>, nn::ReLU, nn::MaxPool2d<2>, nn::Conv2d<50, 5>, nn::ReLU,
                   nn::MaxPool2d<2>, nn::Flatten, nn::Linear<500, 800>, nn::ReLU, nn::Linear<10>, nn::LogSoftmax>;

inline LeNet make_lenet() { return LeNet(); }

/// The PyTorch example's names for Net's tensors, in order (LeNet's four layers get the
/// same names): what --save-pytorch writes.
inline const std::vector<std::string> kPyTorchNames = {"conv1.weight", "conv1.bias", "conv2.weight", "conv2.bias",
                                                       "fc1.weight",   "fc1.bias",   "fc2.weight",   "fc2.bias"};

}  // namespace mnist
