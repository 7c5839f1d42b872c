// tool_effects/mcp/detail/client_state.hpp — internal to <tool_effects/mcp/client.hpp>
// (included at its end): the state behind every copy of an `mcp_client` — its
// strand, the current connection, start/restart/close — and the name a
// client derives from its argv.
#ifndef TOOL_EFFECTS_MCP_DETAIL_CLIENT_STATE_HPP
#define TOOL_EFFECTS_MCP_DETAIL_CLIENT_STATE_HPP

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <exception>
#include <filesystem>
#include <memory>
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

#include <tool_effects/mcp/detail/connection.hpp>
#include <tool_effects/mcp/errors.hpp>

namespace tool_effects::detail {

// The state of a client: its strand, settings and current connection.
class mcp_client_state {
 public:
  mcp_client_state(asio::any_io_executor ex, std::shared_ptr<mcp_shared> s)
      : strand(asio::make_strand(std::move(ex))), shared(std::move(s)) {}

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
      const auto& o = self->shared->options;
      nlohmann::json params = {{"protocolVersion", o.protocol_versions.empty() ? mcp_protocol_versions().front()
                                                                               : o.protocol_versions.front()},
                               {"capabilities", nlohmann::json::object()},
                               {"clientInfo", o.client_info}};
      try {
        nlohmann::json r = co_await mcp_connection::request(c, "initialize", std::move(params), o.initialize_timeout);
        const std::string version = r.is_object() && r.contains("protocolVersion") && r["protocolVersion"].is_string()
                                        ? r["protocolVersion"].get<std::string>()
                                        : std::string();
        if (std::find(o.protocol_versions.begin(), o.protocol_versions.end(), version) == o.protocol_versions.end()) {
          std::string m = "the server answered initialize with protocol version \"";
          m += mcp_preview(version.empty() && r.is_object() && r.contains("protocolVersion")
                               ? mcp_dump(r["protocolVersion"])
                               : version);
          m += "\"; this client speaks";
          for (const auto& v : o.protocol_versions) {
            m += ' ';
            m += v;
          }
          throw mcp_error(mcp_error_kind::unsupported_protocol_version, self->shared->name, m);
        }
        c->notify("notifications/initialized", nullptr);
        self->shared->info.set(std::move(r), version);
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

  static asio::awaitable<nlohmann::json> request(std::shared_ptr<mcp_client_state> self, std::string method,
                                                 nlohmann::json params, std::chrono::milliseconds timeout) {
    auto c = co_await connection(self);
    co_return co_await mcp_connection::request(std::move(c), std::move(method), std::move(params), timeout);
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
    if (n != si->end() && n->is_string() && mcp_server_name_ok(n->get_ref<const std::string&>()))
      shared->name = n->get<std::string>();
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

#endif  // TOOL_EFFECTS_MCP_DETAIL_CLIENT_STATE_HPP
