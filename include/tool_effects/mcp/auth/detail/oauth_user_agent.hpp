// tool_effects/mcp/auth/detail/oauth_user_agent.hpp — internal to the OAuth flow (mcp/auth/detail/oauth_flow.hpp):
// the application's user-agent step (a blocking function: open a browser, wait for the redirect) run on a thread of
// its own and waited for without polling. The thread wakes the wait when it returns; the flow wakes it when a
// transport stops (the wait then ends if the transport it authorizes is gone); the timeout ends it at the latest.
// The thread touches only its job's state, so it may outlive the client; it wakes the wait only while the wait is
// registered (under the job's mutex), so never after the wait, or its executor, is gone.
#ifndef TOOL_EFFECTS_MCP_AUTH_DETAIL_OAUTH_USER_AGENT_HPP
#define TOOL_EFFECTS_MCP_AUTH_DETAIL_OAUTH_USER_AGENT_HPP

#include <chrono>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <tool_effects/detail/quote.hpp>
#include <tool_effects/mcp/auth/detail/oauth_encoding.hpp>  // mcp_oauth_failure

namespace tool_effects::detail {

// Runs `user_agent(url)` on a thread of its own and returns the redirect URL it gives; throws mcp_oauth_failure
// when it throws, does not return within `timeout`, or `alive` says the client is going (checked whenever `timer`
// is cancelled: by the thread's return, or by the flow's interrupt()).
inline boost::asio::awaitable<std::string> mcp_oauth_run_user_agent(
    boost::asio::any_io_executor ex, std::function<std::string(const std::string&)> user_agent, std::string url,
    std::chrono::milliseconds timeout, std::function<bool()> alive, std::shared_ptr<boost::asio::steady_timer> timer) {
  struct job {
    std::mutex m;
    bool done = false;
    std::string result;
    std::string error;
    std::function<void()> wake;  // set while the flow waits
  };
  auto j = std::make_shared<job>();
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  timer->expires_at(deadline);
  j->wake = [ex, weak = std::weak_ptr<boost::asio::steady_timer>(timer)] {
    boost::asio::post(ex, [weak] {
      if (auto t = weak.lock()) t->cancel();
    });
  };
  struct unregister {
    std::shared_ptr<job> j;
    ~unregister() {
      const std::lock_guard lock(j->m);
      j->wake = nullptr;
    }
  } registered{j};
  std::thread([j, f = std::move(user_agent), url = std::move(url)] {
    std::string result;
    std::string error;
    try {
      result = f(url);
    } catch (const std::exception& e) {
      error = e.what();
      if (error.empty()) error = "(no message)";
    } catch (...) {
      error = "(not a std::exception)";
    }
    const std::lock_guard lock(j->m);
    j->result = std::move(result);
    j->error = std::move(error);
    j->done = true;
    if (j->wake) j->wake();
  }).detach();
  for (;;) {
    {
      const std::lock_guard lock(j->m);
      if (j->done) break;
    }
    if (alive && !alive()) throw mcp_oauth_failure("the client is shutting down");
    if (std::chrono::steady_clock::now() >= deadline)
      throw mcp_oauth_failure("the user agent did not return within mcp_oauth_options::user_agent_timeout");
    (void)co_await timer->async_wait(boost::asio::as_tuple(boost::asio::use_awaitable));
  }
  if (!j->error.empty()) throw mcp_oauth_failure("the user agent failed: " + quote_text(j->error, 300));
  if (j->result.size() > 16384) throw mcp_oauth_failure("the redirect URL is longer than 16384 bytes");
  co_return j->result;
}

}  // namespace tool_effects::detail

#endif  // TOOL_EFFECTS_MCP_AUTH_DETAIL_OAUTH_USER_AGENT_HPP
