# cmake -DSOURCE_DIR=... -DWORK_DIR=... -DGENERATOR=... -P run_consumer.cmake
file(REMOVE_RECURSE ${WORK_DIR})

function(run)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "failed (${rc}): ${ARGN}")
  endif()
endfunction()

run(${CMAKE_COMMAND} -S ${SOURCE_DIR} -B ${WORK_DIR}/tinynet-build -G ${GENERATOR}
    -DTINYNET_BUILD_TESTS=OFF -DTINYNET_BUILD_EXAMPLES=OFF -DCMAKE_INSTALL_PREFIX=${WORK_DIR}/prefix)
run(${CMAKE_COMMAND} --build ${WORK_DIR}/tinynet-build)
run(${CMAKE_COMMAND} --install ${WORK_DIR}/tinynet-build)
if(NOT EXISTS ${WORK_DIR}/prefix/include/tinynet/tinynet.hpp)
  message(FATAL_ERROR "install did not place tinynet/tinynet.hpp under the prefix")
endif()

run(${CMAKE_COMMAND} -S ${SOURCE_DIR}/examples/find_package_consumer -B ${WORK_DIR}/consumer-build -G ${GENERATOR}
    -DCMAKE_PREFIX_PATH=${WORK_DIR}/prefix -DCMAKE_BUILD_TYPE=Release)
run(${CMAKE_COMMAND} --build ${WORK_DIR}/consumer-build)
run(${WORK_DIR}/consumer-build/consumer)

# The same program with tinynet added by add_subdirectory (its tests and examples are off
# there: it is not the top-level project), its kernels compiled once in tinynet::cpu_kernels.
run(${CMAKE_COMMAND} -S ${SOURCE_DIR}/tests/install/subdirectory_consumer -B ${WORK_DIR}/subdirectory-build
    -G ${GENERATOR} -DTINYNET_SOURCE_DIR=${SOURCE_DIR} -DCMAKE_BUILD_TYPE=Release)
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
run(${CXX} -O2 ${SOURCE_DIR}/examples/find_package_consumer/main.cpp ${pc_flags} -o ${WORK_DIR}/pkg-config-consumer)
run(${WORK_DIR}/pkg-config-consumer)

# Again with the installed CPU kernels library, from its pkg-config file.
execute_process(COMMAND ${PKG_CONFIG} --cflags --libs tinynet-cpu-kernels OUTPUT_VARIABLE pc_flags RESULT_VARIABLE rc
                OUTPUT_STRIP_TRAILING_WHITESPACE)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "pkg-config --cflags --libs tinynet-cpu-kernels failed (${rc})")
endif()
separate_arguments(pc_flags UNIX_COMMAND "${pc_flags}")
run(${CXX} -O2 ${SOURCE_DIR}/examples/find_package_consumer/main.cpp ${pc_flags} -o ${WORK_DIR}/pkg-config-kernels-consumer)
run(${WORK_DIR}/pkg-config-kernels-consumer)
