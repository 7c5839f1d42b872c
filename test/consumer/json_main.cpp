// Consumer of the optional JSON component (tool_effects::json).
#include <cstdio>

#include <tool_effects/json.hpp>

int main() {
  const auto set = nlohmann::json::parse(R"(["network", "read"])").get<tool_effects::effect_set>();
  if (set != tool_effects::effect_set{tool_effects::effect::read, tool_effects::effect::network}) return 1;
  std::puts("consumer: tool_effects::json found, compiled and ran");
  return 0;
}
