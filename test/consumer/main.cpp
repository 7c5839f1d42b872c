// Consumer of an installed tool_effects (ctest consumer.find_package).
#include <cstdio>
#include <tool_effects/effect.hpp>
#include <tool_effects/rules.hpp>

static_assert(tool_effects::is_parallel_safe(tool_effects::effect_set{tool_effects::effect::read}));

int main() {
  const tool_effects::effect_set reads{tool_effects::effect::read};
  if (!tool_effects::is_parallel_safe(reads)) {
    std::fputs("consumer: is_parallel_safe({read}) returned false\n", stderr);
    return 1;
  }
  std::puts("consumer: tool_effects found, compiled and ran");
  return 0;
}
