// tool_effects/mcp/client/detail/state.hpp — internal to <tool_effects/mcp/client.hpp>
// (included at its end): the state behind every copy of an `mcp_client` — its
// strand, the current connection, start/restart/close — and the name a
// client derives from its argv.
#ifndef TOOL_EFFECTS_MCP_CLIENT_DETAIL_STATE_HPP
#define TOOL_EFFECTS_MCP_CLIENT_DETAIL_STATE_HPP

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <exception>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <tool_effects/mcp/client/detail/connection.hpp>
#include <tool_effects/detail/str_cat.hpp>
#include <tool_effects/mcp/errors.hpp>

namespace tool_effects::detail {

// The state of a client: its strand, settings and current connection.
class mcp_client_state {
 public:
  mcp_client_state(asio::any_io_executor ex, std::shared_ptr<mcp_shared> s)
      : strand(make_mcp_strand(ex)), shared(std::move(s)) {}

  // The client's strand: every exchange runs on it.
  const mcp_strand strand;
  // Settings, counters and the info snapshot, shared with the connections.
  const std::shared_ptr<mcp_shared> shared;

  // The live connection: started, or restarted when it died.
  static asio::awaitable<std::shared_ptr<mcp_connection>> connection(std::shared_ptr<mcp_client_state> self) {
    for (;;) {
      if (self->closed_) throw mcp_error(mcp_error_kind::closed, self->shared->name, "the client was shut down");
      if (self->conn_ && self->conn_->alive()) co_return self->conn_;
      if (auto a = self->starting_) {
        if (!a->done) (void)co_await a->timer.async_wait(asio::as_tuple(asio::use_awaitable));
        if (a->error) std::rethrow_exception(a->error);
        continue;
      }
      if (self->conn_) {  // died
        if (!self->shared->options.restart_on_exit || self->restarts_ >= self->shared->options.max_restarts)
          std::rethrow_exception(self->conn_->error());
        ++self->restarts_;
        self->shared->info.set_restarts(self->restarts_);
      }
      co_await start(self);
      self->adopt_server_name();
    }
  }

  static asio::awaitable<void> start(std::shared_ptr<mcp_client_state> self) {
    auto attempt = std::make_shared<start_attempt>(self->strand);
    self->starting_ = attempt;
    std::shared_ptr<mcp_connection> c;
    try {
      c = std::make_shared<mcp_connection>(self->strand, self->shared);
      c->launch();
    } catch (...) {
      attempt->error = std::current_exception();
    }
    if (!attempt->error) {
      try {
        auto [info, version] = co_await handshake(self, c);
        mcp_connection::start_listening(c, info);  // modern: change notifications (subscriptions/listen)
        self->shared->info.set(std::move(info), std::move(version));
        self->conn_ = c;
      } catch (...) {
        attempt->error = std::current_exception();
      }
    }
    if (attempt->error && c) {
      try {
        std::rethrow_exception(attempt->error);
      } catch (const mcp_error& e) {
        c->fail(attempt->error);
        if (!self->conn_) self->conn_ = c;  // keeps the restart accounting
      } catch (...) {
        c->fail(attempt->error);
      }
    }
    self->starting_.reset();
    attempt->done = true;
    attempt->timer.cancel();
    if (attempt->error) std::rethrow_exception(attempt->error);
  }

  // "; this client speaks V1 V2 ...", the end of every version mismatch message.
  static std::string client_speaks(const std::vector<std::string>& versions) {
    std::string out = "; this client speaks";
    for (const auto& v : versions) out = str_cat(out, " ", v);
    return out;
  }

