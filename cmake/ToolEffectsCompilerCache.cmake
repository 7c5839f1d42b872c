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
include_guard(GLOBAL)

option(TOOL_EFFECTS_CCACHE "Compile the project's own targets through ccache when it is found" ${PROJECT_IS_TOP_LEVEL})
set(TOOL_EFFECTS_CCACHE_USED OFF)
if(TOOL_EFFECTS_CCACHE AND NOT CMAKE_CXX_COMPILER_LAUNCHER)
  find_program(TOOL_EFFECTS_CCACHE_PROGRAM ccache)
  find_program(TOOL_EFFECTS_ENV_PROGRAM env)
  if(TOOL_EFFECTS_CCACHE_PROGRAM AND TOOL_EFFECTS_ENV_PROGRAM)
    set(CMAKE_CXX_COMPILER_LAUNCHER
        "${TOOL_EFFECTS_ENV_PROGRAM}" "CCACHE_BASEDIR=${PROJECT_SOURCE_DIR}" "CCACHE_NOHASHDIR=1" "CCACHE_INODECACHE=1"
        "CCACHE_SLOPPINESS=pch_defines,time_macros,include_file_mtime,include_file_ctime"
        "${TOOL_EFFECTS_CCACHE_PROGRAM}")
    set(CMAKE_C_COMPILER_LAUNCHER ${CMAKE_CXX_COMPILER_LAUNCHER})
    set(TOOL_EFFECTS_CCACHE_USED ON)
    message(STATUS "tool_effects: compiling through ${TOOL_EFFECTS_CCACHE_PROGRAM} (TOOL_EFFECTS_CCACHE)")
  else()
    message(STATUS "tool_effects: ccache not found; compiling without a cache (TOOL_EFFECTS_CCACHE)")
  endif()
endif()
