// The client the official MCP conformance suite (@modelcontextprotocol/conformance) runs: the suite starts a
// scenario's server, then this program with the server's URL as the last argument and the scenario's name in
// MCP_CONFORMANCE_SCENARIO (./scripts/conformance; `--client-command` prints the command line).
//
// What it does is what an application of the library does: connect over Streamable HTTP
// (<tool_effects/mcp/http.hpp>), list the tools, call each (arguments made from its input schema), close;
// an elicitation is accepted as is, so the schema's defaults (SEP-1034) are what goes back.
// Authorization (the auth/ scenarios, <tool_effects/mcp/oauth.hpp>) is always configured: the suite's
// authorization server redirects at once, so the user agent is mcp_oauth_follow_redirect (no browser); a
// pre-registered client comes from the suite's MCP_CONFORMANCE_CONTEXT (client_id, client_secret, and the issuer
// it belongs to: the context's `issuer`, else, for suites that do not give it, the first authorization server
// of the server's protected resource metadata, as an application configured by hand would know it), and the
// Client ID Metadata Document URL is the one the suite expects. The 2025-03-26 fallback is on (the suite has
// scenarios of that version). A server that never answers 401 never uses any of it.
// Every scenario is served by that one path, with two inputs from the suite: when the context names
// `toolCalls` (each a tool's name and arguments, e.g. http-custom-headers: a null argument must send no
// Mcp-Param header), exactly those calls are made, with the suite's arguments, instead of one call per tool; and
// json-schema-2020-12-preservation, the one scenario that names a step of its own, gets the inputSchema of
// json_schema_2020_12_tool as it was listed echoed back through json_schema_echo's `schema` argument.
// Otherwise the scenario's name only goes to the log. Exit status: 0 when the session ran (a tool's own
// failure is reported, not fatal), 1 when connecting or listing failed.
#include <chrono>
#include <cstdlib>
#include <exception>
#include <iostream>
#include <optional>
#include <string>
#include <string_view>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/thread_pool.hpp>

#include <tool_effects/mcp.hpp>
#include <tool_effects/mcp/http.hpp>
#include <tool_effects/mcp/oauth.hpp>

