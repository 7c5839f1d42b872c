// A tool type that states MCP hints of its own (an `annotations` member, as other SDKs take them) compiles
// only if they equal the hints derived from its declared effects: a writer claiming readOnlyHint does not
// compile, and the diagnostic names the tool and the hint.
// expected-error: stated annotation contradicts its declared effects
// expected-error: stated_hint_differs_from_derived<.*exec_tool, tool_effects::detail::readOnlyHint, false>
#include <string_view>

#include <tool_effects/mcp/tool_meta.hpp>

namespace te = tool_effects;

struct sandbox {};
struct exec_tool {
  static constexpr std::string_view name = "exec";
  using side_effects = te::effects<te::writes<sandbox>, te::external>;
#ifndef TOOL_EFFECTS_COMPILE_FAIL_CONTROL
  static constexpr te::mcp_stated_hints annotations{.read_only = true};  // "to enable fully-parallel dispatch"
#else
  static constexpr te::mcp_stated_hints annotations{.read_only = false, .open_world = true};
#endif
};

static_assert(te::mcp_stated_hints_agree_v<exec_tool>);

int main() { return 0; }
