// tool_effects/json/plan_text.hpp — internal to <tool_effects/json.hpp>: a
// turn's plan as text, one line per call (`to_string(turn_plan)`,
// `print_plan`), so that applications need not write their own printer.
//
//   std::cout << tool_effects::to_string(host.plan(calls));
//   wave 0  "read_file#c1": runs at once
//   wave 1  "write_file#c2": waits for "read_file#c1" [files[a.md]: read / write]
//   -       "pg_update#c3": fails before running (unknown_tool: unknown tool "pg_update" ...); waits for nothing
#ifndef TOOL_EFFECTS_JSON_PLAN_TEXT_HPP
#define TOOL_EFFECTS_JSON_PLAN_TEXT_HPP

#include <algorithm>
#include <cstddef>
#include <ostream>
#include <string>
#include <string_view>

#include <tool_effects/confirmation.hpp>
#include <tool_effects/failure.hpp>
#include <tool_effects/json/turn.hpp>

namespace tool_effects {

/// At most this many bytes of a failure's message are shown per call.
inline constexpr std::size_t plan_text_max_message = 200;

/// The plan as text, one line per call in call order, each ending in '\n':
/// `wave <w>  "<tool>#<id>": runs at once`, or `: waits for "<tool>#<id>"
/// [<reason>]; waits for ...` (the kept edges of `plan.edges`, so a wait
/// implied by others is not repeated); a call that cannot run (unknown
/// tool, arguments that do not parse, ...) reads `-  "<tool>#<id>": fails
/// before running (<reason slug>: <message, cut to plan_text_max_message
/// bytes>); waits for nothing` — it never runs, and nothing waits for it.
/// Terminal-safe: names, ids, reasons and messages come from the model and
/// are written as `terminal_quote` writes them (no control characters).
inline std::string to_string(const turn_plan& plan) {
  std::string out;
  for (std::size_t k = 0; k < plan.calls.size(); ++k) {
    const bool fails = k < plan.failures.size() && plan.failures[k].has_value();
    if (fails) {
      out += "-       ";
    } else {
      std::string wave = "wave " + std::to_string(plan.plan.wave(k));
      wave.resize(std::max<std::size_t>(wave.size() + 2, 8), ' ');
      out += wave;
    }
    out += terminal_quote(plan.calls[k].name);
    out += ": ";
    if (fails) {
      const failure_record& r = *plan.failures[k];
      out += "fails before running (";
      out += to_string(r.reason);
      if (!r.last_error_message.empty()) {
        out += ": ";
        std::string_view m = r.last_error_message;
        const bool cut = m.size() > plan_text_max_message;
        if (cut) m = m.substr(0, plan_text_max_message);
        detail::append_terminal_safe(out, m, false);
        if (cut) out += "...";
      }
      out += "); waits for nothing\n";
      continue;
    }
    bool first = true;
    for (const auto& e : plan.edges) {
      if (e.to != k) continue;
      if (!first) out += "; ";
      first = false;
      out += "waits for ";
      out += terminal_quote(plan.calls[e.from].name);
      out += " [";
      detail::append_terminal_safe(out, e.reason, false);
      out += ']';
    }
    out += first ? "runs at once\n" : "\n";
  }
  return out;
}

/// Writes `to_string(plan)` to `os`.
inline std::ostream& print_plan(std::ostream& os, const turn_plan& plan) { return os << to_string(plan); }

}  // namespace tool_effects

#endif  // TOOL_EFFECTS_JSON_PLAN_TEXT_HPP
