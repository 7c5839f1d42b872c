// tool_effects/version.hpp — the library's version, stated here and nowhere else: CMakeLists.txt reads
// project(tool_effects VERSION ...) from the three numbers below (and stops if it cannot), so that a plain
// `-I include`, without any build system, has the same header as an installed or CMake-built tree.
#ifndef TOOL_EFFECTS_VERSION_HPP
#define TOOL_EFFECTS_VERSION_HPP

/// The library's version; CMake's `project(tool_effects VERSION ...)` is read from these three lines.
#define TOOL_EFFECTS_VERSION_MAJOR 0
#define TOOL_EFFECTS_VERSION_MINOR 1
#define TOOL_EFFECTS_VERSION_PATCH 0

#define TOOL_EFFECTS_VERSION_STRINGIZE_IMPL(x) #x
#define TOOL_EFFECTS_VERSION_STRINGIZE(x) TOOL_EFFECTS_VERSION_STRINGIZE_IMPL(x)
/// "MAJOR.MINOR.PATCH", made from the three numbers above (a string literal).
#define TOOL_EFFECTS_VERSION_STRING                                                                       \
  TOOL_EFFECTS_VERSION_STRINGIZE(TOOL_EFFECTS_VERSION_MAJOR) "." TOOL_EFFECTS_VERSION_STRINGIZE(          \
      TOOL_EFFECTS_VERSION_MINOR) "." TOOL_EFFECTS_VERSION_STRINGIZE(TOOL_EFFECTS_VERSION_PATCH)
/// MAJOR * 10000 + MINOR * 100 + PATCH, for #if comparisons.
#define TOOL_EFFECTS_VERSION (TOOL_EFFECTS_VERSION_MAJOR * 10000 + TOOL_EFFECTS_VERSION_MINOR * 100 + TOOL_EFFECTS_VERSION_PATCH)

#endif  // TOOL_EFFECTS_VERSION_HPP
