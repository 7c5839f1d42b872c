// Issue 21 point 4: MCP results reach the model as each vendor's tool-result
// content, not as their JSON envelope: text blocks as text, structuredContent,
// images where the vendor takes them (placeholders elsewhere), embedded
// resources, and isError as each vendor's error flag. The table of
// docs/runtime.md ("Results the model reads") is checked row by row here.
#include <gtest/gtest.h>

#include <stdexcept>
#include <string>
#include <vector>

#include <tool_effects/json.hpp>

// Unity-built with the other json tests (test/CMakeLists.txt): all below is this file's own.
namespace json_mcp_results_test_ns {

namespace te = tool_effects;
using nlohmann::json;

namespace {
te::tool_call call_in(te::tool_call_dialect d, std::string id = "c1") {
  te::tool_call c;
  c.id = std::move(id);
  c.name = "lookup";
  c.dialect = d;
  return c;
}

json answer(te::tool_call_dialect d, json result) {
  return te::tool_result(call_in(d), te::outcome<json>::success(std::move(result)));
}

const json text_result = json::parse(R"({"content": [{"type": "text", "text": "OK"}, {"type": "text", "text": "2 keys"}]})");
// A 1x1 PNG's base64 is not needed: the data is carried as sent.
const json image_result = json::parse(R"({"content": [
  {"type": "text", "text": "the chart:"},
  {"type": "image", "mimeType": "image/png", "data": "iVBORw0KGgo="}]})");
}  // namespace

TEST(McpResults, TextBlocksAreTheTextEveryVendorReads) {
  EXPECT_EQ(answer(te::tool_call_dialect::openai_chat, text_result),
            (json{{"role", "tool"}, {"tool_call_id", "c1"}, {"content", "OK\n2 keys"}}));
  EXPECT_EQ(answer(te::tool_call_dialect::openai_responses, text_result),
            (json{{"type", "function_call_output"}, {"call_id", "c1"}, {"output", "OK\n2 keys"}}));
  EXPECT_EQ(answer(te::tool_call_dialect::anthropic, text_result),
            (json{{"type", "tool_result"}, {"tool_use_id", "c1"}, {"content", "OK\n2 keys"}, {"is_error", false}}));
  EXPECT_EQ(answer(te::tool_call_dialect::gemini, text_result),
            (json{{"functionResponse", {{"name", "lookup"}, {"id", "c1"}, {"response", {{"output", "OK\n2 keys"}}}}}}));
  EXPECT_EQ(answer(te::tool_call_dialect::mcp, text_result),
            (json{{"content", text_result["content"]}, {"isError", false}}));
  EXPECT_EQ(answer(te::tool_call_dialect::plain, text_result),
            (json{{"id", "c1"}, {"name", "lookup"}, {"content", "OK\n2 keys"}, {"is_error", false}}));
  // The control: a value not shaped as an MCP result is still its JSON text.
  const json not_mcp{{"content", "a string, not blocks"}};
  EXPECT_EQ(answer(te::tool_call_dialect::openai_chat, not_mcp)["content"], not_mcp.dump());
  EXPECT_FALSE(te::is_mcp_tool_result(not_mcp));
  EXPECT_FALSE(te::is_mcp_tool_result(json::parse(R"({"content": [{"text": "no type"}]})")));
  EXPECT_TRUE(te::is_mcp_tool_result(text_result));
}

TEST(McpResults, StructuredContentIsTheValue) {
  const json r = json::parse(R"({"content": [{"type": "text", "text": "{\"n\": 2}"}], "structuredContent": {"n": 2}})");
  EXPECT_EQ(answer(te::tool_call_dialect::gemini, r)["functionResponse"]["response"], (json{{"n", 2}}));
  const json m = answer(te::tool_call_dialect::mcp, r);
  EXPECT_EQ(m["structuredContent"], (json{{"n", 2}}));
  EXPECT_EQ(m["content"], r["content"]);
  EXPECT_EQ(answer(te::tool_call_dialect::openai_chat, r)["content"], "{\"n\": 2}");
  // Without a text block, the text is structuredContent's JSON.
  const json only = json::parse(R"({"content": [], "structuredContent": {"n": 3}})");
  EXPECT_EQ(answer(te::tool_call_dialect::anthropic, only)["content"], "{\"n\":3}");
  EXPECT_EQ(answer(te::tool_call_dialect::gemini, only)["functionResponse"]["response"], (json{{"n", 3}}));
}

