// tool_effects/mcp/gateway/config.hpp — the configuration of an effects gateway (`mcp_gateway`,
// <tool_effects/mcp/gateway.hpp>; the program tool-effects-gateway): the `mcpServers` object Claude Desktop,
// Claude Code and Cursor use, plus what the gateway needs to know of each server and of itself.
//
//   {"mcpServers": {
//      "fs":   {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "/srv"],
//               "trust": "trusted", "overlay": "fs-overlay.json",
//               "tools": {"write_file": {"writes": ["fs"], "target_arg": "path", "approval": "allow"}}},
//      "web":  {"url": "https://example.com/mcp", "headers": {"Authorization": "Bearer ${WEB_TOKEN}"}}},
//    "gateway": {"journal": "gateway.db", "audit": "stderr"}}
//
// Strict: an unknown key, a wrong type, an unknown effect slug or a bad resource path is a
// `gateway_config_error` naming the file, the server, the tool and the field (a JSON pointer), never a silent
// default. Reference: docs/gateway.md ("The configuration").
#ifndef TOOL_EFFECTS_MCP_GATEWAY_CONFIG_HPP
#define TOOL_EFFECTS_MCP_GATEWAY_CONFIG_HPP

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <initializer_list>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include <tool_effects/json.hpp>

namespace tool_effects {

namespace detail {
// Looks an environment variable up (${VAR} in the configuration); none: unset.
using gateway_env = std::function<std::optional<std::string>(const std::string&)>;
}  // namespace detail

/// What the gateway does with a call that needs approval (destructive or unknown effects), per tool:
/// `ask` the user at the client (elicitation), `allow` it, or `deny` every call of the tool.
enum class gateway_approval : std::uint8_t { ask, allow, deny };

/// Stable slugs: "ask", "allow", "deny".
constexpr std::string_view to_string(gateway_approval a) noexcept {
  return a == gateway_approval::allow ? "allow" : a == gateway_approval::deny ? "deny" : "ask";
}

/// A configuration the gateway refuses. `what()` names the file, the server and the tool (when the error is
/// inside one) and the field as a JSON pointer into that file, then quotes the bad value:
/// `gateway.json: server "fs", tool "write_file": at /mcpServers/fs/tools/write_file/effects/0: unknown
/// side-effect tag: "bogus"`.
class gateway_config_error : public json_error {
 public:
  gateway_config_error(std::string file, std::string server, std::string tool, std::string pointer,
                       std::string message, std::string_view input,
                       json_error_reason reason = json_error_reason::invalid_value)
      : json_error(std::move(pointer), std::move(message), input, context(file, server, tool), reason),
        file_(std::move(file)),
        server_(std::move(server)),
        tool_(std::move(tool)) {}

  [[nodiscard]] const std::string& file() const noexcept { return file_; }    ///< the file (or "" when none)
  [[nodiscard]] const std::string& server() const noexcept { return server_; }  ///< the server's key ("" outside one)
  [[nodiscard]] const std::string& tool() const noexcept { return tool_; }      ///< the tool ("" outside one)

