// tool_effects/mcp/server.hpp — the tools of a `json_tool_host` served over
// MCP, with annotations derived from their declared effects.
//
//   te::json_tool_host host(registry);
//   te::mcp_server server(pool, host, te::mcp_server_options{.name = "bank", .version = "1.0.0"});
//   server.serve_stdio();                                              // until stdin closes
//   unsigned short port = server.listen_http("127.0.0.1", 0, "/mcp");  // <tool_effects/mcp/server_http.hpp>
//
// - One route for every request, whatever its transport: the transport hands
//   it to the session (mcp/protocol/detail/session.hpp), the session to the
//   handler `bind` registered, which serves it by its row of the one method
//   table (`methods()`, both eras).
// - tools/list: every tool of the host; the four hints come from the declared
//   effects (`export_mcp_hints`, the one rule; a static tool's are a
//   constant), its scoped accesses and identity under `_meta`
//   (`mcp_accesses_meta_key`, mcp/tool_meta.hpp). A tool type may state
//   `static constexpr mcp_stated_hints annotations`, only equal to the derived ones.
// - tools/call: every request of every session runs through the dispatcher
//   with the server's dispatch options, which hold ONE coordinator for the
//   server (a `local_coordinator` by default; any `Coordinator`): calls that
//   conflict (one account) run one at a time, others in parallel, at most
//   `max_concurrent_calls` at once. A journal in the options replays a call
//   repeated with the same client-supplied idempotency key (`_meta`
//   `mcp_idempotency_meta_key`).
// - logging: `logging/setLevel` sets the session's level (every level until
//   then); a tool's `report_log` goes to the client of its request as
//   `notifications/message` when at or above it (at most `max_log_messages` per call).
// - asking the client: a tool's `mcp_client_asker_of(ctx)` (mcp/server/asker.hpp)
//   sends elicitation/create or sampling/createMessage to the client of its
//   request over the request's own channel; in the 2026-07-28 era by
//   InputRequiredResult, the call parked until the retry resumes it.
// - resources, resource templates, prompts and completion (mcp/server/resources.hpp).
// Reasoning and bounds: docs/mcp-server.md.
#ifndef TOOL_EFFECTS_MCP_SERVER_HPP
#define TOOL_EFFECTS_MCP_SERVER_HPP

#include <atomic>
#include <chrono>
#include <cstddef>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include <unistd.h>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/thread_pool.hpp>

#include <nlohmann/json.hpp>

#include <tool_effects/cancellation.hpp>
#include <tool_effects/coordination.hpp>
#include <tool_effects/dispatch.hpp>
#include <tool_effects/json.hpp>
#include <tool_effects/mcp/logging.hpp>
#include <tool_effects/mcp/protocol/detail/session.hpp>
#include <tool_effects/mcp/server/asker.hpp>
#include <tool_effects/mcp/server/detail/catalog.hpp>
#include <tool_effects/mcp/server/detail/core.hpp>
#include <tool_effects/mcp/server/detail/methods.hpp>
#include <tool_effects/mcp/server/detail/modern.hpp>
#include <tool_effects/mcp/server/detail/mrtr.hpp>
#include <tool_effects/mcp/server/http_options.hpp>
#include <tool_effects/mcp/server/options.hpp>
#include <tool_effects/mcp/server/request.hpp>
#include <tool_effects/mcp/server/resources.hpp>
#include <tool_effects/mcp/tool_meta.hpp>

namespace tool_effects {

/// An MCP server for the tools of `Host` (a `json_tool_host<...>`, which must
/// outlive the server), dispatching with `Options` (a `dispatch_options`
/// holding a `Coordinator`; without one the program does not compile).
template <class Host, class Options = dispatch_options<local_coordinator>>
class mcp_server {
  static_assert(detail::options_have_coordinator<Options>,
                "mcp_server: the dispatch options must hold a Coordinator (one for the whole server)");

