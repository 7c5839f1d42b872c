// A stdio-only translation unit (test/mcp/include_split/check.cmake): parses no Beast, no HTTP transport.
#include <tool_effects/mcp.hpp>

int main() { return 0; }
