// tool_effects/mcp/server.hpp — the tools of a `json_tool_host` served over
// MCP, with annotations derived from their declared effects.
//
//   te::json_tool_host host(registry);
//   te::mcp_server server(pool, host, te::mcp_server_options{.name = "bank", .version = "1.0.0"});
//   server.serve_stdio();                                              // until stdin closes
//   unsigned short port = server.listen_http("127.0.0.1", 0, "/mcp");  // <tool_effects/mcp/server_http.hpp>
//
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
// - logging: declared; `logging/setLevel` sets the session's level (every
//   level until then), and a tool's `report_log` on its attempt_context goes
//   to the client of its request as `notifications/message` when at or above it (at most
//   `max_log_messages` per call; the excess dropped and counted in one warning).
// - asking the client: a tool's `mcp_client_asker_of(ctx)` sends elicitation/create or sampling/createMessage
//   to the client of its request (stdio: over the session; HTTP: on the request's POST stream), within
//   `client_request_timeout`, only if the client declared the capability (mcp/server/asker.hpp); in the
//   2026-07-28 era by InputRequiredResult (MRTR), the call parked until the retry resumes it, never re-run
//   (mcp/server/detail/mrtr.hpp).
// - SSE polling: a tool's `mcp_close_request_stream(ctx)` ends its request's HTTP stream unanswered; the client
//   resumes it with Last-Event-ID and gets the result there (a no-op over stdio).
// - resources, resource templates, prompts (`add_resource`, `add_resource_template`, `add_prompt`) and
//   `completion/complete` for their arguments; `resources/subscribe` (legacy era), and `resource_updated`
//   tells the subscribed sessions (notifications/resources/updated).
// Reasoning and bounds: docs/mcp.md ("The server").
#ifndef TOOL_EFFECTS_MCP_SERVER_HPP
#define TOOL_EFFECTS_MCP_SERVER_HPP

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include <unistd.h>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/associated_cancellation_slot.hpp>
#include <boost/asio/execution/outstanding_work.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/prefer.hpp>
#include <boost/asio/thread_pool.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <nlohmann/json.hpp>

#include <tool_effects/cancellation.hpp>
#include <tool_effects/coordination.hpp>
#include <tool_effects/dispatch.hpp>
#include <tool_effects/json.hpp>
#include <tool_effects/mcp/logging.hpp>
#include <tool_effects/mcp/server/detail/core.hpp>
#include <tool_effects/mcp/server/detail/modern.hpp>
#include <tool_effects/mcp/server/detail/mrtr.hpp>
#include <tool_effects/mcp/server/detail/catalog.hpp>
#include <tool_effects/mcp/protocol/detail/session.hpp>
#include <tool_effects/mcp/transport/detail/stdio_server.hpp>
#include <tool_effects/mcp/tool_meta.hpp>
#include <tool_effects/detail/foreign_completion.hpp>
#include <tool_effects/version.hpp>

#include <tool_effects/detail/push_options.hpp>  // the server's coroutines (g++ 12 false positives)

