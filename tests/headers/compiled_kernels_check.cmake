# cmake -DNM=<nm> -DOBJECT=<object file> -P compiled_kernels_check.cmake: fails naming
# each function of a vector level (cpu::baseline, cpu::avx2, cpu::avx512, cpu::avx512_bf16, cpu::amx), and each
# function marked TINYNET_COMPILED_ONCE (the dtype conversions), and each op body or autograd
# node of ops/ (TINYNET_OP), that the object defines, i.e. compiled itself instead of taking it
# from tinynet::cpu_kernels.
execute_process(COMMAND ${NM} -C --defined-only ${OBJECT} OUTPUT_VARIABLE symbols RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "${NM} failed on ${OBJECT}")
endif()
string(REGEX MATCHALL "[^\n]*(tinynet::backend::cpu::(baseline|avx2|avx512|avx512_bf16|amx)::|tinynet::detail::(convert_elements|float_to_bf16_run|bf16_to_float_run)|tinynet::ops::detail::|\\[abi:cpu\\])[^\n]*"
       defined "${symbols}")
if(defined)
  list(LENGTH defined count)
  list(SUBLIST defined 0 10 first)
  list(JOIN first "\n  " lines)
  message(FATAL_ERROR "${count} functions compiled in the unit instead of taken from tinynet::cpu_kernels (a kernel "
                      "missing from TINYNET_CPU_KERNELS, an op not marked TINYNET_OP?), the first 10:\n  ${lines}")
endif()
string(REGEX MATCH "tinynet::" any "${symbols}")
if(NOT any)
  message(FATAL_ERROR "${OBJECT} defines no tinynet symbol at all: not the unit this check is for")
endif()
message(STATUS "no kernel of any level compiled in ${OBJECT}")