 public:
  /// Tools run on `executor` (an Asio executor or execution context, e.g. a
  /// thread_pool); `dispatch` are the options every call runs with.
  template <class Executor>
  mcp_server(Executor&& executor, Host& host, mcp_server_options options = {},
             Options dispatch = run_options{}.with(local_coordinator{}))
      : executor_(to_any(executor)),
        host_(&host),
        options_(std::move(options)),
        dispatch_(std::move(dispatch)),
        callers_(std::make_unique<boost::asio::thread_pool>(
            options_.max_concurrent_calls == 0 ? 1 : options_.max_concurrent_calls)),
        admission_(std::make_unique<detail::mcp_call_admission>(options_.max_concurrent_calls)),
        parking_(std::make_shared<detail::mcp_mrtr_parking>(options_.max_parked_calls)),
        asks_(std::make_unique<boost::asio::thread_pool>(1)) {}

  mcp_server(const mcp_server&) = delete;
  mcp_server& operator=(const mcp_server&) = delete;
  /// Stops the HTTP listeners, waits for the calls under way, then for the listeners' thread.
  ~mcp_server();

  /// The options.
  [[nodiscard]] const mcp_server_options& options() const noexcept { return options_; }

  /// The `tools/list` result: every tool of the host, in index order.
  [[nodiscard]] nlohmann::json list_tools() const;

  /// Serves `r` (resources/list, resources/read). Throws std::invalid_argument for an empty uri or name, or
  /// a URI already registered. Thread-safe (also while serving).
  void add_resource(mcp_resource r) { catalog_.add(std::move(r)); }
  /// Serves the resources `t` names (resources/templates/list; resources/read of a URI it matches). Throws
  /// std::invalid_argument for an empty template or name, no `read`, a template that is not RFC 6570 level 1
  /// with text between variables, a completer for no variable, or a template already registered.
  void add_resource_template(mcp_resource_template t) { catalog_.add(std::move(t)); }
  /// Serves `p` (prompts/list, prompts/get). Throws std::invalid_argument for an empty name, no `get`,
  /// argument names empty or repeated, or a name already registered.
  void add_prompt(mcp_prompt p) { catalog_.add(std::move(p)); }
  /// Tells every session subscribed to `uri` that the resource changed (notifications/resources/updated;
  /// over HTTP on the session's GET stream). Never blocks on a client.
  void resource_updated(std::string_view uri) { catalog_.updated(uri); }

  /// The `initialize` result for a client asking for `requested` (the same
  /// legacy version if we speak it, else our newest legacy one).
  [[nodiscard]] nlohmann::json initialize_result(const std::string& requested) const;
  /// The protocol version `initialize` answers to a client asking for `requested`: a legacy one always
  /// (initialize selects the legacy era), the requested one if we speak it.
  [[nodiscard]] static std::string negotiate(const std::string& requested);
  /// The `server/discover` result (2026-07-28): every version this server
  /// speaks (`mcp_protocol_versions()`: the modern ones per request, the
  /// others after `initialize`), the capabilities and serverInfo (under
  /// `_meta`) that `initialize` answers, and the era's result fields.
  [[nodiscard]] nlohmann::json discover_result() const;

  /// Answers one request (any transport, either era): its result, or throws `mcp_server_error` (a method this
  /// server does not serve in the request's era: -32601; invalid params: -32602, named by JSON pointer; a
  /// modern request's bad `_meta`: -32602, -32020 or -32022; a tool that needs a client capability the request
  /// did not declare: -32021). A tool's failure is a result with `isError: true`, never an error response.
  boost::asio::awaitable<nlohmann::json> handle_request(std::string method, nlohmann::json params,
                                                        mcp_server_request request);

  /// Serves one client over this process's stdin and stdout until stdin
  /// closes (blocking; the calls under way are answered first).
  void serve_stdio() { serve_fds(STDIN_FILENO, STDOUT_FILENO); }
  /// As `serve_stdio`, over the descriptors `in` and `out` (e.g. a pipe pair).
  void serve_fds(int in, int out);

  /// Listens for Streamable HTTP on `address`:`port` (0: a free port) at `path`; returns the port. Its I/O runs
  /// on a thread of the server's own, apart from the tools. <tool_effects/mcp/server_http.hpp> defines it.
  unsigned short listen_http(std::string_view address, unsigned short port, std::string_view path,
                             mcp_http_server_options options = {});

