// tool_effects/json/detail/turn_failures.hpp — internal to <tool_effects/json/turn.hpp>: the failure
// records of calls `json_tool_host` does not run because the turn is too large or the tool is unknown
// (their messages are stable and bounded in size).
#ifndef TOOL_EFFECTS_JSON_DETAIL_TURN_FAILURES_HPP
#define TOOL_EFFECTS_JSON_DETAIL_TURN_FAILURES_HPP

#include <algorithm>
#include <cstddef>
#include <exception>
#include <string>
#include <string_view>
#include <vector>

#include <tool_effects/detail/quote.hpp>
#include <tool_effects/detail/str_cat.hpp>
#include <tool_effects/failure.hpp>
#include <tool_effects/json/calls.hpp>
#include <tool_effects/json/error.hpp>
#include <tool_effects/plan.hpp>
#include <tool_effects/registry.hpp>

namespace tool_effects::detail {

// The failure of a call of a turn over the per-turn limit (it was not run).
inline failure_record turn_too_large_failure(const tool_call& c, std::size_t n, std::size_t limit) {
  failure_record r = make_failure_record(c.name, 0, side_effect_class::non_idempotent, failure_reason::turn_too_large,
                                         std::make_exception_ptr(turn_too_large(n, limit)));
  r.last_error_message = str_cat(c.name, " was not run: the turn has ", std::to_string(n),
                                 " tool calls, over the limit of ", std::to_string(limit), " per turn; make fewer calls");
  return r;
}

// An unknown tool's failure; its message suggests the closest of `registry`'s names, or lists at most
// `max_suggested` of them.
template <class Registry>
failure_record unknown_tool_failure(const tool_call& c, const Registry& registry, std::size_t max_suggested) {
  // Near misses only among names that can be one (edit distance <= 2 needs
  // lengths within 2; else a prefix either way): O(tools) length checks,
  // edit distances on at most 4096 of them (the first registered). The
  // message lists at most `max_suggested` names, each cut to 60 bytes.
  std::vector<std::string_view> near;
  for (std::size_t i = 0; i < registry.size() && near.size() < 4096; ++i) {
    const std::string_view k = registry.name(i);
    const std::size_t d = k.size() > c.name.size() ? k.size() - c.name.size() : c.name.size() - k.size();
    if (d <= 2 || k.starts_with(c.name) || std::string_view(c.name).starts_with(k)) near.push_back(k);
  }
  const auto append_cut = [](std::string& m, std::string_view k) { m += utf8_excerpt(k, 60); };
  std::string msg = "unknown tool ";
  msg += quote_input(c.name);
  if (const std::string_view best = closest_name(c.name, near); !best.empty()) {
    msg += " (did you mean \"";
    append_cut(msg, best);
    msg += "\"?)";
  } else {
    msg += " (known:";
    const std::size_t shown = std::min(registry.size(), max_suggested);
    for (std::size_t i = 0; i < shown; ++i) {
      msg += ' ';
      append_cut(msg, registry.name(i));
    }
    if (shown < registry.size()) msg += str_cat(" and ", std::to_string(registry.size() - shown), " more");
    msg += ")";
  }
  failure_record r = make_failure_record(c.name, 0, side_effect_class::non_idempotent, failure_reason::unknown_tool,
                                         std::make_exception_ptr(unknown_tool_error(c.name)));
  r.last_error_message = std::move(msg);
  return r;
}

}  // namespace tool_effects::detail

#endif  // TOOL_EFFECTS_JSON_DETAIL_TURN_FAILURES_HPP