TEST(McpResults, ImagesGoWhereTheVendorTakesThemAndArePlaceholdersElsewhere) {
  EXPECT_EQ(answer(te::tool_call_dialect::anthropic, image_result)["content"],
            json::parse(R"([{"type": "text", "text": "the chart:"},
                            {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="}}])"));
  EXPECT_EQ(answer(te::tool_call_dialect::openai_responses, image_result)["output"],
            json::parse(R"([{"type": "input_text", "text": "the chart:"},
                            {"type": "input_image", "image_url": "data:image/png;base64,iVBORw0KGgo="}])"));
  EXPECT_EQ(answer(te::tool_call_dialect::openai_chat, image_result)["content"], "the chart:\n[image: image/png]");
  EXPECT_EQ(answer(te::tool_call_dialect::gemini, image_result)["functionResponse"]["response"],
            (json{{"output", "the chart:\n[image: image/png]"}}));
  EXPECT_EQ(answer(te::tool_call_dialect::mcp, image_result)["content"], image_result["content"]);
  // A custom tool's output is text only; Anthropic takes jpeg, png, gif and webp only.
  auto custom = call_in(te::tool_call_dialect::openai_responses);
  custom.custom = true;
  EXPECT_EQ(te::tool_result(custom, te::outcome<json>::success(image_result))["output"], "the chart:\n[image: image/png]");
  const json svg = json::parse(R"({"content": [{"type": "image", "mimeType": "image/svg+xml", "data": "PHN2Zz4="}]})");
  EXPECT_EQ(answer(te::tool_call_dialect::anthropic, svg)["content"], "[image: image/svg+xml]");
}

TEST(McpResults, EmbeddedResourcesLinksAndAudio) {
  const json r = json::parse(R"({"content": [
    {"type": "resource", "resource": {"uri": "file:///a.txt", "mimeType": "text/plain", "text": "hello"}},
    {"type": "resource", "resource": {"uri": "file:///p.png", "mimeType": "image/png", "blob": "iVBO"}},
    {"type": "resource", "resource": {"uri": "file:///r.pdf", "mimeType": "application/pdf", "blob": "JVBE"}},
    {"type": "resource_link", "uri": "file:///big.log", "name": "big.log"},
    {"type": "audio", "mimeType": "audio/wav", "data": "UklG"},
    {"type": "hologram"}]})");
  EXPECT_EQ(answer(te::tool_call_dialect::openai_chat, r)["content"],
            "hello\n[image: image/png file:///p.png]\n[resource file:///r.pdf: application/pdf, not shown]\n"
            "[resource link: file:///big.log]\n[audio: audio/wav, not shown]\n[hologram content, not shown]");
  const json a = answer(te::tool_call_dialect::anthropic, r)["content"];
  ASSERT_TRUE(a.is_array());
  ASSERT_EQ(a.size(), 6u);
  EXPECT_EQ(a[0], (json{{"type", "text"}, {"text", "hello"}}));
  EXPECT_EQ(a[1]["source"]["data"], "iVBO");
}

TEST(McpResults, IsErrorIsEachVendorsErrorFlag) {
  const json r = json::parse(R"({"content": [{"type": "text", "text": "no such key"}], "isError": true})");
  EXPECT_EQ(answer(te::tool_call_dialect::anthropic, r),
            (json{{"type", "tool_result"}, {"tool_use_id", "c1"}, {"content", "tool_error: no such key"}, {"is_error", true}}));
  EXPECT_EQ(answer(te::tool_call_dialect::mcp, r), (json{{"content", r["content"]}, {"isError", true}}));
  EXPECT_EQ(answer(te::tool_call_dialect::gemini, r)["functionResponse"]["response"],
            (json{{"error", "tool_error: no such key"}}));
  EXPECT_EQ(answer(te::tool_call_dialect::openai_chat, r)["content"], "tool_error: no such key");
  EXPECT_EQ(answer(te::tool_call_dialect::openai_responses, r)["output"], "tool_error: no such key");
  EXPECT_EQ(answer(te::tool_call_dialect::plain, r)["is_error"], true);
  // The control: isError false (or absent) is not an error.
  EXPECT_EQ(answer(te::tool_call_dialect::anthropic, text_result)["is_error"], false);
  // An error with an image: the flag wins, the text says what the image was.
  json with_image = image_result;
  with_image["isError"] = true;
  EXPECT_EQ(answer(te::tool_call_dialect::anthropic, with_image)["content"], "tool_error: the chart:\n[image: image/png]");
}

TEST(McpResults, AMalformedBlockIsAnErrorNamingItsPointer) {
  const auto a = te::answer_of(te::outcome<json>::success(json::parse(R"({"content": [{"type": "text", "text": 7}]})")),
                               "lookup");
  EXPECT_TRUE(a.is_error);
  EXPECT_NE(a.content.find("tool_error: the result of lookup is not a valid MCP result: "), std::string::npos) << a.content;
  EXPECT_NE(a.content.find("/content/0/text"), std::string::npos) << a.content;
  const auto b = te::answer_of(
      te::outcome<json>::success(json::parse(R"({"content": [], "isError": "yes"})")), "lookup");
  EXPECT_TRUE(b.is_error);
  EXPECT_NE(b.content.find("/isError"), std::string::npos) << b.content;
  const auto c = te::answer_of(te::outcome<json>::success(json::parse(R"({"content": [{"type": "image", "data": "x"}]})")));
  EXPECT_NE(c.content.find("/content/0/mimeType"), std::string::npos) << c.content;
}

TEST(McpResults, ADeepStructuredContentIsStillRefusedBeforeItIsRead) {
  json deep = json::array();
  for (int i = 0; i < 100; ++i) deep = json::array({std::move(deep)});
  json r = json::parse(R"({"content": [{"type": "text", "text": "x"}]})");
  r["structuredContent"] = json{{"a", std::move(deep)}};
  const auto a = te::answer_of(te::outcome<json>::success(std::move(r)), "lookup");
  EXPECT_TRUE(a.is_error);
  EXPECT_NE(a.content.find("nested deeper than 64 levels (at /structuredContent/a/"), std::string::npos) << a.content;
}

TEST(McpResults, ToolResultsGroupsMcpAnswersLikeAnyOther) {
  const std::vector<te::tool_call> calls{call_in(te::tool_call_dialect::anthropic, "a"),
                                         call_in(te::tool_call_dialect::anthropic, "b")};
  const std::vector<te::outcome<json>> outcomes{te::outcome<json>::success(text_result),
                                                te::outcome<json>::failure(std::make_exception_ptr(std::runtime_error("boom")))};
  const json out = te::tool_results(calls, outcomes);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0]["content"][0]["content"], "OK\n2 keys");
  EXPECT_EQ(out[0]["content"][1]["content"], "tool_error: boom");
  EXPECT_EQ(out[0]["content"][1]["is_error"], true);
}

}  // namespace json_mcp_results_test_ns