namespace tool_effects {

/// How a server presents itself and how many calls it runs at once.
struct mcp_server_options {
  std::string name = "tool_effects";  ///< serverInfo.name
  std::string version = TOOL_EFFECTS_VERSION_STRING;  ///< serverInfo.version
  std::string title{};         ///< serverInfo.title (empty: none)
  std::string instructions{};  ///< initialize's `instructions` (empty: none)
  /// tools/call requests dispatched at once over every session (running, or
  /// waiting for their coordinator grant); further ones wait their turn.
  std::size_t max_concurrent_calls = 16;
  /// Requests of one session being answered at once (past it: error -32000 at once).
  std::size_t max_pending_requests = 64;
  /// The longest message (line on stdio) read or answered; longer: error -32600
  /// for that message alone. The client side's bound (mcp_client_options::max_line_bytes).
  std::size_t max_message_bytes = std::size_t{16} << 20;
  /// Answers waiting to be written to a stdio client (on top of the one being
  /// written): a client that stops reading its stdout while more wait ends its
  /// session. The client side's bound (mcp_client_options::max_write_queue_bytes).
  std::size_t max_write_queue_bytes = std::size_t{16} << 20;
  /// The longest log message of a tool forwarded (`data` of notifications/message), at most an eighth of
  /// `max_message_bytes`: longer ones are cut at a UTF-8 character boundary and end with "...".
  std::size_t max_log_bytes = std::size_t{64} << 10;
  /// Log messages of one call forwarded at most (those at or above the session's level): later ones are
  /// dropped, and one warning after the call says how many.
  std::size_t max_log_messages = 1000;
  /// The longest a tool's ask of its client (elicitation, sampling) waits for the answer, unless the ask
  /// gives its own; past it the ask fails (client_ask_timeout) and the call goes on without an answer.
  std::chrono::milliseconds client_request_timeout = std::chrono::seconds(60);
  /// Calls of the 2026-07-28 era parked at once while they wait for their client's input (MRTR: answered by
  /// an InputRequiredResult, resumed by the retry's requestState); past it an ask fails at once
  /// (client_ask_too_many_parked). A parked synchronous tool also holds one of `max_concurrent_calls`.
  std::size_t max_parked_calls = 64;
};

/// What a transport tells the server about one incoming request.
struct mcp_server_request {
  std::string session{};               ///< the session's id (transport-defined; "" for stdio)
  nlohmann::json id = nullptr;         ///< the JSON-RPC id
  turn_cancellation cancel{};          ///< cancelled by `notifications/cancelled` for this request
  /// Sends notifications/progress for this request (when the client asked for
  /// it); empty: progress goes nowhere. Thread-safe, never blocks.
  std::function<void(double progress, double total, const std::string& message)> progress{};
  /// The log level of the request's session (`logging/setLevel` sets it; shared by the session's requests);
  /// null: the request has no session to set it on, and its log messages go nowhere.
  std::shared_ptr<std::atomic<mcp_log_level>> log_level{};
  /// Sends notifications/message with `params` for this request (related to it: over HTTP on its stream,
  /// before its response); empty: log messages go nowhere. Thread-safe, never blocks.
  std::function<void(nlohmann::json params)> log{};
  /// The protocol version the transport carried with the request (HTTP's
  /// MCP-Protocol-Version; "" on stdio): a modern one makes the request
  /// modern, and a modern request's `_meta` must name the same.
  std::string transport_version{};
  /// Of a modern request (2026-07-28, per-request `_meta`), filled by
  /// `handle_request`: its clientCapabilities; of a legacy one, those its session's `initialize` declared
  /// (filled by the transport; null: none known)
  /// (its log level, `_meta` logLevel, becomes `log_level`: none, no log messages).
  nlohmann::json client_capabilities{};
  /// The Mcp-Param-* headers of an HTTP request (lower-case name after the
  /// prefix -> value, "=?base64?...?=" decoded; none: broken Base64); absent
  /// on stdio. A modern `tools/call` that has them is checked against the
  /// tool's `x-mcp-header` parameters (-32020 on a mismatch).
  std::optional<std::map<std::string, std::optional<std::string>>> param_headers{};
  /// Sends a request to the client of this request (stdio: over the session; HTTP: on the request's POST
  /// stream) and returns its result, within the given time; empty: the request cannot ask (a 2026-07-28
  /// request, whose era asks by InputRequiredResult). What a tool's `mcp_client_asker` sends through.
  mcp_client_asker::send_function ask_client{};
  /// The resource subscriptions of the request's session (shared by its requests); null: the request has no
  /// session, and resources/subscribe is refused (-32600).
  std::shared_ptr<detail::mcp_resource_subscriptions> subscriptions{};
  /// Ends the stream that carries this request without answering it (Streamable HTTP, SEP-1699 polling: the
  /// client resumes with GET and Last-Event-ID); empty: the request has no such stream (stdio, stateless).
  /// What a tool's `mcp_close_request_stream` calls. Thread-safe, never blocks.
  std::function<void()> close_stream{};
};

/// The client capability (e.g. "sampling") a tool type needs of a client to
/// be called: its `static constexpr std::string_view
/// mcp_required_client_capability`, "" when it states none. A 2026-07-28
/// request whose `_meta` clientCapabilities lack it is refused with -32021
/// (MissingRequiredClientCapabilityError) before the tool runs.
template <class Tool>
constexpr std::string_view mcp_required_client_capability_of() {
  if constexpr (requires { std::string_view(Tool::mcp_required_client_capability); })
    return std::string_view(Tool::mcp_required_client_capability);
  else
    return {};
}

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
        callers_(std::make_unique<boost::asio::thread_pool>(options_.max_concurrent_calls == 0
                                                                ? 1
                                                                : options_.max_concurrent_calls)),
        parking_(std::make_shared<detail::mcp_mrtr_parking>(options_.max_parked_calls)),
        asks_(std::make_unique<boost::asio::thread_pool>(1)) {}

  mcp_server(const mcp_server&) = delete;
  mcp_server& operator=(const mcp_server&) = delete;
  /// Stops the HTTP listeners, then waits for the calls under way.
  ~mcp_server() {
    transports_.clear();
    parking_->abandon_all();
    callers_->join();
  }

  /// The options.
  [[nodiscard]] const mcp_server_options& options() const noexcept { return options_; }

