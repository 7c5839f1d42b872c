// A server-only translation unit over Streamable HTTP (test/mcp/include_split/check.cmake): parses no client
// header and no Boost.Process.
#include <tool_effects/mcp/server_http.hpp>

int main() { return 0; }
