// The stdio framing both stdio transports share (mcp/protocol/detail/line_pipe.hpp): lines split across reads,
// the bound on a line with the two policies (the client's stop, the server's skip-and-go-on), the last line
// without its newline, the bounded write queue and its writes (every line in order, a failed write empties it);
// and the server's stdio transport end to end over a pipe pair: an over-long line fails alone, a call under way
// when input ends is still answered, and a client that never reads its stdout ends its session at the write
// bound (the control without a bound is still serving when the test closes its stdin).
#include <atomic>
#include <chrono>
#include <cstddef>
#include <csignal>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/local/connect_pair.hpp>
#include <boost/asio/local/stream_protocol.hpp>
#include <boost/asio/thread_pool.hpp>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <tool_effects/mcp/protocol/detail/line_pipe.hpp>
#include <tool_effects/mcp/host.hpp>
#include <tool_effects/mcp/server.hpp>

namespace mcp_line_pipe_test_ns {

namespace te = tool_effects;
using namespace std::chrono_literals;

namespace {
struct fed {
  std::vector<std::string> lines;
  int oversized = 0;
};

bool feed(te::detail::line_splitter& s, std::string_view data, bool skip, fed& out) {
  return s.feed(
      data, skip,
      [&out](std::string& l) {
        out.lines.push_back(l);
        return true;
      },
      [&out] {
        ++out.oversized;
        return true;
      });
}
}  // namespace

TEST(McpLinePipe, LinesSplitAcrossReadsComeOutWhole) {
  te::detail::line_splitter s(100);
  fed f;
  EXPECT_TRUE(feed(s, "{\"a\":", false, f));
  EXPECT_TRUE(f.lines.empty());
  EXPECT_TRUE(feed(s, "1}\n{\"b\":2}\n{\"c\"", false, f));
  EXPECT_TRUE(feed(s, ":3}", false, f));
  EXPECT_EQ(f.lines, (std::vector<std::string>{"{\"a\":1}", "{\"b\":2}"}));
  EXPECT_EQ(s.finish(), std::optional<std::string>("{\"c\":3}"));  // the last line, without its newline
  EXPECT_EQ(s.finish(), std::nullopt);
}

TEST(McpLinePipe, AnOverlongLineStopsTheClientAndIsSkippedByTheServer) {
  const std::string longer(11, 'x');
  {  // the client's policy: the feed stops at the first line over the bound
    te::detail::line_splitter s(10);
    fed f;
    EXPECT_FALSE(feed(s, "ok\n" + longer + "\nnext\n", false, f));
    EXPECT_EQ(f.lines, (std::vector<std::string>{"ok"}));
    EXPECT_EQ(f.oversized, 1);
  }
  {  // the server's: reported once, dropped up to its newline (over several reads), the next line whole
    te::detail::line_splitter s(10);
    fed f;
    EXPECT_TRUE(feed(s, "ok\n" + longer, true, f));
    EXPECT_TRUE(feed(s, longer + longer, true, f));
    EXPECT_TRUE(feed(s, "tail\nnext\n", true, f));
    EXPECT_EQ(f.lines, (std::vector<std::string>{"ok", "next"}));
    EXPECT_EQ(f.oversized, 1);
  }
  {  // exactly at the bound is a line; a skipped last line is not one
    te::detail::line_splitter s(10);
    fed f;
    EXPECT_TRUE(feed(s, std::string(10, 'y') + "\n" + longer, true, f));
    EXPECT_EQ(f.lines, (std::vector<std::string>{std::string(10, 'y')}));
    EXPECT_EQ(s.finish(), std::nullopt);
  }
}

TEST(McpLinePipe, ACallbackThatReturnsFalseStopsTheFeed) {
  te::detail::line_splitter s(100);
  std::vector<std::string> seen;
  EXPECT_FALSE(s.feed(
      "a\nb\nc\n", false,
      [&seen](std::string& l) {
        seen.push_back(l);
        return seen.size() < 2;
      },
      [] { return true; }));
  EXPECT_EQ(seen, (std::vector<std::string>{"a", "b"}));
}

TEST(McpLinePipe, TheWriteQueueTakesAFirstLineAndThenHoldsItsBound) {
  te::detail::line_queue q(10);
  EXPECT_TRUE(q.push(std::string(50, 'x')));  // a single line always goes into an empty queue
  EXPECT_EQ(q.waiting(), 51u);
  EXPECT_FALSE(q.push("y"));  // 51 + 2 > 10
  EXPECT_EQ(q.waiting(), 51u);
  EXPECT_TRUE(q.claim_writer());
  EXPECT_FALSE(q.claim_writer());  // one writer at a time
  te::detail::line_queue unbounded(0);
  for (int i = 0; i < 100; ++i) EXPECT_TRUE(unbounded.push("line"));
  EXPECT_EQ(unbounded.waiting(), 500u);
}

// The writer of the queue tests (named types: g++ 12 warns of a coroutine frame holding a lambda's type).
struct never_stopped {
  bool operator()() const noexcept { return false; }
};
boost::asio::awaitable<void> drain_into(te::detail::line_queue& q, boost::asio::local::stream_protocol::socket& s,
                                        boost::system::error_code& out) {
  out = co_await q.drain(s, never_stopped{});
}

// The queue writes every line in order, each with its newline, in gathered writes of a bounded number of lines (here
// 100 lines, one of a megabyte, over a socket the reader drains concurrently), and is empty and free afterwards.
TEST(McpLinePipe, TheWriteQueueWritesEveryLineInOrderWithItsNewline) {
  boost::asio::io_context io;
  boost::asio::local::stream_protocol::socket a(io), b(io);
  boost::asio::local::connect_pair(a, b);
  te::detail::line_queue q(0);
  std::string expected;
  for (int i = 0; i < 100; ++i) {
    std::string line = i == 50 ? std::string(1 << 20, 'm') : "line " + std::to_string(i);
    expected += line + '\n';
    ASSERT_TRUE(q.push(std::move(line)));
  }
  EXPECT_EQ(q.waiting(), expected.size());
  ASSERT_TRUE(q.claim_writer());
  boost::system::error_code result = boost::asio::error::would_block;
  boost::asio::co_spawn(io, drain_into(q, a, result), boost::asio::detached);
  std::string got;
  std::thread reader([&] {
    char buf[65536];
    boost::system::error_code ec;
    while (got.size() < expected.size()) {
      const std::size_t n = b.read_some(boost::asio::buffer(buf), ec);
      if (ec) break;
      got.append(buf, n);
    }
  });
  io.run();
  reader.join();
  EXPECT_FALSE(result) << result.message();
  EXPECT_EQ(got.size(), expected.size());
  EXPECT_TRUE(got == expected);
  EXPECT_EQ(q.waiting(), 0u);
  EXPECT_FALSE(q.writing());
  EXPECT_FALSE(q.claim_writer());  // nothing waits
}

// A failed write empties the queue and returns its error: the lines are not kept for a peer that is gone.
TEST(McpLinePipe, AFailedWriteEmptiesTheQueue) {
  boost::asio::io_context io;
  boost::asio::local::stream_protocol::socket a(io), b(io);
  boost::asio::local::connect_pair(a, b);
  b.close();
  ::signal(SIGPIPE, SIG_IGN);
  te::detail::line_queue q(0);
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(q.push("x"));
  ASSERT_TRUE(q.claim_writer());
  boost::system::error_code result;
  boost::asio::co_spawn(io, drain_into(q, a, result), boost::asio::detached);
  io.run();
  EXPECT_TRUE(result);
  EXPECT_EQ(q.waiting(), 0u);
  EXPECT_FALSE(q.writing());
}

namespace {
struct bank {
  static constexpr std::string_view resource_name = "bank";
};
struct get_balance {
  static constexpr std::string_view name = "get_balance";
  using side_effects = te::effects<te::reads<bank>>;
  nlohmann::json operator()(const nlohmann::json&) const {
    std::this_thread::sleep_for(200ms);  // still running when the client's input ends
    return 1;
  }
};
}  // namespace

namespace {
struct pipes {
  int to_server[2] = {-1, -1};
  int from_server[2] = {-1, -1};
  pipes() {
    if (::pipe(to_server) != 0 || ::pipe(from_server) != 0) throw std::runtime_error("pipe");
  }
  ~pipes() {
    for (int fd : {to_server[0], to_server[1], from_server[0], from_server[1]})
      if (fd >= 0) ::close(fd);
  }
  void close_input() {
    ::close(to_server[1]);
    to_server[1] = -1;
  }
  // Everything the server wrote until it closed its end.
  std::string read_all() const {
    std::string out;
    char buf[4096];
    for (ssize_t n; (n = ::read(from_server[0], buf, sizeof buf)) > 0;) out.append(buf, static_cast<std::size_t>(n));
    return out;
  }
};

using host_type = te::json_tool_host<get_balance>;

// Serves the pipe pair on a thread; `done` turns true when serve_fds returns.
struct serving {
  te::mcp_server<host_type>& server;
  pipes& p;
  std::atomic<bool> done{false};
  std::thread t;
  serving(te::mcp_server<host_type>& s, pipes& pp) : server(s), p(pp) {
    t = std::thread([this] {
      server.serve_fds(p.to_server[0], p.from_server[1]);
      done = true;
    });
  }
  ~serving() {
    if (t.joinable()) t.join();
  }
};
}  // namespace

TEST(McpServerStdio, AnOverlongLineFailsAloneAndTheSessionGoesOn) {
  te::tool_registry<get_balance> reg;
  host_type host(reg);
  boost::asio::thread_pool pool(1);
  te::mcp_server server(pool, host, te::mcp_server_options{.max_message_bytes = 64});
  pipes p;
  {
    serving s(server, p);
    const std::string in = std::string(200, ' ') + "\n" + R"({"jsonrpc":"2.0","id":7,"method":"ping"})" + "\n";
    ASSERT_EQ(::write(p.to_server[1], in.data(), in.size()), static_cast<ssize_t>(in.size()));
    p.close_input();
  }
  ::close(p.from_server[1]);
  p.from_server[1] = -1;
  const std::string out = p.read_all();
  EXPECT_NE(out.find(R"("code":-32600,"message":"Invalid Request: a line exceeds the limit of 64 bytes")"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find(R"({"id":7,"jsonrpc":"2.0","result":{}})"), std::string::npos) << out;
}

// `echo request | server`: input ends while the call runs; its answer is still written before the session ends.
TEST(McpServerStdio, TheCallsUnderWayAreAnsweredAfterInputEnds) {
  te::tool_registry<get_balance> reg;
  host_type host(reg);
  boost::asio::thread_pool pool(1);
  te::mcp_server server(pool, host);
  pipes p;
  {
    serving s(server, p);
    const std::string in =
        R"({"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{}}})"
        "\n"
        R"({"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"get_balance"}})" "\n";
    ASSERT_EQ(::write(p.to_server[1], in.data(), in.size()), static_cast<ssize_t>(in.size()));
    p.close_input();
  }
  ::close(p.from_server[1]);
  p.from_server[1] = -1;
  const std::string out = p.read_all();
  EXPECT_NE(out.find(R"("id":9)"), std::string::npos) << "no answer to the call: " << out;
  EXPECT_NE(out.find(R"("text":"1")"), std::string::npos) << out;
}

