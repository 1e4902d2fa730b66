# The fuzz tests' one runner, in two steps (tests/fuzz/CMakeLists.txt registers them):
#
#   cmake -DSTEP=build -DCLANGXX=... -DSOURCE_DIR=... -DBUILD_DIR=... -DGENERATOR=...
#         [-DLAUNCHER=ccache] -P run_fuzz.cmake
#     Builds every libFuzzer target (tests/fuzz/project) with clang++ (ASan + UBSan) in
#     BUILD_DIR, once for all of them, and writes the generated seeds of the io targets
#     (valid model, checkpoint and PyTorch files: tests/io/fuzz_seeds.cpp) to
#     BUILD_DIR/seeds/{models,pytorch}.
#   cmake -DSTEP=run -DBUILD_DIR=... -DWORK_DIR=... -DTARGET=fuzz_x -DSEEDS=dir
#         -DFUZZ_SECONDS=N -DMALLOC_LIMIT_MB=N -DRSS_LIMIT_MB=N -P run_fuzz.cmake
#     Runs each seed in SEEDS on its own (a regression input that crashes again fails here,
#     by name), then fuzzes TARGET for FUZZ_SECONDS from SEEDS, which stays as it is: new
#     inputs go to WORK_DIR/corpus. A finding is written to WORK_DIR/artifacts and fails.
#
# Without a clang++ that links libFuzzer, either step prints TINYNET_FUZZ_SKIPPED (the tests'
# skip pattern) and why.

function(run)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "failed (${rc}): ${ARGN}")
  endif()
endfunction()

if(STEP STREQUAL "run")
  if(NOT EXISTS ${BUILD_DIR}/${TARGET})
    message("TINYNET_FUZZ_SKIPPED: ${BUILD_DIR}/${TARGET} was not built (fuzz.build says why)")
    return()
  endif()
  file(REMOVE_RECURSE ${WORK_DIR}/corpus ${WORK_DIR}/artifacts)
  file(MAKE_DIRECTORY ${WORK_DIR}/corpus ${WORK_DIR}/artifacts)
  file(GLOB seeds ${SEEDS}/*)
  if(NOT seeds)
    message(FATAL_ERROR "no seed inputs in ${SEEDS}")
  endif()
  run(${BUILD_DIR}/${TARGET} ${seeds})
  run(${BUILD_DIR}/${TARGET} -max_total_time=${FUZZ_SECONDS} -timeout=10 -malloc_limit_mb=${MALLOC_LIMIT_MB}
      -rss_limit_mb=${RSS_LIMIT_MB} -print_final_stats=1 -artifact_prefix=${WORK_DIR}/artifacts/ ${WORK_DIR}/corpus
      ${SEEDS})
  return()
endif()

if(NOT STEP STREQUAL "build")
  message(FATAL_ERROR "run_fuzz.cmake: STEP must be build or run")
endif()
if(NOT CLANGXX OR NOT EXISTS "${CLANGXX}")
  message("TINYNET_FUZZ_SKIPPED: clang++ was not found when the build was configured; the fuzz tests need clang "
          "with libFuzzer (e.g. apt install clang-14 libclang-rt-14-dev, then reconfigure)")
  return()
endif()
# Some clang installations lack the libFuzzer runtime: probe before building anything.
file(MAKE_DIRECTORY ${BUILD_DIR}/probe)
file(WRITE ${BUILD_DIR}/probe/probe.cpp
     "extern \"C\" int LLVMFuzzerTestOneInput(const unsigned char*, unsigned long) { return 0; }\n")
execute_process(COMMAND ${CLANGXX} -fsanitize=fuzzer,address ${BUILD_DIR}/probe/probe.cpp -o ${BUILD_DIR}/probe/probe
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
run(${CMAKE_COMMAND} -S ${SOURCE_DIR}/tests/fuzz/project -B ${BUILD_DIR} -G ${GENERATOR} -DCMAKE_CXX_COMPILER=${CLANGXX}
    -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTINYNET_SOURCE_DIR=${SOURCE_DIR} -DTINYNET_BUILD_TESTS=OFF
    -DTINYNET_BUILD_EXAMPLES=OFF -DTINYNET_BUILD_BENCH=OFF -DTINYNET_WITH_CUDA=OFF ${launcher})
run(${CMAKE_COMMAND} --build ${BUILD_DIR} --target fuzz_idx fuzz_tar fuzz_store fuzz_load fuzz_pytorch fuzz_seeds)
file(REMOVE_RECURSE ${BUILD_DIR}/seeds)
run(${BUILD_DIR}/fuzz_seeds ${BUILD_DIR}/seeds/models ${BUILD_DIR}/seeds/pytorch)
