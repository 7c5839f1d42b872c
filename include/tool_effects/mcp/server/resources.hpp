// tool_effects/mcp/server/resources.hpp — what an mcp_server serves besides its tools: resources, resource
// templates and prompts (mcp_server::add_resource, add_resource_template, add_prompt), the content blocks they
// return, and the bounds every request about them is read within. See docs/mcp-server.md.
#ifndef TOOL_EFFECTS_MCP_SERVER_RESOURCES_HPP
#define TOOL_EFFECTS_MCP_SERVER_RESOURCES_HPP

#include <cstddef>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <boost/asio/awaitable.hpp>

#include <nlohmann/json.hpp>

namespace tool_effects {

class mcp_client_asker;  // <tool_effects/mcp/server/asker.hpp>

/// The longest URI read (resources/read, subscribe, unsubscribe, a completion's ref): longer is invalid params.
inline constexpr std::size_t mcp_max_uri_bytes = 2048;
/// The most arguments of one prompts/get or one completion's context: more is invalid params.
inline constexpr std::size_t mcp_max_prompt_arguments = 64;
/// The longest argument value (prompts/get, completion/complete): longer is invalid params.
inline constexpr std::size_t mcp_max_argument_bytes = std::size_t{64} << 10;
/// The most resources one session subscribes to at once: a subscription past it is refused (invalid params).
inline constexpr std::size_t mcp_max_subscriptions = 256;
/// The most values one completion answers (the specification's bound); `total` and `hasMore` tell the rest.
inline constexpr std::size_t mcp_max_completion_values = 100;

/// One content of a `resources/read` result (or of an embedded resource): text, or binary as Base64 in `blob`.
struct mcp_resource_content {
  std::string uri;
  std::string mime_type{};           ///< "" : none
  std::string text{};                ///< the text (when `blob` is empty)
  std::optional<std::string> blob{};  ///< Base64 of the bytes: set, the content is binary and `text` is ignored
};

/// Completes the value of one argument (of a prompt, or a variable of a resource template): the candidates for
/// the partial `value`, best first, given the other arguments already chosen (`context`, possibly empty).
using mcp_completer =
    std::function<std::vector<std::string>(const std::string& value, const std::map<std::string, std::string>& context)>;

/// A resource with a fixed URI and content, listed by `resources/list` and read as it is.
struct mcp_resource {
  std::string uri;   ///< non-empty, unique among the resources
  std::string name;  ///< non-empty
  std::string title{};
  std::string description{};
  std::string mime_type{};
  std::string text{};
  std::optional<std::string> blob{};  ///< Base64: set, the resource is binary
};

/// Resources named by an RFC 6570 level-1 template (`test://template/{id}/data`): a variable matches one or more
/// characters other than '/', up to the template's next literal text. `read` gets the URI and the variables,
/// percent-decoded (RFC 3986: "%2F" is a '/' in a value; a broken escape or %00 is refused before `read`);
/// no contents (an empty vector) means there is no such resource (the not-found error); it may throw
/// mcp_server_error for an error of its own (any other exception: -32603).
struct mcp_resource_template {
  std::string uri_template;  ///< non-empty, unique; variables are `{name}`
  std::string name;          ///< non-empty
  std::string title{};
  std::string description{};
  std::string mime_type{};
  std::function<std::vector<mcp_resource_content>(const std::string& uri,
                                                  const std::map<std::string, std::string>& variables)>
      read;
  std::map<std::string, mcp_completer> complete{};  ///< by variable name (each must be a variable of the template)
};

/// One argument of a prompt.
struct mcp_prompt_argument {
  std::string name;  ///< non-empty, unique in its prompt
  std::string title{};
  std::string description{};
  bool required = false;  ///< prompts/get without it: invalid params naming it
  mcp_completer complete{};  ///< empty: completion/complete answers no values
};

/// One message of a prompt: its role ("user" or "assistant") and one content block (`mcp_text_content`, ...).
struct mcp_prompt_message {
  std::string role = "user";
  nlohmann::json content;
};

/// A prompt: `get` is given the arguments (every required one present, no other than declared) and returns its
/// messages; it may throw mcp_server_error for an error of its own (any other exception: -32603).
struct mcp_prompt {
  std::string name;  ///< non-empty, unique
  std::string title{};
  std::string description{};
  std::vector<mcp_prompt_argument> arguments{};
  std::function<std::vector<mcp_prompt_message>(const std::map<std::string, std::string>& arguments)> get{};
  /// Instead of `get`: a coroutine given the arguments and the asker of its request, which may ask the client
  /// (elicitation, sampling, roots; in the 2026-07-28 era by InputRequiredResult, the request parked meanwhile).
  std::function<boost::asio::awaitable<std::vector<mcp_prompt_message>>(std::map<std::string, std::string> arguments,
                                                                        const mcp_client_asker& asker)>
      get_asking{};
};

/// A text content block.
inline nlohmann::json mcp_text_content(std::string text) {
  return {{"type", "text"}, {"text", std::move(text)}};
}
/// An image content block (`data`: Base64).
inline nlohmann::json mcp_image_content(std::string data, std::string mime_type) {
  return {{"type", "image"}, {"data", std::move(data)}, {"mimeType", std::move(mime_type)}};
}
/// The JSON of one resource content (uri, mimeType when set, text or blob).
inline nlohmann::json mcp_resource_content_json(const mcp_resource_content& c) {
  nlohmann::json j = {{"uri", c.uri}};
  if (!c.mime_type.empty()) j["mimeType"] = c.mime_type;
  if (c.blob) j["blob"] = *c.blob;
  else j["text"] = c.text;
  return j;
}
/// An embedded resource content block.
inline nlohmann::json mcp_embedded_resource(const mcp_resource_content& c) {
  return {{"type", "resource"}, {"resource", mcp_resource_content_json(c)}};
}

}  // namespace tool_effects

#endif  // TOOL_EFFECTS_MCP_SERVER_RESOURCES_HPP
