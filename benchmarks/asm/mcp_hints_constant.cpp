// Not built by CMake (benchmarks/ globs only its top-level *.cpp). Compile by hand to see that a static
// tool's MCP annotations (derived from its declared effects by export_mcp_hints, issue 28) are a constant:
//   g++ -std=c++20 -O2 -S -masm=intel -Iinclude -o - benchmarks/asm/mcp_hints_constant.cpp
//   clang++ -std=c++20 -O2 -S -masm=intel -Iinclude -o - benchmarks/asm/mcp_hints_constant.cpp
// Expected: each function is one immediate into eax (the four hints of mcp_hints packed in one word) and
// `ret`, or `mov eax, 1` / `xor eax, eax`: no call, no load, no table. Results in docs/benchmarks.md ("The MCP
// server against the TypeScript SDK's McpServer").
#include <tool_effects/mcp/tool_meta.hpp>

namespace app {
struct users {};
struct fetch_user {
  using side_effects = tool_effects::effects<tool_effects::reads<users>, tool_effects::idempotent>;
};
struct update_user {
  using side_effects = tool_effects::effects<tool_effects::writes<users>>;
};
struct send_email {
  using side_effects = tool_effects::effects<tool_effects::network>;
};
}  // namespace app

tool_effects::mcp_hints fetch_hints() { return tool_effects::mcp_tool_hints_v<app::fetch_user>; }
tool_effects::mcp_hints update_hints() { return tool_effects::mcp_tool_hints_v<app::update_user>; }
tool_effects::mcp_hints email_hints() { return tool_effects::mcp_tool_hints_v<app::send_email>; }
bool update_is_destructive_hint() { return tool_effects::mcp_tool_hints_v<app::update_user>.destructive; }
