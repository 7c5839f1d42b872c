# ctest consumer.*: builds and runs test/consumer against tool_effects obtained as a user would, with the same
# compiler and generator. MODE picks how:
#
#   install        (consumer.find_package) `cmake --install` of this build into a scratch prefix (laid out as
#                  the deb modes' root), then find_package(tool_effects CONFIG) and the pkg-config files from there
#   subdirectory   (consumer.add_subdirectory) add_subdirectory(<repo>) with GoogleTest made unfindable
#                  (CMAKE_DISABLE_FIND_PACKAGE_GTest): tests, examples and benchmarks must be OFF by themselves
#   deb            (consumer.deb) configure <repo> with tests off, `cpack -G DEB`, check the package's control
#                  fields, `dpkg -x` it into a scratch root, then find_package and pkg-config from <root>/usr
#   no-gtest       (consumer.no_gtest) a top-level configure of <repo> without GoogleTest stops with the
#                  message naming TOOL_EFFECTS_BUILD_TESTS; with the tests off it configures
#   deb-install    (consumer.deb_install, opt-in) as deb, but `dpkg -i` into the system, find_package and
#                  pkg-config from their default paths (/usr), then `dpkg -r` (always, even on failure);
#                  refuses to run when tool-effects-dev is already installed, so it never removes a user's copy
#
#   cmake -DMODE=<mode> -DBUILD_DIR=<build> -DSOURCE_DIR=<repo>/test/consumer -DPROJECT_DIR=<repo>
#         -DWORK_DIR=<scratch> -DCXX=<compiler> -DGENERATOR=<generator> [-DMAKE_PROGRAM=<path>]
#         [-DCONFIG=<config>] [-DEXPECT_JSON=ON|OFF] [-DEXPECT_MCP=ON|OFF] [-DEXPECT_COMPILED=ON|OFF] -P run.cmake
cmake_minimum_required(VERSION 3.25)

if(NOT MODE)
  set(MODE install)
endif()
foreach(_var IN ITEMS BUILD_DIR SOURCE_DIR WORK_DIR CXX GENERATOR)
  if(NOT DEFINED ${_var} OR "${${_var}}" STREQUAL "")
    message(FATAL_ERROR "consumer: ${_var} is not set")
  endif()
endforeach()
if(MODE MATCHES "^(subdirectory|deb|deb-install|no-gtest)$" AND (NOT DEFINED PROJECT_DIR OR PROJECT_DIR STREQUAL ""))
  message(FATAL_ERROR "consumer: PROJECT_DIR is not set (needed by MODE=${MODE})")
endif()
if(NOT CONFIG)
  set(CONFIG Release)
endif()

# The install mode installs under root/usr, where the deb modes find the package's files: the consumers' compile
# commands are then the same in both (their paths are relative to the work directory), and the second mode's hit
# the compiler cache.
set(_prefix "${WORK_DIR}/root/usr")
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

# `cmd` output into out_var; fails the test on a non-zero exit.
function(_capture out_var name)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE _rc OUTPUT_VARIABLE _out ERROR_VARIABLE _err
                  OUTPUT_STRIP_TRAILING_WHITESPACE)
  if(NOT _rc EQUAL 0)
    message(FATAL_ERROR "consumer: ${name} failed (${_rc}): ${_err}")
  endif()
  set(${out_var} "${_out}" PARENT_SCOPE)
endfunction()

# The build's compiler cache (test/CMakeLists.txt writes LAUNCHER_FILE): the consumer, the package's build, and in the
# subdirectory mode the library's own compiled parts, are compiled through it. The launcher is a ;-list
# (env VAR=... ccache), which a -D argument in a command list would split into separate arguments (the launcher
# would be `env` alone, and nothing cached): it goes in an initial-cache file (-C).
set(_launcher "")
set(TE_LAUNCHER "")
if(LAUNCHER_FILE AND EXISTS "${LAUNCHER_FILE}")
  include("${LAUNCHER_FILE}")
  if(TE_LAUNCHER)
    set(_launcher_cache "${WORK_DIR}/launcher-cache.cmake")
    file(WRITE "${_launcher_cache}" "set(CMAKE_CXX_COMPILER_LAUNCHER [==[${TE_LAUNCHER}]==] CACHE STRING \"\")\n")
    set(_launcher -C "${_launcher_cache}")
  endif()
