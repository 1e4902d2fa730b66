# cmake -DCLANGXX=... -DSOURCE_DIR=... -DWORK_DIR=... -DGENERATOR=... -DFUZZ_SECONDS=N
#       [-DLAUNCHER=ccache] -P run_fuzz.cmake
# Builds tests/io/fuzz_load.cpp with clang's libFuzzer (ASan + UBSan) in its own build tree,
# writes a seed corpus of valid files, and fuzzes the loaders for FUZZ_SECONDS.
# Without a usable clang++ it prints TINYNET_FUZZ_SKIPPED (the test's skip pattern).

function(skip why)
  message("TINYNET_FUZZ_SKIPPED: ${why}")
  if(CMAKE_VERSION VERSION_GREATER_EQUAL 3.29)
    cmake_language(EXIT 77)
  endif()
endfunction()

function(run)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "failed (${rc}): ${ARGN}")
  endif()
endfunction()

if(NOT CLANGXX OR NOT EXISTS "${CLANGXX}")
  skip("clang++ was not found when the build was configured; the loader fuzz test needs clang with libFuzzer "
       "(e.g. apt install clang-14 libclang-rt-14-dev, then reconfigure)")
  return()
endif()

# Some clang installations lack the libFuzzer runtime: probe before building anything.
file(MAKE_DIRECTORY ${WORK_DIR}/probe)
file(WRITE ${WORK_DIR}/probe/probe.cpp
     "extern \"C\" int LLVMFuzzerTestOneInput(const unsigned char*, unsigned long) { return 0; }\n")
execute_process(COMMAND ${CLANGXX} -fsanitize=fuzzer,address ${WORK_DIR}/probe/probe.cpp -o ${WORK_DIR}/probe/probe
                RESULT_VARIABLE probe_rc OUTPUT_QUIET ERROR_VARIABLE probe_err)
if(NOT probe_rc EQUAL 0)
  skip("${CLANGXX} cannot link -fsanitize=fuzzer,address (is libclang-rt-dev installed?): ${probe_err}")
  return()
endif()

set(launcher)
if(LAUNCHER)
  set(launcher -DCMAKE_CXX_COMPILER_LAUNCHER=${LAUNCHER})
endif()
run(${CMAKE_COMMAND} -S ${SOURCE_DIR}/tests/io/fuzz -B ${WORK_DIR}/build -G ${GENERATOR}
    -DCMAKE_CXX_COMPILER=${CLANGXX} -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTINYNET_SOURCE_DIR=${SOURCE_DIR} ${launcher})
run(${CMAKE_COMMAND} --build ${WORK_DIR}/build --target fuzz_load fuzz_seeds)

file(REMOVE_RECURSE ${WORK_DIR}/seeds ${WORK_DIR}/corpus)
file(MAKE_DIRECTORY ${WORK_DIR}/corpus ${WORK_DIR}/artifacts)
run(${WORK_DIR}/build/fuzz_seeds ${WORK_DIR}/seeds)

# New inputs go to corpus/ (the first directory); seeds/ stays as generated. A finding is
# written to artifacts/ and fails the test.
run(${WORK_DIR}/build/fuzz_load -max_total_time=${FUZZ_SECONDS} -timeout=10 -malloc_limit_mb=64 -rss_limit_mb=1024
    -print_final_stats=1 -artifact_prefix=${WORK_DIR}/artifacts/ ${WORK_DIR}/corpus ${WORK_DIR}/seeds)
