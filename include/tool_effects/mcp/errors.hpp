// tool_effects/mcp/errors.hpp — what an MCP exchange can end in besides a
// result, in both roles: the error a handler throws to answer with a JSON-RPC
// error (mcp_handler_error), and what a client's call fails with. Every fault
// of the server or of the pipe becomes one of these, delivered to the call
// (never a hang):
//
//   mcp_transient_error  timeout, server_exited, protocol_error: the call may or
//                        may not have happened and a retry (after a restart)
//                        may succeed — `mcp_transient()` tells the retry policy.
//   mcp_rpc_error        the server answered with a JSON-RPC error object.
//   mcp_tool_error       tools/call answered `isError: true` (the tool failed).
//   mcp_error            unsupported_protocol_version, launch_failed, closed.
#ifndef TOOL_EFFECTS_MCP_ERRORS_HPP
#define TOOL_EFFECTS_MCP_ERRORS_HPP

#include <array>
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>

#include <nlohmann/json.hpp>

#include <tool_effects/retry_policy.hpp>

namespace tool_effects {

/// The error response a request handler throws (a server's method, a client's answer to a server's request):
/// its code, message and data go to the peer as they are; anything else a handler throws is answered -32603.
class mcp_handler_error : public std::runtime_error {
 public:
  mcp_handler_error(int code, const std::string& message, nlohmann::json data = nullptr)
      : std::runtime_error(message), code_(code), data_(std::move(data)) {}
  [[nodiscard]] int code() const noexcept { return code_; }
  [[nodiscard]] const nlohmann::json& data() const noexcept { return data_; }

 private:
  int code_;
  nlohmann::json data_;
};
/// The server's name for it: what its methods and tools' helpers throw.
using mcp_server_error = mcp_handler_error;

/// What went wrong in an MCP exchange. Stable slugs (`to_string`).
enum class mcp_error_kind : std::uint8_t {
  timeout,                       ///< no response within the call's timeout (cancellation was sent)
  server_exited,                 ///< the server process exited (or closed its stdout) with the call pending
  protocol_error,                ///< the server's output stopped being JSON-RPC (garbage, oversize line)
  rpc_error,                     ///< a JSON-RPC error response
  tool_error,                    ///< a tools/call result with isError: true
  unsupported_protocol_version,  ///< initialize negotiated a version this client does not speak
  launch_failed,                 ///< the server could not be started
  closed,                        ///< the client was shut down (or restarts are exhausted)
  authorization_failed           ///< over HTTP: OAuth authorization failed (mcp/oauth.hpp; no secret quoted)
};

/// The slug of `k` (the enumerator's name).
constexpr std::string_view to_string(mcp_error_kind k) noexcept {
  constexpr std::array<std::string_view, 9> slugs{"timeout",    "server_exited",
                                                  "protocol_error", "rpc_error",
                                                  "tool_error", "unsupported_protocol_version",
                                                  "launch_failed", "closed", "authorization_failed"};
  const auto i = static_cast<std::size_t>(k);
  return i < slugs.size() ? slugs[i] : std::string_view{};
}

/// Any MCP failure: its kind and the server's name are kept; `what()` reads
/// `mcp server "filesystem": <kind>: <message>`.
class mcp_error : public std::runtime_error {
 public:
  mcp_error(mcp_error_kind kind, std::string server, const std::string& message)
      : std::runtime_error(format(kind, server, message)), kind_(kind), server_(std::move(server)) {}

  /// The kind of failure.
  [[nodiscard]] mcp_error_kind kind() const noexcept { return kind_; }
  /// The name of the server (as given to or derived by the client).
  [[nodiscard]] const std::string& server() const noexcept { return server_; }

 private:
  static std::string format(mcp_error_kind kind, const std::string& server, const std::string& message) {
    std::string out = "mcp server \"";
    out += server;
    out += "\": ";
    out += to_string(kind);
    out += ": ";
    out += message;
    return out;
  }
  mcp_error_kind kind_;
  std::string server_;
};

/// A failure of the connection, not of the tool: `timeout`, `server_exited`
/// or `protocol_error`. Transient: a retry-safe call may be attempted again
/// (the client restarts a dead server on the next call).
class mcp_transient_error : public mcp_error {
 public:
  using mcp_error::mcp_error;
};

/// A JSON-RPC error response: its code, message and data.
class mcp_rpc_error : public mcp_error {
 public:
  mcp_rpc_error(std::string server, int code, const std::string& message, nlohmann::json data = nullptr)
      : mcp_error(mcp_error_kind::rpc_error, std::move(server), text(code, message)),
        code_(code),
        data_(std::move(data)) {}
  /// The JSON-RPC error code (e.g. -32602 invalid params).
  [[nodiscard]] int code() const noexcept { return code_; }
  /// The error's `data` member (null when absent).
  [[nodiscard]] const nlohmann::json& data() const noexcept { return data_; }

 private:
  static std::string text(int code, const std::string& message) {
    std::string out = "error ";
    out += std::to_string(code);
    out += ": ";
    out += message;
    return out;
  }
  int code_;
  nlohmann::json data_;
};

/// A tool that reported failure (`isError: true`): the whole result is kept,
/// `what()` quotes its text content.
class mcp_tool_error : public mcp_error {
 public:
  mcp_tool_error(std::string server, const std::string& tool, const std::string& text, nlohmann::json result)
      : mcp_error(mcp_error_kind::tool_error, std::move(server), message(tool, text)), result_(std::move(result)) {}
  /// The tools/call result as the server sent it.
  [[nodiscard]] const nlohmann::json& result() const noexcept { return result_; }

 private:
  static std::string message(const std::string& tool, const std::string& text) {
    std::string out = "tool \"";
    out += tool;
    out += "\" failed: ";
    out += text;
    return out;
  }
  nlohmann::json result_;
};

/// The retry policy's predicate for MCP: transient iff `mcp_transient_error`.
inline transient_predicate mcp_transient() { return transient_on<mcp_transient_error>(); }

}  // namespace tool_effects

#endif  // TOOL_EFFECTS_MCP_ERRORS_HPP