  // The handshake of a fresh connection (docs/mcp-client.md, "Protocol versions"):
  // with a modern version wanted, the server/discover probe of the
  // specification's stdio binding; a legacy answer (or a legacy server
  // remembered from an earlier process of this client) leads to initialize.
  // The whole handshake has one deadline, options.initialize_timeout from
  // its start: the probe waits at most discover_timeout of it (and at most a quarter of it), initialize
  // (and the notification that ends it) what is left; a server that answers
  // nothing fails it with timeout then, not after discover_timeout plus
  // initialize_timeout. Returns the info snapshot's object and the selected version.
  static asio::awaitable<std::pair<nlohmann::json, std::string>> handshake(std::shared_ptr<mcp_client_state> self,
                                                                          std::shared_ptr<mcp_connection> c) {
    const auto& o = self->shared->options;
    const handshake_deadline deadline{std::chrono::steady_clock::now() + o.initialize_timeout, o.initialize_timeout,
                                      self->shared->name};
    const std::vector<std::string>& versions = o.protocol_versions.empty() ? mcp_protocol_versions() : o.protocol_versions;
    std::vector<std::string> modern;
    std::vector<std::string> legacy;
    for (const auto& v : versions) (mcp_version_is_modern(v) ? modern : legacy).push_back(v);
    std::string why_legacy;
    bool probe_timed_out = false;
    const bool skip_probe = self->legacy_server_ && !legacy.empty();
    if (!modern.empty() && !skip_probe) {
      // The probe waits at most a quarter of the handshake's time (and discover_timeout): a server that drops
      // requests it does not know keeps three quarters for initialize, whatever initialize_timeout is.
      probe_result r = co_await probe(self, c, modern, versions,
                                      deadline.left(std::min(o.discover_timeout, o.initialize_timeout / 4)));
      if (r.modern) co_return std::pair{std::move(r.info), std::move(r.version)};
      c->set_modern({});
      if (!r.version.empty()) legacy.insert(legacy.begin(), r.version);  // the server named a legacy version of ours
      why_legacy = std::move(r.why);
      probe_timed_out = r.timed_out;
      if (legacy.empty()) {
        throw mcp_error(mcp_error_kind::unsupported_protocol_version, self->shared->name,
                        str_cat("the server does not speak a modern version (", why_legacy, ")", client_speaks(versions)));
      }
    }
    std::optional<nlohmann::json> result;
    std::exception_ptr init_error;
    try {
      result = co_await initialize(self, c, legacy, versions, deadline);
    } catch (const mcp_rpc_error&) {
      if (skip_probe) self->legacy_server_ = false;  // re-probe on the next start
      if (!probe_timed_out) throw;
      init_error = std::current_exception();
    }
    if (init_error) {
      // The probe went unanswered but initialize was refused: a modern server
      // that was slow to start? Probe once more, in what is left of the deadline.
      probe_result r = co_await probe(self, c, modern, versions, deadline.left());
      if (!r.modern) std::rethrow_exception(init_error);
      co_return std::pair{std::move(r.info), std::move(r.version)};
    }
    self->legacy_server_ = true;
    std::string version = (*result)["protocolVersion"].get<std::string>();
    co_return std::pair{std::move(*result), std::move(version)};
  }

  // The one deadline of a handshake: what is left of it (at most `cap`), or
  // its timeout when nothing is.
  struct handshake_deadline {
    std::chrono::steady_clock::time_point at;
    std::chrono::milliseconds limit;
    const std::string& name;
    [[nodiscard]] std::chrono::milliseconds left(
        std::chrono::milliseconds cap = std::chrono::milliseconds::max()) const {
      const auto rest =
          std::chrono::ceil<std::chrono::milliseconds>(at - std::chrono::steady_clock::now());
      if (rest <= std::chrono::milliseconds::zero())
        throw mcp_transient_error(mcp_error_kind::timeout, name,
                                  str_cat("the handshake did not complete within ", std::to_string(limit.count()),
                                          " ms (options.initialize_timeout)"));
      return std::min(rest, cap);
    }
  };

  struct probe_result {
    bool modern = false;
    nlohmann::json info;  // modern: the snapshot's object
    std::string version;  // modern: the selected version; legacy: a legacy version the server named, or empty
    std::string why;      // legacy: what the probe got
    bool timed_out = false;
  };

