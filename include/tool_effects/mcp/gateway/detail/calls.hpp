// tool_effects/mcp/gateway/detail/calls.hpp — internal to <tool_effects/mcp/gateway.hpp>: what the gateway does
// with one call of an upstream tool once the dispatcher runs it (its grant held, its journal record durable):
// the approval its configuration or its user gives, the tools/call upstream, and its line in the audit log.
//
// Approvals are asked here, not by the dispatcher's approver, because the configuration decides per tool and,
// for the others, the user of the request is asked by elicitation over the request's own channel
// (`mcp_client_asker_of(ctx)`), which an approver cannot reach. With a journal, an approval is recorded
// (durably) before the call goes upstream: a call started in an earlier run is in doubt only if it was
// approved, i.e. may have been sent (the gateway's in-doubt rule, `gateway_in_doubt`).
#ifndef TOOL_EFFECTS_MCP_GATEWAY_DETAIL_CALLS_HPP
#define TOOL_EFFECTS_MCP_GATEWAY_DETAIL_CALLS_HPP

#include <atomic>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include <boost/asio/awaitable.hpp>

#include <nlohmann/json.hpp>

#include <tool_effects/json.hpp>
#include <tool_effects/mcp.hpp>
#include <tool_effects/mcp/auth/principal.hpp>
#include <tool_effects/mcp/gateway/config.hpp>
#include <tool_effects/mcp/gateway/coordination.hpp>
#include <tool_effects/mcp/gateway/metrics.hpp>
#include <tool_effects/mcp/server/detail/core.hpp>

#include <tool_effects/detail/push_options.hpp>  // the coroutine below (g++ 12 false positives)

namespace tool_effects {

/// One tool the gateway serves, with its effective declaration and where it came from.
struct gateway_tool {
  std::string name{};           ///< the name clients see (the server's own, or prefixed on a clash)
  std::string server{};         ///< the upstream server (its key in mcpServers)
  std::string upstream_name{};  ///< the server's name for it
  dynamic_tool declaration{};   ///< effects, scoped accesses and identity, as published and dispatched
  std::string source{};         ///< "overlay", "trusted_server" or "unknown": where the effects came from
  std::string detail{};         ///< trusted_server: "accesses" (its `_meta`) or "annotations"; else ""
  bool identity_from_overlay = false;  ///< the identity (target argument) is the configuration's
  gateway_approval approval = gateway_approval::ask;  ///< for calls that need approval
  nlohmann::json upstream{};    ///< the server's tools/list entry, as it sent it (its claimed annotations too)
};

/// What an embedding program learns from a gateway.
struct gateway_hooks {
  /// One record per call (docs/gateway.md, "The audit log"), from any thread, never two at once.
  std::function<void(const nlohmann::json& record)> audit{};
  /// Operational messages (an upstream that failed, calls left at shutdown), one line each.
  std::function<void(const std::string& line)> log{};
};

/// The `_meta` key under which the gateway says where a tool's effects came from.
inline constexpr std::string_view gateway_provenance_meta_key = "io.github.tool-effects/provenance";

namespace detail {

// The time now as RFC 3339 UTC with milliseconds.
inline std::string gateway_time_now() {
  const auto now = std::chrono::system_clock::now();
  const std::time_t t = std::chrono::system_clock::to_time_t(now);
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count() % 1000;
  std::tm tm{};
  ::gmtime_r(&t, &tm);
  char buf[80];
  std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
                tm.tm_hour, tm.tm_min, tm.tm_sec, static_cast<int>(ms));
  return buf;
}

// What every call of a gateway shares.
struct gateway_shared {
  gateway_hooks hooks;
  gateway_coordinator coordinator;
  gateway_journal journal;
  std::size_t max_attempts = 1;
  std::atomic<bool> over_http{false};  // the principal of a request without one: "anonymous", else "stdio"
  std::mutex audit_m;
  std::map<std::string, const gateway_tool*, std::less<>> by_name;
  gateway_metrics metrics;  // the audit records, counted

