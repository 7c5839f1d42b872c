// tool_effects/json/calls.hpp — internal to <tool_effects/json.hpp>: a model
// turn's tool calls read from any vendor's shape (`parse_tool_calls`).
//
// Accepted with no flag to pass: an OpenAI Chat Completions response or
// assistant message (also llama.cpp and other OpenAI-compatible servers, ids
// optional), an OpenAI Responses response (`output[]`), an Anthropic Messages
// response or content array, a Gemini GenerateContentResponse or Content, an
// MCP `tools/call` request or its params, and arrays of call items of any of
// those shapes, mixed. Envelope fields the library does not read are ignored;
// those it reads are validated strictly (a `json_error` with the JSON pointer
// of the bad field). Arguments that do not parse or are not an object do NOT
// throw: the call carries `arguments_error`, and `json_tool_host` turns it
// into that call's `invalid_arguments` failure. See docs/runtime.md.
//
// The public declarations are below; the readers of each vendor's envelope are in
// json/detail/call_envelopes.hpp, included after `tool_call` (which they fill in).
#ifndef TOOL_EFFECTS_JSON_CALLS_HPP
#define TOOL_EFFECTS_JSON_CALLS_HPP

#include <concepts>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include <tool_effects/detail/str_cat.hpp>
#include <tool_effects/identity.hpp>
#include <tool_effects/json/error.hpp>
#include <tool_effects/text.hpp>

namespace tool_effects {

/// The vendor shape a call came from; `tool_results` answers in that shape.
enum class tool_call_dialect : std::uint8_t {
  plain,             ///< `{"id"?, "name", "arguments"?}` (this library's own form)
  openai_chat,       ///< OpenAI Chat Completions `tool_calls[]` (also llama.cpp, vLLM, Ollama, ...)
  openai_responses,  ///< OpenAI Responses `function_call` / `custom_tool_call` items (echo `call_id`)
  anthropic,         ///< Anthropic Messages `tool_use` content blocks
  gemini,            ///< Gemini `functionCall` parts
  mcp                ///< MCP `tools/call` params (or the whole JSON-RPC request)
};

/// The stable name of a dialect ("openai_chat", ...).
constexpr std::string_view to_string(tool_call_dialect d) noexcept {
  switch (d) {
    case tool_call_dialect::plain: return "plain";
    case tool_call_dialect::openai_chat: return "openai_chat";
    case tool_call_dialect::openai_responses: return "openai_responses";
    case tool_call_dialect::anthropic: return "anthropic";
    case tool_call_dialect::gemini: return "gemini";
    case tool_call_dialect::mcp: return "mcp";
  }
  return {};
}

/// One model-chosen tool call. `id` is the id to echo back in the result
/// (OpenAI `tool_call_id`, Responses `call_id`, Anthropic `tool_use_id`,
/// Gemini `functionResponse.id`); when the model sent none it is generated
/// (`generated_id`), stable: `call-<n>-<h>` with n the 1-based position of
/// the call in its turn and h the first 8 hex digits of `stable_hash(name
/// + '\x1f' + arguments)` (arguments as received: the text, or canonical JSON),
/// followed by `-2`, `-3`, ... when a model-chosen id of the turn already
/// reads so. Ids are unique within a turn: a call whose model-chosen id an
/// earlier call of the turn already has is refused (`arguments_error`
/// "duplicate call id ...", so it fails alone as `invalid_arguments` and never
/// runs) and gets the fresh id `<id>~<n>` (n its 1-based position), which its
/// answer echoes, so `tool_results` answers distinct ids (docs/runtime.md).
/// `arguments` is always an object; when the model's arguments did not parse
/// or were not an object it is `{}` and `arguments_error` says why, quoting
/// the input. `custom`: an OpenAI custom (free-form) tool call, whose text
/// input is `arguments["input"]`.
struct tool_call {
  std::string id{};
  std::string name{};
  nlohmann::json arguments = nlohmann::json::object();
  tool_call_dialect dialect = tool_call_dialect::plain;
  bool generated_id = false;
  bool custom = false;
  std::string arguments_error{};

  /// Whether the arguments are usable (no `arguments_error`).
  [[nodiscard]] bool valid() const noexcept { return arguments_error.empty(); }
};

}  // namespace tool_effects

// The readers of each vendor's envelope (they need `tool_call`, above).
#include <tool_effects/json/detail/call_envelopes.hpp>

namespace tool_effects {

/// Parses a model turn's tool calls from any of the shapes listed at the top
/// of this header (arrays may mix call items of every vendor). Returns the
/// calls in order; non-call items (text, thinking, reasoning, ...) are
/// skipped. Throws `json_error` (with the JSON pointer) only when a field the
/// library reads is malformed: a missing or non-string name, a non-string
/// id, a non-object envelope; or when `turn` nests deeper than
/// `max_json_depth` (reason `too_deep`, checked iteratively before anything
/// is read or copied, the same bound `parse_untrusted_json` puts on text).
/// Bad arguments and duplicate ids do not throw (see `tool_call`).
inline std::vector<tool_call> parse_tool_calls(const nlohmann::json& turn) {
  check_json_depth(turn, detail::max_json_depth, "in tool calls");
  std::vector<tool_call> out;
  if (turn.is_array()) detail::parse_call_array(turn, "", out);
  else detail::parse_call_envelope(turn, "", out);
  detail::make_ids_unique(out);
  return out;
}

/// As above, from JSON text (a `std::string`, `std::string_view` or string
/// literal), parsed by `parse_untrusted_json` with the default limits.
template <class Text>
  requires std::convertible_to<const Text&, std::string_view> && (!std::same_as<Text, nlohmann::json>)
std::vector<tool_call> parse_tool_calls(const Text& text) {
  return parse_tool_calls(parse_untrusted_json(std::string_view(text), json_limits{}, "in tool calls"));
}

}  // namespace tool_effects

#endif  // TOOL_EFFECTS_JSON_CALLS_HPP
