# cmake -DCLANGXX=... -DSOURCE_DIR=... -DWORK_DIR=... -DGENERATOR=... -DTARGET=fuzz_x
#       -DSEEDS=dir -DFUZZ_SECONDS=N [-DLAUNCHER=ccache] -P run_fuzz.cmake
# Builds tests/fuzz/TARGET.cpp with clang's libFuzzer (ASan + UBSan) in its own build tree
# and fuzzes it for FUZZ_SECONDS from the seed corpus SEEDS (kept as committed; new inputs
# go to WORK_DIR/corpus). A finding is written to WORK_DIR/artifacts and fails the test.
# Without a usable clang++ it prints TINYNET_FUZZ_SKIPPED (the test's skip pattern).

function(run)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "failed (${rc}): ${ARGN}")
  endif()
endfunction()

if(NOT CLANGXX OR NOT EXISTS "${CLANGXX}")
  message("TINYNET_FUZZ_SKIPPED: clang++ was not found when the build was configured; ${TARGET} needs clang with "
          "libFuzzer (e.g. apt install clang-14 libclang-rt-14-dev, then reconfigure)")
  return()
endif()
file(MAKE_DIRECTORY ${WORK_DIR}/probe)
file(WRITE ${WORK_DIR}/probe/probe.cpp
     "extern \"C\" int LLVMFuzzerTestOneInput(const unsigned char*, unsigned long) { return 0; }\n")
execute_process(COMMAND ${CLANGXX} -fsanitize=fuzzer,address ${WORK_DIR}/probe/probe.cpp -o ${WORK_DIR}/probe/probe
                RESULT_VARIABLE probe_rc OUTPUT_QUIET ERROR_VARIABLE probe_err)
if(NOT probe_rc EQUAL 0)
  message("TINYNET_FUZZ_SKIPPED: ${CLANGXX} cannot link -fsanitize=fuzzer,address (is libclang-rt-dev "
          "installed?): ${probe_err}")
  return()
endif()

set(launcher)
if(LAUNCHER)
  set(launcher -DCMAKE_CXX_COMPILER_LAUNCHER=${LAUNCHER})
endif()
run(${CMAKE_COMMAND} -S ${SOURCE_DIR}/tests/fuzz/project -B ${WORK_DIR}/build -G ${GENERATOR}
    -DCMAKE_CXX_COMPILER=${CLANGXX} -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTINYNET_SOURCE_DIR=${SOURCE_DIR}
    -DTINYNET_BUILD_TESTS=OFF -DTINYNET_BUILD_EXAMPLES=OFF -DTINYNET_BUILD_BENCH=OFF ${launcher})
run(${CMAKE_COMMAND} --build ${WORK_DIR}/build --target ${TARGET})

file(REMOVE_RECURSE ${WORK_DIR}/corpus ${WORK_DIR}/artifacts)
file(MAKE_DIRECTORY ${WORK_DIR}/corpus ${WORK_DIR}/artifacts)
# Every committed seed must pass on its own first: a regression input that crashes again
# fails here, by name.
file(GLOB seeds ${SEEDS}/*)
if(NOT seeds)
  message(FATAL_ERROR "no seed inputs in ${SEEDS}")
endif()
run(${WORK_DIR}/build/${TARGET} ${seeds})
run(${WORK_DIR}/build/${TARGET} -max_total_time=${FUZZ_SECONDS} -timeout=10 -malloc_limit_mb=256 -rss_limit_mb=1536
    -print_final_stats=1 -artifact_prefix=${WORK_DIR}/artifacts/ ${WORK_DIR}/corpus ${SEEDS})
