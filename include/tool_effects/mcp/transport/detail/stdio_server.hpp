// tool_effects/mcp/transport/detail/stdio_server.hpp — internal: the server
// side of the stdio binding, an `mcp_transport` (mcp/protocol/detail/transport.hpp)
// over two file descriptors (the process's own stdin and stdout for
// `mcp_server::serve_stdio`, a pipe pair in tests). One line is one message
// (the framing of mcp/protocol/detail/line_pipe.hpp, shared with the client's stdio
// transport). Bounded: a line longer than the session's `max_message_bytes` is
// dropped up to its newline and answered with one -32600 error (id null): that
// message fails alone, the session goes on. A client that stops reading its
// stdout while more than `max_write_queue_bytes` of answers wait ends the
// session (nothing more can reach it). End of input ends the session once the
// requests under way are answered and every answer is written (`echo request |
// server` gets its answer).
#ifndef TOOL_EFFECTS_MCP_TRANSPORT_DETAIL_STDIO_SERVER_HPP
#define TOOL_EFFECTS_MCP_TRANSPORT_DETAIL_STDIO_SERVER_HPP

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

#include <tool_effects/mcp/protocol/detail/line_pipe.hpp>
#include <tool_effects/mcp/protocol/detail/session.hpp>
#include <tool_effects/mcp/protocol/detail/transport.hpp>

namespace tool_effects::detail {

// A class template only so that a translation unit that does not serve stdio compiles none of its coroutines
// (g++ emits every inline non-template coroutine, and all it reaches, at -O0): see mcp_stdio_server_transport.
template <class Unused = void>
class basic_mcp_stdio_server_transport : public mcp_transport,
                                         public std::enable_shared_from_this<basic_mcp_stdio_server_transport<Unused>> {
 public:
  // Reads `in_fd`, writes `out_fd` (both duplicated: the originals stay open);
  // `on_end` runs once on the strand when input ended or the transport stopped.
  basic_mcp_stdio_server_transport(mcp_strand strand, int in_fd, int out_fd, std::size_t max_line_bytes,
                                   std::size_t max_write_queue_bytes, std::function<void()> on_end)
      : strand_(std::move(strand)),
        in_(asio::any_io_executor(strand_), ::dup(in_fd)),
        out_(asio::any_io_executor(strand_), ::dup(out_fd)),
        lines_(max_line_bytes),
        out_queue_(max_write_queue_bytes),
        on_end_(std::move(on_end)) {}

  void start(const std::shared_ptr<mcp_session>& s) override {
    ignore_sigpipe_once();
    session_ = s;
    asio::co_spawn(strand_, read_loop(this->shared_from_this()), asio::detached);
  }

  void send(std::string message, std::int64_t, mcp_outgoing) override {
    if (done_) return;
    if (!out_queue_.push(std::move(message))) {
      stop();  // the client stopped reading its stdout: nothing more can reach it
      return;
    }
    if (out_queue_.claim_writer()) asio::co_spawn(strand_, write_loop(this->shared_from_this()), asio::detached);
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
  static asio::awaitable<void> read_loop(std::shared_ptr<basic_mcp_stdio_server_transport> self) {
    std::array<char, 65536> chunk{};
    const auto deliver = [&self](std::string& line) {
      if (auto s = self->session_.lock()) s->deliver(line);
      return !self->done_;
    };
    const auto oversized = [&self] {
      self->send(str_cat(R"({"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid Request: a line )",
                         R"(exceeds the limit of )", std::to_string(self->lines_.max_line()), R"( bytes"}})"),
                 0, {});
      return !self->done_;
    };
    for (;;) {
      auto [ec, n] = co_await self->in_.async_read_some(asio::buffer(chunk), asio::as_tuple(asio::use_awaitable));
      if (self->done_) co_return;
      if (!self->lines_.feed(std::string_view(chunk.data(), n), true, deliver, oversized)) co_return;
      if (ec) break;
    }
    if (auto last = self->lines_.finish())
      if (auto s = self->session_.lock()) s->deliver(*last);  // a last line without its newline
    // Input ended: the requests under way are answered, their answers written, then the session ends
    // (write_loop stops the transport once the queue is empty).
    auto s = self->session_.lock();
    if (!s) {
      self->stop();
      co_return;
    }
    s->when_requests_answered([self] {
      self->input_ended_ = true;
      if (!self->out_queue_.writing()) self->stop();
    });
  }

  static asio::awaitable<void> write_loop(std::shared_ptr<basic_mcp_stdio_server_transport> self) {
    const auto ec = co_await self->out_queue_.drain(self->out_, [&self] { return self->done_; });
    if (ec || self->input_ended_) self->stop();  // the client is gone, or the session is over
  }

  mcp_strand strand_;
  asio::posix::stream_descriptor in_;
  asio::posix::stream_descriptor out_;
  line_splitter lines_;
  line_queue out_queue_;
  std::function<void()> on_end_;
  std::weak_ptr<mcp_session> session_;
  bool input_ended_ = false;
  bool done_ = false;
};

// The server side of the stdio binding (the one instantiation of the template above).
using mcp_stdio_server_transport = basic_mcp_stdio_server_transport<>;

}  // namespace tool_effects::detail

#endif  // TOOL_EFFECTS_MCP_TRANSPORT_DETAIL_STDIO_SERVER_HPP
