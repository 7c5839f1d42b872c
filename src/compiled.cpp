// The one translation unit of tool_effects::compiled (CMake): what the headers only declare when
// TOOL_EFFECTS_SEPARATE_COMPILATION is defined (the target defines it here and for its users).
#include <tool_effects/impl/src.hpp>
