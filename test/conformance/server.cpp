// test/conformance/server.cpp — the server ./scripts/conformance runs the official MCP conformance suite's server
// scenarios against (issue 28.6): mcp_server over Streamable HTTP (<tool_effects/mcp/server_http.hpp>) serving
// the tools the suite names, with the texts its scenarios describe. Usage: conformance_server PORT (the last
// argument); serves http://127.0.0.1:PORT/mcp until SIGINT or SIGTERM.
//
// It also serves the resources, the resource template and the prompts the resources-*, prompts-* and
// completion-complete scenarios name (serve_catalog below), and the tools of the sampling and elicitation
// scenarios, and test_reconnection (server-sse-polling: it ends its request's SSE stream mid-call). What the suite
// also asks for and mcp_server does not serve yet (MRTR): see docs/mcp.md ("The conformance suite, server side").
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <initializer_list>
#include <map>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include <boost/asio/awaitable.hpp>
#include <boost/asio/thread_pool.hpp>
#include <nlohmann/json.hpp>

#include <tool_effects/mcp/host.hpp>
#include <tool_effects/mcp/server.hpp>
#include <tool_effects/mcp/server_http.hpp>

namespace te = tool_effects;
using nlohmann::json;

namespace {

// 1x1 PNG and a short WAV (the suite checks the presence of data and mimeType).
constexpr const char* png_1x1 =
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==";
constexpr const char* wav_silence = "UklGRiQAAABXQVZFZm10IBAAAAABAAEAQB8AAEAfAAABAAgAZGF0YQAAAAA=";

json text(const char* t) { return json{{"type", "text"}, {"text", t}}; }
json blob(const char* type, const char* data, const char* mime) {
  return json{{"type", type}, {"data", data}, {"mimeType", mime}};
}
json resource(const char* uri, const char* mime, const char* content) {
  return json{{"type", "resource"}, {"resource", json{{"uri", uri}, {"mimeType", mime}, {"text", content}}}};
}
// A CallToolResult of `blocks` (sent as it is by mcp_server).
json result(std::initializer_list<json> blocks) {
  json content = json::array();
  for (const auto& b : blocks) content.push_back(b);
  return json{{"content", std::move(content)}};
}

// The tools take no arguments and touch nothing but this (the declared effect: a read of it).
struct fixtures : te::resource<> {
  static constexpr std::string_view resource_name = "conformance";
};
template <class Self>
struct fixture_tool {
  using side_effects = te::effects<te::reads<fixtures>>;
  json operator()(const json&) const { return Self::run(); }
};
struct simple_text : fixture_tool<simple_text> {
  static constexpr std::string_view name = "test_simple_text";
  static constexpr std::string_view description = "Returns a simple text.";
  static json run() { return result({text("This is a simple text response for testing.")}); }
};
struct image_content : fixture_tool<image_content> {
  static constexpr std::string_view name = "test_image_content";
  static constexpr std::string_view description = "Returns a 1x1 PNG image.";
  static json run() { return result({blob("image", png_1x1, "image/png")}); }
};
struct audio_content : fixture_tool<audio_content> {
  static constexpr std::string_view name = "test_audio_content";
  static constexpr std::string_view description = "Returns a short WAV.";
  static json run() { return result({blob("audio", wav_silence, "audio/wav")}); }
};
struct embedded_resource : fixture_tool<embedded_resource> {
  static constexpr std::string_view name = "test_embedded_resource";
  static constexpr std::string_view description = "Returns an embedded text resource.";
  static json run() {
    return result({resource("test://embedded-resource", "text/plain", "This is an embedded resource content.")});
  }
};
struct multiple_content_types : fixture_tool<multiple_content_types> {
  static constexpr std::string_view name = "test_multiple_content_types";
  static constexpr std::string_view description = "Returns text, an image and a resource.";
  static json run() {
    return result({text("Multiple content types test:"), blob("image", png_1x1, "image/png"),
                   resource("test://mixed-content-resource", "application/json", "{\"test\":\"data\",\"value\":123}")});
  }
};
struct error_handling : fixture_tool<error_handling> {
  static constexpr std::string_view name = "test_error_handling";
  static constexpr std::string_view description = "Always fails.";
  [[noreturn]] static json run() { throw std::runtime_error("This tool intentionally returns an error for testing"); }
};

// The two tools that report through their attempt_context (scenarios tools-call-with-logging and
// tools-call-with-progress): three messages each, ~50 ms apart, as the scenarios describe.
struct tool_with_logging {
  static constexpr std::string_view name = "test_tool_with_logging";
  static constexpr std::string_view description = "Sends three info log messages while it runs.";
  using side_effects = te::effects<te::reads<fixtures>>;
  json operator()(const te::attempt_context& ctx, const json&) const {
    ctx.report_log("info", "Tool execution started");
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    ctx.report_log("info", "Tool processing data");
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    ctx.report_log("info", "Tool execution completed");
    return result({text("Tool with logging executed successfully")});
  }
};
struct tool_with_progress {
  static constexpr std::string_view name = "test_tool_with_progress";
  static constexpr std::string_view description = "Reports progress 0, 50 and 100 of 100 while it runs.";
  using side_effects = te::effects<te::reads<fixtures>>;
  json operator()(const te::attempt_context& ctx, const json&) const {
    ctx.report_progress(0, 100);
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    ctx.report_progress(50, 100);
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    ctx.report_progress(100, 100);
    return result({text("Tool with progress executed successfully")});
  }
};

// The 2026-07-28 era's diagnostic tools (server-stateless@2026-07-28). test_missing_capability needs the client's
// sampling capability: a request that does not declare it gets -32021 and the tool does not run.
// test_streaming_elicitation needs elicitation; mcp_server sends no request on a stateless stream (asking the
// client is MRTR's InputRequiredResult, not served yet), so it answers with a text saying so. test_logging_tool
// logs at info through its attempt context: a request whose _meta asks for no log level gets no
// notifications/message.
struct missing_capability : fixture_tool<missing_capability> {
  static constexpr std::string_view name = "test_missing_capability";
  static constexpr std::string_view description = "Needs the client's sampling capability.";
  static constexpr std::string_view mcp_required_client_capability = "sampling";
  static json run() { return result({text("The client declared sampling.")}); }
};
struct streaming_elicitation : fixture_tool<streaming_elicitation> {
  static constexpr std::string_view name = "test_streaming_elicitation";
  static constexpr std::string_view description = "Needs the client's elicitation capability; sends it no request.";
  static constexpr std::string_view mcp_required_client_capability = "elicitation";
  static json run() {
    return result({text("No elicitation was sent: this server sends no request on a stateless response stream.")});
  }
};
struct logging_tool {
  static constexpr std::string_view name = "test_logging_tool";
  static constexpr std::string_view description = "Logs one message at info.";
  using side_effects = te::effects<te::reads<fixtures>>;
  json operator()(const te::attempt_context& ctx, const json&) const {
    ctx.report_log("info", "test_logging_tool ran");
    return result({text("Logged one message at info.")});
  }
};

// A parameter mirrored in a header (2026-07-28 x-mcp-header: http-custom-header-server-validation): a call over
// HTTP whose Mcp-Param-Region is missing, broken or another value is refused with -32020 before it runs.
struct region_header {
  static constexpr std::string_view name = "test_region_header";
  static constexpr std::string_view description = "Echoes its region, which travels in the Mcp-Param-Region header.";
  static constexpr std::string_view input_schema =
      R"({"type": "object", "properties": {"region": {"type": "string", "x-mcp-header": "Region"}},
          "required": ["region"]})";
  using side_effects = te::effects<te::reads<fixtures>>;
  json operator()(const json& args) const {
    return result({json{{"type", "text"}, {"text", "region: " + args.value("region", std::string())}}});
  }
};

