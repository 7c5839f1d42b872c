// Model traffic in and out, per vendor: responses and streams written from the
// vendors' API references (test/fixtures/vendors, with their usual extra
// fields) go response -> calls -> plan -> run -> results in the same dialect,
// checked field by field; bad calls (truncated arguments, hallucinated tools)
// fail alone; the host's loop guard; tool_registry<> with dynamic tools only.
#include <gtest/gtest.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include <boost/asio/thread_pool.hpp>

#include <tool_effects/json.hpp>

// Unity-built with the other json tests (test/CMakeLists.txt): all below is this file's own.
namespace json_turn_vendors_test_ns {

namespace te = tool_effects;
using nlohmann::json;

namespace {
struct files {};
struct outbox {};

struct get_weather {
  static constexpr std::string_view name = "get_weather";
  using side_effects = te::effects<te::read, te::network>;
  json operator()(const json& args) const { return json{{"city", args.value("city", "")}, {"temp_c", 18}}; }
};
struct read_file {
  static constexpr std::string_view name = "read_file";
  static constexpr std::string_view target_arg = "path";
  using side_effects = te::effects<te::reads<files>>;
  json operator()(const json& args) const { return "contents of " + args.at("path").get<std::string>(); }
};
struct run_sql {
  static constexpr std::string_view name = "run_sql";
  using side_effects = te::effects<te::read>;
  json operator()(const json& args) const { return "3 rows for " + args.at("input").get<std::string>(); }
};
struct upstream_timeout : std::runtime_error {
  using std::runtime_error::runtime_error;
};
struct send_email {
  static constexpr std::string_view name = "send_email";
  using side_effects = te::effects<te::appends<outbox>, te::external, te::network>;
  std::atomic<int>* sent = nullptr;
  json operator()(const json&) const {
    if (sent) ++*sent;
    throw upstream_timeout("timed out");
  }
};

using registry = te::tool_registry<get_weather, read_file, run_sql, send_email>;

std::filesystem::path fixtures() { return std::filesystem::path(__FILE__).parent_path() / ".." / "fixtures" / "vendors"; }

std::string slurp(const std::string& name) {
  std::ifstream in(fixtures() / name);
  if (!in) throw std::runtime_error("missing fixture " + name);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

std::vector<std::string> lines(const std::string& name) {
  std::istringstream in(slurp(name));
  std::vector<std::string> out;
  for (std::string l; std::getline(in, l);)
    if (!l.empty()) out.push_back(l);
  return out;
}

// Feeds a recorded stream event by event; records after which event each call completed.
std::vector<te::tool_call> stream_calls(const std::string& name, std::vector<std::size_t>* completed_at = nullptr) {
  te::tool_call_stream stream;
  std::vector<te::tool_call> out;
  const auto events = lines(name);
  for (std::size_t i = 0; i < events.size(); ++i)
    for (auto& c : stream.feed(events[i])) {
      out.push_back(std::move(c));
      if (completed_at) completed_at->push_back(i);
    }
  for (auto& c : stream.finish()) {
    out.push_back(std::move(c));
    if (completed_at) completed_at->push_back(events.size());
  }
  EXPECT_EQ(stream.completed(), out.size());
  return out;
}

// Runs a turn on a fresh host (inline: deterministic) and returns the results in the calls' dialect.
json round_trip(const std::vector<te::tool_call>& calls) {
  registry reg;
  te::json_tool_host host(reg);
  const auto p = host.plan(calls);
  EXPECT_EQ(p.calls.size(), calls.size());
  const auto out = host.run(te::inline_executor{}, te::run_options{}, calls, "turn-1");
  return te::tool_results(calls, out);
}

const json weather = json{{"city", "Paris"}, {"temp_c", 18}};
const json weather_args = json{{"city", "Paris"}, {"unit", "c"}};
const json file_args = json{{"path", "notes/paris.md"}};

void expect_call(const te::tool_call& c, std::string_view id, std::string_view name, const json& args,
                 te::tool_call_dialect dialect) {
  EXPECT_EQ(c.id, id);
  EXPECT_EQ(c.name, name);
  EXPECT_EQ(c.arguments, args) << c.arguments.dump();
  EXPECT_EQ(c.dialect, dialect) << te::to_string(c.dialect);
  EXPECT_TRUE(c.valid()) << c.arguments_error;
}
}  // namespace

TEST(Vendors, OpenAiChatCompletionsResponse) {
  const auto calls = te::parse_tool_calls(slurp("openai_chat_response.json"));
  ASSERT_EQ(calls.size(), 2u);
  expect_call(calls[0], "call_8Xq1nY2", "get_weather", weather_args, te::tool_call_dialect::openai_chat);
  expect_call(calls[1], "call_3Lm0pQ7", "read_file", file_args, te::tool_call_dialect::openai_chat);
  const json results = round_trip(calls);
  ASSERT_EQ(results.size(), 2u);
  EXPECT_EQ(results[0], (json{{"role", "tool"}, {"tool_call_id", "call_8Xq1nY2"}, {"content", weather.dump()}}));
  EXPECT_EQ(results[1],
            (json{{"role", "tool"}, {"tool_call_id", "call_3Lm0pQ7"}, {"content", "contents of notes/paris.md"}}));
  EXPECT_TRUE(results[0]["content"].is_string()) << "OpenAI content is a string, even for a JSON result";
}

TEST(Vendors, OpenAiAssistantMessageWithACustomToolCall) {
  const auto calls = te::parse_tool_calls(slurp("openai_chat_message_custom.json"));
  ASSERT_EQ(calls.size(), 2u);
  expect_call(calls[0], "call_cu5tom1", "run_sql", json{{"input", "SELECT city FROM trips LIMIT 3"}},
              te::tool_call_dialect::openai_chat);
  EXPECT_TRUE(calls[0].custom);
  expect_call(calls[1], "call_fn2", "get_weather", json::object(), te::tool_call_dialect::openai_chat);
  const json results = round_trip(calls);
  ASSERT_EQ(results.size(), 2u);
  EXPECT_EQ(results[0], (json{{"role", "tool"},
                              {"tool_call_id", "call_cu5tom1"},
                              {"content", "3 rows for SELECT city FROM trips LIMIT 3"}}));
  EXPECT_EQ(results[1]["tool_call_id"], "call_fn2");
}

TEST(Vendors, LlamaCppResponseWithoutIdsGetsStableGeneratedIds) {
  const auto calls = te::parse_tool_calls(slurp("llamacpp_response.json"));
  ASSERT_EQ(calls.size(), 2u);
  EXPECT_TRUE(calls[0].generated_id && calls[1].generated_id) << "absent and empty ids are generated";
  EXPECT_EQ(calls[0].id.substr(0, 7), "call-1-");
  EXPECT_EQ(calls[1].id.substr(0, 7), "call-2-");
  expect_call(calls[0], calls[0].id, "get_weather", json{{"city", "Paris"}}, te::tool_call_dialect::openai_chat);
  const auto again = te::parse_tool_calls(slurp("llamacpp_response.json"));
  EXPECT_EQ(again[0].id, calls[0].id);
  EXPECT_EQ(again[1].id, calls[1].id);
  const json results = round_trip(calls);
  ASSERT_EQ(results.size(), 2u);
  EXPECT_EQ(results[0]["tool_call_id"], calls[0].id);
  EXPECT_EQ(results[1]["tool_call_id"], calls[1].id);
  EXPECT_EQ(results[1]["content"], "contents of notes/paris.md");
}

TEST(Vendors, OpenAiResponsesEchoesCallId) {
  const auto calls = te::parse_tool_calls(slurp("openai_responses_response.json"));
  ASSERT_EQ(calls.size(), 3u) << "reasoning and message items are skipped";
  expect_call(calls[0], "call_Wx1", "get_weather", weather_args, te::tool_call_dialect::openai_responses);
  expect_call(calls[1], "call_Wx2", "read_file", file_args, te::tool_call_dialect::openai_responses);
  expect_call(calls[2], "call_Wx3", "run_sql", json{{"input", "SELECT 1"}}, te::tool_call_dialect::openai_responses);
  EXPECT_TRUE(calls[2].custom);
  const json results = round_trip(calls);
  ASSERT_EQ(results.size(), 3u);
  EXPECT_EQ(results[0], (json{{"type", "function_call_output"}, {"call_id", "call_Wx1"}, {"output", weather.dump()}}));
  EXPECT_EQ(results[1], (json{{"type", "function_call_output"},
                              {"call_id", "call_Wx2"},
                              {"output", "contents of notes/paris.md"}}));
  EXPECT_EQ(results[2],
            (json{{"type", "custom_tool_call_output"}, {"call_id", "call_Wx3"}, {"output", "3 rows for SELECT 1"}}));
}

TEST(Vendors, AnthropicMessagesAnswerInOneUserMessage) {
  const auto calls = te::parse_tool_calls(slurp("anthropic_response.json"));
  ASSERT_EQ(calls.size(), 2u) << "thinking, redacted_thinking, text and server_tool_use blocks are skipped";
  expect_call(calls[0], "toolu_01A09q90qw90lq917835lq9", "get_weather", weather_args, te::tool_call_dialect::anthropic);
  expect_call(calls[1], "toolu_01B7n2kq", "read_file", file_args, te::tool_call_dialect::anthropic);
  // The content array alone parses the same.
  const auto blocks = te::parse_tool_calls(json::parse(slurp("anthropic_response.json"))["content"]);
  ASSERT_EQ(blocks.size(), 2u);
  EXPECT_EQ(blocks[1].id, "toolu_01B7n2kq");
  const json results = round_trip(calls);
  ASSERT_EQ(results.size(), 1u);
  EXPECT_EQ(results[0]["role"], "user");
  ASSERT_EQ(results[0]["content"].size(), 2u);
  EXPECT_EQ(results[0]["content"][0], (json{{"type", "tool_result"},
                                            {"tool_use_id", "toolu_01A09q90qw90lq917835lq9"},
                                            {"content", weather.dump()},
                                            {"is_error", false}}));
  EXPECT_EQ(results[0]["content"][1], (json{{"type", "tool_result"},
                                            {"tool_use_id", "toolu_01B7n2kq"},
                                            {"content", "contents of notes/paris.md"},
                                            {"is_error", false}}));
}

TEST(Vendors, GeminiResponseAndContentWithOptionalIds) {
  const auto calls = te::parse_tool_calls(slurp("gemini_response.json"));
  ASSERT_EQ(calls.size(), 2u) << "the thought text part is skipped";
  EXPECT_TRUE(calls[0].generated_id);
  expect_call(calls[0], calls[0].id, "get_weather", weather_args, te::tool_call_dialect::gemini);
  expect_call(calls[1], "fc-7a1", "read_file", file_args, te::tool_call_dialect::gemini);
  const auto content = te::parse_tool_calls(json::parse(slurp("gemini_response.json"))["candidates"][0]["content"]);
  ASSERT_EQ(content.size(), 2u);
  EXPECT_EQ(content[0].id, calls[0].id);
  const json results = round_trip(calls);
  ASSERT_EQ(results.size(), 1u);
  EXPECT_EQ(results[0]["role"], "user");
  ASSERT_EQ(results[0]["parts"].size(), 2u);
  EXPECT_EQ(results[0]["parts"][0], (json{{"functionResponse", {{"name", "get_weather"}, {"response", weather}}}}))
      << "no id: the model sent none; an object result is the response itself";
  EXPECT_EQ(results[0]["parts"][1],
            (json{{"functionResponse",
                   {{"name", "read_file"}, {"id", "fc-7a1"}, {"response", {{"output", "contents of notes/paris.md"}}}}}}));
}

TEST(Vendors, McpToolsCallRequestAndParams) {
  const auto calls = te::parse_tool_calls(slurp("mcp_tools_call.json"));
  ASSERT_EQ(calls.size(), 1u);
  expect_call(calls[0], "17", "get_weather", weather_args, te::tool_call_dialect::mcp);
  const auto params = te::parse_tool_calls(json::parse(slurp("mcp_tools_call.json"))["params"]);
  ASSERT_EQ(params.size(), 1u);
  expect_call(params[0], params[0].id, "get_weather", weather_args, te::tool_call_dialect::mcp);
  const json results = round_trip(calls);
  ASSERT_EQ(results.size(), 1u);
  EXPECT_EQ(results[0], (json{{"content", json::array({json{{"type", "text"}, {"text", weather.dump()}}})},
                              {"isError", false},
                              {"structuredContent", weather}}));
}

TEST(Vendors, MixedArrayOfCallItems) {
  const json mixed = json::array(
      {json::parse(slurp("openai_chat_response.json"))["choices"][0]["message"]["tool_calls"][0],
       json::parse(slurp("openai_responses_response.json"))["output"][3],
       json::parse(slurp("anthropic_response.json"))["content"][2],
       json::parse(slurp("gemini_response.json"))["candidates"][0]["content"]["parts"][2],
       json{{"id", "p1"}, {"name", "read_file"}, {"arguments", file_args}}});
  const auto calls = te::parse_tool_calls(mixed);
  ASSERT_EQ(calls.size(), 4u);
  EXPECT_EQ(calls[0].dialect, te::tool_call_dialect::openai_chat);
  EXPECT_EQ(calls[1].dialect, te::tool_call_dialect::openai_responses);
  EXPECT_EQ(calls[2].dialect, te::tool_call_dialect::gemini);
  EXPECT_EQ(calls[3].dialect, te::tool_call_dialect::plain);
  const json results = round_trip(calls);
  ASSERT_EQ(results.size(), 4u);
  EXPECT_EQ(results[0]["role"], "tool");
  EXPECT_EQ(results[1]["type"], "function_call_output");
  EXPECT_EQ(results[2]["parts"][0]["functionResponse"]["id"], "fc-7a1");
  EXPECT_EQ(results[3], (json{{"id", "p1"}, {"name", "read_file"}, {"content", "contents of notes/paris.md"}, {"is_error", false}}));
}

TEST(Streams, OpenAiChatChunksYieldEachCallWhenTheNextStarts) {
  std::vector<std::size_t> at;
  const auto calls = stream_calls("openai_chat_stream.jsonl", &at);
  ASSERT_EQ(calls.size(), 2u);
  const auto whole = te::parse_tool_calls(slurp("openai_chat_response.json"));
  for (std::size_t i = 0; i < 2; ++i) {
    expect_call(calls[i], whole[i].id, whole[i].name, whole[i].arguments, te::tool_call_dialect::openai_chat);
  }
  EXPECT_EQ(at, (std::vector<std::size_t>{4, 7})) << "the first call is out before the second is complete";
  EXPECT_EQ(round_trip(calls), round_trip(whole));
}

TEST(Streams, AReusedIndexWithANewIdStartsANewCall) {
  const auto calls = stream_calls("ollama_stream.jsonl");
  ASSERT_EQ(calls.size(), 2u);
  expect_call(calls[0], "call_a1b2c3", "get_weather", weather_args, te::tool_call_dialect::openai_chat);
  expect_call(calls[1], "call_d4e5f6", "read_file", file_args, te::tool_call_dialect::openai_chat);
}

TEST(Streams, OpenAiResponsesEvents) {
  std::vector<std::size_t> at;
  const auto calls = stream_calls("openai_responses_stream.jsonl", &at);
  ASSERT_EQ(calls.size(), 2u);
  expect_call(calls[0], "call_Wx1", "get_weather", weather_args, te::tool_call_dialect::openai_responses);
  expect_call(calls[1], "call_Wx2", "read_file", file_args, te::tool_call_dialect::openai_responses);
  EXPECT_EQ(at, (std::vector<std::size_t>{4, 8})) << "at arguments.done, or at output_item.done";
  const json results = round_trip(calls);
  EXPECT_EQ(results[1]["call_id"], "call_Wx2");
}

TEST(Streams, AnthropicEvents) {
  std::vector<std::size_t> at;
  const auto calls = stream_calls("anthropic_stream.jsonl", &at);
  ASSERT_EQ(calls.size(), 2u);
  expect_call(calls[0], "toolu_01A09q90qw90lq917835lq9", "get_weather", weather_args, te::tool_call_dialect::anthropic);
  expect_call(calls[1], "toolu_01B7n2kq", "read_file", file_args, te::tool_call_dialect::anthropic);
  EXPECT_EQ(at, (std::vector<std::size_t>{9, 12})) << "each call at its content_block_stop";
  const auto whole = te::parse_tool_calls(slurp("anthropic_response.json"));
  EXPECT_EQ(round_trip(calls), round_trip(whole));
}

TEST(Streams, GeminiChunksCarryWholeCalls) {
  te::tool_call_stream stream;
  const json whole = json::parse(slurp("gemini_response.json"));
  json first = whole, second = whole;
  first["candidates"][0]["content"]["parts"].erase(2);  // text + the call without an id
  auto& parts = second["candidates"][0]["content"]["parts"];
  parts.erase(parts.begin(), parts.begin() + 2);
  const auto a = stream.feed(first);
  const auto b = stream.feed(second);
  ASSERT_EQ(a.size(), 1u);
  ASSERT_EQ(b.size(), 1u);
  const auto calls = te::parse_tool_calls(whole);
  expect_call(a[0], calls[0].id, "get_weather", weather_args, te::tool_call_dialect::gemini);
  expect_call(b[0], "fc-7a1", "read_file", file_args, te::tool_call_dialect::gemini);
  EXPECT_EQ(stream.started(), 2u);
  EXPECT_TRUE(stream.finish().empty());
  const auto second_alone = te::parse_tool_calls(json::parse(R"({"candidates": [{"content": {"role": "model",
      "parts": [{"functionCall": {"name": "get_weather", "args": {"city": "Paris", "unit": "c"}}}]}}]})"));
  te::tool_call_stream positions;
  (void)positions.feed(second);
  const auto later = positions.feed(json::parse(R"({"candidates": [{"content": {"role": "model",
      "parts": [{"functionCall": {"name": "get_weather", "args": {"city": "Paris", "unit": "c"}}}]}}]})"));
  ASSERT_EQ(later.size(), 1u);
  EXPECT_EQ(later[0].id.substr(0, 7), "call-2-") << "a generated id counts the calls of earlier chunks";
  EXPECT_EQ(later[0].id.substr(7), second_alone[0].id.substr(7));
}

