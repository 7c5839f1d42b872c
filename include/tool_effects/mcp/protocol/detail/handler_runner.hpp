// tool_effects/mcp/protocol/detail/handler_runner.hpp — internal: how the protocol
// session (mcp/protocol/detail/session.hpp) runs a request handler of the peer's: the
// error a handler throws to answer with a JSON-RPC error, and the one place a
// handler's coroutine is started (on a strand of its own) and cancelled.
#ifndef TOOL_EFFECTS_MCP_PROTOCOL_DETAIL_HANDLER_RUNNER_HPP
#define TOOL_EFFECTS_MCP_PROTOCOL_DETAIL_HANDLER_RUNNER_HPP

#include <exception>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>

#include <nlohmann/json.hpp>

#include <boost/asio/awaitable.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/strand.hpp>

#include <tool_effects/detail/foreign_completion.hpp>
#include <tool_effects/mcp/protocol/detail/transport.hpp>

namespace tool_effects::detail {

// What a handler computes, as a coroutine: the result, or throws. Calling the
// function only makes the coroutine (its arguments copied into it); nothing
// runs until it is spawned.
using mcp_handler_work_fn = std::function<asio::awaitable<nlohmann::json>()>;

// One handler running: the strand its coroutine runs on and the signal that
// cancels it (emitted on that strand only).
struct mcp_running_handler {
  explicit mcp_running_handler(const asio::any_io_executor& ex) : strand(make_mcp_strand(ex)) {}
  mcp_strand strand;
  asio::cancellation_signal signal;
};

// Asks a running handler to stop: an awaitable one's pending operation
// completes with operation_aborted; a synchronous one runs on (C++ cannot
// take a thread back) and its answer is dropped by the caller.
inline void mcp_cancel_handler(const std::shared_ptr<mcp_running_handler>& run) {
  if (run) asio::post(run->strand, [run] { run->signal.emit(asio::cancellation_type::terminal); });
}

// Runs `work` as a coroutine on a strand of `executor` (empty: of the executor under `strand`; a synchronous
// handler blocks one of its threads, an awaitable one holds none while it waits) and posts its outcome to
// `strand`: done(exception_ptr, result). The one place a handler is started. The completion holds `strand` with
// its work tracked until it has posted (detail/foreign_completion.hpp): the context that runs the session cannot
// run out of work, and be destroyed, under a handler thread that still holds a copy of its strand.
template <class Strand, class Done>
std::shared_ptr<mcp_running_handler> mcp_start_handler(const Strand& strand, const asio::any_io_executor& executor,
                                                       const mcp_handler_work_fn& work, Done done) {
  auto run = std::make_shared<mcp_running_handler>(executor ? executor : mcp_inner_executor(strand));
  // Spawned from inside the handler's strand: co_spawn dispatches, and a
  // dispatch from the caller's thread (which runs `strand`) would run a
  // synchronous handler inline there, blocking the session's strand.
  asio::post(run->strand, [run, work, tracked = tracked_executor(strand), done = std::move(done)]() mutable {
    asio::co_spawn(run->strand, work(),
                   asio::bind_cancellation_slot(
                       run->signal.slot(), [tracked = std::move(tracked), done = std::move(done), run](
                                               std::exception_ptr e, nlohmann::json r) mutable {
                         const auto hold = std::move(tracked);  // released last, after every other copy
                         asio::post(hold, [done = std::move(done), e, r = std::move(r)]() mutable {
                           done(e, std::move(r));
                         });
                       }));
  });
  return run;
}

}  // namespace tool_effects::detail

#endif  // TOOL_EFFECTS_MCP_PROTOCOL_DETAIL_HANDLER_RUNNER_HPP