// Tools that ask the client (tools-call-sampling, tools-call-elicitation, elicitation-sep1034-defaults,
// elicitation-sep1330-enums): through the call's mcp_client_asker, with the requests and texts the scenarios
// describe. A failed ask (no capability, no answer in time, an invalid answer) fails the call with its reason.
const te::mcp_client_asker& asker(const te::attempt_context& ctx) {
  const te::mcp_client_asker* a = te::mcp_client_asker_of(ctx);
  if (!a) throw std::runtime_error("not called by an MCP server");
  return *a;
}
struct sampling_tool {
  static constexpr std::string_view name = "test_sampling";
  static constexpr std::string_view description = "Asks the client's LLM to answer its prompt.";
  static constexpr std::string_view input_schema =
      R"({"type": "object", "properties": {"prompt": {"type": "string"}}, "required": ["prompt"]})";
  using side_effects = te::effects<te::reads<fixtures>>;
  json operator()(const te::attempt_context& ctx, const json& args) const {
    const json r = asker(ctx).create_message(
        {{"messages", json::array({{{"role", "user"},
                                    {"content", {{"type", "text"}, {"text", args.value("prompt", std::string())}}}}})},
         {"maxTokens", 100}});
    const json& c = r["content"];
    const json& first = c.is_array() ? (c.empty() ? json() : c[0]) : c;
    const std::string said =
        first.is_object() && first.value("type", "") == "text" ? first.value("text", std::string()) : first.dump();
    return json{{"content", json::array({{{"type", "text"}, {"text", "LLM response: " + said}}})}};
  }
};
struct elicitation_tool {
  static constexpr std::string_view name = "test_elicitation";
  static constexpr std::string_view description = "Asks the user for a username and an email address.";
  static constexpr std::string_view input_schema =
      R"({"type": "object", "properties": {"message": {"type": "string"}}, "required": ["message"]})";
  using side_effects = te::effects<te::reads<fixtures>>;
  json operator()(const te::attempt_context& ctx, const json& args) const {
    const json r = asker(ctx).elicit(
        args.value("message", std::string()),
        json::parse(R"({"type": "object", "properties": {
            "username": {"type": "string", "description": "User's response"},
            "email": {"type": "string", "description": "User's email address"}},
          "required": ["username", "email"]})"));
    return json{{"content", json::array({{{"type", "text"}, {"text", "User response: " + r.dump()}}})}};
  }
};
template <class Self>
struct elicit_schema_tool {
  using side_effects = te::effects<te::reads<fixtures>>;
  json operator()(const te::attempt_context& ctx, const json&) const {
    const json r = asker(ctx).elicit(Self::message, json::parse(Self::schema));
    return json{{"content", json::array({{{"type", "text"},
                                          {"text", "Elicitation completed: action=" + r["action"].get<std::string>() +
                                                       ", content=" + r.value("content", json::object()).dump()}}})}};
  }
};
struct elicitation_defaults : elicit_schema_tool<elicitation_defaults> {
  static constexpr std::string_view name = "test_elicitation_sep1034_defaults";
  static constexpr std::string_view description = "Elicits five fields, each with a default (SEP-1034).";
  static constexpr const char* message = "Please review the defaults";
  static constexpr const char* schema = R"({"type": "object", "properties": {
      "name": {"type": "string", "default": "John Doe"},
      "age": {"type": "integer", "default": 30},
      "score": {"type": "number", "default": 95.5},
      "status": {"type": "string", "enum": ["active", "inactive", "pending"], "default": "active"},
      "verified": {"type": "boolean", "default": true}}})";
};
struct elicitation_enums : elicit_schema_tool<elicitation_enums> {
  static constexpr std::string_view name = "test_elicitation_sep1330_enums";
  static constexpr std::string_view description = "Elicits the five enum variants of SEP-1330.";
  static constexpr const char* message = "Please choose";
  static constexpr const char* schema = R"({"type": "object", "properties": {
      "untitledSingle": {"type": "string", "enum": ["option1", "option2", "option3"]},
      "titledSingle": {"type": "string", "oneOf": [{"const": "value1", "title": "First Option"},
                                                   {"const": "value2", "title": "Second Option"},
                                                   {"const": "value3", "title": "Third Option"}]},
      "legacyEnum": {"type": "string", "enum": ["opt1", "opt2", "opt3"],
                     "enumNames": ["Option One", "Option Two", "Option Three"]},
      "untitledMulti": {"type": "array", "items": {"type": "string", "enum": ["option1", "option2", "option3"]}},
      "titledMulti": {"type": "array", "items": {"anyOf": [{"const": "value1", "title": "First Choice"},
                                                          {"const": "value2", "title": "Second Choice"},
                                                          {"const": "value3", "title": "Third Choice"}]}}}})";
};

