// tool_effects/mcp/protocol/detail/sampling_checks.hpp — internal to <tool_effects/mcp/client.hpp>: the checks
// of a server's sampling/createMessage request and of the CreateMessageResult a sampling handler returns
// (messages, typed content blocks, tools and toolChoice, balanced tool_use/tool_result). Every refusal is a
// json_error naming the JSON pointer. See docs/mcp-capabilities.md ("Client capabilities").
#ifndef TOOL_EFFECTS_MCP_PROTOCOL_DETAIL_SAMPLING_CHECKS_HPP
#define TOOL_EFFECTS_MCP_PROTOCOL_DETAIL_SAMPLING_CHECKS_HPP

#include <cstddef>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include <tool_effects/detail/str_cat.hpp>
#include <tool_effects/json/error.hpp>
#include <tool_effects/mcp/protocol/detail/elicitation_schema.hpp>

namespace tool_effects::detail {

inline constexpr std::size_t mcp_max_sampling_messages = 10000;
// Sampling with tools (2025-11-25): the most tools of one request.
inline constexpr std::size_t mcp_max_sampling_tools = 128;

namespace sampling {

using json = nlohmann::json;
using elicit::fail;

inline bool typed(const json& c) { return c.is_object() && c.contains("type") && c["type"].is_string(); }

// The content blocks of a message or result (an object or an array of
// them), each with a string `type`; tool_use and tool_result blocks are
// checked for the members the client reads.
inline std::vector<const json*> blocks_of(const json& content, const std::string& p) {
  std::vector<const json*> out;
  if (typed(content)) {
    out.push_back(&content);
  } else if (content.is_array() && std::all_of(content.begin(), content.end(), typed)) {
    for (const auto& c : content) out.push_back(&c);
  } else {
    fail(p, "expected an object with a string type, or an array of them");
  }
  for (std::size_t i = 0; i < out.size(); ++i) {
    const json& b = *out[i];
    const std::string at = content.is_array() ? str_cat(p, "/", std::to_string(i)) : p;
    if (b["type"] == "tool_use") {
      const auto id = b.find("id");
      if (id == b.end() || !id->is_string() || id->get_ref<const std::string&>().empty())
        fail(at + "/id", "expected a non-empty string (the tool use's id)");
      const auto name = b.find("name");
      if (name == b.end() || !name->is_string()) fail(at + "/name", "expected a string (the tool's name)");
      const auto input = b.find("input");
      if (input == b.end() || !input->is_object()) fail(at + "/input", "expected an object (the tool's arguments)");
    } else if (b["type"] == "tool_result") {
      const auto id = b.find("toolUseId");
      if (id == b.end() || !id->is_string()) fail(at + "/toolUseId", "expected a string (the tool use it answers)");
      const auto c = b.find("content");
      if (c == b.end() || !c->is_array() || !std::all_of(c->begin(), c->end(), typed))
        fail(at + "/content", "expected an array of objects with a string type");
    }
  }
  return out;
}

inline bool is(const json* b, const char* type) { return (*b)["type"] == type; }

}  // namespace sampling

// A server's sampling/createMessage params: messages (each a role and typed
// content) and maxTokens. With `tools_declared` (options.sampling_tools) a
// request may carry `tools` and `toolChoice`, and its messages tool_use and
// tool_result blocks, which must balance (every assistant message of tool
// uses followed by a user message of exactly their results, and nothing
// else); without, any of them is refused.
inline void mcp_check_sampling_request(const nlohmann::json& params, bool tools_declared) {
  using elicit::fail;
  using sampling::is;
  if (!params.is_object()) fail("", expected("an object", params));
  const auto not_declared = [](const std::string& p) {
    fail(p, "sampling with tools is not declared by this client (options.sampling_tools)");
  };
  if (const auto tools = params.find("tools"); tools != params.end()) {
    if (!tools_declared) not_declared("/tools");
    if (!tools->is_array()) fail("/tools", expected("an array", *tools));
    if (tools->size() > mcp_max_sampling_tools)
      fail("/tools", str_cat(std::to_string(tools->size()), " tools, more than ", std::to_string(mcp_max_sampling_tools)));
    std::vector<std::string> names;
    for (std::size_t i = 0; i < tools->size(); ++i) {
      const std::string p = str_cat("/tools/", std::to_string(i));
      const auto& t = (*tools)[i];
      if (!t.is_object()) fail(p, expected("an object", t));
      const auto name = t.find("name");
      if (name == t.end() || !name->is_string() || name->get_ref<const std::string&>().empty())
        fail(p + "/name", "expected a non-empty string");
      if (std::find(names.begin(), names.end(), name->get<std::string>()) != names.end())
        fail(p + "/name", str_cat("\"", elicit::cut(name->get<std::string>(), 60), "\" names two tools"));
      names.push_back(name->get<std::string>());
      const auto schema = t.find("inputSchema");
      if (schema == t.end() || !schema->is_object() || !schema->contains("type") || (*schema)["type"] != "object")
        fail(p + "/inputSchema", "expected an object schema ({\"type\": \"object\", ...})");
    }
  }
  if (const auto choice = params.find("toolChoice"); choice != params.end()) {
    if (!tools_declared) not_declared("/toolChoice");
    if (!choice->is_object()) fail("/toolChoice", expected("an object", *choice));
    if (const auto mode = choice->find("mode");
        mode != choice->end() && !(*mode == "auto" || *mode == "required" || *mode == "none"))
      fail("/toolChoice/mode", "expected \"auto\", \"required\" or \"none\"");
  }
  const auto m = params.find("messages");
  if (m == params.end()) fail("", "missing messages");
  if (!m->is_array() || m->empty()) fail("/messages", "expected a non-empty array");
  if (m->size() > mcp_max_sampling_messages)
    fail("/messages", str_cat(std::to_string(m->size()), " messages, more than ", std::to_string(mcp_max_sampling_messages)));
  std::vector<std::string> open_uses;  // tool uses of the last assistant message, awaiting their results
  std::string open_at;
  for (std::size_t i = 0; i < m->size(); ++i) {
    const auto& msg = (*m)[i];
    const std::string p = str_cat("/messages/", std::to_string(i));
    if (!msg.is_object()) fail(p, expected("an object", msg));
    const auto role = msg.find("role");
    if (role == msg.end() || !(*role == "user" || *role == "assistant"))
      fail(p + "/role", "expected \"user\" or \"assistant\"");
    const auto content = msg.find("content");
    if (content == msg.end()) fail(p, "missing content");
    const auto blocks = sampling::blocks_of(*content, p + "/content");
    const auto uses = std::count_if(blocks.begin(), blocks.end(), [](const auto* b) { return is(b, "tool_use"); });
    const auto results = std::count_if(blocks.begin(), blocks.end(), [](const auto* b) { return is(b, "tool_result"); });
    if ((uses || results) && !tools_declared) not_declared(p + "/content");
    if (uses && *role != "assistant") fail(p + "/role", "tool_use blocks come in assistant messages");
    if (results && *role != "user") fail(p + "/role", "tool_result blocks come in user messages");
    if (results && results != static_cast<std::ptrdiff_t>(blocks.size()))
      fail(p + "/content", "a message with tool results holds tool results only");
    if (!open_uses.empty()) {  // this message must answer them, exactly
      std::vector<std::string> answered;
      for (const auto* b : blocks)
        if (is(b, "tool_result")) answered.push_back((*b)["toolUseId"].get<std::string>());
      std::sort(answered.begin(), answered.end());
      if (answered != open_uses)
        fail(p + "/content", str_cat("expected one tool_result for each tool_use of ", open_at, " and nothing else"));
      open_uses.clear();
    } else if (results) {
      fail(p + "/content", "tool results that answer no tool use of the message before");
    }
    for (const auto* b : blocks)
      if (is(b, "tool_use")) open_uses.push_back((*b)["id"].get<std::string>());
    std::sort(open_uses.begin(), open_uses.end());
    if (std::adjacent_find(open_uses.begin(), open_uses.end()) != open_uses.end())
      fail(p + "/content", "two tool uses share an id");
    open_at = p;
  }
  if (!open_uses.empty()) fail(open_at + "/content", "the last message's tool uses have no results");
  const auto mt = params.find("maxTokens");
  if (mt == params.end()) fail("", "missing maxTokens");
  if (!mt->is_number_integer() || mt->get<std::int64_t>() <= 0)
    fail("/maxTokens", expected("a positive integer", *mt));
}

// A sampling handler's CreateMessageResult for `request` (checked): role,
// content, model; tool_use blocks only for tools the request offered, as its
// toolChoice allows (none: no tool use; required: at least one), and with
// stopReason "toolUse" at least one.
inline void mcp_check_sampling_result(const nlohmann::json& r, const nlohmann::json& request) {
  using elicit::fail;
  using sampling::is;
  if (!r.is_object()) fail("", expected("an object (CreateMessageResult)", r));
  const auto role = r.find("role");
  if (role == r.end() || !(*role == "user" || *role == "assistant")) fail("/role", "expected \"assistant\" or \"user\"");
  const auto content = r.find("content");
  if (content == r.end()) fail("", "missing content");
  const auto blocks = sampling::blocks_of(*content, "/content");
  const auto model = r.find("model");
  if (model == r.end() || !model->is_string()) fail("/model", "expected the name of the model (a string)");
  const auto tools = request.find("tools");
  const auto choice = request.find("toolChoice");
  const std::string mode = choice != request.end() ? choice->value("mode", std::string("auto")) : std::string("auto");
  std::size_t uses = 0;
  for (std::size_t i = 0; i < blocks.size(); ++i) {
    const std::string at = content->is_array() ? str_cat("/content/", std::to_string(i)) : std::string("/content");
    if (is(blocks[i], "tool_result")) fail(at, "a result holds no tool results (the server runs the tools)");
    if (!is(blocks[i], "tool_use")) continue;
    ++uses;
    if (*role != "assistant") fail("/role", "a result with tool uses is the assistant's");
    if (tools == request.end()) fail(at, "a tool use, but the request offered no tools");
    if (mode == "none") fail(at, "a tool use, but the request's toolChoice is \"none\"");
    const auto& name = (*blocks[i])["name"];
    if (std::none_of(tools->begin(), tools->end(), [&](const nlohmann::json& t) { return t["name"] == name; }))
      fail(at + "/name", str_cat("\"", elicit::cut(name.get<std::string>(), 60), "\" is not a tool the request offered"));
  }
  if (mode == "required" && tools != request.end() && uses == 0)
    fail("/content", "no tool use, but the request's toolChoice is \"required\"");
  if (const auto stop = r.find("stopReason"); stop != r.end() && *stop == "toolUse" && uses == 0)
    fail("/stopReason", "\"toolUse\" without a tool use in the content");
}

}  // namespace tool_effects::detail

#endif  // TOOL_EFFECTS_MCP_PROTOCOL_DETAIL_SAMPLING_CHECKS_HPP