endif()
set(_configure_extra "")
set(_package_root "")  # where find_package must find tool_effects (checked below); empty: not checked
set(_pc_dir "")        # PKG_CONFIG_PATH for the pkg-config checks; "-" for the default path, empty: skip

if(MODE STREQUAL "install")
  _step(install "${CMAKE_COMMAND}" --install "${BUILD_DIR}" --prefix "${_prefix}" --config "${CONFIG}")
  list(APPEND _configure_extra "-DCMAKE_PREFIX_PATH=${_prefix}")
  set(_package_root "${_prefix}")
  set(_pc_dir "${_prefix}/share/pkgconfig")
elseif(MODE STREQUAL "subdirectory")
  list(APPEND _configure_extra "-DTOOL_EFFECTS_SOURCE_DIR=${PROJECT_DIR}" -DCMAKE_DISABLE_FIND_PACKAGE_GTest=ON)
elseif(MODE STREQUAL "deb" OR MODE STREQUAL "deb-install")
  find_program(_dpkg dpkg)
  find_program(_dpkg_deb dpkg-deb)
  get_filename_component(_cmake_bin "${CMAKE_COMMAND}" DIRECTORY)
  set(_cpack "${_cmake_bin}/cpack")
  if(NOT _dpkg OR NOT _dpkg_deb)
    message(FATAL_ERROR "consumer: MODE=${MODE} needs dpkg and dpkg-deb")
  endif()
  set(_pkg_build "${WORK_DIR}/package-build")
  if(EXISTS "${BUILD_DIR}/CPackConfig.cmake")
    # The package of the build under test (deb: the ctest's build; deb-install: the release preset's, built by
    # scripts/deb-install-check): cpack installs its tree (its libraries are built already) and packs what its
    # install rules give, which do not depend on the tests being on.
    file(MAKE_DIRECTORY "${_pkg_build}")
    execute_process(COMMAND "${_cpack}" -G DEB --config "${BUILD_DIR}/CPackConfig.cmake" -B "${_pkg_build}"
                    WORKING_DIRECTORY "${_pkg_build}" RESULT_VARIABLE _rc OUTPUT_VARIABLE _out ERROR_VARIABLE _out)
  else()
    _step(package_configure "${CMAKE_COMMAND}" -S "${PROJECT_DIR}" -B "${_pkg_build}" -G "${GENERATOR}" ${_launcher}
          "-DCMAKE_CXX_COMPILER=${CXX}" -DTOOL_EFFECTS_BUILD_TESTS=OFF -DTOOL_EFFECTS_BUILD_EXAMPLES=OFF
          -DTOOL_EFFECTS_BUILD_BENCHMARKS=OFF -DTOOL_EFFECTS_BUILD_FUZZERS=OFF -DCMAKE_DISABLE_FIND_PACKAGE_GTest=ON)
    # cpack installs without building: tool_effects::compiled (a static library) must be built first.
    _step(package_build "${CMAKE_COMMAND}" --build "${_pkg_build}")
    execute_process(COMMAND "${_cpack}" -G DEB WORKING_DIRECTORY "${_pkg_build}" RESULT_VARIABLE _rc
                    OUTPUT_VARIABLE _out ERROR_VARIABLE _out)
  endif()
  message("consumer: cpack -G DEB\n${_out}")
  if(NOT _rc EQUAL 0)
    message(FATAL_ERROR "consumer: cpack -G DEB failed (${_rc})")
  endif()
  file(GLOB _debs "${_pkg_build}/tool-effects-dev_*.deb")
  list(LENGTH _debs _n)
  if(NOT _n EQUAL 1)
    message(FATAL_ERROR "consumer: expected one tool-effects-dev_*.deb, found: ${_debs}")
  endif()
  _capture(_depends dpkg_deb_field "${_dpkg_deb}" --field "${_debs}" Depends)
  message("consumer: Depends: ${_depends}")
  if(NOT _depends MATCHES "libboost1\\.81-dev")
    message(FATAL_ERROR "consumer: the package does not depend on libboost1.81-dev: ${_depends}")
  endif()
  if(EXPECT_JSON AND NOT _depends MATCHES "nlohmann-json3-dev")
    message(FATAL_ERROR "consumer: the package has tool_effects::json but does not depend on nlohmann-json3-dev")
  endif()
  if(MODE STREQUAL "deb")
    set(_root "${WORK_DIR}/root")
    _step(dpkg_extract "${_dpkg_deb}" -x "${_debs}" "${_root}")
    list(APPEND _configure_extra "-DCMAKE_PREFIX_PATH=${_root}/usr")
    set(_package_root "${_root}/usr")
    set(_pc_dir "${_root}/usr/share/pkgconfig")
  else()
    # A marker says that this check installed the package: an install it finds with the marker was left by a
    # check that was killed before its dpkg -r (then removed first); one without it is somebody's, not touched.
    set(_marker "/var/lib/tool_effects/deb-install-check.marker")
    execute_process(COMMAND "${_dpkg}" -s tool-effects-dev RESULT_VARIABLE _rc OUTPUT_QUIET ERROR_QUIET)
    if(_rc EQUAL 0 AND EXISTS "${_marker}")
      message("consumer: tool-effects-dev was left installed by an interrupted check (${_marker}); removing it")
      _step(dpkg_remove_leftover "${_dpkg}" -r tool-effects-dev)
    elseif(_rc EQUAL 0)
      message(FATAL_ERROR "consumer: tool-effects-dev is already installed; not touching it (dpkg -r it first)")
    endif()
    file(WRITE "${_marker}" "installed by test/consumer/run.cmake (deb-install)\n")
    _step(dpkg_install "${_dpkg}" -i "${_debs}")
    # The consumer runs in a child (MODE=system), so that dpkg -r runs whatever it gives.
    set(_child "${CMAKE_COMMAND}" -DMODE=system "-DBUILD_DIR=${BUILD_DIR}" "-DSOURCE_DIR=${SOURCE_DIR}"
               "-DWORK_DIR=${WORK_DIR}/system" "-DCXX=${CXX}" "-DGENERATOR=${GENERATOR}"
               "-DMAKE_PROGRAM=${MAKE_PROGRAM}" "-DCONFIG=${CONFIG}" "-DEXPECT_JSON=${EXPECT_JSON}"
               "-DEXPECT_MCP=${EXPECT_MCP}" "-DEXPECT_COMPILED=${EXPECT_COMPILED}" "-DLAUNCHER_FILE=${LAUNCHER_FILE}"
               -P "${CMAKE_CURRENT_LIST_FILE}")
    execute_process(COMMAND ${_child} RESULT_VARIABLE _child_rc)
    _step(dpkg_remove "${_dpkg}" -r tool-effects-dev)
    file(REMOVE "${_marker}")
    if(NOT _child_rc EQUAL 0)
      message(FATAL_ERROR "consumer: the consumer of the dpkg-installed package failed (${_child_rc})")
    endif()
    message("consumer: OK (${MODE})")
    return()
  endif()
