# The compiler cache of the project's own builds (tests, examples, benchmarks; never the exported targets, which
# compile in their users' builds). Included from the top-level CMakeLists.txt before any target is made, so that
# CMAKE_CXX_COMPILER_LAUNCHER reaches every one of them.
#
#   TOOL_EFFECTS_CCACHE  ON (top-level builds): compile through ccache when it is found and no launcher is set.
#
# The cache lives where ccache keeps it by default (~/.cache/ccache, or CCACHE_DIR): outside the tree, so that a
# fresh clone on the same machine reuses it. base_dir is the source tree, so that its absolute paths (the build
# trees under build/, -I include) are hashed relative to it and a clone at another path hits the same entries;
# hash_dir is off for the same reason (debug info then names the directory of the build that filled the entry).
# pch_defines and time_macros let the unit tests' precompiled header be cached (ccache's manual, "Precompiled
# headers"); clang's PCH is built without its timestamp (-fno-pch-timestamp, test/CMakeLists.txt). The inode cache
# keeps the hash of each included file by device, inode and timestamps, so that a hit does not hash the same Boost
# headers again for every translation unit of every preset (a hit of unit_mcp: 3.7 s -> 1.6 s).
#
# The launcher is stated once, here. Nested builds that do not go through this file's configure
# (scripts/deb-install-check) get it from script mode:
#   cmake -DSOURCE_DIR=<tree> -DOUTPUT=<file> -P cmake/ToolEffectsCompilerCache.cmake
# writes `set(TE_LAUNCHER [==[...]==])` to <file> (test/consumer/run.cmake's LAUNCHER_FILE), or nothing when
# ccache is not installed.
include_guard(GLOBAL)

# The launcher for sources under `source_dir`: env with ccache's settings (above), then ccache.
function(tool_effects_ccache_launcher out source_dir env_program ccache_program)
  set(${out}
      "${env_program}" "CCACHE_BASEDIR=${source_dir}" "CCACHE_NOHASHDIR=1" "CCACHE_INODECACHE=1"
      "CCACHE_SLOPPINESS=pch_defines,time_macros,include_file_mtime,include_file_ctime" "${ccache_program}"
      PARENT_SCOPE)
endfunction()

if(CMAKE_SCRIPT_MODE_FILE STREQUAL CMAKE_CURRENT_LIST_FILE)
  if(NOT SOURCE_DIR OR NOT OUTPUT)
    message(FATAL_ERROR "usage: cmake -DSOURCE_DIR=<tree> -DOUTPUT=<file> -P ${CMAKE_CURRENT_LIST_FILE}")
  endif()
  find_program(_te_ccache ccache)
  find_program(_te_env env)
  if(_te_ccache AND _te_env)
    tool_effects_ccache_launcher(_te_launcher "${SOURCE_DIR}" "${_te_env}" "${_te_ccache}")
    file(WRITE "${OUTPUT}" "set(TE_LAUNCHER [==[${_te_launcher}]==])\n")
  endif()
  return()
endif()

option(TOOL_EFFECTS_CCACHE "Compile the project's own targets through ccache when it is found" ${PROJECT_IS_TOP_LEVEL})
set(TOOL_EFFECTS_CCACHE_USED OFF)
if(TOOL_EFFECTS_CCACHE AND NOT CMAKE_CXX_COMPILER_LAUNCHER)
  find_program(TOOL_EFFECTS_CCACHE_PROGRAM ccache)
  find_program(TOOL_EFFECTS_ENV_PROGRAM env)
  if(TOOL_EFFECTS_CCACHE_PROGRAM AND TOOL_EFFECTS_ENV_PROGRAM)
    tool_effects_ccache_launcher(CMAKE_CXX_COMPILER_LAUNCHER "${PROJECT_SOURCE_DIR}" "${TOOL_EFFECTS_ENV_PROGRAM}"
                                 "${TOOL_EFFECTS_CCACHE_PROGRAM}")
    set(CMAKE_C_COMPILER_LAUNCHER ${CMAKE_CXX_COMPILER_LAUNCHER})
    set(TOOL_EFFECTS_CCACHE_USED ON)
    message(STATUS "tool_effects: compiling through ${TOOL_EFFECTS_CCACHE_PROGRAM} (TOOL_EFFECTS_CCACHE)")
  else()
    message(STATUS "tool_effects: ccache not found; compiling without a cache (TOOL_EFFECTS_CCACHE)")
  endif()
endif()
