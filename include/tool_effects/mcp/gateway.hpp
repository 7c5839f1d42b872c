// tool_effects/mcp/gateway.hpp — an effects gateway: an MCP server to any client and a client of any MCP
// servers, which publishes honest hints for the servers' tools and runs every call under the library's rules.
//
//   auto config = te::load_gateway_config("gateway.json");            // mcp/gateway/config.hpp
//   te::mcp_gateway gateway(config, te::make_gateway_backends(config));  // mcp/gateway/backends.hpp
//   gateway.serve_stdio();                                             // or listen_http("127.0.0.1", 0)
//
// What it guarantees:
// - Hints: a tool's effects come from the configuration (an overlay entry), else from a server marked trusted
//   (its `_meta` accesses, else its annotations), else they are unknown; the hints published are derived from
//   those effects (`export_mcp_hints`), so a server's false `readOnlyHint` is never passed on. Each tool says
//   under `_meta` `io.github.tool-effects/provenance` where its effects came from, beside its accesses.
// - Coordination: every call of every client runs through one dispatcher under one coordinator (in process,
//   or etcd across replicas): calls that conflict on a declared resource and target run one at a time.
// - At most once: with a journal, a call repeated with the client's idempotency key is answered from it; a
//   call started by a run that died is run again only if retry-safe, or if it needed approval and was never
//   approved (so never sent); else its caller gets `in_doubt`. Transient upstream failures are retried only
//   where the effects allow; an upstream that exits is restarted (at most `max_restarts` times).
// - Approvals: a destructive or unknown call is allowed or denied by the configuration, else asked of the
//   user at the client by elicitation, once.
// - Shutdown: `shutdown()` refuses new calls, lets the calls under way finish (within the grace period), then
//   stops serving.
// - Metrics: every audit record is counted (`metrics()`); `listen_http` serves them at `/metrics` in the
//   Prometheus text format. Reference: docs/gateway.md.
#ifndef TOOL_EFFECTS_MCP_GATEWAY_HPP
#define TOOL_EFFECTS_MCP_GATEWAY_HPP

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <exception>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include <boost/asio/thread_pool.hpp>

#include <nlohmann/json.hpp>

#include <tool_effects/json.hpp>
#include <tool_effects/mcp.hpp>
#include <tool_effects/mcp/gateway/config.hpp>
#include <tool_effects/mcp/gateway/coordination.hpp>
#include <tool_effects/mcp/gateway/detail/calls.hpp>
#include <tool_effects/mcp/gateway/detail/front.hpp>
#include <tool_effects/mcp/gateway/metrics.hpp>
#include <tool_effects/mcp/http.hpp>
#include <tool_effects/mcp/server.hpp>

namespace tool_effects {

/// The coordinator and the journal a gateway runs with (`make_gateway_backends` makes them from a
/// configuration: <tool_effects/mcp/gateway/backends.hpp>).
struct gateway_backends {
  gateway_coordinator coordinator{};  ///< one for every client (default: in process)
  gateway_journal journal{};          ///< default: none
};

/// An effects gateway in front of the MCP servers of a configuration.
class mcp_gateway {
 public:
  /// The dispatch options every call runs with: one coordinator, the journal, the retry policy, and the
  /// gateway's in-doubt rule as approver (the approvals themselves are the gateway's: detail/calls.hpp).
  using options_type = dispatch_options<gateway_coordinator, gateway_journal, retry_policy, approver>;
  using server_type = mcp_server<json_tool_host<>, options_type>;