// json-schema-2020-12 (SEP-1613, and SEP-2106 in the 2026-07-28 suite): an input schema with 2020-12 keywords,
// listed as written ($schema, $defs with an $anchor, additionalProperties, allOf/anyOf, if/then/else kept).
// server-sse-polling (SEP-1699): ends its POST stream before it answers (after the priming event, which carries an
// id and `retry`); the suite reconnects with GET and Last-Event-ID and must get the result there.
struct reconnection_tool {
  static constexpr std::string_view name = "test_reconnection";
  static constexpr std::string_view description =
      "Closes the SSE stream of its request mid-call; the result comes on the resumed stream (SEP-1699).";
  using side_effects = te::effects<te::reads<fixtures>>;
  json operator()(const te::attempt_context& ctx, const json&) const {
    const bool closed = te::mcp_close_request_stream(ctx);
    std::this_thread::sleep_for(std::chrono::milliseconds(100));  // mid-call: the client reconnects meanwhile
    return result({text(closed ? "Reconnection test completed" : "Reconnection test completed (no stream to close)")});
  }
};
struct json_schema_2020_12 : fixture_tool<json_schema_2020_12> {
  static constexpr std::string_view name = "json_schema_2020_12_tool";
  static constexpr std::string_view description = "Tool with JSON Schema 2020-12 features";
  static constexpr std::string_view input_schema = R"({
    "$schema": "https://json-schema.org/draft/2020-12/schema", "type": "object",
    "$defs": {"address": {"$anchor": "address", "type": "object",
                          "properties": {"street": {"type": "string"}, "city": {"type": "string"}}}},
    "properties": {"name": {"type": "string"}, "address": {"$ref": "#/$defs/address"}},
    "allOf": [{"anyOf": [{"required": ["name"]}, {"required": ["address"]}]}],
    "if": {"required": ["address"]}, "then": {"properties": {"name": {"minLength": 1}}}, "else": {},
    "additionalProperties": false})";
  static json run() { return result({text("ok")}); }
};