  /// The `tools/list` result: every tool of the host, in index order.
  [[nodiscard]] nlohmann::json list_tools() const {
    nlohmann::json tools = nlohmann::json::array();
    const auto& reg = host_->registry();
    for (std::size_t i = 0; i < reg.size(); ++i) tools.push_back(entry(i));
    return {{"tools", std::move(tools)}};
  }

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
  /// version if we speak it, else our newest legacy one).
  [[nodiscard]] nlohmann::json initialize_result(const std::string& requested) const {
    nlohmann::json info = {{"name", options_.name}, {"version", options_.version}};
    if (!options_.title.empty()) info["title"] = options_.title;
    nlohmann::json caps = {{"tools", {{"listChanged", false}}}, {"logging", nlohmann::json::object()}};
    catalog_.add_capabilities(caps, true);
    nlohmann::json r = {{"protocolVersion", negotiate(requested)},
                        {"capabilities", std::move(caps)},
                        {"serverInfo", std::move(info)}};
    if (!options_.instructions.empty()) r["instructions"] = options_.instructions;
    return r;
  }

  /// The protocol version answered to a client asking for `requested`.
  [[nodiscard]] static std::string negotiate(const std::string& requested) {
    for (const auto& v : mcp_protocol_versions())
      if (v == requested) return v;
    for (const auto& v : mcp_protocol_versions())
      if (!mcp_version_is_modern(v)) return v;
    return mcp_protocol_versions().front();
  }

  /// The `server/discover` result (2026-07-28): every version this server
  /// speaks (`mcp_protocol_versions()`: the modern ones per request, the
  /// others after `initialize`), the capabilities and serverInfo (under
  /// `_meta`) that `initialize` answers, and the era's result fields.
  [[nodiscard]] nlohmann::json discover_result() const {
    nlohmann::json init = initialize_result(std::string());
    // No resources/subscribe in that era.
    if (init["capabilities"].contains("resources")) init["capabilities"]["resources"].erase("subscribe");
    nlohmann::json r = {{"supportedVersions", mcp_protocol_versions()},
                        {"capabilities", std::move(init["capabilities"])},
                        {"_meta", {{detail::mcp_meta_server_info, std::move(init["serverInfo"])}}}};
    if (init.contains("instructions")) r["instructions"] = std::move(init["instructions"]);
    detail::mcp_mark_modern_result(r, true);
    return r;
  }

  /// Answers one request of the 2026-07-28 era (no session: its `_meta`
  /// says which version and client capabilities): `server/discover`,
  /// `tools/list`, `tools/call`, and the resources, prompts and completion
  /// methods once any are registered; a method that era removed (initialize,
  /// ping, ...) or that this server lacks is -32601. Throws
  /// `mcp_server_error`: -32602 for a bad `_meta` (named by JSON pointer),
  /// -32020 for a transport version that `_meta` contradicts, -32022 for a
  /// version not served per request, -32021 for a tool that needs a client
  /// capability the request did not declare (`mcp_required_client_capability`).
  boost::asio::awaitable<nlohmann::json> handle_modern_request(std::string method, nlohmann::json params,
                                                               mcp_server_request request) {
    const detail::mcp_request_meta meta = detail::read_request_meta(params, request.transport_version);
    request.client_capabilities = meta.client_capabilities;
    request.ask_client = {};  // no server-to-client request inside a 2026-07-28 call: it asks by InputRequiredResult
    // A modern request's log level is its own (no session to set one on): none asks for no log messages.
    request.log_level = meta.log_level.empty()
                            ? nullptr
                            : std::make_shared<std::atomic<mcp_log_level>>(mcp_log_level_named(meta.log_level));
    nlohmann::json r;
    bool cacheable = false;
    if (method == "server/discover") {
      co_return discover_result();
    } else if (method == "tools/list") {
      r = list_tools();
      cacheable = true;
    } else if (method == "tools/call") {
      const detail::tool_call_request call = detail::read_tool_call(params);
      if (const auto i = host_->registry().index_of(call.name)) {
        if (request.param_headers)
          detail::check_param_headers(entry(*i)["inputSchema"], call.arguments, *request.param_headers);
        const std::string_view needed = required_client_capability(*i);
        if (!needed.empty() && !meta.client_capabilities.contains(needed))
          throw mcp_server_error(
              detail::rpc_missing_client_capability,
              detail::str_cat("Missing required client capability: tool ", detail::quote_input(call.name), " needs \"",
                              needed, "\", which the request's /_meta/",
                              detail::pointer_token(detail::mcp_meta_client_capabilities), " does not declare"),
              nlohmann::json{{"requiredCapabilities", {{std::string(needed), nlohmann::json::object()}}}});
      }
      r = co_await call_tool_asking(std::move(params), std::move(request));
    } else if (method == "prompts/get" && catalog_.prompt_asks(params)) {
      r = co_await get_prompt_asking(std::move(params), std::move(request), true);
    } else if (auto c = catalog_request(method, params, true, request)) {
      r = std::move(*c);
      cacheable = method != "prompts/get" && method != "completion/complete";
    } else {
      throw mcp_server_error(detail::rpc_method_not_found,
                             detail::str_cat("Method not found: ", detail::quote_input(method),
                                             detail::mcp_method_is_legacy_only(method)
                                                 ? " (not in the 2026-07-28 era; its requests need no initialize)"
                                                 : ""));
    }
    detail::mcp_mark_modern_result(r, cacheable);
    co_return r;
  }

