# ctest consumer.find_package: installs the build tree into a scratch prefix, then configures, builds and runs
# test/consumer against it with find_package(tool_effects CONFIG), using the same compiler and generator.
#
#   cmake -DBUILD_DIR=<build> -DSOURCE_DIR=<repo>/test/consumer -DWORK_DIR=<scratch> -DCXX=<compiler>
#         -DGENERATOR=<generator> [-DMAKE_PROGRAM=<path>] [-DCONFIG=<config>] [-DEXPECT_JSON=ON|OFF]
#         [-DEXPECT_MCP=ON|OFF] -P run.cmake
cmake_minimum_required(VERSION 3.25)

foreach(_var IN ITEMS BUILD_DIR SOURCE_DIR WORK_DIR CXX GENERATOR)
  if(NOT DEFINED ${_var} OR "${${_var}}" STREQUAL "")
    message(FATAL_ERROR "consumer: ${_var} is not set")
  endif()
endforeach()
if(NOT CONFIG)
  set(CONFIG Release)
endif()

set(_prefix "${WORK_DIR}/prefix")
set(_build "${WORK_DIR}/build")
file(REMOVE_RECURSE "${WORK_DIR}")
file(MAKE_DIRECTORY "${WORK_DIR}")

function(_step name)
  list(JOIN ARGN " " _text)
  message("consumer: ${name}: ${_text}")
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE _rc OUTPUT_VARIABLE _out ERROR_VARIABLE _out)
  message("${_out}")
  if(NOT _rc EQUAL 0)
    message(FATAL_ERROR "consumer: ${name} failed (${_rc})")
  endif()
endfunction()

_step(install "${CMAKE_COMMAND}" --install "${BUILD_DIR}" --prefix "${_prefix}" --config "${CONFIG}")

set(_configure "${CMAKE_COMMAND}" -S "${SOURCE_DIR}" -B "${_build}" -G "${GENERATOR}"
               "-DCMAKE_CXX_COMPILER=${CXX}" "-DCMAKE_BUILD_TYPE=${CONFIG}" "-DCMAKE_PREFIX_PATH=${_prefix}"
               -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF "-DTOOL_EFFECTS_EXPECT_JSON=${EXPECT_JSON}"
               "-DTOOL_EFFECTS_EXPECT_MCP=${EXPECT_MCP}")
if(MAKE_PROGRAM)
  list(APPEND _configure "-DCMAKE_MAKE_PROGRAM=${MAKE_PROGRAM}")
endif()
_step(configure ${_configure})

# The package must come from the scratch prefix, not from anywhere else on the machine.
file(STRINGS "${_build}/CMakeCache.txt" _dir_line REGEX "^tool_effects_DIR:")
string(REGEX REPLACE "^[^=]*=" "" _found_dir "${_dir_line}")
file(REAL_PATH "${_prefix}" _real_prefix)
file(REAL_PATH "${_found_dir}" _real_found)
string(FIND "${_real_found}" "${_real_prefix}/" _pos)
if(NOT _pos EQUAL 0)
  message(FATAL_ERROR "consumer: tool_effects was found in ${_found_dir}, not in the install prefix ${_prefix}")
endif()

_step(build "${CMAKE_COMMAND}" --build "${_build}" --config "${CONFIG}")

set(_exe "${_build}/consumer")
if(NOT EXISTS "${_exe}" AND EXISTS "${_build}/${CONFIG}/consumer")
  set(_exe "${_build}/${CONFIG}/consumer")
endif()
_step(run "${_exe}")
foreach(_dir IN ITEMS "${_build}" "${_build}/${CONFIG}")
  if(EXISTS "${_dir}/consumer_json")
    _step(run_json "${_dir}/consumer_json")
    break()
  endif()
endforeach()
foreach(_dir IN ITEMS "${_build}" "${_build}/${CONFIG}")
  if(EXISTS "${_dir}/consumer_mcp")
    _step(run_mcp "${_dir}/consumer_mcp")
    break()
  endif()
endforeach()
message("consumer: OK")