elseif(MODE STREQUAL "no-gtest")
  # A top-level configure without GoogleTest must stop with the message naming the options, and (control) the
  # same configure with those options must succeed.
  set(_top "${CMAKE_COMMAND}" -S "${PROJECT_DIR}" -G "${GENERATOR}" "-DCMAKE_CXX_COMPILER=${CXX}"
           -DCMAKE_DISABLE_FIND_PACKAGE_GTest=ON -DTOOL_EFFECTS_GTEST_SOURCE_DIR=)
  execute_process(COMMAND ${_top} -B "${WORK_DIR}/with-tests" RESULT_VARIABLE _rc OUTPUT_VARIABLE _out
                  ERROR_VARIABLE _out)
  string(REGEX REPLACE "[ \n]+" " " _flat "${_out}")
  if(_rc EQUAL 0 OR NOT _flat MATCHES "GoogleTest was not found.*-DTOOL_EFFECTS_BUILD_TESTS=OFF")
    message(FATAL_ERROR "consumer: a top-level configure without GoogleTest gave (${_rc}):\n${_out}")
  endif()
  message("consumer: without GoogleTest the configure stops with the message naming TOOL_EFFECTS_BUILD_TESTS")
  _step(configure_tests_off ${_top} -B "${WORK_DIR}/tests-off" -DTOOL_EFFECTS_BUILD_TESTS=OFF
        -DTOOL_EFFECTS_BUILD_EXAMPLES=OFF -DTOOL_EFFECTS_BUILD_BENCHMARKS=OFF)
  message("consumer: OK (${MODE})")
  return()