  /// Answers one request (any transport): its result, or throws
  /// `mcp_server_error` (unknown method, invalid params). A tool's failure is
  /// a result with `isError: true`, never an error response.
  boost::asio::awaitable<nlohmann::json> handle_request(std::string method, nlohmann::json params,
                                                        mcp_server_request request) {
    if (detail::mcp_request_is_modern(method, params, request.transport_version))
      co_return co_await handle_modern_request(std::move(method), std::move(params), std::move(request));
    if (method == "tools/call") co_return co_await call_tool(std::move(params), std::move(request));
    if (method == "tools/list") co_return list_tools();
    if (method == "ping") co_return nlohmann::json::object();
    if (method == "prompts/get" && catalog_.prompt_asks(params))
      co_return co_await get_prompt_asking(std::move(params), std::move(request), false);
    if (auto c = catalog_request(method, params, false, request)) co_return std::move(*c);
    if (method == "logging/setLevel") {
      const mcp_log_level level = detail::read_set_level(params);
      if (request.log_level) request.log_level->store(level);
      co_return nlohmann::json::object();
    }
    if (method == "initialize") {
      std::string v;
      if (params.is_object())
        if (const auto it = params.find("protocolVersion"); it != params.end() && it->is_string()) v = *it;
      co_return initialize_result(v);
    }
    throw mcp_server_error(detail::rpc_method_not_found, detail::str_cat("Method not found: ", detail::quote_input(method)));
  }

  /// Runs one `tools/call` (params as sent): through the dispatcher, under
  /// the server's coordinator; `request.cancel` cancels it while it waits
  /// (a running call runs to its end). Unknown tool: invalid params.
  boost::asio::awaitable<nlohmann::json> call_tool(nlohmann::json params, mcp_server_request request) {
    detail::tool_call_request r = detail::read_tool_call(params);
    if (!host_->registry().index_of(r.name))
      throw mcp_server_error(detail::rpc_invalid_params, detail::str_cat("Unknown tool: ", detail::quote_input(r.name)));
    // (Locals, not temporaries of the co_await expression: g++ 12 destroys such temporaries twice.)
    auto call = std::make_shared<detail::tool_call_request>(std::move(r));
    auto asker = std::make_shared<const mcp_client_asker>(
        std::move(request.ask_client), std::move(request.client_capabilities), options_.client_request_timeout,
        executor_, "the request has no channel to its client");
    auto close = std::make_shared<const std::function<void()>>(std::move(request.close_stream));
    auto initiate = [this, call, asker, close, cancel = request.cancel, progress = std::move(request.progress),
                     log = detail::mcp_request_log{std::move(request.log_level), std::move(request.log)}](auto handler) {
      // The session cancels a request's handler (notifications/cancelled) through its cancellation slot:
      // the call's turn is cancelled (a call waiting for its grant stops waiting; a running one runs to its end).
      auto slot = boost::asio::get_associated_cancellation_slot(handler);
      if (slot.is_connected()) slot.assign([cancel](boost::asio::cancellation_type) { cancel.cancel(); });
      auto work = detail::tracked_executor_of(handler);
      boost::asio::post(*callers_, [this, call, asker, close, cancel, progress, log, work = std::move(work),
                                    handler = std::move(handler)]() mutable {
        // `tracked` keeps the handler's execution context running until this thread has let go of every copy
        // of its executor, here and inside post: it is released last (see detail::tracked_executor_of).
        const auto tracked = std::move(work);
        nlohmann::json result;
        {  // the call's state goes before its completion is posted
          const auto c = std::move(call);
          const auto a = std::move(asker);
          const auto cl = std::move(close);
          const auto ca = std::move(cancel);
          const auto p = std::move(progress);
          const auto l = std::move(log);
          result = run_call(*c, ca, p, l, a.get(), cl.get());
        }
        detail::post_completion(std::move(handler), std::move(result));
      });
    };
    co_return co_await boost::asio::async_initiate<decltype(boost::asio::use_awaitable), void(nlohmann::json)>(
        initiate, boost::asio::use_awaitable);
  }