TEST(Streams, TruncatedStreamYieldsTheOpenCallWithItsArgumentsError) {
  te::tool_call_stream stream;
  EXPECT_TRUE(stream.feed(R"({"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"c1","type":"function",
      "function":{"name":"read_file","arguments":"{\"path\": \"no"}}]}}]})").empty());
  EXPECT_EQ(stream.started(), 1u);
  const auto rest = stream.finish();
  ASSERT_EQ(rest.size(), 1u);
  EXPECT_FALSE(rest[0].valid());
  EXPECT_TRUE(stream.finish().empty()) << "each call is yielded once";
  try {
    (void)stream.feed(R"({"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"x","name":7}})");
    FAIL() << "a non-string name was accepted";
  } catch (const te::json_error& e) {
    EXPECT_EQ(e.pointer(), "/content_block/name");
  }
}

TEST(BadCalls, TruncatedArgumentsAndAHallucinatedToolFailAloneWithErrorResults) {
  // A Chat Completions response: the model ran out of tokens in the middle of
  // call 2's arguments and invented a tool for call 3.
  const json response = {
      {"id", "chatcmpl-T"},
      {"object", "chat.completion"},
      {"choices",
       {{{"index", 0},
         {"finish_reason", "length"},
         {"message",
          {{"role", "assistant"},
           {"content", nullptr},
           {"tool_calls",
            {{{"id", "c1"}, {"type", "function"}, {"function", {{"name", "get_weather"}, {"arguments", R"({"city":"Paris"})"}}}},
             {{"id", "c2"}, {"type", "function"}, {"function", {{"name", "read_file"}, {"arguments", R"({"path": "notes/par)"}}}},
             {{"id", "c3"}, {"type", "function"}, {"function", {{"name", "get_wether"}, {"arguments", "{}"}}}},
             {{"id", "c4"}, {"type", "function"}, {"function", {{"name", "read_file"}, {"arguments", R"({"path":"a.md"})"}}}}}}}}}}}};
  const auto calls = te::parse_tool_calls(response);
  ASSERT_EQ(calls.size(), 4u);
  registry reg;
  te::json_tool_host host(reg);
  const auto p = host.plan(calls);
  for (std::size_t i = 0; i < 4; ++i)
    for (std::size_t j = 0; j < 4; ++j)
      if (i == 1 || i == 2 || j == 1 || j == 2) {
        EXPECT_FALSE(p.plan.waits_for(i, j)) << i << " " << j;
      }
  boost::asio::thread_pool pool(2);
  const auto out = host.run(pool, te::run_options{.abort_on_error = true}, calls, "turn-bad");
  ASSERT_EQ(out.size(), 4u);
  EXPECT_EQ(out[0].value(), (json{{"city", "Paris"}, {"temp_c", 18}}));
  EXPECT_EQ(out[3].value(), json("contents of a.md"));
  auto reason_of = [](const te::outcome<json>& o) {
    try {
      std::rethrow_exception(o.error());
    } catch (const te::call_failure& f) {
      EXPECT_EQ(f.record().attempts, 0u);
      return std::string(te::to_string(f.reason()));
    } catch (...) {
    }
    return std::string("?");
  };
  EXPECT_EQ(reason_of(out[1]), "invalid_arguments");
  EXPECT_EQ(reason_of(out[2]), "unknown_tool");

  const json results = te::tool_results(calls, out);
  ASSERT_EQ(results.size(), 4u);
  EXPECT_EQ(results[1]["tool_call_id"], "c2");
  EXPECT_EQ(results[1]["content"],
            "invalid_arguments: arguments of read_file are not valid JSON (invalid JSON at byte 20): "
            "\"{\\\"path\\\": \\\"notes/par\"");
  EXPECT_EQ(results[2]["tool_call_id"], "c3");
  EXPECT_EQ(results[2]["content"], "unknown_tool: unknown tool \"get_wether\" (did you mean \"get_weather\"?)");
}

TEST(BadCalls, FailuresExplainThemselvesInEveryDialect) {
  std::atomic<int> sent{0};
  registry reg(get_weather{}, read_file{}, run_sql{}, send_email{&sent});
  te::json_tool_host host(reg);
  const auto calls = te::parse_tool_calls(R"({"type": "message", "role": "assistant", "content": [
      {"type": "tool_use", "id": "t1", "name": "send_email", "input": {"to": "ada@example.com"}},
      {"type": "tool_use", "id": "t2", "name": "nope", "input": {}}]})");
  const auto options =
      te::run_options{}.with(te::retry_policy{.max_attempts = 3, .is_transient = te::transient_on<upstream_timeout>()});
  const auto out = host.run(te::inline_executor{}, options, calls);
  EXPECT_EQ(sent.load(), 1) << "not retried: a repeat could send it twice";
  const json results = te::tool_results(calls, out);
  ASSERT_EQ(results.size(), 1u);
  const json& blocks = results[0]["content"];
  EXPECT_EQ(blocks[0]["is_error"], true);
  EXPECT_EQ(blocks[0]["content"],
            "unsafe_to_retry: send_email failed (timed out) and was not retried because it is not safe to repeat: a "
            "repeat could do it twice");
  EXPECT_EQ(blocks[1]["content"], "unknown_tool: unknown tool \"nope\" (known: get_weather read_file run_sql send_email)");

  te::tool_call gemini = calls[0];
  gemini.dialect = te::tool_call_dialect::gemini;
  EXPECT_EQ(te::tool_result(gemini, out[0])["functionResponse"]["response"], (json{{"error", blocks[0]["content"]}}));
  te::tool_call mcp = calls[0];
  mcp.dialect = te::tool_call_dialect::mcp;
  EXPECT_EQ(te::tool_result(mcp, out[0])["isError"], true);
  EXPECT_EQ(te::answer_of(te::outcome<json>::abort()).content.substr(0, 9), "aborted: ");
  EXPECT_EQ(te::answer_of(te::outcome<json>::failure(std::make_exception_ptr(std::runtime_error("disk full")))).content,
            "tool_error: disk full");
  EXPECT_EQ(te::answer_of(te::outcome<json>::success(nullptr)).content, "");
  EXPECT_THROW((void)te::tool_results(calls, std::span<const te::outcome<json>>(out.data(), 1)), std::invalid_argument);
}

TEST(LoopGuard, FlagsRepeatsWithTheirCountAndOptionallyRefusesThem) {
  registry reg;
  te::json_tool_host host(reg);
  const auto calls = te::parse_tool_calls(R"([
    {"id": "1", "name": "read_file", "arguments": {"path": "a"}},
    {"id": "2", "name": "read_file", "arguments": {"path": "a"}},
    {"id": "3", "name": "read_file", "arguments": {"path": "b"}},
    {"id": "4", "name": "read_file", "arguments": {"path": "a"}},
    {"id": "5", "name": "nope", "arguments": {}}
  ])");
  te::repeat_detector detector(te::repeat_policy{.threshold = 2, .last_calls = 10});
  std::vector<std::string> flagged;
  te::loop_guard guard{.detector = &detector,
                       .on_repeat = [&](const te::tool_call& c, const te::repeat_verdict& v) {
                         flagged.push_back(c.id + "x" + std::to_string(v.count));
                       }};
  const auto reported = host.run(te::inline_executor{}, te::run_options{}.with(guard), calls);
  EXPECT_EQ(flagged, (std::vector<std::string>{"2x2", "4x3"}));
  EXPECT_TRUE(reported[1].has_value() && reported[3].has_value()) << "reported, not refused";

  flagged.clear();
  detector.reset();
  guard.refuse = true;
  const auto refused = host.run(te::inline_executor{}, te::run_options{}.with(guard), calls);
  EXPECT_EQ(flagged, (std::vector<std::string>{"2x2", "4x3"}));
  EXPECT_TRUE(refused[0].has_value() && refused[2].has_value());
  for (const std::size_t k : {1u, 3u}) {
    ASSERT_TRUE(refused[k].has_error());
    try {
      std::rethrow_exception(refused[k].error());
    } catch (const te::call_failure& f) {
      EXPECT_EQ(f.reason(), te::failure_reason::repeated_call);
      EXPECT_EQ(f.record().attempts, 0u);
    }
  }
  const json results = te::tool_results(calls, refused);
  EXPECT_EQ(results[3]["content"].get<std::string>().substr(0, 74),
            "repeated_call: read_file was not run: the same call was made 3 times in a ");
  EXPECT_EQ(results[3]["is_error"], true);
}

