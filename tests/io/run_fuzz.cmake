# cmake -DCLANGXX=... -DSOURCE_DIR=... -DWORK_DIR=... -DGENERATOR=... -DFUZZ_SECONDS=N
#       [-DFUZZ_TARGET=fuzz_load|fuzz_pytorch] [-DLAUNCHER=ccache] -P run_fuzz.cmake
# Builds tests/io/<FUZZ_TARGET>.cpp with clang's libFuzzer (ASan + UBSan) in its own build tree
# (WORK_DIR/build, shared by the targets), writes a seed corpus of valid files, and fuzzes
# the loaders for FUZZ_SECONDS.
# Without a usable clang++ it prints TINYNET_FUZZ_SKIPPED (the test's skip pattern).

if(NOT FUZZ_TARGET)
  set(FUZZ_TARGET fuzz_load)
endif()

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
run(${CMAKE_COMMAND} --build ${WORK_DIR}/build --target ${FUZZ_TARGET} fuzz_seeds)

set(seeds ${WORK_DIR}/seeds)
if(FUZZ_TARGET STREQUAL "fuzz_pytorch")
  set(seeds ${WORK_DIR}/seeds-pytorch)
endif()
set(corpus ${WORK_DIR}/corpus-${FUZZ_TARGET})
file(REMOVE_RECURSE ${WORK_DIR}/seeds ${WORK_DIR}/seeds-pytorch ${corpus})
file(MAKE_DIRECTORY ${corpus} ${WORK_DIR}/artifacts)
run(${WORK_DIR}/build/fuzz_seeds ${WORK_DIR}/seeds ${WORK_DIR}/seeds-pytorch)

# New inputs go to the corpus (the first directory); the seeds stay as generated. A finding is
# written to artifacts/ and fails the test.
run(${WORK_DIR}/build/${FUZZ_TARGET} -max_total_time=${FUZZ_SECONDS} -timeout=10 -malloc_limit_mb=64 -rss_limit_mb=1024
    -print_final_stats=1 -artifact_prefix=${WORK_DIR}/artifacts/${FUZZ_TARGET}- ${corpus} ${seeds})