  // server/discover with the first modern version in _meta. A DiscoverResult
  // or an UnsupportedProtocolVersionError is a modern server; any other
  // error, a refused response or no response within `timeout` a legacy one.
  static asio::awaitable<probe_result> probe(std::shared_ptr<mcp_client_state> self, std::shared_ptr<mcp_connection> c,
                                             const std::vector<std::string>& modern,
                                             const std::vector<std::string>& versions,
                                             std::chrono::milliseconds timeout) {
    const std::string& name = self->shared->name;
    probe_result out;
    c->set_modern(modern.front());
    std::optional<nlohmann::json> r;
    try {
      r = co_await mcp_connection::request(c, "server/discover", nlohmann::json::object(), timeout);
    } catch (const mcp_rpc_error& e) {
      if (e.code() == -32020 || e.code() == -32021) throw;  // modern errors, nothing to fall back to
      if (e.code() == -32601 && c->http_status_of(e) == 404) {
        // Over HTTP, 404 with "Method not found" is how a 2026-07-28 server
        // answers a method it lacks (a legacy one answers 404 without that
        // body): modern, though without server/discover. Requests go on
        // under our first modern version (a -32022 later switches it).
        c->set_modern(modern.front());
        out.modern = true;
        out.version = modern.front();
        out.info = {{"protocolVersion", out.version}};
        self->legacy_server_ = false;
        co_return out;
      }
      if (e.code() == mcp_unsupported_version_code) {
        // modern, and not one of our modern versions (request() already
        // retried with one it named): a legacy one of ours it names, or none
        const nlohmann::json supported =
            e.data().is_object() && e.data().contains("supported") ? e.data()["supported"] : nlohmann::json();
        auto pick = mcp_pick_version(supported, versions, false);
        if (!pick || mcp_version_is_modern(*pick)) {
          throw mcp_error(mcp_error_kind::unsupported_protocol_version, name,
                          str_cat("server/discover refused every version offered (UnsupportedProtocolVersionError, "
                                  "it supports ",
                                  quote_text(mcp_dump(supported), 200), ")", client_speaks(versions)));
        }
        out.version = std::move(*pick);
        out.why = str_cat("it supports only ", quote_text(mcp_dump(supported), 200));
        co_return out;
      }
      out.why = str_cat("server/discover: ", e.what());
      co_return out;
    } catch (const mcp_error& e) {
      if (e.kind() != mcp_error_kind::timeout && (e.kind() != mcp_error_kind::protocol_error || !c->alive())) throw;
      out.timed_out = e.kind() == mcp_error_kind::timeout;
      out.why = str_cat("server/discover: ", e.what());
      co_return out;
    }
    // A DiscoverResult has an array of strings at supportedVersions. Any
    // other result is not one: a legacy server that answers every method it
    // does not know (the conformance suite's servers answer `{}`), so the
    // fallback, as for any answer that is not a modern one.
    const auto sv = r->is_object() ? r->find("supportedVersions") : r->end();
    if (!r->is_object() || sv == r->end() || !sv->is_array() ||
        !std::all_of(sv->begin(), sv->end(), [](const nlohmann::json& v) { return v.is_string(); })) {
      out.why = str_cat("server/discover answered a result that is not a DiscoverResult (at /result/supportedVersions: "
                        "no array of strings): ",
                        quote_text(mcp_dump(*r), 200));
      co_return out;
    }
    auto pick = mcp_pick_version(*sv, versions, false);
    if (!pick) {
      throw mcp_error(mcp_error_kind::unsupported_protocol_version, name,
                      str_cat("server/discover lists the versions ", quote_text(mcp_dump(*sv), 200), client_speaks(versions)));
    }
    if (!mcp_version_is_modern(*pick)) {  // a dual-era server whose modern versions are not ours
      out.version = std::move(*pick);
      out.why = str_cat("it lists only ", quote_text(mcp_dump(*sv), 200), " of ours");
      co_return out;
    }
    c->set_modern(*pick);
    out.modern = true;
    out.version = *pick;
    out.info = std::move(*r);
    out.info["protocolVersion"] = *pick;
    if (const auto m = out.info.find("_meta"); m != out.info.end() && m->is_object())
      if (const auto si = m->find("io.modelcontextprotocol/serverInfo"); si != m->end() && si->is_object())
        out.info["serverInfo"] = *si;
    self->legacy_server_ = false;
    co_return out;
  }

  // initialize offering the first of `legacy`; the answer must name a legacy
  // version of `legacy`. Returns its result (protocolVersion checked).
  static asio::awaitable<nlohmann::json> initialize(std::shared_ptr<mcp_client_state> self,
                                                    std::shared_ptr<mcp_connection> c,
                                                    const std::vector<std::string>& legacy,
                                                    const std::vector<std::string>& versions,
                                                    const handshake_deadline& deadline) {
    const auto& o = self->shared->options;
    nlohmann::json params = {{"protocolVersion", legacy.front()},
                             {"capabilities", mcp_client_capabilities(o)},
                             {"clientInfo", o.client_info}};
    nlohmann::json r;
    try {
      r = co_await mcp_connection::request(c, "initialize", std::move(params), deadline.left());
    } catch (const mcp_error& e) {
      if (e.kind() == mcp_error_kind::timeout) (void)deadline.left();  // past it: the handshake's own timeout
      throw;
    }
    const std::string version = r.is_object() && r.contains("protocolVersion") && r["protocolVersion"].is_string()
                                    ? r["protocolVersion"].get<std::string>()
                                    : std::string();
    if (std::find(legacy.begin(), legacy.end(), version) == legacy.end()) {
      throw mcp_error(
          mcp_error_kind::unsupported_protocol_version, self->shared->name,
          str_cat("the server answered initialize with protocol version \"",
                  quote_text(version.empty() && r.is_object() && r.contains("protocolVersion") ? mcp_dump(r["protocolVersion"])
                                                                                               : version),
                  "\"", client_speaks(versions)));
    }
    // Over HTTP, initialize is done only once the server accepted the
    // notification (its 202): a request sent after connect() cannot overtake it.
    co_await mcp_connection::notify_accepted(c, "notifications/initialized", nullptr, version, deadline.left());
    c->set_protocol_version(version);
    co_return r;
  }

