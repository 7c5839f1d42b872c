// diagnostics.hpp: the named rejection types say "rejected" except for the
// retry gate's one non-rejection, and the public type-name printer spells
// types as the library's records do (detail::type_name_v).
#include <tool_effects/diagnostics.hpp>

#include <string_view>
#include <type_traits>

namespace te = tool_effects;

namespace diagnostics_static {
struct my_tool {};

static_assert(!te::retry_rejected<my_tool, te::reason::retry_safe>::value);
static_assert(te::retry_rejected<my_tool, te::reason::destructive>::value);
static_assert(te::retry_rejected<my_tool, te::reason::non_idempotent_side_effect>::value);
static_assert(te::retry_rejected<my_tool, te::reason::undeclared_side_effects>::value);
static_assert(te::destructive_retry_opt_in_rejected<my_tool>::value);
static_assert(te::destructive_call_without_approver<my_tool>::value);
static_assert(te::unknown_effects_call_without_approver<my_tool>::value);

// Usable in constant expressions, and the same spelling as the internal one.
static_assert(te::type_name<int>() == "int");
static_assert(te::type_name<my_tool>() == "diagnostics_static::my_tool");
static_assert(te::type_name<my_tool>() == te::detail::type_name_v<my_tool>);
static_assert(std::is_same_v<decltype(te::type_name<my_tool>()), std::string_view>);
}  // namespace diagnostics_static
