// tool_effects/mcp/client.hpp — internal to <tool_effects/mcp.hpp>: an MCP
// client over the stdio transport (the protocol versions of
// `mcp_protocol_versions()`).
//
//   boost::asio::thread_pool pool(2);                         // docs/mcp-client.md, "Pool size"
//   auto client = tool_effects::mcp_client::launch(pool, {"node", "server.js", "/workspace"});
//   nlohmann::json tools = client.list_tools();               // {"tools": [...]}, every page
//   nlohmann::json r = client.call("read_text_file", {{"path", "/workspace/a.txt"}});
//   co_await client.async_call(...);                           // the awaitable form
//
// The server is a child process (Boost.Process v2): newline-delimited
// JSON-RPC 2.0 on its stdin/stdout; its stderr is kept apart, the last lines
// in a ring buffer quoted by errors. Every exchange runs on one strand of the
// given executor; any number of requests may be in flight. The public
// declarations come first; the machinery (the role-neutral JSON-RPC session,
// `detail::mcp_session`; the client's connection on it,
// `detail::mcp_connection`; the state every copy of a client shares,
// `detail::mcp_client_state`) is in mcp/client/detail/, and the members' definitions
// in mcp/client/impl/client.ipp, included at the end (header-only, the default) or
// compiled once by <tool_effects/mcp/client/impl/src.hpp> with
// TOOL_EFFECTS_SEPARATE_COMPILATION (CMake: tool_effects::mcp_compiled). The
// child process's transport comes with <tool_effects/mcp.hpp>.
#ifndef TOOL_EFFECTS_MCP_CLIENT_HPP
#define TOOL_EFFECTS_MCP_CLIENT_HPP

#include <tool_effects/detail/config.hpp>  // first: BOOST_PROCESS_USE_STD_FS

#include <chrono>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <future>
#include <initializer_list>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>

#include <tool_effects/mcp/capabilities.hpp>
#include <tool_effects/mcp/errors.hpp>
#include <tool_effects/mcp/logging.hpp>
#include <tool_effects/mcp/versions.hpp>
#include <tool_effects/version.hpp>

namespace tool_effects {

namespace detail {
class mcp_client_state;
struct mcp_shared;
}  // namespace detail

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

/// A client of one MCP server over stdio. Copies share the server; the last
/// copy's destruction shuts it down (posted to the executor; the child is
/// killed at the latest when the client's state is destroyed). Guarantees:
/// every request ends — with its result or an `mcp_error` — within its
/// timeout or as soon as the server exits or misbehaves; requests may be
/// issued from any thread and any number may be in flight.
///
/// Blocking members (`list_tools`, `call`, `request`, `ping`, `restart`,
/// `close`, `launch`) need the executor to be run by other threads (a
/// thread_pool is); called from a thread that runs it they throw
/// std::logic_error. Awaitable members (`async_*`) may run anywhere.
class mcp_client {
 public:
  /// A client of the server started by `argv` (not started yet: see
  /// `start`, or use `launch`). `executor`: an Asio executor or an execution
  /// context (thread_pool, io_context).
  template <class Executor>
  mcp_client(Executor&& executor, std::vector<std::string> argv, mcp_client_options options = {});

  /// Starts the server and completes the initialize handshake; throws
  /// `mcp_error` (launch_failed, unsupported_protocol_version, timeout, ...).
  template <class Executor>
  static mcp_client launch(Executor&& executor, std::vector<std::string> argv, mcp_client_options options = {});

  /// A client of the MCP server at an HTTP endpoint (Streamable HTTP),
  /// connected and initialized; throws as `launch`. Declared here, defined
  /// in <tool_effects/mcp/http.hpp> (include it to call this: stdio users do
  /// not compile Beast). Everything else is the same over both transports.
  template <class Executor>
  static mcp_client connect(Executor&& executor, const mcp_http_endpoint& endpoint, mcp_client_options options = {});

  /// Starts (or restarts) the server and initializes it.
  void start();
  boost::asio::awaitable<void> async_start();

  /// Stops the server cleanly (closes stdin, waits, SIGTERM, SIGKILL) and
  /// starts it again; pending requests fail with `server_exited`.
  void restart();
  boost::asio::awaitable<void> async_restart();

  /// Shuts the server down cleanly; later requests fail with `closed`.
  /// Takes at most `shutdown_sign` + 2 x `shutdown_grace` (then SIGKILL);
  /// a server that neither exits nor closes its stdout within
  /// `shutdown_sign` of its stdin closing gets SIGTERM then. Several
  /// clients: `mcp_close_all` closes them concurrently.
  void close();
  boost::asio::awaitable<void> async_close();
  /// Starts `close()` and returns at once, never blocking; the future is
  /// ready when the server is down.
  [[nodiscard]] std::future<void> start_close();

  /// One JSON-RPC request (restarting a dead server first when allowed).
  /// Returns its result; throws `mcp_rpc_error`, `mcp_transient_error`, ...
  boost::asio::awaitable<nlohmann::json> async_request(std::string method, nlohmann::json params = nullptr,
                                                       std::optional<std::chrono::milliseconds> timeout = {});
  nlohmann::json request(std::string method, nlohmann::json params = nullptr,
                         std::optional<std::chrono::milliseconds> timeout = {});

  /// `ping` (a modern server has no `ping`: `server/discover` instead);
  /// throws on failure.
  boost::asio::awaitable<void> async_ping();
  void ping();

  /// Every tool of the server, all pages of tools/list followed:
  /// `{"tools": [...]}` (the shape `import_mcp_tools` reads).
  boost::asio::awaitable<nlohmann::json> async_list_tools();
  nlohmann::json list_tools();

