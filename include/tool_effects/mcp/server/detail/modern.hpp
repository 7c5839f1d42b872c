// tool_effects/mcp/server/detail/modern.hpp — internal to <tool_effects/mcp/server.hpp>: the server's side of
// the 2026-07-28 era (stateless: no initialize, every request carries its own `_meta`). Which requests are
// modern, their `_meta` read strictly (errors name the member by JSON pointer), and the era's result fields.
// See docs/mcp-server.md ("The server in the 2026-07-28 era").
#ifndef TOOL_EFFECTS_MCP_SERVER_DETAIL_MODERN_HPP
#define TOOL_EFFECTS_MCP_SERVER_DETAIL_MODERN_HPP

#include <map>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include <tool_effects/detail/str_cat.hpp>
#include <tool_effects/json.hpp>
#include <tool_effects/mcp/server/detail/core.hpp>
#include <tool_effects/mcp/protocol/detail/session.hpp>
#include <tool_effects/mcp/versions.hpp>

namespace tool_effects::detail {

// JSON-RPC codes of the 2026-07-28 era (the third, -32022, is mcp_unsupported_version_code).
inline constexpr int rpc_header_mismatch = -32020;
inline constexpr int rpc_missing_client_capability = -32021;

// The per-request `_meta` keys of the era.
inline constexpr std::string_view mcp_meta_protocol_version = "io.modelcontextprotocol/protocolVersion";
inline constexpr std::string_view mcp_meta_client_capabilities = "io.modelcontextprotocol/clientCapabilities";
inline constexpr std::string_view mcp_meta_client_info = "io.modelcontextprotocol/clientInfo";
inline constexpr std::string_view mcp_meta_log_level = "io.modelcontextprotocol/logLevel";
inline constexpr std::string_view mcp_meta_server_info = "io.modelcontextprotocol/serverInfo";

// What a modern request said about itself in its `_meta`.
struct mcp_request_meta {
  std::string version;                  // a modern version of mcp_protocol_versions()
  nlohmann::json client_capabilities;   // an object
  std::string log_level;                // "" when the request asked for no log messages
};

// Whether a request is of the modern era: `server/discover` (which exists only there), a `_meta` that names a
// protocol version, or a transport that carried a modern version (HTTP's MCP-Protocol-Version; "" on stdio).
inline bool mcp_request_is_modern(std::string_view method, const nlohmann::json& params,
                                  const std::string& transport_version) {
  if (method == "server/discover" || mcp_version_is_modern(transport_version)) return true;
  if (!params.is_object()) return false;
  const auto m = params.find("_meta");
  return m != params.end() && m->is_object() && m->contains(mcp_meta_protocol_version);
}

// The `_meta` of a modern request, read strictly: -32602 for a missing or ill-typed member (named by JSON
// pointer into params), -32020 when the transport carried another version than `_meta` names, -32022
// (UnsupportedProtocolVersionError, data {supported, requested}) for a version this server does not serve
// per request (an unknown one, or a legacy one: those are served after initialize).
inline mcp_request_meta read_request_meta(const nlohmann::json& params, const std::string& transport_version) {
  auto invalid = [](std::string message) { return mcp_server_error(rpc_invalid_params, str_cat("Invalid params: ", message)); };
  if (!params.is_null() && !params.is_object()) throw invalid(str_cat("at : ", expected("an object", params)));
  const auto m = params.is_object() ? params.find("_meta") : params.end();
  if (!params.is_object() || m == params.end())
    throw invalid("missing required key \"_meta\" (the 2026-07-28 era's per-request protocol version and client "
                  "capabilities)");
  if (!m->is_object()) throw invalid(str_cat("at /_meta: ", expected("an object", *m)));
  auto at = [](std::string_view key) { return str_cat("/_meta/", pointer_token(key)); };
  const auto v = m->find(mcp_meta_protocol_version);
  if (v == m->end()) throw invalid(str_cat("at /_meta: missing required key \"", mcp_meta_protocol_version, "\""));
  if (!v->is_string()) throw invalid(str_cat("at ", at(mcp_meta_protocol_version), ": ", expected("a string", *v)));
  const auto c = m->find(mcp_meta_client_capabilities);
  if (c == m->end()) throw invalid(str_cat("at /_meta: missing required key \"", mcp_meta_client_capabilities, "\""));
  if (!c->is_object())
    throw invalid(str_cat("at ", at(mcp_meta_client_capabilities), ": ", expected("an object", *c)));
  if (const auto i = m->find(mcp_meta_client_info); i != m->end() && !i->is_object())
    throw invalid(str_cat("at ", at(mcp_meta_client_info), ": ", expected("an object", *i)));
  const auto l = m->find(mcp_meta_log_level);
  if (l != m->end() && !l->is_string())
    throw invalid(str_cat("at ", at(mcp_meta_log_level), ": ", expected("a string", *l)));
  if (l != m->end() && mcp_log_level_named(l->get_ref<const std::string&>()) == mcp_log_level::none)
    throw invalid(str_cat("at ", at(mcp_meta_log_level), ": ", log_level_expected, preview(*l)));
  const std::string& version = v->get_ref<const std::string&>();
  if (!transport_version.empty() && transport_version != version)
    throw mcp_server_error(rpc_header_mismatch,
                           str_cat("Header mismatch: MCP-Protocol-Version ", quote_input(transport_version),
                                   " does not match ", at(mcp_meta_protocol_version), " ", quote_input(version)));
  bool served = false;
  for (const auto& s : mcp_protocol_versions()) served = served || (s == version && mcp_version_is_modern(s));
  if (!served) {
    nlohmann::json supported = nlohmann::json::array();
    for (const auto& s : mcp_protocol_versions()) supported.push_back(s);
    throw mcp_server_error(mcp_unsupported_version_code,
                           str_cat("Unsupported protocol version: at ", at(mcp_meta_protocol_version), ": ",
                                   quote_input(version),
                                   " (served per request: the modern versions of data.supported; the others after "
                                   "initialize)"),
                           nlohmann::json{{"supported", std::move(supported)}, {"requested", std::string(utf8_prefix(version, 64))}});
  }
  mcp_request_meta out;
  out.version = version;
  out.client_capabilities = *c;
  if (l != m->end()) out.log_level = l->get<std::string>();
  return out;
}

// The 2026-07-28 `x-mcp-header` check of a tools/call over HTTP: every parameter of the tool's `schema` that
// names a header (`"x-mcp-header": "Region"`) and has a string, integer or boolean value in `arguments` must
// come with `Mcp-Param-Region` (found lower-case in `headers`, already decoded) equal to that value's text; a
// null or absent value needs none. Else -32020 naming the header and the argument (JSON pointer).
inline void check_param_headers(const nlohmann::json& schema,
                                const nlohmann::json& arguments,
                                const std::map<std::string, std::optional<std::string>>& headers) {
  const auto props = schema.is_object() ? schema.find("properties") : schema.end();
  if (props == schema.end() || !props->is_object() || !arguments.is_object()) return;
  for (const auto& [name, def] : props->items()) {
    const auto h = def.is_object() ? def.find("x-mcp-header") : def.end();
    if (h == def.end() || !h->is_string() || h->get_ref<const std::string&>().empty()) continue;
    const auto v = arguments.find(name);
    if (v == arguments.end() || v->is_null()) continue;
    std::string text;
    if (v->is_string()) text = v->get<std::string>();
    else if (v->is_boolean()) text = v->get<bool>() ? "true" : "false";
    else if (v->is_number_integer()) text = v->dump();
    else continue;  // not a primitive the binding mirrors
    std::string key = h->get<std::string>();
    for (char& c : key)
      if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
    const auto got = headers.find(key);
    const std::string header = str_cat("Mcp-Param-", utf8_prefix(h->get_ref<const std::string&>(), 64));
    const std::string at = str_cat("/arguments/", pointer_token(name));
    if (got == headers.end())
      throw mcp_server_error(rpc_header_mismatch, str_cat("Header mismatch: ", header, " is missing (", at, " is set)"));
    if (!got->second)
      throw mcp_server_error(rpc_header_mismatch, str_cat("Header mismatch: ", header, " is not valid Base64"));
    if (*got->second != text)
      throw mcp_server_error(rpc_header_mismatch, str_cat("Header mismatch: ", header, " does not match ", at));
  }
}

// Methods of the legacy era that 2026-07-28 removed: a modern request for one is "Method not found".
inline bool mcp_method_is_legacy_only(std::string_view method) {
  return method == "initialize" || method == "ping" || method == "logging/setLevel" ||
         method == "resources/subscribe" || method == "resources/unsubscribe" || method.rfind("notifications/", 0) == 0;
}

// A modern result: `resultType` "complete"; a cacheable one (server/discover, the lists, resources/read) also
// gets the caching hints, the conservative ones: no reuse (`ttlMs` 0), and only within the same authorization
// context (`cacheScope` "private").
inline void mcp_mark_modern_result(nlohmann::json& result, bool cacheable) {
  if (!result.is_object()) return;
  if (!result.contains("resultType")) result["resultType"] = "complete";
  if (!cacheable) return;
  if (!result.contains("ttlMs")) result["ttlMs"] = 0;
  if (!result.contains("cacheScope")) result["cacheScope"] = "private";
}

}  // namespace tool_effects::detail

#endif  // TOOL_EFFECTS_MCP_SERVER_DETAIL_MODERN_HPP