// A client that sends requests but never reads its stdout: with the bound the server ends the session (serve_fds
// returns while the client's stdin is still open); without one (the control) it still serves, its queue growing.
TEST(McpServerStdio, AClientThatNeverReadsEndsItsSessionAtTheWriteBound) {
  std::signal(SIGPIPE, SIG_IGN);  // our writes after the server closed its stdin fail with EPIPE
  const auto flood = [](std::size_t bound, std::chrono::milliseconds wait) {
    te::tool_registry<get_balance> reg;
    host_type host(reg);
    boost::asio::thread_pool pool(1);
    te::mcp_server server(pool, host, te::mcp_server_options{.max_write_queue_bytes = bound});
    pipes p;
    ::fcntl(p.to_server[1], F_SETFL, O_NONBLOCK);
    serving s(server, p);
    // 10,000 pings, ~400 KB of answers: far over the pipe's 64 KiB and the 128 KiB bound. One line per write
    // (under PIPE_BUF: written whole or not at all).
    const std::string line = R"({"jsonrpc":"2.0","id":1,"method":"ping"})" "\n";
    const auto until = std::chrono::steady_clock::now() + 120s;
    for (int sent = 0; sent < 10000 && !s.done && std::chrono::steady_clock::now() < until;) {
      if (::write(p.to_server[1], line.data(), line.size()) > 0) ++sent;
      else std::this_thread::sleep_for(1ms);
    }
    for (const auto end = std::chrono::steady_clock::now() + wait; !s.done && std::chrono::steady_clock::now() < end;)
      std::this_thread::sleep_for(10ms);
    const bool ended_by_server = s.done;
    p.close_input();
    ::close(p.from_server[0]);  // the server's pending writes fail; serve_fds returns
    p.from_server[0] = -1;
    return ended_by_server;
  };
  EXPECT_TRUE(flood(128 * 1024, 60s)) << "the server keeps serving a client that reads nothing";
  EXPECT_FALSE(flood(0, 1s)) << "the control (no bound) ended too: the test does not show the bound";
}

}  // namespace mcp_line_pipe_test_ns