  /// Registers this server's request handlers on a session (any transport: stdio, and each session or
  /// stateless request of an HTTP listener): every row of `methods()`, as the one table it is.
  void bind(detail::mcp_session& s);
  /// The settings of one session of this server (its bounds: docs/mcp-server.md).
  [[nodiscard]] detail::mcp_session_settings session_settings(std::string peer) const;

 private:
  using method_row = detail::mcp_method<mcp_server>;
  // The one method table: every method this server answers, the eras it answers it in, its handler.
  static std::span<const method_row> methods();
  // What one session of this server remembers between its requests (one allocation per session; its requests
  // hold its parts through aliasing pointers).
  struct session_state {
    std::atomic<mcp_log_level> level{mcp_log_level::debug};  // logging/setLevel; every level until set
    detail::mcp_peer_capabilities capabilities;              // what its initialize declared
    detail::mcp_resource_subscriptions subscriptions;
    std::atomic<bool> initialized{false};  // its initialize was answered
  };
  // The handler of the table `bind` registers: the request as the server sees it, then handle_request.
  boost::asio::awaitable<nlohmann::json> serve_request(detail::mcp_request_context ctx,
                                                       std::shared_ptr<session_state> state);

  // A request to the client of the request `c`, over its session (what a tool's asker sends through).
  static boost::asio::awaitable<nlohmann::json> ask_over_session(std::shared_ptr<const detail::mcp_request_context> c,
                                                                 std::string method, nlohmann::json params,
                                                                 std::chrono::milliseconds timeout);
  // Runs `f` (the application's code: a resource read, a prompt, a completer) on the application's executor.
  boost::asio::awaitable<nlohmann::json> on_application(std::function<nlohmann::json()> f);
  static boost::asio::awaitable<nlohmann::json> run_function(std::function<nlohmann::json()> f);
  // The handlers of the table's rows.
  boost::asio::awaitable<nlohmann::json> on_initialize(nlohmann::json params, mcp_server_request request);
  boost::asio::awaitable<nlohmann::json> on_ping(nlohmann::json params, mcp_server_request request);
  boost::asio::awaitable<nlohmann::json> on_discover(nlohmann::json params, mcp_server_request request);
  boost::asio::awaitable<nlohmann::json> on_list_tools(nlohmann::json params, mcp_server_request request);
  boost::asio::awaitable<nlohmann::json> on_call_tool(nlohmann::json params, mcp_server_request request);
  boost::asio::awaitable<nlohmann::json> on_set_level(nlohmann::json params, mcp_server_request request);
  boost::asio::awaitable<nlohmann::json> on_list_resources(nlohmann::json params, mcp_server_request request);
  boost::asio::awaitable<nlohmann::json> on_list_templates(nlohmann::json params, mcp_server_request request);
  boost::asio::awaitable<nlohmann::json> on_read_resource(nlohmann::json params, mcp_server_request request);
  boost::asio::awaitable<nlohmann::json> on_list_prompts(nlohmann::json params, mcp_server_request request);
  boost::asio::awaitable<nlohmann::json> on_complete(nlohmann::json params, mcp_server_request request);
  boost::asio::awaitable<nlohmann::json> on_subscribe(nlohmann::json params, mcp_server_request request);
  boost::asio::awaitable<nlohmann::json> on_unsubscribe(nlohmann::json params, mcp_server_request request);
  boost::asio::awaitable<nlohmann::json> on_get_prompt(nlohmann::json params, mcp_server_request request);