 private:
  static std::string context(const std::string& file, const std::string& server, const std::string& tool) {
    std::string out = file.empty() ? std::string("gateway config") : file;
    out += ':';
    if (!server.empty()) out += detail::str_cat(" server ", detail::quote_input(server, 100));
    if (!tool.empty()) out += detail::str_cat(server.empty() ? " " : ", ", "tool ", detail::quote_input(tool, 100));
    if (!server.empty() || !tool.empty()) out += ':';
    return out;
  }
  std::string file_, server_, tool_;
};

/// What the configuration says of one tool of a server (under the server's own name for it).
struct gateway_tool_config {
  std::string name{};                         ///< the server's name for the tool
  std::optional<dynamic_tool> declaration{};  ///< its effects, scoped resources and identity (an overlay entry)
  std::optional<gateway_approval> approval{};  ///< its approval rule (none: the server's)
  std::string file{};                          ///< where it was declared, for errors: the file...
  std::string pointer{};                       ///< ...and the JSON pointer in it
};

/// How the gateway reaches etcd (the coordinator across replicas, or the journal).
struct gateway_etcd_config {
  std::vector<std::string> endpoints{};        ///< client URLs, tried in turn
  std::string prefix = "tool_effects/";        ///< replicas coordinate iff they share it
  std::chrono::seconds ttl{10};                ///< the lease: how long a dead replica's grants block others
  std::chrono::milliseconds request_timeout{3000};
  std::string user{}, password{};              ///< etcd authentication (empty: none)
  std::string ca_file{}, cert_file{}, key_file{};  ///< https endpoints
};

/// One upstream MCP server (an entry of `mcpServers`).
struct gateway_server_config {
  std::string name{};                          ///< its key in mcpServers: errors, approvals, prefixes name it
  std::vector<std::string> command{};          ///< stdio: the program and its args (empty for HTTP)
  std::map<std::string, std::string> env{};    ///< stdio: set over the gateway's environment
  std::optional<std::string> cwd{};            ///< stdio: working directory
  std::string url{};                           ///< Streamable HTTP endpoint (empty for stdio)
  std::map<std::string, std::string> headers{};  ///< HTTP: sent with every request, never logged
  server_trust trust = server_trust::untrusted;  ///< whether its annotations (and `_meta` accesses) are believed
  std::optional<std::string> prefix{};         ///< put before each tool name ("fs" -> "fs__read"); none: only on a clash
  gateway_approval approval = gateway_approval::ask;  ///< its tools' approval rule unless a tool has its own
  std::vector<gateway_tool_config> tools{};    ///< declarations and approvals, from `overlay` and `tools`
  std::size_t max_restarts = 16;               ///< restarts of a server that died, in the gateway's life
  std::chrono::milliseconds request_timeout{60000};  ///< a call to it (the client's timeout: a transient failure)
  std::string pointer{};                       ///< "/mcpServers/<name>" in the configuration file
};

/// The HTTP listener as an OAuth 2.1 resource server (`gateway.http.authorization`): every request needs a bearer
/// token for `resource`, verified as a JWT against the issuer's key set or by RFC 7662 introspection. Made into an
/// `mcp_resource_server` by `make_gateway_authorization` (<tool_effects/mcp/gateway/authorization.hpp>: OpenSSL).
struct gateway_authorization_config {
  std::string resource{};                            ///< the gateway's canonical URI: a token's audience
  std::vector<std::string> authorization_servers{};  ///< where clients get tokens (RFC 9728); default: the issuer
  std::vector<std::string> required_scopes{};        ///< scopes every request needs
  bool scopes_from_effects = false;  ///< a tools/call needs its tool's access scopes (`mcp_scopes_from_effects`)
  std::string verifier{};            ///< "jwt" or "introspection"
  std::string issuer{};              ///< the tokens' `iss` (jwt; for introspection, the answer's, when given)
  std::string jwks_url{};            ///< jwt: the issuer's key set
  std::vector<std::string> algorithms{};  ///< jwt: among RS256 and ES256 (empty: both)
  std::string endpoint{}, client_id{}, client_secret{};  ///< introspection (client_secret_basic)
  std::string ca_file{};             ///< https to the issuer: the CA to verify it with
  bool require_https = true;         ///< false: plain http to a host that is not loopback
};


/// The whole configuration.
struct gateway_config {
  std::string file{};                          ///< the file it came from (errors name it)
  std::vector<gateway_server_config> servers{};  ///< by name
  std::string name = "tool-effects-gateway";   ///< serverInfo.name downstream
  /// One coordinator for every client: in process (default), or etcd across replicas.
  std::optional<gateway_etcd_config> etcd_coordinator{};
  std::chrono::milliseconds wait_limit{0};     ///< longest wait for a conflicting call (0: none)
  std::string sqlite_journal{};                ///< the SQLite journal's path (empty: none)
  std::optional<gateway_etcd_config> etcd_journal{};  ///< or the etcd journal
  std::size_t retry_attempts = 3;              ///< attempts of a retry-safe call after transient upstream failures
  std::chrono::milliseconds retry_base_delay{100};
  std::string audit{};                         ///< "" (none), "stderr", or a file (one JSON line per call)
  std::size_t max_concurrent_calls = 16;       ///< calls dispatched at once, over every client
  /// Threads of the gateway's own I/O and tools (HTTP, the upstream clients, the dispatcher; the server's caller
  /// threads come on top). 0: 1 without a journal (a call then hops between threads least), 2 with one (a
  /// journal's fsync holds its thread).
  std::size_t threads = 0;
  std::chrono::milliseconds shutdown_grace{10000};  ///< SIGTERM: how long calls under way may finish
  std::string http_path = "/mcp";              ///< the Streamable HTTP endpoint's path
  std::string metrics_path = "/metrics";       ///< where the HTTP listener serves the metrics ("": not served)
  std::optional<gateway_authorization_config> authorization{};  ///< the HTTP listener's (none: every caller)
  std::vector<std::string> allowed_hosts{}, allowed_origins{};  ///< beyond loopback (DNS-rebinding protection)
};

}  // namespace tool_effects

#include <tool_effects/mcp/gateway/detail/config_reader.hpp>

namespace tool_effects {

/// The configuration in `j` (the document of `file`, whose directory `base_dir` relative paths are resolved
/// against: overlay files, the journal, the audit log). `${VAR}` and `${VAR:-default}` in commands, args, env,
/// cwd, url and headers are taken from `env` (default: the process environment). Throws
/// `gateway_config_error`. Upstream tool names are checked later, against each server's tools/list
/// (`mcp_gateway`'s constructor), with errors of the same form.
inline gateway_config parse_gateway_config(const nlohmann::json& j, std::string file = "",
                                           std::filesystem::path base_dir = {}, detail::gateway_env env = {}) {
  try {
    check_json_depth(j);
  } catch (const json_error& e) {
    throw gateway_config_error(file, "", "", e.pointer(), e.message(), e.input(), e.reason());
  }
  return detail::gateway_config_reader(std::move(file), std::move(base_dir), std::move(env)).read(j);
}

/// The configuration in the file at `path` (at most 16 MiB of strict JSON: no duplicate keys, depth 64).
/// Throws `gateway_config_error` (an unreadable file included).
inline gateway_config load_gateway_config(const std::filesystem::path& path, detail::gateway_env env = {}) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw gateway_config_error(path.string(), "", "", "", "cannot read the configuration file", path.string());
  std::ostringstream ss;
  ss << in.rdbuf();
  nlohmann::json j;
  try {
    j = parse_untrusted_json(ss.str(), json_limits{}, "");
  } catch (const json_error& e) {
    throw gateway_config_error(path.string(), "", "", e.pointer(), e.message(), e.input(), e.reason());
  }
  return parse_gateway_config(j, path.string(), path.parent_path(), std::move(env));
}

}  // namespace tool_effects

#endif  // TOOL_EFFECTS_MCP_GATEWAY_CONFIG_HPP
