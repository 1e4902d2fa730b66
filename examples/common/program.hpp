#pragma once
// The example's name, for the messages the shared job code prints ("mnist: SIGTERM: ...",
// "run mnist_cuda"). Each example's main() sets it first.

namespace job {

inline const char* program = "tinynet";

}  // namespace job
