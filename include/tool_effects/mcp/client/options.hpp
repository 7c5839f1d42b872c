// tool_effects/mcp/client/options.hpp: how a client starts and talks to its server (`mcp_client_options`), for
// <tool_effects/mcp/client.hpp> and the client's machinery in mcp/client/detail/.
#ifndef TOOL_EFFECTS_MCP_CLIENT_OPTIONS_HPP
#define TOOL_EFFECTS_MCP_CLIENT_OPTIONS_HPP

#include <tool_effects/detail/config.hpp>

#include <chrono>
#include <cstddef>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <tool_effects/json/bounded_parse.hpp>
#include <tool_effects/mcp/capabilities.hpp>
#include <tool_effects/mcp/logging.hpp>
#include <tool_effects/mcp/versions.hpp>
#include <tool_effects/version.hpp>

namespace tool_effects {

struct mcp_http_endpoint;  // <tool_effects/mcp/http.hpp>

/// How a server is started and talked to. Every member has a usable default.
struct mcp_client_options {
  /// Name used in errors, logs and (through `add_mcp_server`) approval
  /// requests. Empty: derived from argv (the script for node/python
  /// launchers, else the program) until the first initialize, then the
  /// server's `serverInfo.name` (e.g. "secure-filesystem-server"; at most 64
  /// bytes of [A-Za-z0-9._/@+-], else the argv name stays). A server chooses
  /// its serverInfo.name: give `name` to decide it yourself.
  std::string name{};
  /// Variables set for the server, over the inherited environment (or alone).
  std::map<std::string, std::string> environment{};
  bool inherit_environment = true;
  /// Working directory of the server; none: the client's.
  std::optional<std::filesystem::path> working_directory{};
  /// Default time limit of a request (a call may give its own).
  std::chrono::milliseconds request_timeout = std::chrono::seconds(30);
  /// Time limit of the whole handshake, one deadline from its start: the
  /// `server/discover` probe (at most `discover_timeout` of it), `initialize`
  /// and, over HTTP, the acceptance of `notifications/initialized`.
  std::chrono::milliseconds initialize_timeout = std::chrono::seconds(20);
  /// Shutdown: after closing stdin, how long to wait for the exit before
  /// SIGTERM, and again before SIGKILL.
  std::chrono::milliseconds shutdown_grace = std::chrono::seconds(2);
  /// Shutdown: a server that within this time after stdin closed has
  /// neither exited nor closed its stdout shows no sign of exiting and gets
  /// SIGTERM at once (capped by `shutdown_grace`).
  std::chrono::milliseconds shutdown_sign = std::chrono::milliseconds(200);
  /// Longest line accepted from the server; longer is a protocol_error.
  /// Every line is also parsed with the library's depth limit
  /// (`detail::max_json_depth` levels, json/error.hpp).
  std::size_t max_line_bytes = std::size_t{16} << 20;
  /// Most bytes waiting to be written to the server's stdin: a server that
  /// stops reading while more is queued is stopped (protocol_error for every
  /// pending request). A single larger request is still sent on its own.
  std::size_t max_write_queue_bytes = std::size_t{16} << 20;
  /// Caps of one `list_tools()`: pages followed, and the bytes of the tools
  /// gathered (compact JSON); past either it throws protocol_error.
  std::size_t max_list_tools_pages = 1000;
  std::size_t max_list_tools_bytes = std::size_t{16} << 20;
  /// How many of the server's last stderr lines are kept (and quoted).
  std::size_t stderr_lines = 20;
  /// Versions accepted, in order of preference (default
  /// `mcp_protocol_versions()`). With a modern version among them the client
  /// first probes with `server/discover` (the first modern one in `_meta`);
  /// with a legacy one it falls back to `initialize`, offering the first
  /// legacy one. Only legacy versions: no probe, `initialize` at once.
  std::vector<std::string> protocol_versions = mcp_protocol_versions();
  /// How long the `server/discover` probe may go unanswered before the
  /// server is taken for a legacy one (the specification's "reasonable
  /// timeout"; a legacy server usually answers it at once with an error, and a
  /// modern one at once with its versions). It counts against
  /// `initialize_timeout`, and the probe never waits more than a quarter of
  /// that: a server that ignores the probe still has time for `initialize`. A
  /// client remembers a legacy server and does not probe it again on restarts.
  std::chrono::milliseconds discover_timeout = std::chrono::seconds(1);
  /// `clientInfo` of initialize, and `io.modelcontextprotocol/clientInfo` of
  /// every modern request (the version is the library's, version.hpp).
  nlohmann::json client_info = {{"name", "tool_effects"}, {"version", TOOL_EFFECTS_VERSION_STRING}};
  /// Restart a server that exited (or was stopped after a protocol error)
  /// on the next request, at most `max_restarts` times in the client's life.
  bool restart_on_exit = true;
  std::size_t max_restarts = 16;
  /// Notification handlers, called on the client's strand (must not block;
  /// exceptions are swallowed): tools/list_changed, message (logging),
  /// progress, and any other notification. From a 2026-07-28 server list
  /// changes come on a `subscriptions/listen` the client keeps open when the
  /// server declares them and a handler is set (`on_tools_list_changed`;
  /// prompts and resources: `on_notification`); docs/mcp-client.md, "Protocol versions".
  std::function<void()> on_tools_list_changed{};
  std::function<void(const nlohmann::json& params)> on_log{};
  /// The lowest level of the log messages asked of a 2026-07-28 server: sent
  /// as `_meta` `io.modelcontextprotocol/logLevel` on every request (such a
  /// server sends `notifications/message` only for requests that carry it).
  /// `none` (the default) sends none. Legacy servers are not told
  /// (no `logging/setLevel`): they log at their own level.
  mcp_log_level log_level = mcp_log_level::none;
  std::function<void(const nlohmann::json& params)> on_progress{};
  std::function<void(const std::string& method, const nlohmann::json& params)> on_notification{};
  /// Client capabilities (mcp/capabilities.hpp, docs/mcp.md "Client
  /// capabilities"): each is declared in `initialize` only when set; a
  /// server's request without its handler is refused (-32601). Handlers run
  /// on the executor (not the strand) and may block: at most
  /// `max_handler_requests` at once (more: refused with -32000), keep it below
  /// the executor's thread count; each request is answered within
  /// `handler_timeout` (then -32603), a throwing handler fails that request alone.
  mcp_elicitation_handler on_elicitation{};          ///< form mode
  mcp_url_elicitation_handler on_url_elicitation{};  ///< URL mode (declared as `elicitation.url`)
  mcp_elicitation_complete_handler on_elicitation_complete{};  ///< URL mode's completions (strand, must not block)
  mcp_sampling_handler on_sampling{};
  /// With `on_sampling`: declare `sampling.tools` (2025-11-25), so requests
  /// may carry `tools`, `toolChoice` and tool_use / tool_result messages
  /// (checked, docs/mcp.md); without it they are refused (-32602).
  bool sampling_tools = false;
  mcp_roots_provider roots{};
  std::chrono::milliseconds handler_timeout = std::chrono::minutes(10);
  std::size_t max_handler_requests = 2;
};

}  // namespace tool_effects

#endif  // TOOL_EFFECTS_MCP_CLIENT_OPTIONS_HPP