// MRTR, the input-required-result-* scenarios of 2026-07-28: tools that ask by InputRequiredResult (the server
// parks the call and the retry resumes it), under the keys and with the requests the scenarios describe.
// Coroutine tools: a parked call holds no thread.
json elicit_params(const char* message, const char* property, const char* type) {
  return {{"message", message},
          {"requestedSchema",
           {{"type", "object"}, {"properties", {{property, {{"type", type}}}}}, {"required", json::array({property})}}}};
}
json sample_params(const char* prompt, int max_tokens) {
  return {{"messages", json::array({{{"role", "user"}, {"content", {{"type", "text"}, {"text", prompt}}}}})},
          {"maxTokens", max_tokens}};
}
std::string sampled_text(const json& r) {
  const json& c = r["content"];
  const json& first = c.is_array() ? (c.empty() ? json() : c[0]) : c;
  return first.is_object() && first.value("type", "") == "text" ? first.value("text", std::string()) : first.dump();
}
json text_result(const std::string& t) { return json{{"content", json::array({{{"type", "text"}, {"text", t}}})}}; }
template <class Self>
struct mrtr_tool {
  using side_effects = te::effects<te::reads<fixtures>>;
  boost::asio::awaitable<json> operator()(const te::attempt_context& ctx, const json&) const {
    co_return co_await Self::run(asker(ctx));
  }
};
struct mrtr_elicitation : mrtr_tool<mrtr_elicitation> {
  static constexpr std::string_view name = "test_input_required_result_elicitation";
  static constexpr std::string_view description = "Asks the user's name by InputRequiredResult (key user_name).";
  static boost::asio::awaitable<json> run(const te::mcp_client_asker& a) {
    const te::mcp_client_asker r_asker = a.keyed("user_name");  // (locals: g++ 12 and temporaries in co_await)
    json r_schema = elicit_params("", "name", "string")["requestedSchema"];
    const json r = co_await r_asker.async_elicit("What is your name?", std::move(r_schema));
    co_return text_result("Hello, " + r.value("content", json::object()).value("name", std::string("stranger")) + "!");
  }
};
struct mrtr_sampling : mrtr_tool<mrtr_sampling> {
  static constexpr std::string_view name = "test_input_required_result_sampling";
  static constexpr std::string_view description = "Asks the client's LLM by InputRequiredResult (key capital_question).";
  static boost::asio::awaitable<json> run(const te::mcp_client_asker& a) {
    const te::mcp_client_asker keyed = a.keyed("capital_question");
    json params = sample_params("What is the capital of France?", 100);
    const json r = co_await keyed.async_create_message(std::move(params));
    co_return text_result("LLM response: " + sampled_text(r));
  }
};
struct mrtr_list_roots : mrtr_tool<mrtr_list_roots> {
  static constexpr std::string_view name = "test_input_required_result_list_roots";
  static constexpr std::string_view description = "Asks the client's roots by InputRequiredResult (key client_roots).";
  static boost::asio::awaitable<json> run(const te::mcp_client_asker& a) {
    const te::mcp_client_asker keyed = a.keyed("client_roots");
    const json r = co_await keyed.async_list_roots();
    std::string uris;
    for (const json& root : r["roots"]) uris += (uris.empty() ? "" : ", ") + root["uri"].get<std::string>();
    co_return text_result("Roots: " + uris);
  }
};
struct mrtr_request_state : mrtr_tool<mrtr_request_state> {
  static constexpr std::string_view name = "test_input_required_result_request_state";
  static constexpr std::string_view description = "Asks a confirmation; the retry's requestState resumes the call.";
  static boost::asio::awaitable<json> run(const te::mcp_client_asker& a) {
    const te::mcp_client_asker r_asker = a.keyed("confirm");  // (locals: g++ 12 and temporaries in co_await)
    json r_schema = elicit_params("", "ok", "boolean")["requestedSchema"];
    const json r = co_await r_asker.async_elicit("Please confirm", std::move(r_schema));
    co_return text_result("state-ok: the requestState resumed the call (action " + r["action"].get<std::string>() + ")");
  }
};
struct mrtr_tampered_state : mrtr_tool<mrtr_tampered_state> {
  static constexpr std::string_view name = "test_input_required_result_tampered_state";
  static constexpr std::string_view description = "Asks a confirmation under an HMAC-signed requestState.";
  static boost::asio::awaitable<json> run(const te::mcp_client_asker& a) {
    const te::mcp_client_asker r_asker = a.keyed("confirm");  // (locals: g++ 12 and temporaries in co_await)
    json r_schema = elicit_params("", "ok", "boolean")["requestedSchema"];
    const json r = co_await r_asker.async_elicit("Please confirm", std::move(r_schema));
    co_return text_result("confirmed (action " + r["action"].get<std::string>() + ")");
  }
};
struct mrtr_multiple_inputs : mrtr_tool<mrtr_multiple_inputs> {
  static constexpr std::string_view name = "test_input_required_result_multiple_inputs";
  static constexpr std::string_view description = "Asks a name, a greeting and the roots in one InputRequiredResult.";
  static boost::asio::awaitable<json> run(const te::mcp_client_asker& a) {
    std::vector<te::mcp_input_request> asks = {
        {"user_name", "elicitation/create", elicit_params("What is your name?", "name", "string")},
        {"greeting", "sampling/createMessage", sample_params("Generate a greeting", 50)},
        {"client_roots", "roots/list", json::object()}};
    const json r = co_await a.async_ask_all(std::move(asks));
    co_return text_result("Name: " + r["user_name"].value("content", json::object()).value("name", std::string()) +
                          ", greeting: " + sampled_text(r["greeting"]) +
                          ", roots: " + std::to_string(r["client_roots"]["roots"].size()));
  }
};
struct mrtr_multi_round : mrtr_tool<mrtr_multi_round> {
  static constexpr std::string_view name = "test_input_required_result_multi_round";
  static constexpr std::string_view description = "Asks a name, then a colour: two rounds, two requestStates.";
  static boost::asio::awaitable<json> run(const te::mcp_client_asker& a) {
    const te::mcp_client_asker n_asker = a.keyed("step1");  // (locals: g++ 12 and temporaries in co_await)
    json n_schema = elicit_params("", "name", "string")["requestedSchema"];
    const json n = co_await n_asker.async_elicit("Step 1: What is your name?", std::move(n_schema));
    const te::mcp_client_asker c_asker = a.keyed("step2");  // (locals: g++ 12 and temporaries in co_await)
    json c_schema = elicit_params("", "color", "string")["requestedSchema"];
    const json c = co_await c_asker.async_elicit("Step 2: What is your favorite color?", std::move(c_schema));
    co_return text_result(n.value("content", json::object()).value("name", std::string()) + " likes " +
                          c.value("content", json::object()).value("color", std::string()));
  }
};
// input-required-result-capability-check: asks only for what the request's clientCapabilities declare.
struct mrtr_capabilities : mrtr_tool<mrtr_capabilities> {
  static constexpr std::string_view name = "test_input_required_result_capabilities";
  static constexpr std::string_view description = "Asks by elicitation and by sampling, each only if declared.";
  static boost::asio::awaitable<json> run(const te::mcp_client_asker& a) {
    std::vector<te::mcp_input_request> asks;
    if (a.client_declared("elicitation"))
      asks.push_back({"user_name", "elicitation/create", elicit_params("What is your name?", "name", "string")});
    if (a.client_declared("sampling"))
      asks.push_back({"capital_question", "sampling/createMessage", sample_params("What is the capital of France?", 100)});
    if (asks.empty()) co_return text_result("The client declared neither elicitation nor sampling: nothing asked.");
    const json r = co_await a.async_ask_all(std::move(asks));
    co_return text_result("Answered: " + std::to_string(r.size()));
  }
};

