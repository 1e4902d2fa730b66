# cmake -DNM=<nm> "-DCUDA_OBJECTS=<objects>" "-DLIBRARY_OBJECTS=<objects>" -P eigen_as_library.cmake:
# an nvcc unit linking tinynet::cpu_kernels shares Eigen's GEMM templates with the library's
# objects, one copy of each kept at link time, so Eigen must be configured alike in both
# (backend/cpu/detail/gemm.hpp). Fails naming each Eigen GEMM kernel the nvcc objects define
# that no library object does: Eigen configured for CUDA (scalar, other block sizes) there.
function(gebp_kernels objects out)
  set(found)
  foreach(object ${objects})
    execute_process(COMMAND ${NM} -C --defined-only ${object} OUTPUT_VARIABLE symbols RESULT_VARIABLE rc)
    if(NOT rc EQUAL 0)
      message(FATAL_ERROR "${NM} failed on ${object}")
    endif()
    string(REGEX MATCHALL "Eigen::internal::gebp_kernel<[^\n]*>::operator\\(\\)" kernels "${symbols}")
    list(APPEND found ${kernels})
  endforeach()
  list(REMOVE_DUPLICATES found)
  set(${out} "${found}" PARENT_SCOPE)
endfunction()
gebp_kernels("${CUDA_OBJECTS}" cuda)
gebp_kernels("${LIBRARY_OBJECTS}" library)
if(NOT cuda)
  message(FATAL_ERROR "the nvcc objects define no Eigen GEMM kernel: not the units this check is for")
endif()
list(REMOVE_ITEM cuda ${library})
if(cuda)
  list(JOIN cuda "\n  " lines)
  message(FATAL_ERROR "Eigen GEMM kernels the nvcc units define and tinynet::cpu_kernels does not (Eigen "
                      "configured for CUDA there?):\n  ${lines}")
endif()
message(STATUS "the nvcc units' Eigen GEMM kernels are the library's")
