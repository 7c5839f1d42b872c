// tool_effects/mcp/server/options.hpp — how an mcp_server presents itself, how many calls it runs at once, and
// the bounds of every session whatever its transport (<tool_effects/mcp/server.hpp>). See docs/mcp-server.md.
#ifndef TOOL_EFFECTS_MCP_SERVER_OPTIONS_HPP
#define TOOL_EFFECTS_MCP_SERVER_OPTIONS_HPP

#include <chrono>
#include <cstddef>
#include <functional>
#include <string>

#include <nlohmann/json_fwd.hpp>

#include <tool_effects/version.hpp>

namespace tool_effects {

/// How a server presents itself and how many calls it runs at once.
struct mcp_server_options {
  std::string name = "tool_effects";  ///< serverInfo.name
  std::string version = TOOL_EFFECTS_VERSION_STRING;  ///< serverInfo.version
  std::string title{};         ///< serverInfo.title (empty: none)
  std::string instructions{};  ///< initialize's `instructions` (empty: none)
  /// tools/call requests dispatched at once over every session (running, or
  /// waiting for their coordinator grant); further ones wait their turn.
  std::size_t max_concurrent_calls = 16;
  /// Requests of one session being answered at once (past it: error -32000 at once).
  std::size_t max_pending_requests = 64;
  /// The longest message (line on stdio) read or answered; longer: error -32600
  /// for that message alone. The client side's bound (mcp_client_options::max_line_bytes).
  std::size_t max_message_bytes = std::size_t{16} << 20;
  /// Answers waiting to be written to a stdio client (on top of the one being
  /// written): a client that stops reading its stdout while more wait ends its
  /// session. The client side's bound (mcp_client_options::max_write_queue_bytes).
  std::size_t max_write_queue_bytes = std::size_t{16} << 20;
  /// The longest log message of a tool forwarded (`data` of notifications/message), at most an eighth of
  /// `max_message_bytes`: longer ones are cut at a UTF-8 character boundary and end with "...".
  std::size_t max_log_bytes = std::size_t{64} << 10;
  /// Log messages of one call forwarded at most (those at or above the session's level): later ones are
  /// dropped, and one warning after the call says how many.
  std::size_t max_log_messages = 1000;
  /// The longest a tool's ask of its client (elicitation, sampling) waits for the answer, unless the ask
  /// gives its own; past it the ask fails (client_ask_timeout) and the call goes on without an answer.
  std::chrono::milliseconds client_request_timeout = std::chrono::seconds(60);
  /// Calls of the 2026-07-28 era parked at once while they wait for their client's input (MRTR: answered by
  /// an InputRequiredResult, resumed by the retry's requestState); past it an ask fails at once
  /// (client_ask_too_many_parked). A parked synchronous tool also holds one of `max_concurrent_calls`.
  std::size_t max_parked_calls = 64;
  /// Called with each tool's tools/list entry (its index in the host's registry, and the entry as the server
  /// built it) before it goes out, from any thread: a proxy adds what its upstream said of the tool (title,
  /// description, schemas, `_meta`). Empty: the entries go as built.
  std::function<void(std::size_t tool, nlohmann::json& entry)> tool_entry{};
  /// A tools/call runs as a coroutine, holding no thread while it waits for its grant or its tool (its turn
  /// prepared and started in the session's thread, its tools run on the server's executor), whenever starting
  /// its turn cannot block: by default when the dispatch options have no approver and no journal. Set, this
  /// says that the host's tools never block a thread (each is a coroutine, or returns at once) and neither do
  /// the options' approver and journal, so calls run so with them too. Otherwise a call holds one of the
  /// server's caller threads. Either way at most `max_concurrent_calls` at once, admitted in order; a call whose
  /// client the server itself would ask by elicitation (no approver in the options) takes a caller thread,
  /// within the same bound.
  bool nonblocking_calls = false;
};

}  // namespace tool_effects

#endif  // TOOL_EFFECTS_MCP_SERVER_OPTIONS_HPP
