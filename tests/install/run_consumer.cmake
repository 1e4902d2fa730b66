# cmake -DSOURCE_DIR=... -DBINARY_DIR=... -DWORK_DIR=... -DGENERATOR=... -DCXX=... -P run_consumer.cmake
file(REMOVE_RECURSE ${WORK_DIR})

function(run)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "failed (${rc}): ${ARGN}")
  endif()
endfunction()

# Installed from the build that runs this test, as a user installs theirs after building it
# (its CPU kernels library is already compiled there).
run(${CMAKE_COMMAND} --install ${BINARY_DIR} --prefix ${WORK_DIR}/prefix)
if(NOT EXISTS ${WORK_DIR}/prefix/include/tinynet/tinynet.hpp)
  message(FATAL_ERROR "install did not place tinynet/tinynet.hpp under the prefix")
endif()

run(${CMAKE_COMMAND} -S ${SOURCE_DIR}/examples/find_package_consumer -B ${WORK_DIR}/consumer-build -G ${GENERATOR}
    -DCMAKE_PREFIX_PATH=${WORK_DIR}/prefix -DCMAKE_BUILD_TYPE=Release)
run(${CMAKE_COMMAND} --build ${WORK_DIR}/consumer-build)
run(${WORK_DIR}/consumer-build/consumer)

# The same program with tinynet added by add_subdirectory (its tests and examples are off
# there: it is not the top-level project), its kernels compiled once in tinynet::cpu_kernels.
# Without optimisation (no build type): what this checks is that the targets configure,
# compile, link and run, and the kernels library compiles in about half the time unoptimised.
run(${CMAKE_COMMAND} -S ${SOURCE_DIR}/tests/install/subdirectory_consumer -B ${WORK_DIR}/subdirectory-build
    -G ${GENERATOR} -DTINYNET_SOURCE_DIR=${SOURCE_DIR})
run(${CMAKE_COMMAND} --build ${WORK_DIR}/subdirectory-build)
run(${WORK_DIR}/subdirectory-build/consumer)

# The same program built without CMake, from the installed pkg-config file.
find_program(PKG_CONFIG NAMES pkg-config)
if(NOT PKG_CONFIG)
  message(FATAL_ERROR "pkg-config not found (Debian: apt-get install pkg-config)")
endif()
set(ENV{PKG_CONFIG_PATH} ${WORK_DIR}/prefix/share/pkgconfig)
execute_process(COMMAND ${PKG_CONFIG} --cflags --libs tinynet OUTPUT_VARIABLE pc_flags RESULT_VARIABLE rc
                OUTPUT_STRIP_TRAILING_WHITESPACE)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "pkg-config --cflags --libs tinynet failed (${rc})")
endif()
separate_arguments(pc_flags UNIX_COMMAND "${pc_flags}")
run(${CXX} ${SOURCE_DIR}/examples/find_package_consumer/main.cpp ${pc_flags} -o ${WORK_DIR}/pkg-config-consumer)
run(${WORK_DIR}/pkg-config-consumer)

# Again with the installed CPU kernels library, from its pkg-config file.
execute_process(COMMAND ${PKG_CONFIG} --cflags --libs tinynet-cpu-kernels OUTPUT_VARIABLE pc_flags RESULT_VARIABLE rc
                OUTPUT_STRIP_TRAILING_WHITESPACE)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "pkg-config --cflags --libs tinynet-cpu-kernels failed (${rc})")
endif()
separate_arguments(pc_flags UNIX_COMMAND "${pc_flags}")
run(${CXX} ${SOURCE_DIR}/examples/find_package_consumer/main.cpp ${pc_flags} -o ${WORK_DIR}/pkg-config-kernels-consumer)
run(${WORK_DIR}/pkg-config-kernels-consumer)