  static asio::awaitable<nlohmann::json> request(std::shared_ptr<mcp_client_state> self, std::string method,
                                                 nlohmann::json params, std::chrono::milliseconds timeout) {
    auto c = co_await connection(self);
    if (!c->modern_version().empty() && mcp_serves_input(self->shared->options))  // MRTR (client_handlers.hpp)
      co_return co_await mcp_request_with_input(std::move(c), self->strand, self->shared->options, self->shared->name,
                                                std::move(method), std::move(params), timeout);
    co_return co_await mcp_connection::request(std::move(c), std::move(method), std::move(params), timeout);
  }

  // A notification to the live server, if there is one (nothing is started for it).
  static asio::awaitable<void> notify(std::shared_ptr<mcp_client_state> self, std::string method) {
    if (self->conn_ && self->conn_->alive()) self->conn_->notify(method, nullptr);
    co_return;
  }

  static asio::awaitable<void> close(std::shared_ptr<mcp_client_state> self) {
    if (self->closed_) co_return;
    self->closed_ = true;
    if (self->conn_)
      co_await mcp_connection::shutdown(
          self->conn_, std::make_exception_ptr(mcp_error(mcp_error_kind::closed, self->shared->name,
                                                         "the client was shut down with the request pending")));
  }

  static asio::awaitable<void> restart(std::shared_ptr<mcp_client_state> self) {
    if (self->closed_) throw mcp_error(mcp_error_kind::closed, self->shared->name, "the client was shut down");
    if (self->conn_ && self->conn_->alive())
      co_await mcp_connection::shutdown(
          self->conn_, std::make_exception_ptr(mcp_transient_error(mcp_error_kind::server_exited, self->shared->name,
                                                                   "the server was restarted with the request pending")));
    co_await start(self);
    self->adopt_server_name();
  }

 private:
  // On the strand, after the first initialize that succeeded: without a
  // name of the user's, the client takes the server's serverInfo.name when it
  // is a plain name (mcp_server_name_ok), and keeps it from then on.
  void adopt_server_name() {
    if (name_fixed_) return;
    name_fixed_ = true;
    if (!shared->options.name.empty()) return;
    const nlohmann::json info = shared->info.server_info();
    const auto si = info.is_object() ? info.find("serverInfo") : info.end();
    if (si == info.end() || !si->is_object()) return;
    const auto n = si->find("name");
    if (n != si->end() && n->is_string() && mcp_server_name_ok(n->get_ref<const std::string&>())) {
      shared->name = n->get<std::string>();
      if (conn_) conn_->session()->set_name(shared->name);
    }
  }
  // A name a server may give itself: 1-64 bytes of [A-Za-z0-9._/@+-].
  static bool mcp_server_name_ok(const std::string& n) {
    if (n.empty() || n.size() > 64) return false;
    return std::all_of(n.begin(), n.end(), [](char c) {
      return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '_' ||
             c == '/' || c == '@' || c == '+' || c == '-';
    });
  }

  std::shared_ptr<mcp_connection> conn_;
  bool name_fixed_ = false;
  bool closed_ = false;
  // The server answered initialize, not the probe: its later processes go
  // straight to initialize (the specification allows caching the era across
  // restarts of the same server configuration). Cleared when such an
  // initialize is refused, so that the next start probes again.
  bool legacy_server_ = false;
  std::size_t restarts_ = 0;
  struct start_attempt {
    explicit start_attempt(const mcp_strand& s) : timer(s, asio::steady_timer::time_point::max()) {}
    asio::steady_timer timer;
    std::exception_ptr error;
    bool done = false;
  };
  std::shared_ptr<start_attempt> starting_;
};

inline std::string mcp_default_name(const std::vector<std::string>& argv) {
  auto base = [](const std::string& s) { return std::filesystem::path(s).filename().string(); };
  if (argv.empty()) return "mcp-server";
  const std::string prog = base(argv[0]);
  for (const char* launcher : {"node", "nodejs", "python", "python3", "deno", "bun", "npx", "uvx"})
    if (prog == launcher) {
      for (std::size_t i = 1; i < argv.size(); ++i)
        if (!argv[i].empty() && argv[i][0] != '-') return base(argv[i]);
      break;
    }
  return prog;
}

}  // namespace tool_effects::detail

#endif  // TOOL_EFFECTS_MCP_CLIENT_DETAIL_STATE_HPP