  // Runs one `tools/call` (params as sent) through the dispatcher under the server's coordinator, by
  // run_tool_call (as a coroutine when without_caller_thread(), else on a caller thread); `request.cancel`
  // cancels it while it waits (a running call runs to its end).
  boost::asio::awaitable<nlohmann::json> call_tool(nlohmann::json params, mcp_server_request request);
  // Runs one `tools/call` of the 2026-07-28 era, whose tool asks its client by InputRequiredResult (MRTR):
  // parked when it asks what the request's `inputResponses` do not answer; resumed by the `requestState` of the
  // request sent again (never run twice). A `requestState` this server did not issue, altered, or whose call
  // waits no more: -32602 naming /requestState.
  boost::asio::awaitable<nlohmann::json> call_tool_asking(nlohmann::json params, detail::tool_call_request call,
                                                          mcp_server_request request);
  // prompts/get of a prompt that asks its client: in the 2026-07-28 era (`modern`) by InputRequiredResult, the
  // request parked as call_tool_asking parks a call; before it over the request's channel.
  boost::asio::awaitable<nlohmann::json> get_prompt_asking(nlohmann::json params, mcp_server_request request,
                                                           bool modern);
  // The next outcome of an MRTR call for the request waiting (`first`: the request that starts it, `start`).
  static boost::asio::awaitable<nlohmann::json> next_outcome(std::shared_ptr<detail::mcp_mrtr_call> call, bool first,
                                                             std::string state, nlohmann::json responses,
                                                             std::function<void()> start,
                                                             turn_cancellation cancel = {});
  // Runs a prompt that asks, for its MRTR call.
  static boost::asio::awaitable<void> run_prompt(std::shared_ptr<detail::mcp_mrtr_call> call,
                                                 std::shared_ptr<const mcp_client_asker> asker,
                                                 std::shared_ptr<mcp_prompt> prompt,
                                                 std::map<std::string, std::string> args);
  // Whom a call parked for `request` belongs to (empty: whoever holds its signed requestState).
  static std::string state_owner(const mcp_server_request& request);
  // The parked call a `requestState` names, checked to be of `method` and `name`.
  std::shared_ptr<detail::mcp_mrtr_call> parked_call(const std::string& state, std::string_view method,
                                                     const std::string& name, const std::string& caller) const;
  // What a tools/call returns for arguments that do not fit its tool, if they do not.
  [[nodiscard]] std::optional<nlohmann::json> invalid_arguments(const detail::tool_call_request& r) const;
  // The one-call turn of a tools/call and its journal scope.
  static std::pair<tool_call, std::string> turn_of(const detail::tool_call_request& r, const std::string& caller);
  // The reporter's bounds and the call's principal.
  void configure(detail::mcp_request_reporter& reporter, const mcp_principal* principal) const;
  // Completes once the admission queue (without_caller_thread(), max_concurrent_calls) lets one call through;
  // its caller then holds the place (detail::mcp_admitted_call) until the call ended. The awaiting coroutine's
  // cancellation cancels the call's turn (`cancel`), which then ends at once when admitted.
  boost::asio::awaitable<void> admission(turn_cancellation cancel);
  // Runs one tools/call of either era and returns its result: as a coroutine (run_call_async) when
  // without_caller_thread() and the call's approver allow it, else on a caller thread (run_call). The call's place
  // in the admission queue, if it needs one, is its caller's (admission).
  boost::asio::awaitable<nlohmann::json> run_tool_call(std::shared_ptr<detail::tool_call_request> r, std::string caller,
                                                       std::shared_ptr<const mcp_principal> principal,
                                                       turn_cancellation cancel,
                                                       std::function<void(double, double, const std::string&)> progress,
                                                       detail::mcp_request_log log,
                                                       std::shared_ptr<const mcp_client_asker> asker,
                                                       std::shared_ptr<const std::function<void()>> close_stream);
  // A 2026-07-28 tools/call when without_caller_thread(): admitted, run by run_tool_call (without a caller
  // thread when it can), and `parked` finished with its result; its place is released after the call let go of
  // `parked` (whose strand lives on the server's asks thread). Spawned on the server's executor.
  boost::asio::awaitable<void> run_parked_call(std::shared_ptr<detail::mcp_mrtr_call> parked,
                                               std::shared_ptr<detail::tool_call_request> r, std::string caller,
                                               std::shared_ptr<const mcp_principal> principal, turn_cancellation cancel,
                                               std::function<void(double, double, const std::string&)> progress,
                                               detail::mcp_request_log log,
                                               std::shared_ptr<const mcp_client_asker> asker);
  // run_call as a coroutine on the server's executor (without_caller_thread()): holds no thread while it waits.
  boost::asio::awaitable<nlohmann::json> run_call_async(
      std::shared_ptr<detail::tool_call_request> r, std::string caller, std::shared_ptr<const mcp_principal> principal,
      turn_cancellation cancel, std::function<void(double, double, const std::string&)> progress,
      detail::mcp_request_log log, std::shared_ptr<const mcp_client_asker> asker,
      std::shared_ptr<const std::function<void()>> close_stream);
  nlohmann::json run_call(const detail::tool_call_request& r, const std::string& caller, const mcp_principal* principal,
                          const turn_cancellation& cancel,
                          const std::function<void(double, double, const std::string&)>& progress,
                          const detail::mcp_request_log& log, const mcp_client_asker* asker = nullptr,
                          const std::function<void()>* close_stream = nullptr);
  // The journal scope of the calls of `caller` under its idempotency key `key`: calls of one key share their
  // journal entries; different keys, or one key of different callers, never do.
  static std::string key_scope(const std::string& caller, const std::string& key);
  // Refuses a call whose idempotency key its caller first used for another call (another tool or other
  // arguments), as Stripe's idempotency keys: -32602 idempotency_key_reused. The key's first call is kept in the
  // journal when the options have one (so across restarts), else in memory (the last 65,536 keys).
  void check_key(const detail::tool_call_request& r, const std::string& caller);