  /// Runs one `tools/call` of the 2026-07-28 era, whose tool asks its client by InputRequiredResult (MRTR):
  /// when the tool asks what the request's `inputResponses` do not answer, the call is parked and the
  /// request answered with an InputRequiredResult; the request sent again with `inputResponses` and the
  /// `requestState` resumes the parked call (it never runs twice). A `requestState` this server did not
  /// issue, altered, or whose call waits no more: -32602 naming /requestState.
  boost::asio::awaitable<nlohmann::json> call_tool_asking(nlohmann::json params, mcp_server_request request) {
    const detail::mcp_input_params in = detail::read_input_params(params);
    detail::tool_call_request r = detail::read_tool_call(params);
    if (in.state) {
      std::shared_ptr<detail::mcp_mrtr_call> parked = parking_->find(*in.state);
      if (parked->method() != "tools/call" || parked->name() != r.name)
        throw mcp_server_error(detail::rpc_invalid_params,
                               detail::str_cat("Invalid params: at /requestState: issued for ", parked->method(), " of ",
                                               detail::quote_input(parked->name()), ", not for tools/call of ",
                                               detail::quote_input(r.name)));
      co_return co_await next_outcome(std::move(parked), false, *in.state, in.responses, {});
    }
    if (!host_->registry().index_of(r.name))
      throw mcp_server_error(detail::rpc_invalid_params, detail::str_cat("Unknown tool: ", detail::quote_input(r.name)));
    // The call's state and its asks run on the server's own thread (never blocked by a tool: a synchronous
    // tool blocks its thread while it waits for the answers).
    auto call = std::make_shared<detail::mcp_mrtr_call>(asks_->get_executor(), parking_, "tools/call", r.name);
    auto asker = std::make_shared<const mcp_client_asker>(
        [call](std::vector<mcp_input_request> asks, std::chrono::milliseconds timeout) {
          return call->ask(std::move(asks), timeout);
        },
        std::move(request.client_capabilities), options_.client_request_timeout, asks_->get_executor());
    auto args = std::make_shared<detail::tool_call_request>(std::move(r));
    std::function<void()> start = [this, call, asker, args, cancel = request.cancel,
                                   progress = std::move(request.progress),
                                   log = detail::mcp_request_log{std::move(request.log_level), std::move(request.log)}] {
      boost::asio::post(*callers_, [this, call, asker, args, cancel, progress, log] {
        call->finish(run_call(*args, cancel, progress, log, asker.get()));
      });
    };
    co_return co_await next_outcome(std::move(call), true, std::string(), in.responses, std::move(start),
                                    request.cancel);
  }

  /// Answers prompts/get of a prompt that asks its client (`mcp_prompt::get_asking`): in the 2026-07-28 era
  /// (`modern`) by InputRequiredResult, the request parked as `call_tool_asking` parks a call; before it over
  /// the request's channel.
  boost::asio::awaitable<nlohmann::json> get_prompt_asking(nlohmann::json params, mcp_server_request request,
                                                           bool modern) {
    auto checked = catalog_.checked_prompt(params);
    auto prompt = std::make_shared<mcp_prompt>(std::move(checked.first));
    std::map<std::string, std::string> args = std::move(checked.second);
    if (!modern) {
      const mcp_client_asker asker(std::move(request.ask_client), std::move(request.client_capabilities),
                                   options_.client_request_timeout, executor_, "the request has no channel to its client");
      std::vector<mcp_prompt_message> messages = co_await prompt->get_asking(std::move(args), asker);
      co_return detail::mcp_catalog::prompt_result(*prompt, std::move(messages));
    }
    const detail::mcp_input_params in = detail::read_input_params(params);
    if (in.state) {
      std::shared_ptr<detail::mcp_mrtr_call> parked = parking_->find(*in.state);
      if (parked->method() != "prompts/get" || parked->name() != prompt->name)
        throw mcp_server_error(detail::rpc_invalid_params,
                               detail::str_cat("Invalid params: at /requestState: issued for ", parked->method(), " of ",
                                               detail::quote_input(parked->name()), ", not for prompts/get of ",
                                               detail::quote_input(prompt->name)));
      co_return co_await next_outcome(std::move(parked), false, *in.state, in.responses, {});
    }
    auto call = std::make_shared<detail::mcp_mrtr_call>(asks_->get_executor(), parking_, "prompts/get", prompt->name);
    auto asker = std::make_shared<const mcp_client_asker>(
        [call](std::vector<mcp_input_request> asks, std::chrono::milliseconds timeout) {
          return call->ask(std::move(asks), timeout);
        },
        std::move(request.client_capabilities), options_.client_request_timeout, asks_->get_executor());
    std::function<void()> start = [this, call, asker, prompt, args = std::move(args)]() mutable {
      boost::asio::co_spawn(asks_->get_executor(), run_prompt(call, asker, prompt, std::move(args)),
                            boost::asio::detached);
    };
    co_return co_await next_outcome(std::move(call), true, std::string(), in.responses, std::move(start));
  }

  /// Serves one client over this process's stdin and stdout until stdin
  /// closes (blocking; the calls under way are answered first).
  void serve_stdio() { serve_fds(STDIN_FILENO, STDOUT_FILENO); }

  /// As `serve_stdio`, over the descriptors `in` and `out` (e.g. a pipe pair).
  void serve_fds(int in, int out) {
    boost::asio::io_context io;
    const detail::mcp_strand strand = detail::make_mcp_strand(io.get_executor());
    auto session = std::make_shared<detail::mcp_session>(strand, session_settings("stdio client"));
    bind(*session);
    auto transport = std::make_shared<detail::mcp_stdio_server_transport>(strand, in, out, options_.max_message_bytes,
                                                                          options_.max_write_queue_bytes,
                                                                          [] {});
    boost::asio::post(strand, [session, transport] { session->start(transport); });
    io.run();
    session.reset();
  }

