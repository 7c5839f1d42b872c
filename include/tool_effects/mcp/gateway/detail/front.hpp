// tool_effects/mcp/gateway/detail/front.hpp — internal to <tool_effects/mcp/gateway.hpp>: the gateway's
// downstream transports. Every request is the mcp_server's (its `bind`: the one method table, the dispatcher,
// the coordinator, the approvals; each tools/list entry decorated by the server's `tool_entry` hook). The front
// makes the sessions itself, as serve_fds and listen_http do, for two things the server's own do not offer: HTTP's
// I/O on the gateway's pool (a request reaches its handler without a thread hop), and a stdio input that
// `stop_stdio()` can end on SIGTERM (docs/gateway.md, "What the gateway needs of the server").
//
// stdio reads the client through a pipe fed by a relay thread, so that `stop_stdio()` can end the input (EOF)
// on SIGTERM: the session then answers the requests under way, writes every answer and returns.
#ifndef TOOL_EFFECTS_MCP_GATEWAY_DETAIL_FRONT_HPP
#define TOOL_EFFECTS_MCP_GATEWAY_DETAIL_FRONT_HPP

#include <cerrno>
#include <functional>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <string_view>
#include <system_error>
#include <thread>
#include <utility>
#include <vector>

#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>

#include <nlohmann/json.hpp>

#include <tool_effects/mcp/server.hpp>
#include <tool_effects/mcp/server/http_options.hpp>
#include <tool_effects/mcp/transport/detail/http_server_handle.hpp>
#include <tool_effects/mcp/transport/detail/stdio_server.hpp>

namespace tool_effects::detail {

template <class Server, class Host>
class gateway_front {
 public:
  // HTTP's I/O runs on `io` (the gateway's pool: a request then reaches its handler without a thread hop).
  gateway_front(Server& server, Host& host, const mcp_server_options& options, boost::asio::any_io_executor io)
      : server_(server), host_(host), options_(options), io_(std::move(io)) {}
  gateway_front(const gateway_front&) = delete;
  gateway_front& operator=(const gateway_front&) = delete;
  ~gateway_front() {
    close_http();
    stop_stdio();
  }

  // Serves one client over `in` / `out` until `in` ends or stop_stdio() (blocking): the requests under way
  // are answered first.
  void serve_fds(int in, int out) {
    int relay[2];
    int wake[2];
    if (::pipe2(relay, O_CLOEXEC) != 0 || ::pipe2(wake, O_CLOEXEC) != 0)
      throw std::system_error(errno, std::generic_category(), "tool-effects-gateway: pipe");
    {
      const std::lock_guard l(m_);
      wake_ = wake[1];
    }
    std::thread relayer([in, to = relay[1], stop = wake[0]] { relay_input(in, to, stop); });
    {
      boost::asio::io_context io;
      const mcp_strand strand = make_mcp_strand(io.get_executor());
      auto session = std::make_shared<mcp_session>(strand, server_.session_settings("stdio client"));
      server_.bind(*session);
      auto transport = std::make_shared<mcp_stdio_server_transport>(strand, relay[0], out, options_.max_message_bytes,
                                                                    options_.max_write_queue_bytes, [] {});
      boost::asio::post(strand, [session, transport] { session->start(transport); });
      io.run();
      session.reset();
    }
    stop_stdio();
    relayer.join();
    {
      const std::lock_guard l(m_);
      ::close(wake[1]);
      wake_ = -1;
    }
    ::close(wake[0]);
    ::close(relay[0]);
  }
  // Ends the stdio client's input as if it had closed it (thread-safe, idempotent).
  void stop_stdio() {
    const std::lock_guard l(m_);
    if (wake_ >= 0) {
      const char c = 'x';
      (void)!::write(wake_, &c, 1);
    }
  }

  // Listens for Streamable HTTP (the server's listen_http, with this front's sessions); returns the port.
  unsigned short listen_http(std::string_view address, unsigned short port, std::string_view path,
                             mcp_http_server_options o) {
    mcp_listener_hooks hooks;
    hooks.make_session = [this](const mcp_strand& strand) {
      auto s = std::make_shared<mcp_session>(strand, server_.session_settings("HTTP client"));
      server_.bind(*s);
      return s;
    };
    if (o.authorization && o.authorization->tool_scopes)
      hooks.scopes = [this, policy = o.authorization->tool_scopes](const std::string& method,
                                                                   const nlohmann::json& params) -> std::vector<std::string> {
        if (method != "tools/call" || !params.is_object()) return {};
        const auto name = params.find("name");
        if (name == params.end() || !name->is_string()) return {};
        const auto i = host_.registry().index_of(name->template get_ref<const std::string&>());
        if (!i) return {};
        return policy(name->template get_ref<const std::string&>(), host_.registry().description(*i));
      };
    auto core = std::make_shared<mcp_http_server_core>(io_, std::move(hooks), std::move(o));
    const unsigned short bound = core->listen(std::string(address), port, std::string(path));
    const std::lock_guard l(m_);
    cores_.push_back(std::move(core));
    return bound;
  }
  // Stops every HTTP listener (their sessions end, their connections close).
  void close_http() {
    std::vector<std::shared_ptr<mcp_http_server_core>> cores;
    {
      const std::lock_guard l(m_);
      cores.swap(cores_);
    }
    for (const auto& c : cores) c->close();
  }

 private:
  // Copies `in` to `to` until `in` ends or `stop` is readable; then closes `to` (the reader sees EOF).
  static void relay_input(int in, int to, int stop) {
    char buf[65536];
    for (;;) {
      pollfd fds[2] = {{in, POLLIN, 0}, {stop, POLLIN, 0}};
      if (::poll(fds, 2, -1) < 0) {
        if (errno == EINTR) continue;
        break;
      }
      if (fds[1].revents != 0) break;
      if (fds[0].revents == 0) continue;
      const ssize_t n = ::read(in, buf, sizeof buf);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      for (ssize_t off = 0; off < n;) {
        const ssize_t w = ::write(to, buf + off, static_cast<std::size_t>(n - off));
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) {
          ::close(to);
          return;
        }
        off += w;
      }
    }
    ::close(to);
  }

  Server& server_;
  Host& host_;
  mcp_server_options options_;
  std::mutex m_;
  int wake_ = -1;
  boost::asio::any_io_executor io_;
  std::vector<std::shared_ptr<mcp_http_server_core>> cores_;
};

}  // namespace tool_effects::detail

#endif  // TOOL_EFFECTS_MCP_GATEWAY_DETAIL_FRONT_HPP
