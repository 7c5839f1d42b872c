// tool_effects/mcp/server/impl/server.hpp — the definitions of mcp_server's members (<tool_effects/mcp/server.hpp>
// declares them): the method table and the route of every request through it, the handlers of the table's rows,
// tools/call through the dispatcher (and its 2026-07-28 form that asks by InputRequiredResult), and stdio.
#ifndef TOOL_EFFECTS_MCP_SERVER_IMPL_SERVER_HPP
#define TOOL_EFFECTS_MCP_SERVER_IMPL_SERVER_HPP

#include <algorithm>
#include <atomic>
#include <memory>
#include <span>
#include <string>
#include <utility>

#include <boost/asio/associated_cancellation_slot.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <tool_effects/detail/foreign_completion.hpp>
#include <tool_effects/mcp/server.hpp>
#include <tool_effects/mcp/transport/detail/stdio_server.hpp>

#include <tool_effects/detail/push_options.hpp>  // the server's coroutines (g++ 12 false positives)

namespace tool_effects {

template <class Host, class Options>
mcp_server<Host, Options>::~mcp_server() {
  listeners_.clear();
  parking_->abandon_all();
  callers_->join();
  admission_->wait_idle();  // the calls under way without a caller thread (without_caller_thread)
  io_.reset();
}

template <class Host, class Options>
auto mcp_server<Host, Options>::methods() -> std::span<const method_row> {
  using detail::mcp_eras;
  // name, eras, needs the catalog, cacheable (modern), served before initialize (legacy), handler
  static constexpr method_row table[] = {
      {"initialize", mcp_eras::legacy, false, false, true, &mcp_server::on_initialize},
      {"ping", mcp_eras::legacy, false, false, true, &mcp_server::on_ping},
      {"server/discover", mcp_eras::modern, false, true, false, &mcp_server::on_discover},
      {"tools/list", mcp_eras::both, false, true, false, &mcp_server::on_list_tools},
      {"tools/call", mcp_eras::both, false, false, false, &mcp_server::on_call_tool},
      {"logging/setLevel", mcp_eras::legacy, false, false, false, &mcp_server::on_set_level},
      {"resources/list", mcp_eras::both, true, true, false, &mcp_server::on_list_resources},
      {"resources/templates/list", mcp_eras::both, true, true, false, &mcp_server::on_list_templates},
      {"resources/read", mcp_eras::both, true, true, false, &mcp_server::on_read_resource},
      {"resources/subscribe", mcp_eras::legacy, true, false, false, &mcp_server::on_subscribe},
      {"resources/unsubscribe", mcp_eras::legacy, true, false, false, &mcp_server::on_unsubscribe},
      {"prompts/list", mcp_eras::both, true, true, false, &mcp_server::on_list_prompts},
      {"prompts/get", mcp_eras::both, true, false, false, &mcp_server::on_get_prompt},
      {"completion/complete", mcp_eras::both, true, false, false, &mcp_server::on_complete},
  };
  return table;
}

template <class Host, class Options>
boost::asio::awaitable<nlohmann::json> mcp_server<Host, Options>::handle_request(std::string method,
                                                                                 nlohmann::json params,
                                                                                 mcp_server_request request) {
  request.modern = detail::mcp_request_is_modern(method, params, request.transport_version);
  if (request.modern) {
    detail::mcp_request_meta meta = detail::read_request_meta(params, request.transport_version);
    request.client_capabilities = std::move(meta.client_capabilities);
    request.ask_client = {};  // no server-to-client request inside a 2026-07-28 call: it asks by InputRequiredResult
    // A modern request's log level is its own (no session to set one on): none asks for no log messages.
    request.log_level = meta.log_level.empty()
                            ? nullptr
                            : std::make_shared<std::atomic<mcp_log_level>>(mcp_log_level_named(meta.log_level));
  }
  const method_row* row = detail::mcp_find_method(methods(), method);
  if (row == nullptr || !detail::mcp_serves(row->eras, request.modern) || (row->catalog && !catalog_.serves(method)))
    throw mcp_server_error(detail::rpc_method_not_found,
                           detail::str_cat("Method not found: ", detail::quote_input(method),
                                           request.modern && detail::mcp_method_is_legacy_only(method)
                                               ? " (not in the 2026-07-28 era; its requests need no initialize)"
                                               : ""));
  const bool modern = request.modern;
  nlohmann::json r = co_await (this->*(row->handler))(std::move(params), std::move(request));
  if (modern) detail::mcp_mark_modern_result(r, row->cacheable);
  co_return r;
}

template <class Host, class Options>
void mcp_server<Host, Options>::bind(detail::mcp_session& s) {
  auto state = std::make_shared<session_state>();
  // The session's resource subscriptions: resources/updated goes to it as a notification of its own.
  state->subscriptions.send_updated = [weak = s.weak_from_this()](nlohmann::json params) {
    if (auto p = weak.lock())
      boost::asio::post(p->strand(), [p, params = std::move(params)]() mutable {
        p->notify("notifications/resources/updated", std::move(params));
      });
  };
  s.on_requests([](std::string_view method) { return detail::mcp_find_method(methods(), method) != nullptr; },
                [this, state = std::move(state)](detail::mcp_request_context ctx) {
                  return serve_request(std::move(ctx), state);
                });
  s.on_other_notification([](const std::string&, const nlohmann::json&) {});
}

template <class Host, class Options>
detail::mcp_session_settings mcp_server<Host, Options>::session_settings(std::string peer) const {
  detail::mcp_session_settings st;
  st.name = std::move(peer);
  st.max_handler_requests = options_.max_pending_requests;
  st.max_message_bytes = options_.max_message_bytes;
  // The handlers run where the session does (the listener's thread, stdio's): they do the protocol's light work,
  // and hand the application's code (tools, resource reads, prompts, completers) to the application's executor,
  // whose threads a tool may block; so a blocked pool never delays initialize, tools/list or a cancellation.
  return st;
}

template <class Host, class Options>
boost::asio::awaitable<nlohmann::json> mcp_server<Host, Options>::serve_request(detail::mcp_request_context ctx,
                                                                                std::shared_ptr<session_state> state) {
  mcp_server_request r;
  r.id = ctx.id;
  r.log_level = std::shared_ptr<std::atomic<mcp_log_level>>(state, &state->level);
  r.subscriptions = std::shared_ptr<detail::mcp_resource_subscriptions>(state, &state->subscriptions);
  if (ctx.incoming) {
    r.transport_version = ctx.incoming->transport_version;
    r.param_headers = ctx.incoming->param_headers;
    r.principal = ctx.incoming->principal;
    if (!ctx.incoming->caller.empty()) r.caller = ctx.incoming->caller;
  }
  const bool modern = detail::mcp_request_is_modern(ctx.method, ctx.params, r.transport_version);
  if (!modern) {
    if (ctx.method == "initialize" && ctx.params.is_object() && ctx.params.contains("capabilities"))
      state->capabilities.set(ctx.params["capabilities"]);
    const method_row* row = detail::mcp_find_method(methods(), ctx.method);
    if (row != nullptr && !row->early && !state->initialized.load())
      throw mcp_server_error(detail::rpc_invalid_request,
                             detail::str_cat("Invalid Request: ", detail::quote_input(ctx.method),
                                             " before initialize (send initialize first, or a 2026-07-28 request "
                                             "whose _meta names its version)"));
  }
  auto session = ctx.session;
  // A 2026-07-28 request names its client's capabilities itself (handle_request), and asks by InputRequiredResult.
  if (!modern) {
    r.client_capabilities = state->capabilities.get();
    // (A plain lambda that calls a coroutine function: the coroutine owns what it needs, not the lambda's
    // captures, which the asker's std::function may outlive or not.)
    r.ask_client = [c = std::make_shared<const detail::mcp_request_context>(
                        detail::mcp_request_context{ctx.id, std::string(), nullptr, session})](
                       std::string method, nlohmann::json params, std::chrono::milliseconds timeout) {
      return ask_over_session(c, std::move(method), std::move(params), timeout);
    };
  }
  // Posted onto the session's strand, as progress is (below): it precedes the response.
  r.log = [id = ctx.id, session](nlohmann::json params) {
    auto s = session.lock();
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
    r.progress = [token = std::move(token), id = ctx.id, session](double progress, double total,
                                                                  const std::string& message) {
      auto s = session.lock();
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
  // Ends the request's stream unanswered (SSE polling), where its transport has such streams (not stdio).
  if (const auto s = session.lock(); s && s->transport() && s->transport()->closes_streams())
    r.close_stream = [id = ctx.id, session] {
      if (auto s = session.lock())
        boost::asio::post(s->strand(), [s, id] {
          if (const auto& t = s->transport()) t->close_stream(id);
        });
    };
  const bool initialize = !modern && ctx.method == "initialize";
  nlohmann::json result = co_await handle_request(std::move(ctx.method), std::move(ctx.params), std::move(r));
  if (initialize) {
    state->initialized.store(true);
    if (auto s = session.lock()) {
      const std::string v = result.at("protocolVersion");
      boost::asio::post(s->strand(), [s, v] { s->initialized(v); });
    }
  }
  co_return result;
}

template <class Host, class Options>
boost::asio::awaitable<nlohmann::json> mcp_server<Host, Options>::ask_over_session(
    std::shared_ptr<const detail::mcp_request_context> c, std::string method, nlohmann::json params,
    std::chrono::milliseconds timeout) {
  co_return co_await c->request(std::move(method), std::move(params), timeout);
}

template <class Host, class Options>
nlohmann::json mcp_server<Host, Options>::list_tools() const {
  nlohmann::json tools = nlohmann::json::array();
  const auto& reg = host_->registry();
  for (std::size_t i = 0; i < reg.size(); ++i) tools.push_back(entry(i));
  return {{"tools", std::move(tools)}};
}

template <class Host, class Options>
nlohmann::json mcp_server<Host, Options>::initialize_result(const std::string& requested) const {
  nlohmann::json info = {{"name", options_.name}, {"version", options_.version}};
  if (!options_.title.empty()) info["title"] = options_.title;
  nlohmann::json caps = {{"tools", {{"listChanged", false}}}, {"logging", nlohmann::json::object()}};
  catalog_.add_capabilities(caps, true);
  nlohmann::json r = {
      {"protocolVersion", negotiate(requested)}, {"capabilities", std::move(caps)}, {"serverInfo", std::move(info)}};
  if (!options_.instructions.empty()) r["instructions"] = options_.instructions;
  return r;
}

template <class Host, class Options>
std::string mcp_server<Host, Options>::negotiate(const std::string& requested) {
  for (const auto& v : mcp_protocol_versions())
    if (v == requested && !mcp_version_is_modern(v)) return v;
  for (const auto& v : mcp_protocol_versions())
    if (!mcp_version_is_modern(v)) return v;
  return mcp_protocol_versions().front();
}

template <class Host, class Options>
nlohmann::json mcp_server<Host, Options>::discover_result() const {
  nlohmann::json init = initialize_result(std::string());
  // No resources/subscribe in that era.
  if (init["capabilities"].contains("resources")) init["capabilities"]["resources"].erase("subscribe");
  nlohmann::json r = {{"supportedVersions", mcp_protocol_versions()},
                      {"capabilities", std::move(init["capabilities"])},
                      {"_meta", {{detail::mcp_meta_server_info, std::move(init["serverInfo"])}}}};
  if (init.contains("instructions")) r["instructions"] = std::move(init["instructions"]);
  return r;
}

// ------------------------------------------------------------------------------------------- the rows' handlers

template <class Host, class Options>
boost::asio::awaitable<nlohmann::json> mcp_server<Host, Options>::on_initialize(nlohmann::json params,
                                                                                mcp_server_request) {
  std::string v;
  if (params.is_object())
    if (const auto it = params.find("protocolVersion"); it != params.end() && it->is_string()) v = *it;
  co_return initialize_result(v);
}

template <class Host, class Options>
boost::asio::awaitable<nlohmann::json> mcp_server<Host, Options>::on_ping(nlohmann::json, mcp_server_request) {
  co_return nlohmann::json::object();
}

template <class Host, class Options>
boost::asio::awaitable<nlohmann::json> mcp_server<Host, Options>::on_discover(nlohmann::json, mcp_server_request) {
  co_return discover_result();
}

template <class Host, class Options>
boost::asio::awaitable<nlohmann::json> mcp_server<Host, Options>::on_list_tools(nlohmann::json, mcp_server_request) {
  co_return list_tools();
}

template <class Host, class Options>
boost::asio::awaitable<nlohmann::json> mcp_server<Host, Options>::on_set_level(nlohmann::json params,
                                                                               mcp_server_request request) {
  const mcp_log_level level = detail::read_set_level(params);
  if (request.log_level) request.log_level->store(level);
  co_return nlohmann::json::object();
}

template <class Host, class Options>
boost::asio::awaitable<nlohmann::json> mcp_server<Host, Options>::on_list_resources(nlohmann::json,
                                                                                    mcp_server_request) {
  co_return catalog_.list_resources();
}

template <class Host, class Options>
boost::asio::awaitable<nlohmann::json> mcp_server<Host, Options>::on_list_templates(nlohmann::json,
                                                                                    mcp_server_request) {
  co_return catalog_.list_templates();
}

template <class Host, class Options>
boost::asio::awaitable<nlohmann::json> mcp_server<Host, Options>::on_read_resource(nlohmann::json params,
                                                                                   mcp_server_request request) {
  std::function<nlohmann::json()> read = [this, params = std::move(params), modern = request.modern] {
    return catalog_.read(params, modern);
  };
  co_return co_await on_application(std::move(read));
}

template <class Host, class Options>
boost::asio::awaitable<nlohmann::json> mcp_server<Host, Options>::on_list_prompts(nlohmann::json, mcp_server_request) {
  co_return catalog_.list_prompts();
}

template <class Host, class Options>
boost::asio::awaitable<nlohmann::json> mcp_server<Host, Options>::on_complete(nlohmann::json params,
                                                                              mcp_server_request) {
  std::function<nlohmann::json()> complete = [this, params = std::move(params)] { return catalog_.complete(params); };
  co_return co_await on_application(std::move(complete));
}

template <class Host, class Options>
boost::asio::awaitable<nlohmann::json> mcp_server<Host, Options>::on_application(std::function<nlohmann::json()> f) {
  co_return co_await boost::asio::co_spawn(executor_, run_function(std::move(f)), boost::asio::use_awaitable);
}

template <class Host, class Options>
boost::asio::awaitable<nlohmann::json> mcp_server<Host, Options>::run_function(std::function<nlohmann::json()> f) {
  co_return f();
}

template <class Host, class Options>
boost::asio::awaitable<nlohmann::json> mcp_server<Host, Options>::on_subscribe(nlohmann::json params,
                                                                               mcp_server_request request) {
  const std::string uri = catalog_.subscribable_uri(params);
  if (!request.subscriptions)
    throw mcp_server_error(detail::rpc_invalid_request,
                           "Invalid Request: resources/subscribe needs a session to hold the subscription");
  {
    std::lock_guard lock(request.subscriptions->m);
    auto& uris = request.subscriptions->uris;
    if (!uris.contains(uri) && uris.size() >= mcp_max_subscriptions)
      throw mcp_server_error(
          detail::rpc_invalid_params,
          detail::str_cat("Invalid params: at /uri: the session already has ", std::to_string(mcp_max_subscriptions),
                          " subscriptions (mcp_max_subscriptions)"));
    uris.insert(uri);
  }
  catalog_.list_subscriber(request.subscriptions);
  co_return nlohmann::json::object();
}

template <class Host, class Options>
boost::asio::awaitable<nlohmann::json> mcp_server<Host, Options>::on_unsubscribe(nlohmann::json params,
                                                                                 mcp_server_request request) {
  const std::string uri = catalog_.subscribable_uri(params);
  if (!request.subscriptions)
    throw mcp_server_error(detail::rpc_invalid_request,
                           "Invalid Request: resources/unsubscribe needs a session to hold the subscription");
  std::lock_guard lock(request.subscriptions->m);
  request.subscriptions->uris.erase(uri);
  co_return nlohmann::json::object();
}

template <class Host, class Options>
boost::asio::awaitable<nlohmann::json> mcp_server<Host, Options>::on_get_prompt(nlohmann::json params,
                                                                                mcp_server_request request) {
  if (catalog_.prompt_asks(params)) {
    const bool modern = request.modern;
    co_return co_await get_prompt_asking(std::move(params), std::move(request), modern);
  }
  std::function<nlohmann::json()> get = [this, params = std::move(params)] { return catalog_.get_prompt(params); };
  co_return co_await on_application(std::move(get));
}

template <class Host, class Options>
boost::asio::awaitable<nlohmann::json> mcp_server<Host, Options>::on_call_tool(nlohmann::json params,
                                                                               mcp_server_request request) {
  if (!request.modern) co_return co_await call_tool(std::move(params), std::move(request));
  // (The arguments move into `call`; call_tool_asking reads the rest of `params`: requestState, inputResponses.)
  detail::tool_call_request call = detail::read_tool_call(params);
  if (const auto i = host_->registry().index_of(call.name)) {
    if (request.param_headers)
      detail::check_param_headers(entry(*i)["inputSchema"], call.arguments, *request.param_headers);
    const std::string_view needed = required_client_capability(*i);
    if (!needed.empty() && !request.client_capabilities.contains(needed))
      throw mcp_server_error(
          detail::rpc_missing_client_capability,
          detail::str_cat("Missing required client capability: tool ", detail::quote_input(call.name), " needs \"",
                          needed, "\", which the request's /_meta/",
                          detail::pointer_token(detail::mcp_meta_client_capabilities), " does not declare"),
          nlohmann::json{{"requiredCapabilities", {{std::string(needed), nlohmann::json::object()}}}});
  }
  co_return co_await call_tool_asking(std::move(params), std::move(call), std::move(request));
}

}  // namespace tool_effects

#include <tool_effects/mcp/server/impl/call.hpp>

#include <tool_effects/detail/pop_options.hpp>

#endif  // TOOL_EFFECTS_MCP_SERVER_IMPL_SERVER_HPP
