// A helper shared by the tests that change the thread count.
#pragma once

#include <tinynet/core/threading.hpp>

namespace tinynet::testing {

/// Restores, when it goes out of scope, the thread count in force when it was made.
struct ThreadCountRestorer {
  int saved = get_num_threads();
  ~ThreadCountRestorer() { set_num_threads(saved); }
};

}  // namespace tinynet::testing