  /// Starts every upstream server of `config` (at once), lists their tools, checks the configuration's tools
  /// against them and registers every tool; nothing is served yet. Throws `gateway_config_error` naming the
  /// file, the server, the tool and the field (a server that cannot be started or listed included); then
  /// every upstream started is stopped again.
  explicit mcp_gateway(gateway_config config, gateway_backends backends = {}, gateway_hooks hooks = {})
      : config_(std::move(config)),
        pool_(config_.threads != 0 ? config_.threads : backends.journal.enabled() ? 2 : 1),
        host_(registry_),
        shared_(std::make_shared<detail::gateway_shared>()) {
    shared_->hooks = std::move(hooks);
    shared_->coordinator = std::move(backends.coordinator);
    shared_->journal = std::move(backends.journal);
    shared_->max_attempts = config_.retry_attempts;
    try {
      start_upstreams();
      register_tools();
    } catch (...) {
      close_upstreams();
      throw;
    }
    shared_->coordinator.on_failure([s = std::weak_ptr(shared_)](const call_description& d, std::string outcome) {
      if (const auto g = s.lock())
        if (const gateway_tool* t = g->tool_of(d.name)) {
          nlohmann::json rec = g->record(*t, "");
          rec.erase("principal");
          rec["outcome"] = std::move(outcome);
          g->audit(std::move(rec));
        }
    });
    const retry_policy retry{.max_attempts = config_.retry_attempts, .base_delay = config_.retry_base_delay,
                             .is_transient = mcp_transient()};
    options_type dispatch = run_options{}
                                .with(shared_->coordinator)
                                .with(shared_->journal)
                                .with(retry)
                                .with(approver([s = shared_](const confirmation_request& r) { return in_doubt(*s, r); }));
    mcp_server_options so;
    so.name = config_.name;
    so.max_concurrent_calls = config_.max_concurrent_calls;
    so.nonblocking_calls = true;  // every tool is an upstream call (a coroutine), the approver never blocks
    so.tool_entry = [this](std::size_t i, nlohmann::json& entry) { decorate(tools_.at(i), entry); };
    server_ = std::make_unique<server_type>(pool_, host_, so, std::move(dispatch));
    front_ = std::make_unique<front_type>(*server_, host_, so, pool_.get_executor());
  }
  mcp_gateway(const mcp_gateway&) = delete;
  mcp_gateway& operator=(const mcp_gateway&) = delete;
  /// Stops serving, then every upstream server.
  ~mcp_gateway() {
    front_.reset();
    server_.reset();
    close_upstreams();
    pool_.stop();
    pool_.join();
  }

  /// The configuration.
  [[nodiscard]] const gateway_config& config() const noexcept { return config_; }
  /// Every tool served, in the order served, with its effective declaration and its provenance.
  [[nodiscard]] const std::vector<gateway_tool>& tools() const noexcept { return tools_; }
  /// The tools/list result clients get.
  [[nodiscard]] nlohmann::json list_tools() const { return server_->list_tools(); }
  /// The plan of a turn of these tools (which call waits for which, and why).
  [[nodiscard]] turn_plan plan(std::span<const tool_call> calls) const { return host_.plan(calls); }
  /// The coordinator (calls under way, their waits).
  [[nodiscard]] const gateway_coordinator& coordinator() const noexcept { return shared_->coordinator; }
  /// What the gateway has done, counted from its audit records.
  [[nodiscard]] const gateway_metrics& metrics() const noexcept { return shared_->metrics; }
  /// The metrics in the Prometheus text format, with each upstream server's restarts: what `listen_http` serves
  /// at the configuration's `metrics_path`.
  [[nodiscard]] std::string metrics_text() const {
    std::vector<std::pair<std::string, std::size_t>> restarts;
    for (std::size_t i = 0; i < clients_.size(); ++i)
      restarts.emplace_back(config_.servers[i].name, clients_[i] ? clients_[i]->restarts() : 0);
    return shared_->metrics.text(restarts);
  }

