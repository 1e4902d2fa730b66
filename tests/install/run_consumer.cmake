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
# there: it is not the top-level project).
run(${CMAKE_COMMAND} -S ${SOURCE_DIR}/tests/install/subdirectory_consumer -B ${WORK_DIR}/subdirectory-build
    -G ${GENERATOR} -DTINYNET_SOURCE_DIR=${SOURCE_DIR} -DCMAKE_BUILD_TYPE=Release)
run(${CMAKE_COMMAND} --build ${WORK_DIR}/subdirectory-build)
run(${WORK_DIR}/subdirectory-build/consumer)