  /// Registers this server's request handlers on a session (any transport:
  /// stdio here, Streamable HTTP in <tool_effects/mcp/server_http.hpp>).
  void bind(detail::mcp_session& s) {
    // The session's log level: every level until the client sets one (as the TypeScript SDK's server).
    auto level = std::make_shared<std::atomic<mcp_log_level>>(mcp_log_level::debug);
    // The session's resource subscriptions: resources/updated goes to it as a notification of its own.
    auto subs = std::make_shared<detail::mcp_resource_subscriptions>();
    subs->send_updated = [weak = s.weak_from_this()](nlohmann::json params) {
      if (auto p = weak.lock())
        boost::asio::post(p->strand(), [p, params = std::move(params)]() mutable {
          p->notify("notifications/resources/updated", std::move(params));
        });
    };
    auto caps = std::make_shared<detail::mcp_peer_capabilities>();  // what the client's initialize declared
    for (const char* m : {"initialize", "ping", "tools/list", "tools/call", "logging/setLevel", "server/discover",
                          "resources/list", "resources/read", "resources/templates/list", "resources/subscribe",
                          "resources/unsubscribe", "prompts/list", "prompts/get", "completion/complete"})
      s.on_request(m, [this, level, caps, subs](detail::mcp_request_context ctx) {
        return serve_request(std::move(ctx), level, caps, subs);
      });
    s.on_other_notification([](const std::string&, const nlohmann::json&) {});
  }

  /// The settings of one session of this server (its bounds: docs/mcp.md).
  [[nodiscard]] detail::mcp_session_settings session_settings(std::string peer) const {
    detail::mcp_session_settings st;
    st.name = std::move(peer);
    st.max_handler_requests = options_.max_pending_requests;
    st.max_message_bytes = options_.max_message_bytes;
    return st;
  }

  /// Listens for Streamable HTTP on `address`:`port` (0: a free port) at
  /// `path`; returns the port (<tool_effects/mcp/server_http.hpp> defines it).
  unsigned short listen_http(std::string_view address, unsigned short port, std::string_view path);