  /// Serves one client over this process's stdin and stdout until stdin ends or `shutdown()` (blocking).
  void serve_stdio() { serve_fds(STDIN_FILENO, STDOUT_FILENO); }
  /// As `serve_stdio`, over `in` and `out`.
  void serve_fds(int in, int out) {
    front_->serve_fds(in, out);
  }
  /// Serves Streamable HTTP on `address`:`port` (0: a free one) at the configuration's path (`/mcp`); returns
  /// the port. Its own I/O thread; returns at once.
  unsigned short listen_http(std::string_view address, unsigned short port, mcp_http_server_options o = {}) {
    shared_->over_http = true;
    if (!config_.allowed_hosts.empty()) o.allowed_hosts = config_.allowed_hosts;
    if (!config_.allowed_origins.empty()) o.allowed_origins = config_.allowed_origins;
    if (!config_.metrics_path.empty())
      o.routes.push_back({config_.metrics_path, [this](const mcp_principal*) {
                            return mcp_http_route_response{200, "text/plain; version=0.0.4; charset=utf-8", metrics_text()};
                          }});
    return front_->listen_http(address, port, config_.http_path, std::move(o));
  }
  /// Refuses new calls (they fail at once, never run), waits for the calls under way at most the
  /// configuration's `shutdown_grace`, reports those still running (log and audit), then stops serving: stdio
  /// input is ended (the answers are written first) and HTTP listeners close. Thread-safe, idempotent.
  void shutdown() {
    {
      const std::lock_guard l(stop_m_);
      if (stopping_) return;
      stopping_ = true;
    }
    shared_->coordinator.drain();
    const std::vector<std::string> left = shared_->coordinator.wait_idle(config_.shutdown_grace);
    for (const auto& call : left) {
      shared_->log(detail::str_cat("tool-effects-gateway: a call of ", detail::quote_input(call),
                                   " was still running at shutdown: its outcome is unknown (journaled calls are in "
                                   "doubt)"));
      if (const gateway_tool* t = shared_->tool_of(call)) {
        nlohmann::json rec = shared_->record(*t, "");
        rec.erase("principal");
        rec["outcome"] = "interrupted_by_shutdown";
        shared_->audit(std::move(rec));
      }
    }
    // The calls that just ended still send their answers: a moment for them, then the transports go.
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    front_->stop_stdio();
    front_->close_http();
    {
      const std::lock_guard l(stop_m_);
      stopped_ = true;
    }
    stop_cv_.notify_all();
  }
  /// Blocks until `shutdown()` has finished.
  void wait() {
    std::unique_lock l(stop_m_);
    stop_cv_.wait(l, [this] { return stopped_; });
  }

 private:
  using front_type = detail::gateway_front<server_type, json_tool_host<>>;

  // The gateway's in-doubt rule, for a call a journal shows started by an earlier run that did not end: run
  // again only a call that needed approval and was never approved (so never sent upstream); else in_doubt.
  static confirmation in_doubt(detail::gateway_shared& s, const confirmation_request& r) {
    if (!r.may_already_have_happened) return confirmation::approve;  // the gateway asks for approval itself
    const gateway_tool* t = s.tool_of(r.tool);
    const bool never_sent =
        t && detail::gateway_needs_approval(*t) && !s.journal.find(detail::gateway_approval_key(r.idempotency_key));
    if (t && !never_sent) {
      nlohmann::json rec = s.record(*t, "");
      rec.erase("principal");
      rec["idempotency_key"] = std::string(r.idempotency_key);
      rec["outcome"] = "in_doubt";
      s.audit(std::move(rec));
    }
    return never_sent ? confirmation::approve : confirmation::deny;
  }

  [[noreturn]] void fail(const gateway_server_config& s, const std::string& tool, const std::string& pointer,
                         std::string message, std::string_view input = {}) const {
    throw gateway_config_error(config_.file, s.name, tool, pointer, std::move(message), input);
  }