namespace {

// Arguments for a tool: every property of a simple type in its input schema gets a plain value.
nlohmann::json arguments_for(const nlohmann::json& tool) {
  nlohmann::json args = nlohmann::json::object();
  const auto schema = tool.find("inputSchema");
  if (schema == tool.end() || !schema->is_object()) return args;
  const auto props = schema->find("properties");
  if (props == schema->end() || !props->is_object()) return args;
  for (const auto& [name, p] : props->items()) {
    const std::string type = p.is_object() && p.contains("type") && p["type"].is_string() ? p["type"].get<std::string>() : "";
    if (type == "number" || type == "integer") args[name] = 1;
    else if (type == "string") args[name] = "test";
    else if (type == "boolean") args[name] = true;
  }
  return args;
}

// The first authorization server of the protected resource metadata of the MCP server at `url` (RFC 9728
// well-known URIs, path-based first), "" when there is none.
std::string metadata_issuer(const std::string& url) {
  namespace d = tool_effects::detail;
  const auto p = d::mcp_oauth_split(url);
  for (const std::string& u : {p.origin + "/.well-known/oauth-protected-resource" + p.path,
                              p.origin + "/.well-known/oauth-protected-resource"}) {
    boost::asio::io_context io;
    std::optional<d::mcp_oauth_response> r;
    boost::asio::co_spawn(io,
                          d::mcp_oauth_fetch(d::oauth_http::verb::get, u, {}, {}, std::chrono::seconds(10),
                                             64 * 1024, std::string()),
                          [&](std::exception_ptr e, d::mcp_oauth_response v) {
                            if (!e) r = std::move(v);
                          });
    io.run();
    if (!r || r->status != 200) continue;
    const auto j = nlohmann::json::parse(r->body, nullptr, false);
    if (j.is_object() && j.contains("authorization_servers") && j["authorization_servers"].is_array() &&
        !j["authorization_servers"].empty() && j["authorization_servers"][0].is_string())
      return j["authorization_servers"][0].get<std::string>();
  }
  return {};
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::cerr << "usage: conformance_client [options...] <server-url>\n";
    return 2;
  }
  const std::string url = argv[argc - 1];
  const char* scenario = std::getenv("MCP_CONFORMANCE_SCENARIO");
  std::cerr << "scenario " << (scenario ? scenario : "(none)") << ", server " << url << '\n';
  boost::asio::thread_pool pool(2);
  tool_effects::mcp_client_options options;
  options.name = "conformance";
  options.request_timeout = std::chrono::seconds(20);
  options.on_log = [](const nlohmann::json& p) { std::cerr << "log: " << p.dump() << '\n'; };
  // A user who accepts every form without typing anything: the library fills in the schema's defaults
  // (SEP-1034) and checks the content before it goes back.
  options.on_elicitation = [](const tool_effects::mcp_elicitation_request& r) {
    std::cerr << "elicitation: " << r.message << '\n';
    return tool_effects::mcp_elicitation_response::accept();
  };
  tool_effects::mcp_http_endpoint endpoint{.url = url};
  tool_effects::mcp_oauth_options auth;
  auth.redirect_uri = "http://localhost:3000/callback";
  auth.client_name = "tool_effects conformance client";
  auth.client_metadata_url = "https://conformance-test.local/client-metadata.json";
  auth.legacy_discovery = true;
  auth.user_agent = [](const std::string& authorization_url) {
    return tool_effects::mcp_oauth_follow_redirect(authorization_url);
  };
  nlohmann::json tool_calls;  // the context's toolCalls: [{name, arguments}], when it has them
  if (const char* context = std::getenv("MCP_CONFORMANCE_CONTEXT")) {
    const nlohmann::json c = nlohmann::json::parse(context, nullptr, false);
    if (c.is_object() && c.contains("toolCalls") && c["toolCalls"].is_array()) tool_calls = c["toolCalls"];
    if (c.is_object() && c.contains("client_id") && c["client_id"].is_string()) {
      auth.client_id = c["client_id"].get<std::string>();
      if (c.contains("client_secret") && c["client_secret"].is_string())
        auth.client_secret = c["client_secret"].get<std::string>();
      auth.client_issuer = c.contains("issuer") && c["issuer"].is_string() ? c["issuer"].get<std::string>()
                                                                            : metadata_issuer(url);
    }
  }
  endpoint.authorization = auth;
  try {
    auto client = tool_effects::mcp_client::connect(pool, endpoint, options);
    std::cerr << "initialized: " << client.protocol_version() << '\n';
    const nlohmann::json tools = client.list_tools()["tools"];
    const auto call = [&](const std::string& name, const nlohmann::json& args) {
      try {
        const nlohmann::json r = client.call(name, args);
        std::cerr << "tool " << name << ": " << tool_effects::mcp_text(r) << '\n';
      } catch (const tool_effects::mcp_error& e) {
        std::cerr << "tool " << name << ": " << e.what() << '\n';
      }
    };
    if (tool_calls.is_array()) {
      for (const auto& c : tool_calls)
        if (c.is_object() && c.contains("name") && c["name"].is_string())
          call(c["name"].get<std::string>(),
               c.contains("arguments") && c["arguments"].is_object() ? c["arguments"] : nlohmann::json::object());
    } else if (scenario && std::string_view(scenario) == "json-schema-2020-12-preservation") {
      for (const auto& tool : tools)
        if (tool.is_object() && tool.value("name", "") == "json_schema_2020_12_tool" && tool.contains("inputSchema"))
          call("json_schema_echo", {{"schema", tool["inputSchema"]}});
    } else {
      for (const auto& tool : tools)
        if (tool.is_object() && tool.contains("name") && tool["name"].is_string())
          call(tool["name"].get<std::string>(), arguments_for(tool));
    }
    client.close();
  } catch (const std::exception& e) {
    std::cerr << e.what() << '\n';
    return 1;
  }
  return 0;
}