 private:
  template <class E>
  static boost::asio::any_io_executor to_any(E& e) {
    if constexpr (requires { e.get_executor(); }) return e.get_executor();
    else return boost::asio::any_io_executor(e);
  }
  // Runs a prompt that asks, for its MRTR call.
  static boost::asio::awaitable<void> run_prompt(std::shared_ptr<detail::mcp_mrtr_call> call,
                                                 std::shared_ptr<const mcp_client_asker> asker,
                                                 std::shared_ptr<mcp_prompt> prompt, std::map<std::string, std::string> args) {
    try {
      std::vector<mcp_prompt_message> messages = co_await prompt->get_asking(std::move(args), *asker);
      call->finish(detail::mcp_catalog::prompt_result(*prompt, std::move(messages)));
    } catch (...) {
      call->fail(std::current_exception());
    }
  }
  // The next outcome of an MRTR call for the request waiting (`first`: the request that starts it, `start`).
  // `cancel`: the call's turn, cancelled by notifications/cancelled for the request (as `call_tool`).
  static boost::asio::awaitable<nlohmann::json> next_outcome(std::shared_ptr<detail::mcp_mrtr_call> call, bool first,
                                                             std::string state, nlohmann::json responses,
                                                             std::function<void()> start,
                                                             turn_cancellation cancel = {}) {
    auto initiate = [call, first, state = std::move(state), responses = std::move(responses), start = std::move(start),
                     cancel](auto handler) mutable {
      auto slot = boost::asio::get_associated_cancellation_slot(handler);
      if (slot.is_connected()) slot.assign([cancel](boost::asio::cancellation_type) { cancel.cancel(); });
      auto work = detail::tracked_executor_of(handler);
      auto h = std::make_shared<decltype(handler)>(std::move(handler));
      // Locals, not this lambda's members: the lambda lives in the awaiting coroutine's frame, and once `wait`
      // holds the completion another thread may complete it, resume the coroutine and free that frame (TSan:
      // heap-use-after-free reading `start` after `wait`).
      const std::shared_ptr<detail::mcp_mrtr_call> c = call;
      std::function<void()> start_now = std::move(start);
      c->wait(first, std::move(state), std::move(responses),
                 [work = std::move(work), h = std::move(h)](std::exception_ptr e, nlohmann::json r) mutable {
                   const auto tracked = std::move(work);  // released last, as in call_tool
                   detail::post_completion(std::move(*h), e, std::move(r));
                 });
      if (start_now) start_now();
    };
    co_return co_await boost::asio::async_initiate<decltype(boost::asio::use_awaitable),
                                                   void(std::exception_ptr, nlohmann::json)>(initiate,
                                                                                             boost::asio::use_awaitable);
  }
  // A request of the client's session, asked over the session (the role-neutral engine's own requests).
  static boost::asio::awaitable<nlohmann::json> ask_over_session(std::shared_ptr<const detail::mcp_request_context> c,
                                                                 std::string method, nlohmann::json params,
                                                                 std::chrono::milliseconds timeout) {
    co_return co_await c->request(std::move(method), std::move(params), timeout);
  }
  boost::asio::awaitable<nlohmann::json> serve_request(detail::mcp_request_context ctx,
                                                       std::shared_ptr<std::atomic<mcp_log_level>> level,
                                                       std::shared_ptr<detail::mcp_peer_capabilities> caps,
                                                       std::shared_ptr<detail::mcp_resource_subscriptions> subs) {
    mcp_server_request r;
    r.id = ctx.id;
    r.log_level = std::move(level);
    r.subscriptions = std::move(subs);
    if (ctx.method == "initialize" && ctx.params.is_object() && ctx.params.contains("capabilities"))
      caps->set(ctx.params["capabilities"]);
    r.client_capabilities = caps->get();
    r.ask_client = [c = std::make_shared<const detail::mcp_request_context>(
                        detail::mcp_request_context{ctx.id, std::string(), nullptr, ctx.session})](
                       std::string method, nlohmann::json params, std::chrono::milliseconds timeout) {
      return ask_over_session(c, std::move(method), std::move(params), timeout);
    };
    // Posted onto the session's strand as progress is (below), so it precedes the response.
    r.log = [id = ctx.id, weak = ctx.session](nlohmann::json params) {
      auto s = weak.lock();
      if (!s) return;
      detail::mcp_outgoing meta;
      meta.related_id = id;
      boost::asio::post(s->strand(), [s, params = std::move(params), meta = std::move(meta)]() mutable {
        s->notify("notifications/message", std::move(params), std::move(meta));
      });
    };
    if (nlohmann::json token = ctx.progress_token(); !token.is_null()) {
      // One post onto the session's strand, made before the tool returns: the strand runs it before the
      // response, which reaches the strand later (a co_spawn would add a hop and let the response overtake it).
      r.progress = [token = std::move(token), id = ctx.id, weak = ctx.session](double progress, double total,
                                                                                const std::string& message) {
        auto s = weak.lock();
        if (!s) return;
        nlohmann::json p = {{"progressToken", token}, {"progress", progress}};
        if (total > 0) p["total"] = total;
        if (!message.empty()) p["message"] = message;
        detail::mcp_outgoing meta;
        meta.related_id = id;
        boost::asio::post(s->strand(), [s, p = std::move(p), meta = std::move(meta)]() mutable {
          s->notify("notifications/progress", std::move(p), std::move(meta));
        });
      };
    }
    if (ctx.method == "initialize" && !detail::mcp_request_is_modern(ctx.method, ctx.params, std::string())) {
      nlohmann::json result = initialize_result(
          ctx.params.is_object() ? ctx.params.value("protocolVersion", std::string()) : std::string());
      if (auto s = ctx.session.lock()) {
        const std::string v = result.at("protocolVersion");
        boost::asio::post(s->strand(), [s, v] { s->set_protocol_version(v); });
      }
      co_return result;
    }
    co_return co_await handle_request(std::move(ctx.method), std::move(ctx.params), std::move(r));
  }

  // The answer of a resources, prompts or completion method; nothing for another method. `modern`: of the
  // 2026-07-28 era (its not-found code; no subscriptions there).
  std::optional<nlohmann::json> catalog_request(const std::string& method, const nlohmann::json& params, bool modern,
                                                const mcp_server_request& request) {
    if (!catalog_.serves(method)) return std::nullopt;
    if (method == "resources/list") return catalog_.list_resources();
    if (method == "resources/templates/list") return catalog_.list_templates();
    if (method == "resources/read") return catalog_.read(params, modern);
    if (method == "prompts/list") return catalog_.list_prompts();
    if (method == "prompts/get") return catalog_.get_prompt(params);
    if (method == "completion/complete") return catalog_.complete(params);
    if (modern || (method != "resources/subscribe" && method != "resources/unsubscribe")) return std::nullopt;
    const std::string uri = catalog_.subscribable_uri(params);
    if (!request.subscriptions)
      throw mcp_server_error(detail::rpc_invalid_request,
                             detail::str_cat("Invalid Request: ", method, " needs a session to hold the subscription"));
    {
      std::lock_guard lock(request.subscriptions->m);
      auto& uris = request.subscriptions->uris;
      if (method == "resources/unsubscribe") {
        uris.erase(uri);
        return nlohmann::json::object();
      }
      if (!uris.contains(uri) && uris.size() >= mcp_max_subscriptions)
        throw mcp_server_error(detail::rpc_invalid_params,
                               detail::str_cat("Invalid params: at /uri: the session already has ",
                                               std::to_string(mcp_max_subscriptions),
                                               " subscriptions (mcp_max_subscriptions)"));
      uris.insert(uri);
    }
    catalog_.list_subscriber(request.subscriptions);
    return nlohmann::json::object();
  }