  void start_upstreams() {
    clients_.resize(config_.servers.size());
    std::vector<std::exception_ptr> errors(config_.servers.size());
    std::vector<std::thread> starting;
    for (std::size_t i = 0; i < config_.servers.size(); ++i)
      starting.emplace_back([this, i, &errors] {
        const gateway_server_config& s = config_.servers[i];
        mcp_client_options o;
        o.name = s.name;
        o.environment = s.env;
        if (s.cwd) o.working_directory = *s.cwd;
        o.request_timeout = s.request_timeout;
        o.restart_on_exit = true;
        o.max_restarts = s.max_restarts;
        o.stderr_lines = 20;
        try {
          if (!s.command.empty()) {
            clients_[i] = mcp_client::launch(pool_, s.command, o);
          } else {
            mcp_http_endpoint ep;
            ep.url = s.url;
            ep.headers = s.headers;
            clients_[i] = mcp_client::connect(pool_, ep, o);
          }
        } catch (...) {
          errors[i] = std::current_exception();
        }
      });
    for (auto& t : starting) t.join();
    lists_.assign(config_.servers.size(), nlohmann::json());
    for (std::size_t i = 0; i < config_.servers.size(); ++i) {
      const gateway_server_config& s = config_.servers[i];
      try {
        if (errors[i]) std::rethrow_exception(errors[i]);
        lists_[i] = clients_[i]->list_tools();
      } catch (const gateway_config_error&) {
        throw;
      } catch (const std::exception& e) {
        fail(s, "", s.pointer + (s.command.empty() ? "/url" : "/command"),
             detail::str_cat("cannot start or list the server: ", e.what()));
      }
    }
  }
  void close_upstreams() noexcept {
    std::vector<mcp_client> all;
    for (auto& c : clients_)
      if (c) all.push_back(*c);
    clients_.clear();
    try {
      mcp_close_all(std::span<const mcp_client>(all));
    } catch (...) {  // a server that does not stop is killed by its client's state; nothing more to do
    }
  }

  // The dynamic tools of every server, with their names (prefixed where two servers share one), provenance
  // and approval rules; then registered with the host.
  void register_tools() {
    std::vector<std::vector<dynamic_tool>> merged(config_.servers.size());
    for (std::size_t i = 0; i < config_.servers.size(); ++i) {
      const gateway_server_config& s = config_.servers[i];
      std::vector<std::string> names;
      for (const auto& t : lists_[i].at("tools")) names.push_back(t.at("name").get<std::string>());
      std::vector<dynamic_tool> overlay;
      for (const auto& t : s.tools) {
        if (std::find(names.begin(), names.end(), t.name) == names.end())
          throw gateway_config_error(
              t.file, s.name, t.name, t.pointer,
              detail::suggestion_message(detail::str_cat("not a tool of the server (it has ", std::to_string(names.size()),
                                                         " tools)"),
                                         t.name, names),
              t.name);
        if (t.declaration) overlay.push_back(*t.declaration);
      }
      try {
        merged[i] = mcp_server_tools(lists_[i], s.trust, overlay, s.name);
      } catch (const std::exception& e) {
        fail(s, "", s.pointer, detail::str_cat("the server's tools/list cannot be used: ", e.what()));
      }
    }
    // Names: the server's own, unless another server has a tool of the same name (then "<server>__<name>"),
    // or the server has a prefix.
    std::map<std::string, std::size_t> uses;
    for (std::size_t i = 0; i < config_.servers.size(); ++i)
      for (const auto& d : merged[i]) ++uses[config_.servers[i].prefix ? *config_.servers[i].prefix + "__" + d.name : d.name];
    std::map<std::string, std::string> owner;  // name -> "server/tool", to refuse what still clashes
    for (std::size_t i = 0; i < config_.servers.size(); ++i) {
      const gateway_server_config& s = config_.servers[i];
      for (std::size_t k = 0; k < merged[i].size(); ++k) {
        const nlohmann::json& entry = lists_[i]["tools"][k];
        gateway_tool t;
        t.server = s.name;
        t.upstream_name = merged[i][k].name;
        t.name = s.prefix ? *s.prefix + "__" + t.upstream_name : t.upstream_name;
        if (!s.prefix && uses[t.name] > 1) t.name = s.name + "__" + t.upstream_name;
        if (const auto [it, fresh] = owner.emplace(t.name, s.name + "/" + t.upstream_name); !fresh)
          fail(s, t.upstream_name, s.pointer + "/prefix",
               detail::str_cat("two tools would be served as ", detail::quote_input(t.name), " (also ", it->second,
                               "): give this server a \"prefix\""));
        const gateway_tool_config* c = nullptr;
        for (const auto& x : s.tools)
          if (x.name == t.upstream_name) c = &x;
        const bool declared = c && c->declaration && !c->declaration->description.exclusive;
        t.identity_from_overlay = c && c->declaration;
        if (declared) {
          t.source = "overlay";
        } else if (s.trust == server_trust::trusted) {
          t.source = "trusted_server";
          t.detail = import_mcp_accesses_meta(entry) ? "accesses" : "annotations";
        } else {
          t.source = "unknown";
        }
        t.approval = c && c->approval ? *c->approval : s.approval;
        t.declaration = std::move(merged[i][k]);
        t.declaration.name = t.name;
        t.declaration.description.name = t.name;
        t.upstream = entry;
        tools_.push_back(std::move(t));
      }
    }
    for (std::size_t k = 0; k < tools_.size(); ++k) {
      shared_->by_name.emplace(tools_[k].name, &tools_[k]);
      const std::size_t server = static_cast<std::size_t>(
          std::find_if(config_.servers.begin(), config_.servers.end(),
                       [&](const gateway_server_config& s) { return s.name == tools_[k].server; }) -
          config_.servers.begin());
      auto state = std::make_shared<detail::gateway_tool_state>(
          detail::gateway_tool_state{shared_, &tools_[k], *clients_[server], config_.servers[server].request_timeout});
      host_.add(tools_[k].declaration,
                json_async_tool_function([state](const attempt_context& ctx, const nlohmann::json& args) {
                  return detail::gateway_call(state, ctx, args);
                }),
                tool_origin{tools_[k].server, tools_[k].upstream_name}, idempotency_key_use::used);
    }
  }

