// tool_effects/mcp/detail/stdio_server_transport.hpp — internal: the server
// side of the stdio binding, an `mcp_transport` (mcp/detail/transport.hpp)
// over two file descriptors (the process's own stdin and stdout for
// `mcp_server::serve_stdio`, a pipe pair in tests). One line is one message.
// Bounded: a line longer than the session's `max_message_bytes` is dropped up
// to its newline and answered with one -32600 error (id null): that message
// fails alone, the session goes on. End of input ends the session.
#ifndef TOOL_EFFECTS_MCP_DETAIL_STDIO_SERVER_TRANSPORT_HPP
#define TOOL_EFFECTS_MCP_DETAIL_STDIO_SERVER_TRANSPORT_HPP

#include <unistd.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/write.hpp>

#include <tool_effects/mcp/detail/session.hpp>
#include <tool_effects/mcp/detail/transport.hpp>

namespace tool_effects::detail {

class mcp_stdio_server_transport : public mcp_transport,
                                   public std::enable_shared_from_this<mcp_stdio_server_transport> {
 public:
  // Reads `in_fd`, writes `out_fd` (both duplicated: the originals stay open);
  // `on_end` runs once on the strand when input ended or the transport stopped.
  mcp_stdio_server_transport(mcp_strand strand, int in_fd, int out_fd, std::size_t max_line_bytes,
                             std::function<void()> on_end)
      : strand_(std::move(strand)),
        in_(asio::any_io_executor(strand_), ::dup(in_fd)),
        out_(asio::any_io_executor(strand_), ::dup(out_fd)),
        max_line_(max_line_bytes),
        on_end_(std::move(on_end)) {}

  void start(const std::shared_ptr<mcp_session>& s) override {
    ignore_sigpipe_once();
    session_ = s;
    asio::co_spawn(strand_, read_loop(shared_from_this()), asio::detached);
  }

  void send(std::string message, std::int64_t, mcp_outgoing) override {
    if (done_) return;
    out_buf_ += message;
    out_buf_ += '\n';
    if (!writing_) {
      writing_ = true;
      asio::co_spawn(strand_, write_loop(shared_from_this()), asio::detached);
    }
  }
  void abandon(std::int64_t) override {}
  void initialized(const std::string&) override {}
  asio::awaitable<void> shutdown() override {
    stop();
    co_return;
  }
  void stop() noexcept override {
    if (done_) return;
    done_ = true;
    boost::system::error_code ec;
    in_.close(ec);
    out_.close(ec);
    if (auto f = std::exchange(on_end_, {})) f();
  }

 private:
  static asio::awaitable<void> read_loop(std::shared_ptr<mcp_stdio_server_transport> self) {
    std::array<char, 65536> chunk{};
    std::string line;
    bool skipping = false;  // dropping an over-long line up to its newline
    for (;;) {
      auto [ec, n] = co_await self->in_.async_read_some(asio::buffer(chunk), asio::as_tuple(asio::use_awaitable));
      if (self->done_) co_return;
      std::string_view data(chunk.data(), n);
      while (!data.empty()) {
        const auto nl = data.find('\n');
        const auto part = data.substr(0, nl);
        if (!skipping && line.size() + part.size() > self->max_line_) {
          skipping = true;
          line.clear();
          self->send(str_cat(R"({"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid Request: a line )",
                             R"(exceeds the limit of )", std::to_string(self->max_line_), R"( bytes"}})"),
                     0, {});
        }
        if (!skipping) line.append(part);
        if (nl == std::string_view::npos) break;
        data.remove_prefix(nl + 1);
        if (!skipping)
          if (auto s = self->session_.lock()) s->deliver(line);
        skipping = false;
        line.clear();
        if (self->done_) co_return;
      }
      if (ec) break;
    }
    if (!line.empty() && !skipping)
      if (auto s = self->session_.lock()) s->deliver(line);  // a last line without its newline
    // Input ended: the answers already queued are written, then the session ends.
    while (self->writing_ && !self->done_) {
      asio::steady_timer t(self->strand_, std::chrono::milliseconds(1));
      (void)co_await t.async_wait(asio::as_tuple(asio::use_awaitable));
    }
    self->stop();
  }

  static asio::awaitable<void> write_loop(std::shared_ptr<mcp_stdio_server_transport> self) {
    std::string buf;
    while (!self->out_buf_.empty() && !self->done_) {
      buf.clear();
      buf.swap(self->out_buf_);
      auto [ec, n] = co_await asio::async_write(self->out_, asio::buffer(buf), asio::as_tuple(asio::use_awaitable));
      (void)n;
      if (ec) {
        self->stop();  // the client is gone
        break;
      }
    }
    self->writing_ = false;
  }

  mcp_strand strand_;
  asio::posix::stream_descriptor in_;
  asio::posix::stream_descriptor out_;
  std::size_t max_line_;
  std::function<void()> on_end_;
  std::weak_ptr<mcp_session> session_;
  std::string out_buf_;
  bool writing_ = false;
  bool done_ = false;
};

}  // namespace tool_effects::detail

#endif  // TOOL_EFFECTS_MCP_DETAIL_STDIO_SERVER_TRANSPORT_HPP
