// tool_effects/mcp/server/impl/call.hpp — internal to <tool_effects/mcp/server.hpp> (included by
// mcp/server/impl/server.hpp): how mcp_server runs a tools/call (as a coroutine or, when its turn may block, on a
// caller thread; through the dispatcher under the server's coordinator; in either era, one route: run_tool_call), the
// 2026-07-28 calls and prompts that ask their client by InputRequiredResult
// (parked, resumed, never run twice), what the server reads off each static tool type, and stdio.
#ifndef TOOL_EFFECTS_MCP_SERVER_IMPL_CALL_HPP
#define TOOL_EFFECTS_MCP_SERVER_IMPL_CALL_HPP

#include <algorithm>
#include <memory>
#include <optional>
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
#include <tool_effects/journal.hpp>
#include <tool_effects/json/canonical.hpp>
#include <tool_effects/mcp/protocol/detail/crypto.hpp>
#include <tool_effects/mcp/server.hpp>
#include <tool_effects/mcp/transport/detail/stdio_server.hpp>

#include <tool_effects/detail/push_options.hpp>  // the server's coroutines (g++ 12 false positives)

namespace tool_effects {

template <class Host, class Options>
boost::asio::awaitable<nlohmann::json> mcp_server<Host, Options>::call_tool(nlohmann::json params,
                                                                            mcp_server_request request) {
  detail::tool_call_request r = detail::read_tool_call(params);
  if (!host_->registry().index_of(r.name))
    throw mcp_server_error(detail::rpc_invalid_params, detail::str_cat("Unknown tool: ", detail::quote_input(r.name)));
  check_key(r, request.caller);
  // (Locals, not temporaries of the co_await expression: g++ 12 destroys such temporaries twice.)
  auto call = std::make_shared<detail::tool_call_request>(std::move(r));
  auto asker = std::make_shared<const mcp_client_asker>(
      std::move(request.ask_client), std::move(request.client_capabilities), options_.client_request_timeout, executor_,
      "the request has no channel to its client");
  auto close = std::make_shared<const std::function<void()>>(std::move(request.close_stream));
  // Without caller threads every call takes its place in the admission queue (max_concurrent_calls), kept until
  // the call ended.
  std::optional<detail::mcp_admitted_call> place;
  if (without_caller_thread()) {
    auto admitted = admission(request.cancel);  // (Locals, as above.)
    co_await std::move(admitted);
    place.emplace(*admission_);
  }
  auto run = run_tool_call(std::move(call), std::move(request.caller), std::move(request.principal), request.cancel,
                           std::move(request.progress),
                           detail::mcp_request_log{std::move(request.log_level), std::move(request.log)},
                           std::move(asker), std::move(close));
  co_return co_await std::move(run);
}

template <class Host, class Options>
boost::asio::awaitable<void> mcp_server<Host, Options>::admission(turn_cancellation cancel) {
  auto admitted = [this, cancel = std::move(cancel)](auto handler) {
    detail::forward_cancellation(handler, cancel);
    // The admission may come from another call's end, on another thread (see detail::foreign_completion).
    auto done = std::make_shared<detail::foreign_completion<decltype(handler)>>(std::move(handler));
    admission_->admit([done] { std::move(*done)(); });
  };
  co_await boost::asio::async_initiate<decltype(boost::asio::use_awaitable), void()>(admitted,
                                                                                     boost::asio::use_awaitable);
}

template <class Host, class Options>
boost::asio::awaitable<nlohmann::json> mcp_server<Host, Options>::run_tool_call(
    std::shared_ptr<detail::tool_call_request> r, std::string caller, std::shared_ptr<const mcp_principal> principal,
    turn_cancellation cancel, std::function<void(double, double, const std::string&)> progress,
    detail::mcp_request_log log, std::shared_ptr<const mcp_client_asker> asker,
    std::shared_ptr<const std::function<void()>> close_stream) {
  // Without caller threads (without_caller_thread) a call runs as a coroutine unless it might be asked of its
  // user by the server's own elicitation approver (no approver in the options, a client that declared
  // elicitation), which blocks while it waits for the answer.
  if constexpr (requires { host_->async_run(executor_, dispatch_, std::vector<tool_call>{}, std::string()); }) {
    if (without_caller_thread() &&
        (detail::options_have_approver<Options> || !asker->client_declared("elicitation"))) {
      // (Locals, not temporaries of the co_await expression: g++ 12 destroys such temporaries twice.)
      auto run = run_call_async(std::move(r), std::move(caller), std::move(principal), std::move(cancel),
                                std::move(progress), std::move(log), std::move(asker), std::move(close_stream));
      co_return co_await std::move(run);
    }
  }
  auto initiate = [this, call = std::move(r), asker = std::move(asker), close = std::move(close_stream),
                   cancel = std::move(cancel), progress = std::move(progress), log = std::move(log),
                   caller = std::move(caller), principal = std::move(principal)](auto handler) mutable {
    // The session cancels a request's handler (notifications/cancelled) through its cancellation slot:
    // the call's turn is cancelled (a call waiting for its grant stops waiting; a running one runs to its end).
    detail::forward_cancellation(handler, cancel);
    // The call may end on another thread (a caller thread, then the request's) and the server be destroyed
    // before this post has returned: the destructor waits for it (TSan, pthread_cond_signal on the destroyed
    // caller pool, once the end of a 2026-07-28 call no longer crossed the asks thread).
    const detail::mcp_posting posting(*admission_);
    boost::asio::post(
        *callers_, [this, call = std::move(call), asker = std::move(asker), close = std::move(close), cancel,
                    progress = std::move(progress), log = std::move(log), caller = std::move(caller),
                    principal = std::move(principal),
                    done = detail::foreign_completion<decltype(handler)>(std::move(handler))]() mutable {
          nlohmann::json result;
          {  // the call's state goes before its completion is posted
            const auto c = std::move(call);
            const auto a = std::move(asker);
            const auto cl = std::move(close);
            const auto ca = std::move(cancel);
            const auto p = std::move(progress);
            const auto l = std::move(log);
            result = run_call(*c, caller, principal.get(), ca, p, l, a.get(), cl.get());
          }
          std::move(done)(std::move(result));
        });
  };
  co_return co_await boost::asio::async_initiate<decltype(boost::asio::use_awaitable), void(nlohmann::json)>(
      initiate, boost::asio::use_awaitable);
}

template <class Host, class Options>
boost::asio::awaitable<void> mcp_server<Host, Options>::run_parked_call(
    std::shared_ptr<detail::mcp_mrtr_call> parked, std::shared_ptr<detail::tool_call_request> r, std::string caller,
    std::shared_ptr<const mcp_principal> principal, turn_cancellation cancel,
    std::function<void(double, double, const std::string&)> progress, detail::mcp_request_log log,
    std::shared_ptr<const mcp_client_asker> asker) {
  auto admitted = admission(cancel);  // (Locals, as in call_tool.)
  co_await std::move(admitted);
  // Released last: once the server's destructor sees no call under way it destroys the asks thread, on which
  // the strand of `call` (and so of `asker`) lives; this frame lets go of both first.
  const detail::mcp_admitted_call place(*admission_);
  const std::shared_ptr<detail::mcp_mrtr_call> call = std::move(parked);
  try {
    auto run = run_tool_call(std::move(r), std::move(caller), std::move(principal), std::move(cancel),
                             std::move(progress), std::move(log), std::move(asker), nullptr);
    call->finish(co_await std::move(run));
  } catch (...) {
    call->fail(std::current_exception());
  }
}

// Whom a parked call's requestState belongs to: its caller, but nobody in particular for a stateless request
// without authorization (detail::connection_caller, made by the HTTP listener), whose retry may well come over
// another connection (clients pool them). The state is HMAC-signed and used once: only whoever received it can
// resume the call.
template <class Host, class Options>
std::string mcp_server<Host, Options>::state_owner(const mcp_server_request& request) {
  return request.principal || !detail::is_connection_caller(request.caller) ? request.caller : std::string();
}

template <class Host, class Options>
std::shared_ptr<detail::mcp_mrtr_call> mcp_server<Host, Options>::parked_call(const std::string& state,
                                                                              std::string_view method,
                                                                              const std::string& name,
                                                                              const std::string& caller) const {
  std::shared_ptr<detail::mcp_mrtr_call> parked = parking_->find(state);
  if (!parked->owner().empty() && parked->owner() != caller)  // another caller's: as if this server had not issued it
    throw mcp_server_error(detail::rpc_invalid_params,
                           "Invalid params: at /requestState: issued to another caller (state_of_another_caller)");
  if (parked->method() != method || parked->name() != name)
    throw mcp_server_error(
        detail::rpc_invalid_params,
        detail::str_cat("Invalid params: at /requestState: issued for ", parked->method(), " of ",
                        detail::quote_input(parked->name()), ", not for ", method, " of ", detail::quote_input(name)));
  return parked;
}

template <class Host, class Options>
boost::asio::awaitable<nlohmann::json> mcp_server<Host, Options>::call_tool_asking(nlohmann::json params,
                                                                                   detail::tool_call_request r,
                                                                                   mcp_server_request request) {
  const detail::mcp_input_params in = detail::read_input_params(params);
  if (in.state)
    co_return co_await next_outcome(parked_call(*in.state, "tools/call", r.name, request.caller), false, *in.state,
                                    in.responses, {});
  if (!host_->registry().index_of(r.name))
    throw mcp_server_error(detail::rpc_invalid_params, detail::str_cat("Unknown tool: ", detail::quote_input(r.name)));
  check_key(r, request.caller);
  // The call's state and its asks run on the server's own thread (never blocked by a tool: a synchronous
  // tool blocks its thread while it waits for the answers).
  auto call = std::make_shared<detail::mcp_mrtr_call>(asks_->get_executor(), parking_, "tools/call", r.name,
                                                      state_owner(request));
  auto asker = std::make_shared<const mcp_client_asker>(
      [call](std::vector<mcp_input_request> asks, std::chrono::milliseconds timeout) {
        return call->ask(std::move(asks), timeout);
      },
      std::move(request.client_capabilities), options_.client_request_timeout, asks_->get_executor());
  auto args = std::make_shared<detail::tool_call_request>(std::move(r));
  std::function<void()> start = [this, call, asker, args, cancel = request.cancel,
                                 progress = std::move(request.progress),
                                 log = detail::mcp_request_log{std::move(request.log_level), std::move(request.log)},
                                 caller = request.caller, principal = request.principal] {
    // Without caller threads (without_caller_thread), admitted and run as a call of the earlier era is
    // (run_tool_call: as a coroutine when it can), on the server's executor; else on a caller thread.
    if (without_caller_thread())
      boost::asio::co_spawn(executor_, run_parked_call(call, args, caller, principal, cancel, progress, log, asker),
                            boost::asio::detached);
    else
      boost::asio::post(*callers_, [this, call, asker, args, cancel, progress, log, caller, principal] {
        call->finish(run_call(*args, caller, principal.get(), cancel, progress, log, asker.get()));
      });
  };
  co_return co_await next_outcome(std::move(call), true, std::string(), in.responses, std::move(start), request.cancel);
}

template <class Host, class Options>
boost::asio::awaitable<nlohmann::json> mcp_server<Host, Options>::get_prompt_asking(nlohmann::json params,
                                                                                    mcp_server_request request,
                                                                                    bool modern) {
  auto checked = catalog_.checked_prompt(params);
  auto prompt = std::make_shared<mcp_prompt>(std::move(checked.first));
  std::map<std::string, std::string> args = std::move(checked.second);
  if (!modern) {
    const mcp_client_asker asker(std::move(request.ask_client), std::move(request.client_capabilities),
                                 options_.client_request_timeout, executor_,
                                 "the request has no channel to its client");
    std::vector<mcp_prompt_message> messages = co_await prompt->get_asking(std::move(args), asker);
    co_return detail::mcp_catalog::prompt_result(*prompt, std::move(messages));
  }
  const detail::mcp_input_params in = detail::read_input_params(params);
  if (in.state)
    co_return co_await next_outcome(parked_call(*in.state, "prompts/get", prompt->name, request.caller), false,
                                    *in.state, in.responses, {});
  auto call = std::make_shared<detail::mcp_mrtr_call>(asks_->get_executor(), parking_, "prompts/get", prompt->name,
                                                      state_owner(request));
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

template <class Host, class Options>
boost::asio::awaitable<void> mcp_server<Host, Options>::run_prompt(std::shared_ptr<detail::mcp_mrtr_call> call,
                                                                   std::shared_ptr<const mcp_client_asker> asker,
                                                                   std::shared_ptr<mcp_prompt> prompt,
                                                                   std::map<std::string, std::string> args) {
  try {
    std::vector<mcp_prompt_message> messages = co_await prompt->get_asking(std::move(args), *asker);
    call->finish(detail::mcp_catalog::prompt_result(*prompt, std::move(messages)));
  } catch (...) {
    call->fail(std::current_exception());
  }
}

template <class Host, class Options>
boost::asio::awaitable<nlohmann::json> mcp_server<Host, Options>::next_outcome(
    std::shared_ptr<detail::mcp_mrtr_call> call, bool first, std::string state, nlohmann::json responses,
    std::function<void()> start, turn_cancellation cancel) {
  auto initiate = [call, first, state = std::move(state), responses = std::move(responses), start = std::move(start),
                   cancel](auto handler) mutable {
    detail::forward_cancellation(handler, cancel);
    auto done = std::make_shared<detail::foreign_completion<decltype(handler)>>(std::move(handler));
    // Locals, not this lambda's members: the lambda lives in the awaiting coroutine's frame, and once `wait`
    // holds the completion another thread may complete it, resume the coroutine and free that frame (TSan:
    // heap-use-after-free reading `start` after `wait`).
    const std::shared_ptr<detail::mcp_mrtr_call> c = call;
    std::function<void()> start_now = std::move(start);
    c->wait(first, std::move(state), std::move(responses),
            [done = std::move(done)](std::exception_ptr e, nlohmann::json r) { std::move(*done)(e, std::move(r)); });
    if (start_now) start_now();
  };
  co_return co_await boost::asio::async_initiate<decltype(boost::asio::use_awaitable),
                                                 void(std::exception_ptr, nlohmann::json)>(initiate,
                                                                                           boost::asio::use_awaitable);
}

template <class Host, class Options>
std::string mcp_server<Host, Options>::key_scope(const std::string& caller, const std::string& key) {
  return detail::str_cat("mcp-idempotency-key/", std::to_string(caller.size()), ":", caller, "/", key);
}

template <class Host, class Options>
void mcp_server<Host, Options>::check_key(const detail::tool_call_request& r, const std::string& caller) {
  if (r.idempotency_key.empty()) return;
  // The call a key names: its tool and its arguments (canonical JSON), as a SHA-256.
  const auto digest = detail::mcp_sha256(detail::str_cat(r.name, "\n", canonical_json(r.arguments)));
  const std::string fingerprint =
      detail::mcp_base64(std::string_view(reinterpret_cast<const char*>(digest.data()), digest.size()), true);
  const std::string k = detail::str_cat("mcp-idempotency-fingerprint/", key_scope(caller, r.idempotency_key));
  std::optional<std::string> first;
  {
    const std::lock_guard lock(keys_m_);
    if constexpr (detail::options_have_journal<Options>) {
      // In the journal, so that a key outlives the process, as the calls it replays do.
      const auto& journal = dispatch_.template get<detail::options_journal_t<Options>>();
      if (const auto e = journal.find(k); e && e->at == journal_entry::state::ended) {
        first = e->result;
      } else {
        journal.record_started(k, "idempotency key");
        journal.record_ended(k, journal_entry{journal_entry::state::ended, false, fingerprint, {}, {}});
      }
    } else {
      if (const auto it = keys_.find(k); it != keys_.end()) {
        first = it->second;
      } else {
        keys_.emplace(k, fingerprint);
        keys_order_.push_back(k);
        while (keys_order_.size() > 65536) {
          keys_.erase(keys_order_.front());
          keys_order_.pop_front();
        }
      }
    }
  }
  if (first && *first != fingerprint)
    throw mcp_server_error(
        detail::rpc_invalid_params,
        detail::str_cat("Invalid params: at /_meta/", detail::pointer_token(mcp_idempotency_meta_key),
                        ": idempotency_key_reused: the key was first used for another call (another tool or other "
                        "arguments); a key names one call, and is reused only to repeat it"));
}

template <class Host, class Options>
std::optional<nlohmann::json> mcp_server<Host, Options>::invalid_arguments(const detail::tool_call_request& r) const {
  std::optional<nlohmann::json> out;
  if (auto bad = argument_error(*host_->registry().index_of(r.name), r.arguments)) {
    out = detail::mcp_text_result(detail::str_cat("invalid_arguments: ", *bad));
    (*out)["isError"] = true;
  }
  return out;
}

template <class Host, class Options>
std::pair<tool_call, std::string> mcp_server<Host, Options>::turn_of(const detail::tool_call_request& r,
                                                                    const std::string& caller) {
  tool_call call;
  call.id = "mcp";
  call.name = r.name;
  call.arguments = r.arguments;
  // A client's key is its caller's: another caller's same key never replays this one's outcome.
  std::string scope = r.idempotency_key.empty() ? random_idempotency_key() : key_scope(caller, r.idempotency_key);
  return {std::move(call), std::move(scope)};
}

template <class Host, class Options>
void mcp_server<Host, Options>::configure(detail::mcp_request_reporter& reporter, const mcp_principal* principal) const {
  reporter.max_messages = options_.max_log_messages;
  reporter.principal = principal;
}

template <class Host, class Options>
boost::asio::awaitable<nlohmann::json> mcp_server<Host, Options>::run_call_async(
    std::shared_ptr<detail::tool_call_request> r, std::string caller, std::shared_ptr<const mcp_principal> principal,
    turn_cancellation cancel, std::function<void(double, double, const std::string&)> progress,
    detail::mcp_request_log log, std::shared_ptr<const mcp_client_asker> asker,
    std::shared_ptr<const std::function<void()>> close_stream) {
  if (auto bad = invalid_arguments(*r)) co_return std::move(*bad);
  std::pair<tool_call, std::string> one = turn_of(*r, caller);
  // In this frame until the call ended, as every argument above.
  detail::mcp_request_reporter reporter(&progress, &log, r->name,
                                        std::min(options_.max_log_bytes, options_.max_message_bytes / 8), asker.get(),
                                        close_stream.get());
  configure(reporter, principal.get());
  std::vector<tool_call> calls;
  calls.push_back(std::move(one.first));
  // (Locals, not temporaries of the co_await expression: g++ 12 destroys such temporaries twice.)
  auto turn = host_->async_run(executor_, dispatch_.with(cancel).with(reporting{&reporter}), std::move(calls),
                               std::move(one.second));
  std::vector<outcome<nlohmann::json>> out = co_await std::move(turn);
  reporter.report_dropped();
  co_return detail::call_tool_result(std::move(out.front()), r->name);
}

template <class Host, class Options>
nlohmann::json mcp_server<Host, Options>::run_call(
    const detail::tool_call_request& r, const std::string& caller, const mcp_principal* principal,
    const turn_cancellation& cancel, const std::function<void(double, double, const std::string&)>& progress,
    const detail::mcp_request_log& log, const mcp_client_asker* asker, const std::function<void()>* close_stream) {
  if (auto bad = invalid_arguments(r)) return std::move(*bad);
  auto [call, scope] = turn_of(r, caller);
  detail::mcp_request_reporter reporter(
      &progress, &log, r.name, std::min(options_.max_log_bytes, options_.max_message_bytes / 8), asker, close_stream);
  configure(reporter, principal);
  auto options = dispatch_.with(cancel).with(reporting{&reporter});
  std::vector<outcome<nlohmann::json>> out;
  if constexpr (detail::options_have_approver<decltype(options)>) {
    out = host_->run(executor_, options, std::span<const tool_call>(&call, 1), scope);
  } else if (asker && asker->client_declared("elicitation")) {
    // No approver of the application's: a destructive or unknown call is asked of the user at the client.
    out = host_->run(executor_, options.with(approver([asker](const confirmation_request& c) {
                       return detail::mcp_ask_user_to_confirm(*asker, c);
                     })),
                     std::span<const tool_call>(&call, 1), scope);
  } else {  // nobody to ask: such a call is denied, saying that no approver was given
    out = host_->run(executor_, options, std::span<const tool_call>(&call, 1), scope);
  }
  reporter.report_dropped();
  return detail::call_tool_result(std::move(out.front()), r.name);
}

template <class Host, class Options>
std::string_view mcp_server<Host, Options>::required_client_capability(std::size_t i) const {
  std::string_view out;
  if constexpr (Host::registry_type::static_size > 0)
    if (Host::registry_type::is_static(i)) [&]<std::size_t... I>(std::index_sequence<I...>) {
        ((i == I ? (out = mcp_required_client_capability_of<typename Host::registry_type::template tool_type<I>>(), 0)
                 : 0),
         ...);
      }
  (std::make_index_sequence<Host::registry_type::static_size>{});
  (void)i;
  return out;
}

template <class Host, class Options>
std::optional<std::string> mcp_server<Host, Options>::argument_error(std::size_t i, const nlohmann::json& args) const {
  std::optional<std::string> out;
  if constexpr (Host::registry_type::static_size > 0)
    if (Host::registry_type::is_static(i)) [&]<std::size_t... I>(std::index_sequence<I...>) {
        ((i == I ? (out = detail::mcp_argument_error_of<typename Host::registry_type::template tool_type<I>>(args), 0)
                 : 0),
         ...);
      }
  (std::make_index_sequence<Host::registry_type::static_size>{});
  if (out) return out;
  // The argument that names the call's target is required (the tool's inputSchema says so).
  if (const auto& p = host_->identity_policy_of(i); p.target_arg && !p.target_fn)
    if (!args.is_object() || !args.contains(*p.target_arg))
      return detail::str_cat("at /", detail::pointer_token(*p.target_arg), ": missing required key \"",
                             detail::utf8_excerpt(*p.target_arg, 200), "\"");
  return out;
}

template <class Host, class Options>
nlohmann::json mcp_server<Host, Options>::entry(std::size_t i) const {
  const auto& reg = host_->registry();
  nlohmann::json out;
  if constexpr (Host::registry_type::static_size > 0)
    if (Host::registry_type::is_static(i)) {
      [&]<std::size_t... I>(std::index_sequence<I...>) {
        ((i == I ? (out = mcp_static_tool_entry<typename Host::registry_type::template tool_type<I>>(
                        reg.name(I), reg.description(I), host_->identity_policy_of(I)),
                    0)
                 : 0),
         ...);
      }
      (std::make_index_sequence<Host::registry_type::static_size>{});
    }
  if (out.is_null()) out = mcp_tool_entry(reg.name(i), reg.description(i), host_->identity_policy_of(i));
  if (options_.tool_entry) options_.tool_entry(i, out);
  return out;
}

template <class Host, class Options>
void mcp_server<Host, Options>::serve_fds(int in, int out) {
  boost::asio::io_context io;
  const detail::mcp_strand strand = detail::make_mcp_strand(io.get_executor());
  auto session = std::make_shared<detail::mcp_session>(strand, session_settings("stdio client"));
  bind(*session);
  auto transport = std::make_shared<detail::mcp_stdio_server_transport>(strand, in, out, options_.max_message_bytes,
                                                                        options_.max_write_queue_bytes, [] {});
  boost::asio::post(strand, [session, transport] { session->start(transport); });
  io.run();
  session.reset();
}

}  // namespace tool_effects

#include <tool_effects/detail/pop_options.hpp>

#endif  // TOOL_EFFECTS_MCP_SERVER_IMPL_CALL_HPP