  // The client capability tool `i` needs (its type's `mcp_required_client_capability`), "" when none.
  [[nodiscard]] std::string_view required_client_capability(std::size_t i) const;
  // Why the arguments of a call of tool `i` do not fit its described `arguments` struct, if it has one.
  [[nodiscard]] std::optional<std::string> argument_error(std::size_t i, const nlohmann::json& args) const;
  // The tools/list entry of tool `i`.
  [[nodiscard]] nlohmann::json entry(std::size_t i) const;

  template <class E>
  static boost::asio::any_io_executor to_any(E& e) {
    if constexpr (requires { e.get_executor(); })
      return e.get_executor();
    else
      return boost::asio::any_io_executor(e);
  }

  // The thread the HTTP listeners' I/O runs on (made by the first listen_http).
  struct io_thread {
    boost::asio::io_context io;
    boost::asio::executor_work_guard<boost::asio::io_context::executor_type> work{io.get_executor()};
    std::thread thread{[this] { io.run(); }};
    ~io_thread() {
      work.reset();
      if (thread.joinable()) thread.join();
    }
  };

  boost::asio::any_io_executor executor_;
  Host* host_;
  mcp_server_options options_;
  Options dispatch_;
  // Whether tools/calls run as coroutines, admitted by `admission_`, rather than on caller threads: when the
  // options say so (nonblocking_calls), or when the dispatch options start a turn without blocking.
  [[nodiscard]] bool without_caller_thread() const noexcept {
    return options_.nonblocking_calls || detail::mcp_turn_starts_without_blocking<Options>;
  }

  std::unique_ptr<boost::asio::thread_pool> callers_;
  std::unique_ptr<detail::mcp_call_admission> admission_;  // the bound of calls without a caller thread
  detail::mcp_catalog catalog_;                        // resources, templates, prompts; the sessions' subscriptions
  std::shared_ptr<detail::mcp_mrtr_parking> parking_;  // the 2026-07-28 calls waiting for their client's input
  std::unique_ptr<boost::asio::thread_pool> asks_;     // runs the MRTR calls' asks (one thread, never blocked)
  std::unique_ptr<io_thread> io_;                      // the HTTP listeners' I/O (destroyed after them)
  std::vector<std::shared_ptr<void>> listeners_;       // listen_http's listeners (each closed when it goes)
  std::mutex keys_m_;                                  // the idempotency keys' first calls (check_key)
  std::map<std::string, std::string> keys_;            // without a journal: key scope → fingerprint
  std::deque<std::string> keys_order_;
};

template <class Executor, class Host>
mcp_server(Executor&&, Host&, mcp_server_options = {}) -> mcp_server<Host>;
template <class Executor, class Host, class Options>
mcp_server(Executor&&, Host&, mcp_server_options, Options) -> mcp_server<Host, Options>;

}  // namespace tool_effects

#include <tool_effects/mcp/server/impl/server.hpp>

#endif  // TOOL_EFFECTS_MCP_SERVER_HPP
