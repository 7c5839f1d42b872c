// A type that is not a resource inside reads<...> is rejected, naming the
// type (int) and the Resource requirement.
// expected-error: Resource
// expected-error(gcc): Resource<R>.*R = \{int\}
// expected-error(clang): 'int' does not satisfy 'Resource'
#include <tool_effects/tags.hpp>

struct users {};
using fine = tool_effects::effects<tool_effects::reads<users>>;
static_assert(fine::accesses.size() == 1);

#ifndef TOOL_EFFECTS_COMPILE_FAIL_CONTROL
constexpr auto bad = tool_effects::effects<tool_effects::reads<int>>::value;
#endif