  void audit(nlohmann::json record) {
    metrics.observe(record);
    if (!hooks.audit) return;
    const std::lock_guard l(audit_m);
    try {
      hooks.audit(record);
    } catch (...) {  // an audit sink that fails loses its record, not the call
    }
  }
  void log(const std::string& line) const {
    if (hooks.log) hooks.log(line);
  }
  // The start of an audit record of a call of `t`.
  nlohmann::json record(const gateway_tool& t, std::string_view principal) const {
    return {{"time", gateway_time_now()},        {"principal", std::string(principal)},
            {"server", t.server},                {"tool", t.name},
            {"upstream_tool", t.upstream_name},  {"effects", t.declaration.description.effects},
            {"effects_from", t.source}};
  }
  const gateway_tool* tool_of(std::string_view call_name) const {
    const auto it = by_name.find(call_name.substr(0, call_name.rfind('#')));
    return it == by_name.end() ? nullptr : it->second;
  }
};

// One upstream tool as a dynamic tool's function sees it.
struct gateway_tool_state {
  std::shared_ptr<gateway_shared> shared;
  const gateway_tool* tool = nullptr;  // owned by the gateway, which outlives its calls
  mcp_client client;
  std::chrono::milliseconds timeout{};
};

// The wait of a granted call, as the audit log says it.
inline nlohmann::json gateway_wait_json(const gateway_wait& w) {
  nlohmann::json blockers = nlohmann::json::array();
  for (const auto& b : w.blockers) blockers.push_back({{"call", b.call}, {"reason", b.reason}});
  return {{"waited_ms", std::chrono::duration<double, std::milli>(w.waited).count()}, {"waited_for", blockers}};
}

// Whether a call of `t` needs approval: destructive or unknown effects (the library's rule).
inline bool gateway_needs_approval(const gateway_tool& t) {
  return t.declaration.description.exclusive || needs_confirmation(t.declaration.description.effects);
}

// The journal key recording that the call with idempotency key `key` was approved (and may have been sent).
inline std::string gateway_approval_key(std::string_view key) { return str_cat("gateway-approval/", key); }

// The approval of one call of `t`: "allowed_by_config", "denied_by_config", "approved_by_user",
// "declined_by_user" or "no_elicitation" (the client cannot be asked). Asked of the user by elicitation,
// showing the tool, its server, its effects and where they came from, and the canonical arguments.
inline boost::asio::awaitable<std::string> gateway_approve(const gateway_tool_state& s, const attempt_context& ctx,
                                                           const nlohmann::json& args) {
  if (s.tool->approval == gateway_approval::allow) co_return std::string("allowed_by_config");
  if (s.tool->approval == gateway_approval::deny) co_return std::string("denied_by_config");
  const mcp_client_asker* asker = mcp_client_asker_of(ctx);
  if (!asker || !asker->client_declared("elicitation")) co_return std::string("no_elicitation");
  call_subject subject{s.tool->upstream_name, "", s.tool->server,
                       detail::canonical_json(args, static_cast<std::size_t>(-1) / 2, true)};
  const confirmation_request request =
      make_confirmation_request(s.tool->name, subject, s.tool->declaration.description.effects, ctx.idempotency_key);
  std::string message = str_cat(approval_message(request), " (effects from ",
                                s.tool->source == "overlay" ? "the gateway's configuration"
                                : s.tool->source == "trusted_server" ? "the server, trusted"
                                                                     : "nowhere: unknown",
                                ")");
  try {
    const bool yes = approval_granted(co_await asker->async_elicit(std::move(message), approval_schema()));
    co_return std::string(yes ? "approved_by_user" : "declined_by_user");
  } catch (const std::exception&) {
    co_return std::string("no_elicitation");  // the ask failed (timeout, the session ended): no approval
  }
}

// One attempt of a call of upstream tool `s`: approval (first attempt of a call that needs it), then tools/call
// upstream. The upstream's result is the call's result as it came, an `isError` one included; a transport
// fault is an `mcp_transient_error`, retried where the effects allow it. One audit record per call: written
// by the attempt that ends it.
inline boost::asio::awaitable<nlohmann::json> gateway_call(std::shared_ptr<gateway_tool_state> s, attempt_context ctx,
                                                           nlohmann::json args) {
  gateway_shared& g = *s->shared;
  const auto started = std::chrono::steady_clock::now();
  const mcp_principal* principal = mcp_caller_of(ctx);
  nlohmann::json rec =
      g.record(*s->tool, principal ? principal->subject : g.over_http.load() ? "anonymous" : "stdio");
  if (const auto& p = s->tool->declaration.identity; p.target_arg && args.is_object() && args.contains(*p.target_arg))
    rec["target"] = args[*p.target_arg];
  rec.update(gateway_wait_json(g.coordinator.wait_of(ctx.fencing_token)));
  rec["attempts"] = ctx.attempt;
  rec["idempotency_key"] = ctx.idempotency_key;
  const auto finish = [&](std::string outcome, std::string error = {}) {
    rec["outcome"] = std::move(outcome);
    if (!error.empty()) rec["error"] = utf8_excerpt(error, 1000);
    rec["duration_ms"] = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - started).count();
    g.audit(std::move(rec));
  };
  std::string approval(gateway_approval_not_needed);
  if (gateway_needs_approval(*s->tool) && ctx.attempt == 1) {
    approval = co_await gateway_approve(*s, ctx, args);
    rec["approval"] = approval;
    if (approval != "allowed_by_config" && approval != "approved_by_user") {
      finish("denied");
      auto r = make_failure_record(s->tool->name, 0, classify(s->tool->declaration.description.effects),
                                   failure_reason::confirmation_denied);
      r.last_error_message = approval == "denied_by_config"  ? "the gateway's configuration denies this tool"
                             : approval == "declined_by_user" ? "the user declined the call"
                                                              : "the client cannot be asked (no elicitation) and the "
                                                                "configuration does not allow this tool";
      throw call_failure(std::move(r));
    }
    if (g.journal.enabled()) g.journal.record_started(gateway_approval_key(ctx.idempotency_key), s->tool->name);
  } else {
    rec["approval"] = approval;
  }
  mcp_call_progress progress;
  if (ctx.reporter)
    progress = [reporter = ctx.reporter](const nlohmann::json& p) {
      const auto total = p.find("total");
      const auto message = p.find("message");
      reporter->progress(p.value("progress", 0.0), total != p.end() && total->is_number() ? total->get<double>() : 0.0,
                         message != p.end() && message->is_string() ? message->get<std::string>() : std::string());
    };
  std::string error;
  bool transient = false;
  std::exception_ptr failure;
  try {
    nlohmann::json result = co_await s->client.async_call(s->tool->upstream_name, std::move(args), s->timeout,
                                                          std::move(progress));
    if (result.is_object()) result.erase("resultType");  // the upstream's era; the downstream server stamps its own
    finish("ok");
    co_return result;
  } catch (const mcp_tool_error& e) {
    finish("tool_error", e.what());
    co_return e.result();  // the upstream's own isError result, as it sent it
  } catch (const mcp_transient_error& e) {
    error = e.what();
    transient = true;
    failure = std::current_exception();
  } catch (const std::exception& e) {
    error = e.what();
    failure = std::current_exception();
  }
  const bool retried = transient && may_retry(s->tool->declaration.description.effects, false) &&
                       !s->tool->declaration.description.exclusive && ctx.attempt < g.max_attempts;
  if (!retried) finish(transient ? "transient_error" : "error", error);
  std::rethrow_exception(failure);
}

}  // namespace detail
}  // namespace tool_effects

#include <tool_effects/detail/pop_options.hpp>

#endif  // TOOL_EFFECTS_MCP_GATEWAY_DETAIL_CALLS_HPP
