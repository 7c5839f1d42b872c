// A type that is not an effect tag inside effects<...> is rejected, and the
// diagnostic names the offending type (int) and the EffectTag requirement.
// expected-error: EffectTag
// expected-error(gcc): EffectTag<Tags>.*Tags = \{tool_effects::read, int\}
// expected-error(clang): 'int' does not satisfy 'EffectTag'
#include <tool_effects/tags.hpp>

using fine = tool_effects::effects<tool_effects::read, tool_effects::network>;
static_assert(!fine::exclusive);

#ifndef TOOL_EFFECTS_COMPILE_FAIL_CONTROL
constexpr auto bad = tool_effects::effects<tool_effects::read, int>::value;
#endif
