// Shared by the tests that show lost updates without real coordination (nonblocking_calls_test.cpp,
// mcp_server_test.cpp) and by test/mcp/bank_server.cpp (its --uncoordinated control, which the gateway's tests put
// upstream): `grant_everything`, a coordinator that grants every acquisition at once, whatever else holds the
// same resource. Under it the read-modify-write tools of those tests lose increments: the control of the
// server's real coordinator.
#ifndef TOOL_EFFECTS_TEST_COORDINATOR_SUPPORT_HPP
#define TOOL_EFFECTS_TEST_COORDINATOR_SUPPORT_HPP

#include <cstdint>
#include <utility>

#include <boost/asio/associated_executor.hpp>
#include <boost/asio/post.hpp>
#include <boost/system/error_code.hpp>

#include <tool_effects/call_description.hpp>
#include <tool_effects/coordination.hpp>

namespace coordinator_test {

// A coordinator that grants every call at once: no coordination at all.
struct grant_everything {
  struct grant_type {
    std::uint64_t fencing_token() const { return 0; }
    bool held() const { return false; }
    void release() {}
  };
  template <class Handler>
  void async_acquire(const tool_effects::call_description&, tool_effects::acquire_options, Handler&& h) const {
    auto ex = boost::asio::get_associated_executor(h);
    boost::asio::post(ex, [h = std::forward<Handler>(h)]() mutable { std::move(h)(boost::system::error_code{}, grant_type{}); });
  }
  grant_type acquire(const tool_effects::call_description&, tool_effects::acquire_options) const { return {}; }
  tool_effects::acquire_options default_acquire_options() const { return {}; }
};

}  // namespace coordinator_test

#endif  // TOOL_EFFECTS_TEST_COORDINATOR_SUPPORT_HPP
