// The one translation unit of tool_effects::mcp_compiled (CMake): the MCP client that <tool_effects/mcp.hpp> and
// <tool_effects/mcp/http.hpp> only declare when TOOL_EFFECTS_SEPARATE_COMPILATION is defined (tool_effects::compiled
// defines it here and for its users).
#include <tool_effects/mcp/client/impl/src.hpp>
