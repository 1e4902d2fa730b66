# The layers above backend/ never name a backend: an op asks a backend what it can do
# (backend/kernel_set.hpp, backend/bf16_activations.hpp) and calls it through the tag
# with_backend() hands it. Fails naming each line of ops/, optim/, nn/, amp/ or autograd/
# that names backend::cpu or either backend's Tag.
# Usage: cmake -DINCLUDE_DIR=<include/tinynet> -P layering_check.cmake
set(offending "")
foreach(layer ops optim nn amp autograd)
  file(GLOB_RECURSE headers "${INCLUDE_DIR}/${layer}/*")
  foreach(header ${headers})
    file(STRINGS "${header}" lines REGEX "cpu::Tag|cuda::Tag|backend::cpu::")
    foreach(line ${lines})
      string(APPEND offending "\n  ${header}: ${line}")
    endforeach()
  endforeach()
endforeach()
if(offending)
  message(FATAL_ERROR "a layer above backend/ names a backend:${offending}")
endif()
message(STATUS "ops, optim, nn, amp and autograd name no backend")
