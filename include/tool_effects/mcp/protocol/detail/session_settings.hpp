// tool_effects/mcp/protocol/detail/session_settings.hpp — internal to mcp/protocol/detail/session.hpp: what a
// protocol session (`mcp_session`) is told once (`mcp_session_settings`: the peer's name, its bounds, where its
// handlers run) and what the sessions of one role may share: the progress tokens of their requests in flight
// (`mcp_progress_routes`) and the counters of what they ignored or gave up on (`mcp_session_counters`).
#ifndef TOOL_EFFECTS_MCP_PROTOCOL_DETAIL_SESSION_SETTINGS_HPP
#define TOOL_EFFECTS_MCP_PROTOCOL_DETAIL_SESSION_SETTINGS_HPP

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <utility>

#include <nlohmann/json.hpp>

#include <boost/asio/any_io_executor.hpp>

namespace tool_effects::detail {

// Progress tokens of our requests in flight ("tool_effects/<n>") and their
// callbacks; may be shared by the sessions of one role (a client's restarts),
// used on the strand and by the requests that register (any thread).
class mcp_progress_routes {
 public:
  using callback = std::function<void(const nlohmann::json& params)>;
  // A token registered while it lives.
  class registration {
   public:
    registration(mcp_progress_routes& routes, callback f) : routes_(routes) {
      const std::lock_guard lock(routes_.m_);
      token_ = "tool_effects/" + std::to_string(++routes_.next_);
      routes_.routes_.emplace(token_, std::make_shared<callback>(std::move(f)));
    }
    registration(const registration&) = delete;
    registration& operator=(const registration&) = delete;
    ~registration() {
      const std::lock_guard lock(routes_.m_);
      routes_.routes_.erase(token_);
    }
    [[nodiscard]] const std::string& token() const noexcept { return token_; }

   private:
    mcp_progress_routes& routes_;
    std::string token_;
  };

  // notifications/progress: true when its token is one of ours (the request's
  // callback got it, or the request is over and it is dropped); false: not ours.
  bool route(const nlohmann::json& params) {
    const auto t = params.is_object() ? params.find("progressToken") : params.end();
    if (t == params.end() || !t->is_string() || t->get_ref<const std::string&>().rfind("tool_effects/", 0) != 0)
      return false;
    std::shared_ptr<callback> f;
    {
      const std::lock_guard lock(m_);
      if (const auto it = routes_.find(t->get_ref<const std::string&>()); it != routes_.end()) f = it->second;
    }
    const auto p = params.find("progress");
    if (f && p != params.end() && p->is_number()) (*f)(params);
    return true;
  }

 private:
  std::mutex m_;
  std::uint64_t next_ = 0;
  std::unordered_map<std::string, std::shared_ptr<callback>> routes_;
};

// The counters of what a session ignored or gave up on; may be shared by the
// sessions of one role (read from any thread).
struct mcp_session_counters {
  std::atomic<std::uint64_t> unknown_responses{0};  // responses to no request of ours in flight
  std::atomic<std::uint64_t> timeouts{0};           // our requests that got no response in time
  std::atomic<std::uint64_t> ignored_messages{0};   // the peer's messages dropped (refused, without id)
};

// What a session is told once.
struct mcp_session_settings {
  // The peer's name, as errors name it (set_name changes it).
  std::string name;
  // Most handlers of the peer's requests running at once (past it: -32000 at
  // once); `busy` counts them and may be shared by sessions (a hung handler
  // keeps counting after its session ended).
  std::size_t max_handler_requests = 2;
  std::shared_ptr<std::atomic<std::size_t>> busy = std::make_shared<std::atomic<std::size_t>>(0);
  // Each of the peer's requests is answered within this (past it: -32603), whatever its handler does.
  std::chrono::milliseconds handler_timeout = std::chrono::minutes(10);
  // A response longer than this is replaced by -32603 (the peer would refuse it).
  std::size_t max_message_bytes = std::size_t{16} << 20;
  std::shared_ptr<mcp_session_counters> counters = std::make_shared<mcp_session_counters>();
  // The progress tokens of our requests (null: progress goes to the handlers).
  std::shared_ptr<mcp_progress_routes> progress{};
  // Where the handlers of the peer's requests run (a strand of it per request); empty: the executor under the
  // session's strand. A server runs them on its application's executor, so that its transports' threads run
  // no application code.
  boost::asio::any_io_executor handler_executor{};
};

}  // namespace tool_effects::detail

#endif  // TOOL_EFFECTS_MCP_PROTOCOL_DETAIL_SESSION_SETTINGS_HPP
