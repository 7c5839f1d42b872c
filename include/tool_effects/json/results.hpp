// tool_effects/json/results.hpp — internal to <tool_effects/json.hpp>: a
// turn's outcomes as the tool-result messages each vendor expects
// (`tool_results`), one answer per call id, failures included.
#ifndef TOOL_EFFECTS_JSON_RESULTS_HPP
#define TOOL_EFFECTS_JSON_RESULTS_HPP

#include <cstddef>
#include <exception>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include <tool_effects/detail/str_cat.hpp>
#include <tool_effects/failure.hpp>
#include <tool_effects/json/calls.hpp>
#include <tool_effects/outcome.hpp>

namespace tool_effects {

/// One call's answer, independent of the vendor: the text the model reads
/// (`content`: the result as is when it is a string, else its compact JSON;
/// "" for null), the result itself (`value`, null for errors) and whether it
/// is an error. Errors read `<reason>: <one-line explanation>` with a stable
/// reason: a `failure_reason` slug for calls the library refused or gave up
/// on, `aborted` for calls never started, `tool_error` for a tool that threw.
struct tool_answer {
  std::string content{};
  nlohmann::json value{};
  bool is_error = false;
};

namespace detail {
inline std::string explain_failure(const failure_record& r, std::string_view tool_name) {
  std::string out(to_string(r.reason));
  out += ": ";
  const std::string tool = tool_name.empty() ? r.tool : std::string(tool_name);
  auto with_error = [&](std::string s) {
    if (!r.last_error_message.empty()) {
      s += " (";
      s += r.last_error_message;
      s += ')';
    }
    return s;
  };
  switch (r.reason) {
    case failure_reason::unsafe_to_retry:
      out += with_error(tool + " failed");
      out += " and was not retried because it is not safe to repeat: a repeat could do it twice";
      break;
    case failure_reason::non_idempotent_side_effect:
      out += with_error(tool + " failed");
      out += " and was not repaired because a repaired call would not be idempotent";
      break;
    case failure_reason::rollback_not_supported_for_side_effects:
      out += tool + " cannot be rolled back: its effects are outside this process";
      break;
    case failure_reason::confirmation_denied:
      out += with_error(tool + " was not run because the user did not approve it");
      break;
    case failure_reason::retries_exhausted:
      out += with_error(detail::str_cat(tool, " failed after ", std::to_string(r.attempts), " attempt",
                                         r.attempts == 1 ? "" : "s"));
      break;
    case failure_reason::coordination_timeout:
      out += with_error(tool + " was not run because another session held what it needed for too long");
      break;
    case failure_reason::in_doubt:
      out += with_error(tool + " was not run again: an earlier run started it and may have done it already");
      break;
    case failure_reason::lease_lost:
      out += with_error(tool + " lost its lock on what it used (the coordinator's lease expired); it may have run in part");
      break;
    case failure_reason::invalid_arguments:
    case failure_reason::unknown_tool:
    case failure_reason::repeated_call:
    case failure_reason::turn_too_large:
      out += r.last_error_message;  // already says what was wrong, quoting the input
      break;
  }
  return out;
}
}  // namespace detail

/// The answer of one outcome (see `tool_answer`). A result nested deeper
/// than 64 levels is answered as an error, `tool_error: the result of <tool>
/// is nested deeper than 64 levels (at <pointer>)`, without copying it (the
/// depth check is iterative). A `call_failure` gives its
/// reason and explanation (`unsafe_to_retry: send_email failed (timed out) and
/// was not retried because it is not safe to repeat: ...`); any other
/// exception `tool_error: <what()>`; an aborted call `aborted: ...`.
/// `tool_name`, when given, names the tool in explanations (the record's
/// tool is the dispatcher's call name, `name#id` for a JSON turn).
inline tool_answer answer_of(const outcome<nlohmann::json>& o, std::string_view tool_name = {}) {
  tool_answer a;
  if (o.has_value()) {
    // A result nested beyond the parse's bound (a tool's own value, an MCP
    // server's structuredContent) is refused before anything copies or
    // dumps it: nlohmann::json does both recursively.
    if (const auto at = detail::too_deep_at(o.value(), detail::max_json_depth)) {
      a.is_error = true;
      a.content = detail::str_cat("tool_error: the result of ", tool_name.empty() ? std::string_view("the tool") : tool_name,
                                  " is nested deeper than ", std::to_string(detail::max_json_depth), " levels (at ",
                                  at->empty() ? std::string("(root)") : *at, ")");
      return a;
    }
    a.value = o.value();
    if (a.value.is_string()) a.content = a.value.get<std::string>();
    else if (!a.value.is_null()) a.content = a.value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    return a;
  }
  a.is_error = true;
  if (o.aborted() || !o.finished()) {
    a.content = "aborted: the call was not run because an earlier call of this turn failed";
    return a;
  }
  try {
    std::rethrow_exception(o.error());
  } catch (const call_failure& f) {
    a.content = detail::explain_failure(f.record(), tool_name);
  } catch (const std::exception& e) {
    a.content = "tool_error: ";
    a.content += e.what();
  } catch (...) {
    a.content = "tool_error: unknown exception";
  }
  return a;
}

/// The result of one call in its dialect (one element of what `tool_results`
/// returns, before grouping):
///  - openai_chat: `{"role": "tool", "tool_call_id", "content": "<text>"}`;
///  - openai_responses: `{"type": "function_call_output", "call_id", "output": "<text>"}`
///    (`custom_tool_call_output` for custom calls);
///  - anthropic: a `{"type": "tool_result", "tool_use_id", "content": "<text>", "is_error"}` block;
///  - gemini: a `{"functionResponse": {"name", "id"?, "response"}}` part; `response` is
///    the result when it is an object, else `{"output": result}`; errors `{"error": "<text>"}`;
///    `id` only when the model gave one;
///  - mcp: a CallToolResult `{"content": [{"type": "text", "text"}], "isError"}`, with
///    `structuredContent` when the result is an object;
///  - plain: `{"id", "name", "content": "<text>", "is_error"}`.
inline nlohmann::json tool_result(const tool_call& call, const outcome<nlohmann::json>& o) {
  const tool_answer a = answer_of(o, call.name);
  using nlohmann::json;
  switch (call.dialect) {
    case tool_call_dialect::openai_chat:
      return json{{"role", "tool"}, {"tool_call_id", call.id}, {"content", a.content}};
    case tool_call_dialect::openai_responses:
      return json{{"type", call.custom ? "custom_tool_call_output" : "function_call_output"},
                  {"call_id", call.id},
                  {"output", a.content}};
    case tool_call_dialect::anthropic:
      return json{{"type", "tool_result"}, {"tool_use_id", call.id}, {"content", a.content}, {"is_error", a.is_error}};
    case tool_call_dialect::gemini: {
      json response;
      if (a.is_error) response = json{{"error", a.content}};
      else if (a.value.is_object()) response = a.value;
      else response = json{{"output", a.value}};
      json part{{"name", call.name}};
      if (!call.generated_id) part["id"] = call.id;
      part["response"] = std::move(response);
      return json{{"functionResponse", std::move(part)}};
    }
    case tool_call_dialect::mcp: {
      json r{{"content", json::array({json{{"type", "text"}, {"text", a.content}}})}, {"isError", a.is_error}};
      if (!a.is_error && a.value.is_object()) r["structuredContent"] = a.value;
      return r;
    }
    case tool_call_dialect::plain: break;
  }
  return json{{"id", call.id}, {"name", call.name}, {"content", a.content}, {"is_error", a.is_error}};
}

/// What to append to the conversation after a turn, in each call's dialect,
/// one answer per call id in call order (refused, held and failed calls
/// included: every vendor expects an answer to every call it issued):
/// OpenAI Chat `role: "tool"` messages; OpenAI Responses `function_call_output`
/// items; ONE Anthropic user message `{"role": "user", "content": [tool_result
/// blocks]}`; ONE Gemini Content `{"role": "user", "parts": [functionResponse
/// parts]}`; MCP CallToolResults; plain result objects (see `tool_result`).
/// Anthropic and Gemini answers are grouped at the place of the first such
/// call. Throws std::invalid_argument if the sizes differ.
inline nlohmann::json tool_results(std::span<const tool_call> calls, std::span<const outcome<nlohmann::json>> outcomes) {
  if (calls.size() != outcomes.size())
    throw std::invalid_argument(detail::str_cat("tool_effects::tool_results: ", std::to_string(calls.size()),
                                                " calls but ", std::to_string(outcomes.size()), " outcomes"));
  using nlohmann::json;
  json out = json::array();
  std::size_t anthropic = static_cast<std::size_t>(-1), gemini = static_cast<std::size_t>(-1);
  for (std::size_t i = 0; i < calls.size(); ++i) {
    json r = tool_result(calls[i], outcomes[i]);
    if (calls[i].dialect == tool_call_dialect::anthropic) {
      if (anthropic == static_cast<std::size_t>(-1)) {
        anthropic = out.size();
        out.push_back(json{{"role", "user"}, {"content", json::array()}});
      }
      out[anthropic]["content"].push_back(std::move(r));
    } else if (calls[i].dialect == tool_call_dialect::gemini) {
      if (gemini == static_cast<std::size_t>(-1)) {
        gemini = out.size();
        out.push_back(json{{"role", "user"}, {"parts", json::array()}});
      }
      out[gemini]["parts"].push_back(std::move(r));
    } else {
      out.push_back(std::move(r));
    }
  }
  return out;
}

}  // namespace tool_effects

#endif  // TOOL_EFFECTS_JSON_RESULTS_HPP
