// tool_effects/json/detail/call_envelopes.hpp — internal to <tool_effects/json/calls.hpp> (included there
// after `tool_call`): reading tool calls out of each vendor's envelope. Generated ids, the arguments as sent
// (text or object), the strict readers of the fields the library reads (a `json_error` with the JSON
// pointer), the envelope walk, unique ids within a turn, and why a call cannot run through a fault of its
// own. Shared with the stream accumulator (json/stream.hpp) and the host (json/turn.hpp).
#ifndef TOOL_EFFECTS_JSON_DETAIL_CALL_ENVELOPES_HPP
#define TOOL_EFFECTS_JSON_DETAIL_CALL_ENVELOPES_HPP

#include <cctype>
#include <cstddef>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include <tool_effects/detail/quote.hpp>
#include <tool_effects/detail/str_cat.hpp>
#include <tool_effects/identity.hpp>
#include <tool_effects/json/error.hpp>
#include <tool_effects/text.hpp>

namespace tool_effects {


namespace detail {

// The id of a call that came without one (see `tool_call`).
inline std::string generated_call_id(std::size_t position, std::string_view name, std::string_view arguments) {
  std::string material(name);
  material += '\x1f';
  material += arguments;
  std::string id = "call-";
  id += std::to_string(position + 1);
  id += '-';
  id += to_hex(stable_hash(material)).substr(0, 8);
  return id;
}

// `s` quoted for a message the model reads: cut after `limit` bytes at a
// UTF-8 character boundary (then "..."), so the message stays valid UTF-8.
inline std::string quote_input(std::string_view s, std::size_t limit = 60) {
  return parse_error::quote(utf8_excerpt(s, limit));
}

inline bool blank(std::string_view s) noexcept {
  for (const char c : s)
    if (!std::isspace(static_cast<unsigned char>(c))) return false;
  return true;
}

// Sets `out.arguments` (or `out.arguments_error`) from a value as sent: a JSON
// text (OpenAI), an object (Anthropic, Gemini, MCP), null/absent/"" = {}.
// Returns the material of a generated id (the text, or canonical JSON).
inline std::string set_arguments(tool_call& out, const nlohmann::json* value) {
  out.arguments = nlohmann::json::object();
  out.arguments_error.clear();
  if (value == nullptr || value->is_null()) return "{}";
  if (value->is_string()) {
    const auto& text = value->get_ref<const std::string&>();
    if (blank(text)) return text;
    nlohmann::json parsed;
    try {
      parsed = parse_json(text, {});
    } catch (const json_error& e) {
      out.arguments_error = str_cat("arguments of ", out.name, " are not valid JSON (", e.message(), "): ",
                                    quote_input(text));
      return text;
    }
    if (!parsed.is_object()) {
      out.arguments_error =
          str_cat("arguments of ", out.name, " must be a JSON object, got ", parsed.type_name(), ": ", quote_input(text));
      return text;
    }
    out.arguments = std::move(parsed);
    return text;
  }
  if (!value->is_object()) {
    const std::string material = tool_effects::canonical_json(*value);
    out.arguments_error =
        str_cat("arguments of ", out.name, " must be a JSON object, got ", value->type_name(), ": ", quote_input(material));
    return material;
  }
  out.arguments = *value;
  return tool_effects::canonical_json(*value);
}

inline const nlohmann::json* member(const nlohmann::json& o, std::string_view key) {
  const auto it = o.find(key);
  return it == o.end() ? nullptr : &*it;
}

// A string field used by the library: absent (nullptr, or "" when `empty_is_absent`) or a string.
inline std::optional<std::string> string_field(const nlohmann::json& o, std::string_view key, const std::string& at,
                                               bool empty_is_absent = true) {
  const nlohmann::json* v = member(o, key);
  if (v == nullptr || v->is_null()) return std::nullopt;
  if (!v->is_string()) {
    std::string where = at;
    where += '/';
    where += pointer_token(key);
    throw json_error(std::move(where), expected("a string", *v), preview(*v));
  }
  if (empty_is_absent && v->get_ref<const std::string&>().empty()) return std::nullopt;
  return v->get<std::string>();
}

inline std::string name_field(const nlohmann::json& o, const std::string& at) {
  std::string where = at;
  where += "/name";
  const nlohmann::json* v = member(o, "name");
  if (v == nullptr) throw json_error(std::move(where), "missing tool name", preview(o));
  if (!v->is_string() || v->get_ref<const std::string&>().empty())
    throw json_error(std::move(where), expected("a non-empty string", *v), preview(*v));
  return v->get<std::string>();
}

inline const nlohmann::json& object_field(const nlohmann::json& o, std::string_view key, const std::string& at) {
  const nlohmann::json* v = member(o, key);
  std::string where = at;
  where += '/';
  where += pointer_token(key);
  if (v == nullptr) throw json_error(std::move(where), "missing", preview(o));
  if (!v->is_object()) throw json_error(std::move(where), expected("an object", *v), preview(*v));
  return *v;
}

inline std::string child(const std::string& at, std::string_view token) {
  std::string out = at;
  out += '/';
  out += pointer_token(token);
  return out;
}
inline std::string child(const std::string& at, std::size_t index) { return child(at, std::to_string(index)); }

// Builds the call once name, id and arguments are known.
inline tool_call make_call(std::string name, std::optional<std::string> id, tool_call_dialect dialect,
                           const nlohmann::json* arguments, std::size_t position, bool custom = false) {
  tool_call out;
  out.name = std::move(name);
  out.dialect = dialect;
  out.custom = custom;
  std::string material;
  if (custom) {
    // Free-form input: the text itself is the argument.
    const std::string text = arguments != nullptr && arguments->is_string() ? arguments->get<std::string>() : "";
    out.arguments = nlohmann::json{{"input", text}};
    material = text;
  } else {
    material = set_arguments(out, arguments);
  }
  if (id) {
    out.id = std::move(*id);
  } else {
    out.id = generated_call_id(position, out.name, material);
    out.generated_id = true;
  }
  return out;
}

// Custom (free-form) input: a string, or absent.
inline const nlohmann::json* custom_input(const nlohmann::json& holder, const std::string& at) {
  const nlohmann::json* in = member(holder, "input");
  if (in != nullptr && !in->is_null() && !in->is_string())
    throw json_error(child(at, "input"), expected("a string", *in), preview(*in));
  return in;
}

// Gemini part keys that are not calls (skipped in arrays of parts).
inline bool is_gemini_non_call_part(const nlohmann::json& o) {
  for (const char* k : {"text", "inlineData", "fileData", "executableCode", "codeExecutionResult", "functionResponse",
                        "thought", "thoughtSignature", "videoMetadata"})
    if (o.contains(k)) return true;
  return false;
}

// One element of an array of call items (or a single item): appends the call
// it holds, if any; non-call items (text, thinking, messages, reasoning, ...) are skipped.
inline void parse_call_item(const nlohmann::json& c, const std::string& at, std::vector<tool_call>& out) {
  if (!c.is_object()) throw json_error(at, expected("a tool call object", c), preview(c));
  const std::size_t position = out.size();
  const std::optional<std::string> type = string_field(c, "type", at, false);
  if (type) {
    const std::string& t = *type;
    if (t == "function" || t == "custom") {  // OpenAI Chat Completions tool_calls[] item
      const bool custom = t == "custom";
      const std::string base = child(at, t);
      const nlohmann::json* holder = member(c, t);
      if (holder == nullptr && !custom && c.contains("name")) {  // a flat {"type": "function", "name", "arguments"}
        out.push_back(make_call(name_field(c, at), string_field(c, "id", at), tool_call_dialect::plain,
                                member(c, "arguments"), position));
        return;
      }
      const nlohmann::json& f = object_field(c, t, at);
      std::string name = name_field(f, base);
      const nlohmann::json* args = custom ? custom_input(f, base) : member(f, "arguments");
      out.push_back(
          make_call(std::move(name), string_field(c, "id", at), tool_call_dialect::openai_chat, args, position, custom));
      return;
    }
    if (t == "function_call" || t == "custom_tool_call") {  // OpenAI Responses output item
      const bool custom = t == "custom_tool_call";
      std::string name = name_field(c, at);
      const nlohmann::json* args = custom ? custom_input(c, at) : member(c, "arguments");
      out.push_back(make_call(std::move(name), string_field(c, "call_id", at), tool_call_dialect::openai_responses,
                              args, position, custom));
      return;
    }
    if (t == "tool_use") {  // Anthropic content block
      std::string name = name_field(c, at);
      out.push_back(make_call(std::move(name), string_field(c, "id", at), tool_call_dialect::anthropic,
                              member(c, "input"), position));
      return;
    }
    // Any other typed item is not a call for the client to run: text, thinking,
    // redacted_thinking, server_tool_use, message, reasoning, web_search_call, ...
    return;
  }
  if (const nlohmann::json* fc = member(c, "functionCall")) {  // Gemini part
    const std::string base = child(at, "functionCall");
    if (!fc->is_object()) throw json_error(base, expected("an object", *fc), preview(*fc));
    std::string name = name_field(*fc, base);
    out.push_back(
        make_call(std::move(name), string_field(*fc, "id", base), tool_call_dialect::gemini, member(*fc, "args"), position));
    return;
  }
  if (c.contains("function")) {  // an OpenAI-compatible call without "type" (some servers)
    const nlohmann::json& f = object_field(c, "function", at);
    const std::string base = child(at, "function");
    std::string name = name_field(f, base);
    out.push_back(make_call(std::move(name), string_field(c, "id", at), tool_call_dialect::openai_chat,
                            member(f, "arguments"), position));
    return;
  }
  if (!c.contains("name") && is_gemini_non_call_part(c)) return;  // a Gemini text/thought part
  // The plain form {"id"?, "name", "arguments"?} (or "input").
  std::string name = name_field(c, at);
  const nlohmann::json* args = member(c, "arguments");
  const nlohmann::json* input = member(c, "input");
  if (args != nullptr && input != nullptr) throw json_error(child(at, "input"), "both \"arguments\" and \"input\" given", "input");
  out.push_back(make_call(std::move(name), string_field(c, "id", at), tool_call_dialect::plain,
                          args != nullptr ? args : input, position));
}

inline void parse_call_array(const nlohmann::json& a, const std::string& at, std::vector<tool_call>& out) {
  if (!a.is_array()) throw json_error(at, expected("an array", a), preview(a));
  for (std::size_t i = 0; i < a.size(); ++i) parse_call_item(a[i], child(at, i), out);
}

// A message or response object (not an array).
inline void parse_call_envelope(const nlohmann::json& v, const std::string& at, std::vector<tool_call>& out) {
  if (!v.is_object()) throw json_error(at, expected("a tool call object, message or response", v), preview(v));
  if (const nlohmann::json* choices = member(v, "choices")) {  // OpenAI Chat Completions response
    const std::string base = child(at, "choices");
    if (!choices->is_array()) throw json_error(base, expected("an array", *choices), preview(*choices));
    if (choices->empty()) return;
    const nlohmann::json& first = (*choices)[0];
    const std::string first_at = child(base, std::size_t{0});
    if (!first.is_object()) throw json_error(first_at, expected("an object", first), preview(first));
    parse_call_envelope(object_field(first, "message", first_at), child(first_at, "message"), out);
    return;
  }
  if (const nlohmann::json* calls = member(v, "tool_calls")) {  // OpenAI assistant message
    if (!calls->is_null()) parse_call_array(*calls, child(at, "tool_calls"), out);
    return;
  }
  if (const nlohmann::json* fc = member(v, "function_call"); fc != nullptr && !fc->is_null() && !v.contains("type")) {
    // The legacy single function_call of an assistant message.
    const std::string base = child(at, "function_call");
    if (!fc->is_object()) throw json_error(base, expected("an object", *fc), preview(*fc));
    std::string name = name_field(*fc, base);
    out.push_back(make_call(std::move(name), std::nullopt, tool_call_dialect::openai_chat, member(*fc, "arguments"),
                            out.size()));
    return;
  }
  if (const nlohmann::json* output = member(v, "output"); output != nullptr && output->is_array()) {  // Responses
    parse_call_array(*output, child(at, "output"), out);
    return;
  }
  if (const nlohmann::json* candidates = member(v, "candidates")) {  // Gemini GenerateContentResponse
    const std::string base = child(at, "candidates");
    if (!candidates->is_array()) throw json_error(base, expected("an array", *candidates), preview(*candidates));
    if (candidates->empty()) return;
    const nlohmann::json& first = (*candidates)[0];
    const std::string first_at = child(base, std::size_t{0});
    if (!first.is_object()) throw json_error(first_at, expected("an object", first), preview(first));
    const nlohmann::json* content = member(first, "content");
    if (content == nullptr || content->is_null()) return;  // e.g. finishReason SAFETY: no content
    parse_call_envelope(*content, child(first_at, "content"), out);
    return;
  }
  if (const nlohmann::json* parts = member(v, "parts")) {  // Gemini Content
    parse_call_array(*parts, child(at, "parts"), out);
    return;
  }
  if (const nlohmann::json* method = member(v, "method"); method != nullptr && member(v, "params") != nullptr) {
    // An MCP JSON-RPC request: {"jsonrpc", "id", "method": "tools/call", "params"}.
    if (!method->is_string() || method->get_ref<const std::string&>() != "tools/call")
      throw json_error(child(at, "method"), "expected \"tools/call\"", preview(*method));
    const nlohmann::json& params = object_field(v, "params", at);
    const std::string base = child(at, "params");
    std::optional<std::string> id;
    if (const nlohmann::json* rid = member(v, "id"); rid != nullptr && !rid->is_null()) {
      if (rid->is_string()) id = rid->get<std::string>();
      else if (rid->is_number_integer()) id = rid->dump();
      else throw json_error(child(at, "id"), expected("a string or an integer", *rid), preview(*rid));
    }
    std::string name = name_field(params, base);
    out.push_back(make_call(std::move(name), std::move(id), tool_call_dialect::mcp, member(params, "arguments"),
                            out.size()));
    return;
  }
  if (const nlohmann::json* content = member(v, "content"); content != nullptr && (v.contains("role") || v.contains("type"))) {
    // An Anthropic message (response or conversation message), or an OpenAI
    // message without tool calls (string or null content: no calls).
    if (content->is_array()) parse_call_array(*content, child(at, "content"), out);
    else if (!content->is_string() && !content->is_null())
      throw json_error(child(at, "content"), expected("an array of content blocks", *content), preview(*content));
    return;
  }
  if (v.contains("role")) return;  // a message with no content and no calls
  if (!v.contains("type") && !v.contains("function") && !v.contains("functionCall") && v.contains("name")) {
    // MCP tools/call params {"name", "arguments"?, "_meta"?}.
    std::string name = name_field(v, at);
    out.push_back(make_call(std::move(name), std::nullopt, tool_call_dialect::mcp, member(v, "arguments"), out.size()));
    return;
  }
  if (v.contains("type") || v.contains("function") || v.contains("functionCall")) {  // a single call item
    parse_call_item(v, at, out);
    return;
  }
  throw json_error(at,
                   "expected tool calls: an array of calls, or a message or response (choices, tool_calls, output, "
                   "content, candidates, parts, or MCP tools/call params)",
                   preview(v));
}

// Makes the ids of one turn's calls unique (see `tool_call`): model-chosen
// ids keep their first call; a later call with the same id is refused and
// renamed `<id>~<n>`; a generated id that a model-chosen id of the turn
// already reads (in any position) gets `-2`, `-3`, ...
inline void make_ids_unique(std::vector<tool_call>& calls) {
  std::unordered_map<std::string, std::size_t> first;  // model-chosen id -> its first call
  std::unordered_set<std::string> used;
  for (std::size_t k = 0; k < calls.size(); ++k)
    if (!calls[k].generated_id && first.emplace(calls[k].id, k).second) used.insert(calls[k].id);
  auto fresh = [&used](std::string base, std::string_view sep, std::size_t n) {
    std::string id = base;
    while (!used.insert(id).second) id = str_cat(base, sep, std::to_string(n++));
    return id;
  };
  for (std::size_t k = 0; k < calls.size(); ++k) {
    tool_call& c = calls[k];
    if (c.generated_id) continue;
    const std::size_t earlier = first.at(c.id);
    if (earlier == k) continue;
    const std::string original = c.id;
    c.id = fresh(str_cat(original, "~", std::to_string(k + 1)), "~", 2);
    c.arguments = nlohmann::json::object();
    c.arguments_error = str_cat("duplicate call id ", quote_input(original), ": call ", std::to_string(earlier + 1),
                                " of this turn already has it; this call (", std::to_string(k + 1),
                                ") was not run and is answered as ", quote_input(c.id));
  }
  for (auto& c : calls)
    if (c.generated_id) c.id = fresh(c.id, "-", 2);
}

// Why each call of a turn cannot run through a fault of its own, as the
// message of its `invalid_arguments` failure ("" = none): its
// `arguments_error`; an id an earlier call of the turn already has (calls
// built by the application; `parse_tool_calls` gives unique ids); arguments
// nested deeper than `max_json_depth` (checked iteratively, before anything
// copies them). Used where calls enter `json_tool_host`.
inline std::vector<std::string> call_entry_errors(std::span<const tool_call> calls) {
  std::vector<std::string> out(calls.size());
  std::unordered_map<std::string_view, std::size_t> first;
  for (std::size_t k = 0; k < calls.size(); ++k) {
    const tool_call& c = calls[k];
    const auto [it, fresh] = first.emplace(c.id, k);
    if (!c.valid())
      out[k] = c.arguments_error;
    else if (!fresh)
      out[k] = str_cat("duplicate call id ", quote_input(c.id), ": call ", std::to_string(it->second + 1),
                       " of this turn already has it; this call (", std::to_string(k + 1), ") was not run");
    else if (const auto at = too_deep_at(c.arguments, max_json_depth))
      out[k] = str_cat("arguments of ", c.name, " are nested deeper than ", std::to_string(max_json_depth), " levels (at ",
                       at->empty() ? std::string("(root)") : *at, ")");
  }
  return out;
}

}  // namespace detail

}  // namespace tool_effects

#endif  // TOOL_EFFECTS_JSON_DETAIL_CALL_ENVELOPES_HPP