  /// tools/call: the result object (`content`, `structuredContent`, ...).
  /// `isError: true` throws `mcp_tool_error` quoting the text content.
  /// With `on_progress`, the request carries a progress token of its own
  /// (`_meta.progressToken`) and the server's notifications/progress for it
  /// go to `on_progress` (on the client's strand; must not block) until the
  /// call ends; later ones are dropped.
  boost::asio::awaitable<nlohmann::json> async_call(std::string tool, nlohmann::json arguments = nlohmann::json::object(),
                                                    std::optional<std::chrono::milliseconds> timeout = {},
                                                    mcp_call_progress on_progress = {});
  nlohmann::json call(std::string tool, nlohmann::json arguments = nlohmann::json::object(),
                      std::optional<std::chrono::milliseconds> timeout = {}, mcp_call_progress on_progress = {});

  /// Sends notifications/roots/list_changed to the live server (none is
  /// started for it; a server started later asks anyway). Never blocks.
  /// Throws std::logic_error when `options.roots` is not set (the
  /// capability is not declared).
  void notify_roots_list_changed();

  /// The server's name (errors quote it): `options.name`, else the server's
  /// serverInfo.name once the first initialize succeeded (argv's before).
  /// Fixed from then on; read it from another thread only after `start`
  /// (`launch`) returned.
  [[nodiscard]] const std::string& name() const noexcept;
  /// The process id of the current (or last) server process; -1 before
  /// start. Changes when the server is restarted.
  [[nodiscard]] int pid() const noexcept;
  /// The last lines the server wrote to stderr (oldest first).
  [[nodiscard]] std::vector<std::string> stderr_tail() const;
  /// Responses whose id matched no pending request (late or invented).
  [[nodiscard]] std::uint64_t unknown_responses() const noexcept;
  /// Requests that timed out.
  [[nodiscard]] std::uint64_t timeouts() const noexcept;
  /// Messages without an id that the bounded parse refused (too deep,
  /// duplicate keys) and that were therefore ignored.
  [[nodiscard]] std::uint64_t ignored_messages() const noexcept;
  /// The last initialize result (`protocolVersion`, `capabilities`,
  /// `serverInfo`); from a modern server the `server/discover` result, with
  /// `protocolVersion` (the selected one) and `serverInfo` (from its `_meta`)
  /// added, so both eras read alike. Null before the first. A cheap read from
  /// any thread.
  [[nodiscard]] nlohmann::json server_info() const;
  /// The negotiated protocol version; empty before the first handshake.
  [[nodiscard]] std::string protocol_version() const;
  /// How many times the server was restarted after it died (bounded by
  /// `max_restarts`); explicit `restart()`s are not counted.
  [[nodiscard]] std::size_t restarts() const;

 private:
  using state_ptr = std::shared_ptr<detail::mcp_client_state>;
  explicit mcp_client(state_ptr s) noexcept : state_(std::move(s)) {}
  static state_ptr make_state(boost::asio::any_io_executor ex, std::shared_ptr<detail::mcp_shared> shared);
  // The non-template parts of the constructor (impl/stdio.ipp) and of `connect` (impl/http.ipp): what a
  // program compiles once with TOOL_EFFECTS_SEPARATE_COMPILATION.
  static state_ptr make_stdio_state(boost::asio::any_io_executor ex, std::vector<std::string> argv,
                                    mcp_client_options options);
  static state_ptr make_http_state(boost::asio::any_io_executor ex, const mcp_http_endpoint& endpoint,
                                   mcp_client_options options);
  // The coroutines own the state (not `this`): an awaitable outlives the handle that made it.
  static boost::asio::awaitable<nlohmann::json> request_op(const state_ptr& s, std::string method,
                                                           nlohmann::json params,
                                                           std::optional<std::chrono::milliseconds> timeout);
  static boost::asio::awaitable<void> ping_op(state_ptr s);
  static boost::asio::awaitable<nlohmann::json> list_tools_op(state_ptr s);
  static boost::asio::awaitable<nlohmann::json> call_op(state_ptr s, std::string tool, nlohmann::json arguments,
                                                        std::optional<std::chrono::milliseconds> timeout,
                                                        mcp_call_progress on_progress);
  // Shuts the server down when the last copy goes (without blocking).
  struct closer {
    void operator()(detail::mcp_client_state* p) const;
  };
  template <class T>
  T blocking(boost::asio::awaitable<T> op);

  friend void mcp_close_all(std::span<const mcp_client> clients);
  state_ptr state_;
};

/// Closes every client concurrently (as `close()` each, waiting for all):
/// the time of the slowest, not the sum. Copies share their server, so a
/// copy closes it too. Blocking, as `close()`; rethrows the first error
/// after every close has ended.
TOOL_EFFECTS_DECL void mcp_close_all(std::span<const mcp_client> clients);
template <class... Clients>
  requires(std::same_as<Clients, mcp_client> && ...)
void mcp_close_all(const Clients&... clients) {
  const std::vector<mcp_client> all{clients...};
  mcp_close_all(std::span<const mcp_client>(all));
}

/// The full path of `program` found in PATH (as `launch` looks up a bare
/// argv[0]); empty when it is not there.
TOOL_EFFECTS_DECL std::filesystem::path mcp_find_program(const std::string& program);

/// The text of a tools/call result: its `text` content items joined by "\n"
/// (other content as compact JSON).
TOOL_EFFECTS_DECL std::string mcp_text(const nlohmann::json& result);

}  // namespace tool_effects

#if TOOL_EFFECTS_HEADER_ONLY
#include <tool_effects/mcp/client/impl/client.ipp>
#endif

#endif  // TOOL_EFFECTS_MCP_CLIENT_HPP
