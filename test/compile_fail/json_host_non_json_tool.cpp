// A static tool that cannot take JSON arguments cannot be hosted for model
// turns: the error names the tool and what it must accept.
// expected-error: this static tool is not invocable with [(]const nlohmann::json&[)]
// expected-error: json_tool_check<typed_only_tool>
#include <string_view>

#include <tool_effects/json.hpp>

namespace te = tool_effects;

struct json_tool {
  static constexpr std::string_view name = "json_tool";
  using side_effects = te::effects<te::read>;
  nlohmann::json operator()(const nlohmann::json& args) const { return args; }
};
struct user_id {  // no from_json: nlohmann::json does not convert to it
  int value;
};
struct typed_only_tool {
  static constexpr std::string_view name = "typed_only_tool";
  using side_effects = te::effects<te::read>;
  int operator()(user_id id) const { return id.value; }
};

#ifndef TOOL_EFFECTS_COMPILE_FAIL_CONTROL
using registry = te::tool_registry<json_tool, typed_only_tool>;
#else
using registry = te::tool_registry<json_tool>;
#endif

int main() {
  registry reg;
  te::json_tool_host host(reg);
  return host.registry().size() == 0 ? 1 : 0;
}
