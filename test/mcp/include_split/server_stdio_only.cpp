// A server-only translation unit over stdio (test/mcp/include_split/check.cmake): parses no client header, no
// Boost.Process, no Beast.
#include <tool_effects/mcp/server.hpp>

int main() { return 0; }