  nlohmann::json run_call(const detail::tool_call_request& r, const turn_cancellation& cancel,
                          const std::function<void(double, double, const std::string&)>& progress,
                          const detail::mcp_request_log& log, const mcp_client_asker* asker = nullptr,
                          const std::function<void()>* close_stream = nullptr) {
    if (auto bad = argument_error(*host_->registry().index_of(r.name), r.arguments))
      return {{"content", nlohmann::json::array({{{"type", "text"}, {"text", detail::str_cat("invalid_arguments: ", *bad)}}})},
              {"isError", true}};
    tool_call call;
    call.id = "mcp";
    call.name = r.name;
    call.arguments = r.arguments;
    const std::string scope = r.idempotency_key.empty() ? random_idempotency_key() : str_key(r.idempotency_key);
    detail::mcp_request_reporter reporter(&progress, &log, r.name,
                                    std::min(options_.max_log_bytes, options_.max_message_bytes / 8), asker,
                                    close_stream);
    reporter.max_messages = options_.max_log_messages;
    auto out = host_->run(executor_, dispatch_.with(cancel).with(reporting{&reporter}), std::span<const tool_call>(&call, 1),
                          scope);
    reporter.report_dropped();
    return detail::call_tool_result(out.front(), r.name);
  }
  // The key's own scope: calls of one key share their journal entries, calls of different keys never do.
  static std::string str_key(const std::string& key) { return detail::str_cat("mcp-idempotency-key/", key); }

  // The client capability tool `i` needs (its type's `mcp_required_client_capability`), "" when none.
  [[nodiscard]] std::string_view required_client_capability(std::size_t i) const {
    std::string_view out;
    if constexpr (Host::registry_type::static_size > 0)
      if (Host::registry_type::is_static(i))
        [&]<std::size_t... I>(std::index_sequence<I...>) {
          ((i == I ? (out = mcp_required_client_capability_of<typename Host::registry_type::template tool_type<I>>(), 0)
                   : 0),
           ...);
        }(std::make_index_sequence<Host::registry_type::static_size>{});
    (void)i;
    return out;
  }

  // Why the arguments of a call of tool `i` do not fit its described `arguments` struct, if it has one.
  [[nodiscard]] std::optional<std::string> argument_error(std::size_t i, const nlohmann::json& args) const {
    if constexpr (Host::registry_type::static_size > 0)
      if (Host::registry_type::is_static(i))
        return static_argument_error(i, args, std::make_index_sequence<Host::registry_type::static_size>{});
    return std::nullopt;
  }
  template <std::size_t... I>
  [[nodiscard]] static std::optional<std::string> static_argument_error(std::size_t i, const nlohmann::json& args,
                                                                        std::index_sequence<I...>) {
    std::optional<std::string> out;
    ((i == I ? (out = detail::mcp_argument_error_of<typename Host::registry_type::template tool_type<I>>(args), 0) : 0), ...);
    return out;
  }
  [[nodiscard]] nlohmann::json entry(std::size_t i) const {
    const auto& reg = host_->registry();
    if constexpr (Host::registry_type::static_size > 0)
      if (Host::registry_type::is_static(i)) return static_entry(i, std::make_index_sequence<Host::registry_type::static_size>{});
    return mcp_tool_entry(reg.name(i), reg.description(i), host_->identity_policy_of(i));
  }
  template <std::size_t... I>
  [[nodiscard]] nlohmann::json static_entry(std::size_t i, std::index_sequence<I...>) const {
    nlohmann::json out;
    const auto& reg = host_->registry();
    ((i == I ? (out = mcp_static_tool_entry<typename Host::registry_type::template tool_type<I>>(
                    reg.name(I), reg.description(I), host_->identity_policy_of(I)),
                0)
             : 0),
     ...);
    return out;
  }

  boost::asio::any_io_executor executor_;
  Host* host_;
  mcp_server_options options_;
  Options dispatch_;
  std::unique_ptr<boost::asio::thread_pool> callers_;
  detail::mcp_catalog catalog_;  // resources, templates, prompts; the sessions' subscriptions
  std::vector<std::shared_ptr<void>> transports_;  // listen_http's listeners (closed when destroyed)
  std::shared_ptr<detail::mcp_mrtr_parking> parking_;  // the 2026-07-28 calls waiting for their client's input
  std::unique_ptr<boost::asio::thread_pool> asks_;     // runs the MRTR calls' asks (one thread, never blocked)
};

template <class Executor, class Host>
mcp_server(Executor&&, Host&, mcp_server_options = {}) -> mcp_server<Host>;
template <class Executor, class Host, class Options>
mcp_server(Executor&&, Host&, mcp_server_options, Options) -> mcp_server<Host, Options>;

}  // namespace tool_effects

#include <tool_effects/detail/pop_options.hpp>

#endif  // TOOL_EFFECTS_MCP_SERVER_HPP