elseif(MODE STREQUAL "system")
  # Internal to deb-install: tool_effects installed in /usr by dpkg, found on the default paths.
  set(_package_root "/usr")
  set(_pc_dir "-")
else()
  message(FATAL_ERROR "consumer: unknown MODE \"${MODE}\" (install, subdirectory, deb, deb-install, no-gtest)")
endif()

set(_configure "${CMAKE_COMMAND}" -S "${SOURCE_DIR}" -B "${_build}" -G "${GENERATOR}" ${_launcher}
               "-DCMAKE_CXX_COMPILER=${CXX}" "-DCMAKE_BUILD_TYPE=${CONFIG}" -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF
               "-DTOOL_EFFECTS_EXPECT_JSON=${EXPECT_JSON}" "-DTOOL_EFFECTS_EXPECT_MCP=${EXPECT_MCP}"
               "-DTOOL_EFFECTS_EXPECT_COMPILED=${EXPECT_COMPILED}" ${_configure_extra})
if(MAKE_PROGRAM)
  list(APPEND _configure "-DCMAKE_MAKE_PROGRAM=${MAKE_PROGRAM}")
endif()

macro(_consumer_steps)
  _step(configure ${_configure})

  # The package must come from where this mode put it, not from anywhere else on the machine.
  if(_package_root)
    file(STRINGS "${_build}/CMakeCache.txt" _dir_line REGEX "^tool_effects_DIR:")
    string(REGEX REPLACE "^[^=]*=" "" _found_dir "${_dir_line}")
    file(REAL_PATH "${_package_root}" _real_root)
    file(REAL_PATH "${_found_dir}" _real_found)
    string(FIND "${_real_found}" "${_real_root}/" _pos)
    if(NOT _pos EQUAL 0)
      message(FATAL_ERROR "consumer: tool_effects was found in ${_found_dir}, not under ${_package_root}")
    endif()
  endif()

  _step(build "${CMAKE_COMMAND}" --build "${_build}" --config "${CONFIG}")

  foreach(_exe IN ITEMS consumer consumer_json consumer_mcp consumer_mcp_auth consumer_compiled consumer_mcp_compiled)
    foreach(_dir IN ITEMS "${_build}" "${_build}/${CONFIG}")
      if(EXISTS "${_dir}/${_exe}")
        _step(run_${_exe} "${_dir}/${_exe}")
        break()
      endif()
    endforeach()
  endforeach()
  if(NOT EXISTS "${_build}/consumer" AND NOT EXISTS "${_build}/${CONFIG}/consumer")
    message(FATAL_ERROR "consumer: the consumer executable was not built")
  endif()

  # pkg-config: each .pc file compiles and runs its consumer with nothing but the flags it gives.
  find_program(_pkg_config NAMES pkgconf pkg-config)
  if(_pc_dir AND _pkg_config)
    if(NOT _pc_dir STREQUAL "-")
      set(ENV{PKG_CONFIG_PATH} "${_pc_dir}")
    endif()
    set(_pc_cases "tool_effects=main.cpp")
    if(EXPECT_JSON)
      list(APPEND _pc_cases "tool_effects-json=json_main.cpp")
    endif()
    if(EXPECT_MCP)
      list(APPEND _pc_cases "tool_effects-mcp=mcp_main.cpp")
    endif()
    if(EXPECT_MCP)  # the token verifiers' file exists only where the build found OpenSSL 3
      execute_process(COMMAND "${_pkg_config}" --exists tool_effects-mcp-auth RESULT_VARIABLE _rc_auth)
      if(_rc_auth EQUAL 0)
        list(APPEND _pc_cases "tool_effects-mcp-auth=mcp_auth_main.cpp")
      endif()
    endif()
    if(EXPECT_COMPILED)
      list(APPEND _pc_cases "tool_effects-compiled=compiled_main.cpp")
    endif()
    if(EXPECT_MCP AND EXPECT_COMPILED)
      list(APPEND _pc_cases "tool_effects-mcp-compiled=mcp_main.cpp")
    endif()
    set(_pc_names "")
    foreach(_case IN LISTS _pc_cases)
      string(REGEX REPLACE "=.*" "" _pc "${_case}")
      string(REGEX REPLACE "^[^=]*=" "" _src_${_pc} "${_case}")
      _capture(_flags "pkg-config ${_pc}" "${_pkg_config}" --cflags --libs "${_pc}")
      message("consumer: pkg-config --cflags --libs ${_pc}: ${_flags}")
      if(NOT _pc_dir STREQUAL "-" AND NOT _flags MATCHES "${_package_root}")
        # pkgconf prints the include dir of the .pc's relocated prefix.
        message(FATAL_ERROR "consumer: ${_pc}.pc does not point into ${_package_root}: ${_flags}")
      endif()
      _capture(_cflags "pkg-config --cflags ${_pc}" "${_pkg_config}" --cflags "${_pc}")
      _capture(_libs "pkg-config --libs ${_pc}" "${_pkg_config}" --libs "${_pc}")
      separate_arguments(_cflags_${_pc} UNIX_COMMAND "${_cflags}")
      separate_arguments(_libs_${_pc} UNIX_COMMAND "${_libs}")
      list(APPEND _pc_names "${_pc}")
    endforeach()
    # Compiled (through the build's compiler cache, when it has one) two at a time (execute_process runs its
    # commands at once; the test holds two of ctest's slots), then linked and run one by one.
    list(LENGTH _pc_names _n_pc)
    set(_i 0)
    while(_i LESS _n_pc)
      math(EXPR _j "${_i} + 1")
      set(_commands "")
      set(_names "")
      foreach(_k IN ITEMS ${_i} ${_j})
        if(_k LESS _n_pc)
          list(GET _pc_names ${_k} _pc)
          list(APPEND _commands COMMAND ${TE_LAUNCHER} "${CXX}" ${_cflags_${_pc}} -Wall -Wextra -Wpedantic -Werror -c
               "${SOURCE_DIR}/${_src_${_pc}}" -o "${WORK_DIR}/pc_${_pc}.o")
          list(APPEND _names "${_pc}")
        endif()
      endforeach()
      message("consumer: pkg_config_compile ${_names}")
      execute_process(${_commands} WORKING_DIRECTORY "${WORK_DIR}" RESULTS_VARIABLE _rcs OUTPUT_VARIABLE _out
                      ERROR_VARIABLE _out)
      foreach(_rc IN LISTS _rcs)
        if(NOT _rc EQUAL 0)
          message(FATAL_ERROR "consumer: pkg_config_compile of ${_names} failed (${_rcs}):\n${_out}")
        endif()
      endforeach()
      math(EXPR _i "${_i} + 2")
    endwhile()
    foreach(_pc IN LISTS _pc_names)
      _step(pkg_config_link_${_pc} "${CXX}" ${_cflags_${_pc}} "${WORK_DIR}/pc_${_pc}.o" -o "${WORK_DIR}/pc_${_pc}"
            ${_libs_${_pc}})
      _step(pkg_config_run_${_pc} "${WORK_DIR}/pc_${_pc}")
    endforeach()
  elseif(_pc_dir)
    message("consumer: no pkg-config/pkgconf found; the .pc files were not checked")
  endif()
endmacro()

_consumer_steps()
message("consumer: OK (${MODE})")
