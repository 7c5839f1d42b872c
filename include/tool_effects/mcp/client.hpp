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
#include <tool_effects/mcp/client/options.hpp>
#include <tool_effects/version.hpp>

namespace tool_effects {

namespace detail {
class mcp_client_state;
struct mcp_shared;
}  // namespace detail

struct mcp_http_endpoint;  // <tool_effects/mcp/http.hpp>



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
