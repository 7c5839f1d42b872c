// tool_effects/tool_effects.hpp — the umbrella header: every public header
// except the optional JSON bridge (<tool_effects/json.hpp>, which needs
// nlohmann::json). Include single headers instead to keep compile times low
// where only declarations are needed (see docs/README.md, "Header map").
#ifndef TOOL_EFFECTS_TOOL_EFFECTS_HPP
#define TOOL_EFFECTS_TOOL_EFFECTS_HPP

// vocabulary
#include <tool_effects/effect.hpp>
#include <tool_effects/text.hpp>
// rules
#include <tool_effects/rules.hpp>
// resources and declarations
#include <tool_effects/access.hpp>
#include <tool_effects/resource.hpp>
#include <tool_effects/side_effects.hpp>
#include <tool_effects/tags.hpp>
// conflicts and composition
#include <tool_effects/composite.hpp>
#include <tool_effects/conflict.hpp>
// runtime bridge
#include <tool_effects/call_description.hpp>
// planning and dispatch
#include <tool_effects/call.hpp>
#include <tool_effects/cancellation.hpp>
#include <tool_effects/dispatch.hpp>
#include <tool_effects/outcome.hpp>
#include <tool_effects/plan.hpp>
// recovery
#include <tool_effects/attempt.hpp>
#include <tool_effects/confirmation.hpp>
#include <tool_effects/failure.hpp>
#include <tool_effects/recovery_options.hpp>
#include <tool_effects/retry.hpp>
#include <tool_effects/retry_policy.hpp>
// compile-time diagnostics
#include <tool_effects/diagnostics.hpp>
// coordination across turns
#include <tool_effects/coordination.hpp>
// registry and identity
#include <tool_effects/identity.hpp>
#include <tool_effects/registry.hpp>

#endif  // TOOL_EFFECTS_TOOL_EFFECTS_HPP