  // The tools/list entry of `t` as clients get it (the server's tool_entry hook; the host's registry holds the
  // tools in the order of tools_): its upstream's texts and schemas, the hints and accesses of its effective
  // declaration, and its provenance.
  static void decorate(const gateway_tool& t, nlohmann::json& e) {
    nlohmann::json schema = t.upstream.contains("inputSchema") && t.upstream["inputSchema"].is_object()
                                ? t.upstream["inputSchema"]
                                : nlohmann::json();
    if (schema.is_object() && schema.contains("properties") && schema["properties"].is_object())
      for (auto& p : schema["properties"])  // its x-mcp-header annotations are the upstream's business
        if (p.is_object()) p.erase("x-mcp-header");
    nlohmann::json out = mcp_tool_entry(t.name, t.declaration.description, t.declaration.identity, std::move(schema));
    for (const char* k : {"title", "description"})
      if (t.upstream.contains(k) && t.upstream[k].is_string()) out[k] = t.upstream[k];
    for (const char* k : {"outputSchema", "icons"})
      if (t.upstream.contains(k) && (t.upstream[k].is_object() || t.upstream[k].is_array())) out[k] = t.upstream[k];
    if (const auto a = t.upstream.find("annotations"); a != t.upstream.end() && a->is_object())
      if (const auto title = a->find("title"); title != a->end() && title->is_string())
        out["annotations"]["title"] = *title;
    nlohmann::json p = {{"version", 1}, {"source", t.source}, {"server", t.server}, {"tool", t.upstream_name}};
    if (!t.detail.empty()) p["declared_by"] = t.detail;
    if (t.identity_from_overlay) p["identity"] = "overlay";
    if (const auto a = t.upstream.find("annotations"); a != t.upstream.end() && a->is_object())
      p["server_annotations"] = *a;  // what the server claimed, believed or not
    out["_meta"][std::string(gateway_provenance_meta_key)] = std::move(p);
    e = std::move(out);
  }

  gateway_config config_;
  boost::asio::thread_pool pool_;
  tool_registry<> registry_;
  json_tool_host<> host_;
  std::shared_ptr<detail::gateway_shared> shared_;
  std::vector<std::optional<mcp_client>> clients_;
  std::vector<nlohmann::json> lists_;
  std::vector<gateway_tool> tools_;
  std::unique_ptr<server_type> server_;
  std::unique_ptr<front_type> front_;
  std::mutex stop_m_;
  std::condition_variable stop_cv_;
  bool stopping_ = false;
  bool stopped_ = false;
};

}  // namespace tool_effects

#endif  // TOOL_EFFECTS_MCP_GATEWAY_HPP
