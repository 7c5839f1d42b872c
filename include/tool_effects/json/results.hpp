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

#include <tool_effects/detail/quote.hpp>
#include <tool_effects/detail/str_cat.hpp>
#include <tool_effects/failure.hpp>
#include <tool_effects/json/calls.hpp>
#include <tool_effects/json/detail/dump.hpp>
#include <tool_effects/json/error.hpp>
#include <tool_effects/outcome.hpp>

namespace tool_effects {

/// One part of a result the model reads: text, or an image (base64 `data`
/// of type `mime`). MCP results give several (see `answer_of`).
struct tool_content_part {
  bool image = false;
  std::string text{};  ///< the text; for an image, the placeholder shown where images are not accepted
  std::string mime{};  ///< images only
  std::string data{};  ///< images only: base64, as the server sent it
};

/// One call's answer, independent of the vendor: the text the model reads
/// (`content`: the result as is when it is a string, else its compact JSON;
/// "" for null; for an MCP result its text, see `answer_of`), the result
/// itself (`value`, null for errors; an MCP result's `structuredContent`),
/// whether it is an error, and the parts of an MCP result (`parts`, empty
/// otherwise; `mcp_content` its content array as sent). Errors read
/// `<reason>: <one-line explanation>` with a stable reason: a
/// `failure_reason` slug for calls the library refused or gave up on,
/// `aborted` for calls never started, `tool_error` for a tool that threw.
struct tool_answer {
  std::string content{};
  nlohmann::json value{};
  bool is_error = false;
  std::vector<tool_content_part> parts{};
  nlohmann::json mcp_content{};
  /// Whether an image is among `parts`.
  [[nodiscard]] bool has_image() const noexcept {
    for (const auto& p : parts)
      if (p.image) return true;
    return false;
  }
};

/// Whether `v` has the shape of an MCP CallToolResult: an object whose
/// `content` is an array of objects, each with a string `type`. Such a result
/// (what an MCP tool registered by `add_mcp_server` returns) is answered with
/// its content, not its JSON text.
inline bool is_mcp_tool_result(const nlohmann::json& v) {
  if (!v.is_object()) return false;
  const auto c = v.find("content");
  if (c == v.end() || !c->is_array()) return false;
  for (const auto& b : *c) {
    if (!b.is_object()) return false;
    const auto t = b.find("type");
    if (t == b.end() || !t->is_string()) return false;
  }
  return true;
}

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

namespace detail {
// The string member `key` of block `b` (content block `i`); json_error pointing at it otherwise.
inline const std::string& mcp_block_string(const nlohmann::json& b, std::size_t i, const char* key) {
  const auto it = b.find(key);
  const std::string at = str_cat("/content/", std::to_string(i), "/", key);
  if (it == b.end()) throw json_error(at, "missing required key", key);
  if (!it->is_string()) throw json_error(at, expected("a string", *it), preview(*it));
  return it->get_ref<const std::string&>();
}

// Reads an MCP CallToolResult (is_mcp_tool_result holds) into `a`: the parts
// in order (text; images; an embedded resource's text, or an image blob as an
// image; placeholders for what no vendor here takes: audio, other blobs,
// resource links), the joined text, structuredContent, isError.
inline void read_mcp_result(const nlohmann::json& r, tool_answer& a) {
  const auto& content = r.at("content");
  for (std::size_t i = 0; i < content.size(); ++i) {
    const auto& b = content[i];
    const std::string& type = b.at("type").get_ref<const std::string&>();
    tool_content_part part;
    if (type == "text") {
      part.text = mcp_block_string(b, i, "text");
    } else if (type == "image") {
      part.image = true;
      part.mime = mcp_block_string(b, i, "mimeType");
      part.data = mcp_block_string(b, i, "data");
      part.text = str_cat("[image: ", part.mime, "]");
    } else if (type == "resource") {
      const auto res = b.find("resource");
      const std::string at = str_cat("/content/", std::to_string(i), "/resource");
      if (res == b.end()) throw json_error(at, "missing required key", "resource");
      if (!res->is_object()) throw json_error(at, expected("an object", *res), preview(*res));
      const auto uri = res->find("uri");
      const std::string u = uri != res->end() && uri->is_string() ? uri->get<std::string>() : std::string();
      const auto mime = res->find("mimeType");
      const std::string m = mime != res->end() && mime->is_string() ? mime->get<std::string>() : std::string();
      if (const auto t = res->find("text"); t != res->end()) {
        if (!t->is_string()) throw json_error(at + "/text", expected("a string", *t), preview(*t));
        part.text = t->get<std::string>();
      } else if (const auto blob = res->find("blob"); blob != res->end()) {
        if (!blob->is_string()) throw json_error(at + "/blob", expected("a string", *blob), preview(*blob));
        if (m.starts_with("image/")) {
          part.image = true;
          part.mime = m;
          part.data = blob->get<std::string>();
          part.text = str_cat("[image: ", m, " ", u, "]");
        } else {
          part.text = str_cat("[resource ", u, ": ", m.empty() ? std::string("binary") : m, ", not shown]");
        }
      } else {
        throw json_error(at, "missing required key", "text or blob");
      }
    } else if (type == "resource_link") {
      part.text = str_cat("[resource link: ", b.contains("uri") && b["uri"].is_string() ? b["uri"].get<std::string>() : "", "]");
    } else if (type == "audio") {
      part.text = str_cat("[audio: ", b.contains("mimeType") && b["mimeType"].is_string() ? b["mimeType"].get<std::string>() : "",
                          ", not shown]");
    } else {
      part.text = str_cat("[", type, " content, not shown]");
    }
    a.parts.push_back(std::move(part));
  }
  for (const auto& p : a.parts) {
    if (!a.content.empty()) a.content += '\n';
    a.content += p.text;
  }
  if (const auto sc = r.find("structuredContent"); sc != r.end() && !sc->is_null()) {
    a.value = *sc;
    if (a.parts.empty()) a.content = sc->dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  }
  if (const auto e = r.find("isError"); e != r.end()) {
    if (!e->is_boolean()) throw json_error("/isError", expected("a boolean", *e), preview(*e));
    a.is_error = e->get<bool>();
  }
  if (a.is_error) {
    a.value = nullptr;
    a.content = str_cat("tool_error: ", a.content);
  }
  a.mcp_content = content;
}
}  // namespace detail

/// The answer of one outcome (see `tool_answer`). A result nested deeper
/// than 64 levels is answered as an error, `tool_error: the result of <tool>
/// is nested deeper than 64 levels (at <pointer>)`, without copying it (the
/// depth check is iterative). An MCP CallToolResult (`is_mcp_tool_result`)
/// is answered with its content: `content` is its text blocks (and
/// placeholders such as `[image: image/png]`) joined by newlines, or
/// `structuredContent`'s JSON when there is no block; `value` its
/// `structuredContent`; `isError: true` makes it an error
/// (`tool_error: <text>`); a block the answer reads that is malformed makes
/// it an error naming the JSON pointer. A `call_failure` gives its
/// reason and explanation (`unsafe_to_retry: send_email failed (timed out) and
/// was not retried because it is not safe to repeat: ...`); any other
/// exception `tool_error: <what()>`; an aborted call `aborted: ...`.
/// `tool_name`, when given, names the tool in explanations (the record's
/// tool is the dispatcher's call name, `name#id` for a JSON turn).
namespace detail {
// What a nlohmann::json exception thrown while a tool read its arguments says of them: a missing key named, a
// value of the wrong type, else that they do not have the shape the tool reads.
inline std::string json_reading_failure(const nlohmann::json::exception& e) {
  const std::string_view what = e.what();
  if (e.id == 403) {  // out_of_range.403: key 'name' not found
    const auto a = what.find('\'');
    const auto b = a == std::string_view::npos ? a : what.find('\'', a + 1);
    if (b != std::string_view::npos)
      return str_cat("missing required key \"", utf8_excerpt(what.substr(a + 1, b - a - 1), 200), "\"");
  }
  if (e.id == 302) {  // type_error.302: type must be number, but is string
    const auto t = what.find("type must be ");
    if (t != std::string_view::npos) return str_cat("a value has the wrong type: ", utf8_excerpt(what.substr(t + 13), 200));
  }
  if (e.id == 304 || e.id == 305 || e.id == 306) return "the tool reads an object where the arguments hold none";
  if (e.id == 401) return "an array of the arguments is shorter than the tool reads";
  return "the arguments do not have the shape the tool reads";
}
}  // namespace detail

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
    if (is_mcp_tool_result(o.value())) {
      try {
        detail::read_mcp_result(o.value(), a);
      } catch (const json_error& e) {
        a = tool_answer{};
        a.is_error = true;
        a.content = detail::str_cat("tool_error: the result of ", tool_name.empty() ? std::string_view("the tool") : tool_name,
                                    " is not a valid MCP result: ", e.what());
      }
      return a;
    }
    a.value = o.value();
    if (a.value.is_string()) a.content = a.value.get<std::string>();
    else if (!a.value.is_null()) a.content = detail::json_dump(a.value);
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
  } catch (const nlohmann::json::exception& e) {
    // A tool that reads its JSON arguments itself (no described `arguments`) and found them not as it expects:
    // the caller's arguments, said in the library's words, never nlohmann's.
    a.content = detail::str_cat("invalid_arguments: ", detail::json_reading_failure(e));
  } catch (const std::exception& e) {
    a.content = "tool_error: ";
    a.content += e.what();
  } catch (...) {
    a.content = "tool_error: unknown exception";
  }
  return a;
}

