// An HTTP-only translation unit (test/mcp/include_split/check.cmake): parses no Boost.Process, no stdio transport.
#include <tool_effects/mcp/http.hpp>

int main() { return 0; }