TEST(Aggregates, PartialDesignatedInitializersCompileWarningFree) {
  const te::tool_call call{.id = "c", .name = "read_file"};
  const te::tool_answer answer{.content = "x"};
  const te::loop_guard guard{.refuse = true};
  const te::turn_plan plan{.tools = {0}};
  EXPECT_TRUE(call.valid() && call.arguments.is_object() && !answer.is_error && guard.refuse && plan.tools.size() == 1);
}

TEST(Registry, NoStaticToolsHostsDynamicToolsOnly) {
  te::tool_registry<> reg;
  static_assert(te::tool_registry<>::static_size == 0);
  te::json_tool_host host(reg);
  host.add(te::dynamic_tool{"echo", te::describe_runtime("echo", {}, {{"audit", te::access_mode::append, {}}}), {}},
           [](const te::attempt_context&, const json& args) -> json { return args; });
  EXPECT_EQ(reg.size(), 1u);
  EXPECT_EQ(reg.index_of("echo"), 0u);
  const auto calls = te::parse_tool_calls(R"([{"id": "e", "name": "echo", "arguments": {"x": 1}},
                                              {"id": "f", "name": "eho", "arguments": {}}])");
  const auto out = host.run(te::inline_executor{}, te::run_options{}, calls);
  EXPECT_EQ(out[0].value(), (json{{"x", 1}}));
  EXPECT_EQ(te::answer_of(out[1]).content, "unknown_tool: unknown tool \"eho\" (did you mean \"echo\"?)");
}
}  // namespace json_turn_vendors_test_ns