namespace detail {
// An MCP CallToolResult of one text block, `{"content": [{"type": "text", "text": text}]}`: the one shape of a
// text answer, for the MCP dialect here and for the server's results (mcp/server). The text is moved in.
inline nlohmann::json mcp_text_result(std::string text) {
  nlohmann::json block = nlohmann::json::object();
  block["type"] = "text";
  block["text"] = std::move(text);
  nlohmann::json content = nlohmann::json::array();
  content.push_back(std::move(block));
  nlohmann::json r = nlohmann::json::object();
  r["content"] = std::move(content);
  return r;
}

// Anthropic takes these image types in a tool_result.
inline bool anthropic_image_type(std::string_view mime) {
  return mime == "image/jpeg" || mime == "image/png" || mime == "image/gif" || mime == "image/webp";
}
}  // namespace detail

/// The result of one call in its dialect (one element of what `tool_results`
/// returns, before grouping). The table of docs/runtime.md ("Results the
/// model reads") is the contract:
///  - openai_chat: `{"role": "tool", "tool_call_id", "content": "<text>"}`;
///  - openai_responses: `{"type": "function_call_output", "call_id", "output": "<text>"}`
///    (`custom_tool_call_output` for custom calls); with images, `output` is a list of
///    `input_text` and `input_image` (a data URL) items;
///  - anthropic: a `{"type": "tool_result", "tool_use_id", "content": "<text>", "is_error"}` block;
///    with images (jpeg, png, gif, webp), `content` is a list of `text` and base64 `image` blocks;
///  - gemini: a `{"functionResponse": {"name", "id"?, "response"}}` part; `response` is
///    the result (an MCP result's `structuredContent`) when it is an object, else
///    `{"output": <text or result>}`; errors `{"error": "<text>"}`; `id` only when the model gave one;
///  - mcp: a CallToolResult `{"content": [...], "isError"}`: an MCP result's own content
///    blocks, else one text block, with `structuredContent` when the value is an object;
///  - plain: `{"id", "name", "content": "<text>", "is_error"}`.
/// OpenAI has no error flag: an error's text starts with its reason.
inline nlohmann::json tool_result(const tool_call& call, const outcome<nlohmann::json>& o) {
  const tool_answer a = answer_of(o, call.name);
  using nlohmann::json;
  const bool mcp = !a.parts.empty() || !a.mcp_content.is_null();
  switch (call.dialect) {
    case tool_call_dialect::openai_chat:
      return json{{"role", "tool"}, {"tool_call_id", call.id}, {"content", a.content}};
    case tool_call_dialect::openai_responses: {
      json output = a.content;
      if (!call.custom && !a.is_error && a.has_image()) {
        output = json::array();
        for (const auto& p : a.parts) {
          if (p.image)
            output.push_back(json{{"type", "input_image"}, {"image_url", detail::str_cat("data:", p.mime, ";base64,", p.data)}});
          else
            output.push_back(json{{"type", "input_text"}, {"text", p.text}});
        }
      }
      return json{{"type", call.custom ? "custom_tool_call_output" : "function_call_output"},
                  {"call_id", call.id},
                  {"output", std::move(output)}};
    }
    case tool_call_dialect::anthropic: {
      json content = a.content;
      bool images = false;
      for (const auto& p : a.parts) images = images || (p.image && detail::anthropic_image_type(p.mime));
      if (!a.is_error && images) {
        content = json::array();
        for (const auto& p : a.parts) {
          if (p.image && detail::anthropic_image_type(p.mime))
            content.push_back(json{{"type", "image"},
                                   {"source", json{{"type", "base64"}, {"media_type", p.mime}, {"data", p.data}}}});
          else
            content.push_back(json{{"type", "text"}, {"text", p.text}});
        }
      }
      return json{{"type", "tool_result"}, {"tool_use_id", call.id}, {"content", std::move(content)}, {"is_error", a.is_error}};
    }
    case tool_call_dialect::gemini: {
      json response;
      if (a.is_error) response = json{{"error", a.content}};
      else if (a.value.is_object()) response = a.value;
      else if (mcp) response = json{{"output", a.content}};
      else response = json{{"output", a.value}};
      json part{{"name", call.name}};
      if (!call.generated_id) part["id"] = call.id;
      part["response"] = std::move(response);
      return json{{"functionResponse", std::move(part)}};
    }
    case tool_call_dialect::mcp: {
      json r = a.mcp_content.is_array() ? json{{"content", a.mcp_content}} : detail::mcp_text_result(a.content);
      r["isError"] = a.is_error;
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
