// A model turn in and out, as a vendor sends and expects it: an OpenAI Chat
// Completions response (with the fields the API really returns) is parsed,
// planned and run, and the tool messages to append to the conversation come
// back in the same shape. One call's arguments were cut off by the token
// limit and another names a tool that does not exist: they fail alone, with
// error results the model can act on; the good calls run.
#include <tool_effects/json.hpp>

#include <cstdio>
#include <string>

namespace te = tool_effects;
using nlohmann::json;

namespace {
struct files {};

struct read_file {
  static constexpr std::string_view name = "read_file";
  static constexpr std::string_view target_arg = "path";
  using side_effects = te::effects<te::reads<files>>;
  json operator()(const json& args) const { return std::string("contents of ").append(args.at("path").get<std::string>()); }
};
struct get_weather {
  static constexpr std::string_view name = "get_weather";
  using side_effects = te::effects<te::read, te::network>;
  json operator()(const json& args) const { return {{"city", args.value("city", "")}, {"temp_c", 18}}; }
};

constexpr std::string_view response = R"({
  "id": "chatcmpl-B9MBs8CjcvOU2jLn4n570S5qMJKcT",
  "object": "chat.completion",
  "created": 1741569952,
  "model": "gpt-4.1-2025-04-14",
  "choices": [{
    "index": 0,
    "message": {
      "role": "assistant",
      "content": null,
      "refusal": null,
      "annotations": [],
      "tool_calls": [
        {"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": "{\"city\":\"Paris\"}"}},
        {"id": "call_2", "type": "function", "function": {"name": "read_file", "arguments": "{\"path\":\"notes.md\"}"}},
        {"id": "call_3", "type": "function", "function": {"name": "read_file", "arguments": "{\"path\":\"trip"}},
        {"id": "call_4", "type": "function", "function": {"name": "get_wether", "arguments": "{}"}}
      ]
    },
    "logprobs": null,
    "finish_reason": "length"
  }],
  "usage": {"prompt_tokens": 80, "completion_tokens": 64, "total_tokens": 144},
  "service_tier": "default"
})";
}  // namespace

int main() {
  te::tool_registry<read_file, get_weather> registry;
  te::json_tool_host host(registry);

  const auto calls = te::parse_tool_calls(response);
  const auto outcomes = host.run(te::inline_executor{}, te::run_options{}, calls, "turn-1");
  const json messages = te::tool_results(calls, outcomes);  // append these to the conversation
  std::printf("%s\n", messages.dump(2).c_str());

  const bool ok = messages.size() == 4 && messages[0]["tool_call_id"] == "call_1" &&
                  messages[1]["content"] == "contents of notes.md" &&
                  messages[2]["content"].get<std::string>().rfind("invalid_arguments: ", 0) == 0 &&
                  messages[3]["content"] == "unknown_tool: unknown tool \"get_wether\" (did you mean \"get_weather\"?)";
  return ok ? 0 : 1;
}