using registry = te::tool_registry<simple_text, image_content, audio_content, embedded_resource, multiple_content_types,
                                   error_handling, tool_with_logging, tool_with_progress, missing_capability,
                                   streaming_elicitation, logging_tool, region_header, sampling_tool, elicitation_tool,
                                   elicitation_defaults, elicitation_enums, json_schema_2020_12, mrtr_elicitation,
                                   mrtr_sampling, mrtr_list_roots, mrtr_request_state, mrtr_tampered_state,
                                   mrtr_multiple_inputs, mrtr_multi_round, mrtr_capabilities, reconnection_tool>;

// The resources, template and prompts of the suite's resources-*, prompts-* and completion-complete scenarios,
// with the texts their descriptions give.
template <class Server>
void serve_catalog(Server& server) {
  server.add_resource(te::mcp_resource{.uri = "test://static-text", .name = "static-text",
                                       .description = "A static text resource.", .mime_type = "text/plain",
                                       .text = "This is the content of the static text resource."});
  server.add_resource(te::mcp_resource{.uri = "test://static-binary", .name = "static-binary",
                                       .description = "A static binary resource (a 1x1 PNG).",
                                       .mime_type = "image/png", .blob = std::string(png_1x1)});
  server.add_resource(te::mcp_resource{.uri = "test://watched-resource", .name = "watched-resource",
                                       .description = "A resource to subscribe to.", .mime_type = "text/plain",
                                       .text = "Watched resource content."});
  server.add_resource_template(te::mcp_resource_template{
      .uri_template = "test://template/{id}/data",
      .name = "template-data",
      .description = "Data for an ID.",
      .mime_type = "application/json",
      .read = [](const std::string& uri, const std::map<std::string, std::string>& vars) {
        const std::string& id = vars.at("id");
        json data = {{"id", id}, {"templateTest", true}, {"data", "Data for ID: " + id}};
        return std::vector<te::mcp_resource_content>{{.uri = uri, .mime_type = "application/json", .text = data.dump()}};
      }});
  // input-required-result-non-tool-request (2026-07-28): a prompt that asks its client (by InputRequiredResult).
  server.add_prompt(te::mcp_prompt{
      .name = "test_input_required_result_prompt",
      .description = "Asks the client which context to use (key user_context).",
      .get_asking = [](std::map<std::string, std::string>,
                       const te::mcp_client_asker& a) -> boost::asio::awaitable<std::vector<te::mcp_prompt_message>> {
        const te::mcp_client_asker keyed = a.keyed("user_context");
        json schema = elicit_params("", "context", "string")["requestedSchema"];
        const json r = co_await keyed.async_elicit("What context should the prompt use?", std::move(schema));
        const std::string context = r.value("content", json::object()).value("context", std::string());
        co_return std::vector<te::mcp_prompt_message>{
            {.role = "user", .content = te::mcp_text_content("Use this context: " + context)}};
      }});
  server.add_prompt(te::mcp_prompt{
      .name = "test_simple_prompt",
      .description = "A simple prompt without arguments.",
      .get = [](const std::map<std::string, std::string>&) {
        return std::vector<te::mcp_prompt_message>{{"user", te::mcp_text_content("This is a simple prompt for testing.")}};
      }});
  // Completes arg1 from a fixed list by prefix (completion-complete).
  auto complete_arg1 = [](const std::string& value, const std::map<std::string, std::string>&) {
    std::vector<std::string> out;
    for (const char* c : {"paris", "park", "party", "test", "testValue1"})
      if (std::string_view(c).starts_with(value)) out.emplace_back(c);
    return out;
  };
  server.add_prompt(te::mcp_prompt{
      .name = "test_prompt_with_arguments",
      .description = "A prompt with two required arguments.",
      .arguments = {{.name = "arg1", .description = "First test argument", .required = true, .complete = complete_arg1},
                    {.name = "arg2", .description = "Second test argument", .required = true}},
      .get = [](const std::map<std::string, std::string>& a) {
        return std::vector<te::mcp_prompt_message>{
            {"user", te::mcp_text_content("Prompt with arguments: arg1='" + a.at("arg1") + "', arg2='" + a.at("arg2") +
                                          "'")}};
      }});
  server.add_prompt(te::mcp_prompt{
      .name = "test_prompt_with_embedded_resource",
      .description = "A prompt that embeds a resource.",
      .arguments = {{.name = "resourceUri", .description = "URI of the resource to embed", .required = true}},
      .get = [](const std::map<std::string, std::string>& a) {
        return std::vector<te::mcp_prompt_message>{
            {"user", te::mcp_embedded_resource({.uri = a.at("resourceUri"), .mime_type = "text/plain",
                                                .text = "Embedded resource content for testing."})},
            {"user", te::mcp_text_content("Please process the embedded resource above.")}};
      }});
  server.add_prompt(te::mcp_prompt{
      .name = "test_prompt_with_image",
      .description = "A prompt with an image.",
      .get = [](const std::map<std::string, std::string>&) {
        return std::vector<te::mcp_prompt_message>{{"user", te::mcp_image_content(png_1x1, "image/png")},
                                                   {"user", te::mcp_text_content("Please analyze the image above.")}};
      }});
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s PORT\n", argv[0]);
    return 2;
  }
  sigset_t stop;
  sigemptyset(&stop);
  sigaddset(&stop, SIGINT);
  sigaddset(&stop, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop, nullptr);  // before any thread starts: only sigwait below sees them
  try {
    registry reg;
    te::json_tool_host host(reg);
    boost::asio::thread_pool pool(2);
    te::mcp_server server(pool, host, te::mcp_server_options{.name = "tool-effects-conformance", .version = "1.0.0"});
    serve_catalog(server);
    const unsigned short port =
        server.listen_http("127.0.0.1", static_cast<unsigned short>(std::atoi(argv[argc - 1])), "/mcp");
    std::fprintf(stderr, "conformance_server: http://127.0.0.1:%u/mcp\n", port);
    int sig = 0;
    sigwait(&stop, &sig);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "conformance_server: %s\n", e.what());
    return 1;
  }
  return 0;
}
