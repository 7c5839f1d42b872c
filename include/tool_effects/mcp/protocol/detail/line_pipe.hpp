// tool_effects/mcp/protocol/detail/line_pipe.hpp — internal: the newline-delimited
// framing of the stdio binding, shared by both stdio transports (the client's
// child process, stdio_child_transport.hpp; the server's own stdin/stdout,
// stdio_server_transport.hpp).
//
// Two pieces, each bounded:
// - `line_splitter` cuts a byte stream into lines of at most `max_line` bytes
//   (no I/O: a state machine fed with whatever a read returned). What happens to
//   a longer line is the caller's policy: the client ends the connection, the
//   server answers one error and skips the line up to its newline.
// - `line_queue` holds the lines waiting to be written, bounded in bytes, and
//   writes them in order on one stream, one gathered write at a time, on the
//   caller's strand, without copying them. A peer that stops reading is seen
//   as a queue over its bound.
#ifndef TOOL_EFFECTS_MCP_PROTOCOL_DETAIL_LINE_PIPE_HPP
#define TOOL_EFFECTS_MCP_PROTOCOL_DETAIL_LINE_PIPE_HPP

#include <cstddef>
#include <deque>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/buffer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <boost/system/error_code.hpp>

namespace tool_effects::detail {

// Cuts a byte stream into lines (the newline excluded) of at most `max_line` bytes.
class line_splitter {
 public:
  explicit line_splitter(std::size_t max_line) noexcept : max_(max_line) {}

  // Feeds `data`: `on_line(std::string& line)` for each complete line, and
  // `on_oversized()` once for a line that passes the bound; with `skip`, its
  // bytes are then dropped up to its newline and splitting goes on. A callback
  // that returns false stops the feed, which then returns false (the rest of
  // `data` is not looked at); an oversized line without `skip` returns false.
  template <class OnLine, class OnOversized>
  bool feed(std::string_view data, bool skip, OnLine&& on_line, OnOversized&& on_oversized) {
    while (!data.empty()) {
      const auto nl = data.find('\n');
      const auto part = data.substr(0, nl);
      if (!skipping_ && line_.size() + part.size() > max_) {
        line_.clear();
        if (!on_oversized() || !skip) return false;
        skipping_ = true;
      }
      if (!skipping_) line_.append(part);
      if (nl == std::string_view::npos) return true;
      data.remove_prefix(nl + 1);
      const bool whole = !skipping_;
      skipping_ = false;
      if (whole) {
        std::string line = std::exchange(line_, std::string());
        if (!on_line(line)) return false;
      }
    }
    return true;
  }

  // At end of input: the last line if it had no newline (nullopt when there
  // is none, or when it was being skipped).
  [[nodiscard]] std::optional<std::string> finish() {
    if (line_.empty() || skipping_) return std::nullopt;
    return std::exchange(line_, std::string());
  }

  [[nodiscard]] std::size_t max_line() const noexcept { return max_; }

 private:
  std::size_t max_;
  std::string line_;
  bool skipping_ = false;
};

// The lines waiting to be written on one stream, at most `max_bytes` of them
// (0: no bound) besides a first line, which an empty queue always takes.
// A line is moved in and written from where it lies, its newline as a second
// buffer (one gathered write per batch): a line is never copied.
class line_queue {
 public:
  explicit line_queue(std::size_t max_bytes) noexcept : max_(max_bytes) {}

  // Queues `line` and its newline (pass it moved: it is not copied); false
  // (nothing queued) when the bytes already waiting plus these would pass the bound.
  [[nodiscard]] bool push(std::string line) {
    const std::size_t queued = waiting();
    if (max_ != 0 && queued > 0 && queued + line.size() + 1 > max_) return false;
    queued_ += line.size() + 1;
    lines_.push_back(std::move(line));
    return true;
  }

  // Bytes waiting, the write in flight included.
  [[nodiscard]] std::size_t waiting() const noexcept { return queued_ + in_flight_; }
  [[nodiscard]] std::size_t max_bytes() const noexcept { return max_; }

  // True once when a writer must be started (none is running and lines wait):
  // the caller then co_spawns `drain` on its strand.
  [[nodiscard]] bool claim_writer() noexcept {
    if (writing_ || lines_.empty()) return false;
    writing_ = true;
    return true;
  }
  [[nodiscard]] bool writing() const noexcept { return writing_; }

  // Writes what waits, in order, until the queue is empty, `stopped()` is
  // true, or a write fails (its error returned; the queue is then emptied).
  // Run on the strand that pushes; the queue and `stream` must outlive it.
  template <class Stream, class Stopped>
  boost::asio::awaitable<boost::system::error_code> drain(Stream& stream, Stopped stopped) {
    static constexpr char newline = '\n';
    static constexpr std::size_t max_batch = 32;  // lines per gathered write (two buffers each)
    boost::system::error_code out;
    while (!lines_.empty() && !stopped()) {
      batch_.clear();
      buffers_.clear();
      std::size_t bytes = 0;
      while (!lines_.empty() && batch_.size() < max_batch) {
        batch_.push_back(std::move(lines_.front()));
        lines_.pop_front();
        bytes += batch_.back().size() + 1;
      }
      for (const auto& l : batch_) {
        buffers_.push_back(boost::asio::buffer(l));
        buffers_.push_back(boost::asio::buffer(&newline, 1));
      }
      queued_ -= bytes;
      in_flight_ = bytes;
      auto [ec, n] =
          co_await boost::asio::async_write(stream, buffers_, boost::asio::as_tuple(boost::asio::use_awaitable));
      (void)n;
      in_flight_ = 0;
      if (ec) {
        out = ec;
        break;
      }
    }
    batch_.clear();  // the lines written (their memory freed); the vectors keep their capacity
    if (out || stopped()) {
      lines_.clear();
      queued_ = 0;
    }
    in_flight_ = 0;
    writing_ = false;
    co_return out;
  }

 private:
  std::size_t max_;
  std::deque<std::string> lines_;
  std::size_t queued_ = 0;     // bytes in lines_, newlines included
  std::size_t in_flight_ = 0;  // bytes of the write under way
  bool writing_ = false;
  std::vector<std::string> batch_;                  // the lines of the write under way (the one writer's)
  std::vector<boost::asio::const_buffer> buffers_;  // and their buffers
};

}  // namespace tool_effects::detail

#endif  // TOOL_EFFECTS_MCP_PROTOCOL_DETAIL_LINE_PIPE_HPP
