// The MCP server's resources, resource templates, prompts and completion (mcp/server/detail/catalog.hpp,
// issue 28.5), without a transport except the subscription test (stdio on a pipe pair): exact results and error
// texts in both eras; the capabilities follow what is registered (none registered: the methods are not found);
// every input bounded (URI length, argument count and size, subscriptions per session, completion values);
// resources/updated reaches the subscribed session only.
#include <chrono>
#include <condition_variable>
#include <map>
#include <mutex>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <poll.h>
#include <unistd.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/thread_pool.hpp>
#include <boost/asio/use_future.hpp>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <tool_effects/mcp/host.hpp>
#include <tool_effects/mcp/http.hpp>
#include <tool_effects/mcp/server.hpp>
#include <tool_effects/mcp/server_http.hpp>

#include "mcp_test_support.hpp"

namespace mcp_server_resources_test_ns {

namespace te = tool_effects;
using nlohmann::json;

namespace {
struct notes : te::resource<> {
  static constexpr std::string_view resource_name = "notes";
};
struct echo {
  static constexpr std::string_view name = "echo";
  using side_effects = te::effects<te::reads<notes>>;
  json operator()(const json& args) const { return args; }
};
using registry = te::tool_registry<echo>;
using server_type = te::mcp_server<te::json_tool_host<echo>>;

json modern_meta() {
  return {{"io.modelcontextprotocol/protocolVersion", "2026-07-28"},
          {"io.modelcontextprotocol/clientCapabilities", json::object()}};
}

// The answer to one request, or "CODE message [data]" of its error.
json answer(server_type& s, std::string method, json params, te::mcp_server_request r = {}) {
  boost::asio::io_context io;
  auto f = boost::asio::co_spawn(io, s.handle_request(std::move(method), std::move(params), std::move(r)),
                                 boost::asio::use_future);
  io.run();
  try {
    return f.get();
  } catch (const te::mcp_server_error& e) {
    return std::to_string(e.code()) + " " + e.what() + (e.data().is_null() ? "" : " " + e.data().dump());
  }
}

// The catalog of these tests: a text and a binary resource, a template, two prompts.
void register_catalog(server_type& s) {
  s.add_resource({.uri = "note://readme", .name = "readme", .title = "Read me", .description = "The first note.",
                  .mime_type = "text/plain", .text = "hello"});
  s.add_resource({.uri = "note://logo", .name = "logo", .mime_type = "image/png", .blob = "iVBORw0K"});
  s.add_resource_template(
      {.uri_template = "note://users/{user}/notes/{id}",
       .name = "user-note",
       .mime_type = "text/plain",
       .read = [](const std::string& uri, const std::map<std::string, std::string>& v) {
         if (v.at("id") == "missing") return std::vector<te::mcp_resource_content>{};
         return std::vector<te::mcp_resource_content>{
             {.uri = uri, .mime_type = "text/plain", .text = v.at("user") + "/" + v.at("id")}};
       },
       .complete = {{"user", [](const std::string& value, const std::map<std::string, std::string>&) {
                       std::vector<std::string> out;
                       for (const char* u : {"ada", "alan", "grace"})
                         if (std::string_view(u).starts_with(value)) out.emplace_back(u);
                       return out;
                     }}}});
  s.add_prompt({.name = "greet",
                .title = "Greeting",
                .description = "Greets someone.",
                .arguments = {{.name = "who", .description = "Whom to greet", .required = true,
                               .complete = [](const std::string& value, const std::map<std::string, std::string>& ctx) {
                                 // 150 candidates: more than one answer holds.
                                 std::vector<std::string> out;
                                 for (int i = 0; i < 150; ++i)
                                   out.push_back(value + std::to_string(i) + std::to_string(ctx.count("style")));
                                 return out;
                               }},
                              {.name = "style"}},
                .get = [](const std::map<std::string, std::string>& a) {
                  const auto style = a.find("style");
                  return std::vector<te::mcp_prompt_message>{
                      {"user", te::mcp_text_content("Hello, " + a.at("who") +
                                                    (style == a.end() ? std::string() : " (" + style->second + ")"))},
                      {"assistant", te::mcp_image_content("iVBORw0K", "image/png")},
                      {"user", te::mcp_embedded_resource({.uri = "note://readme", .mime_type = "text/plain",
                                                          .text = "hello"})}};
                }});
  s.add_prompt({.name = "plain", .get = [](const std::map<std::string, std::string>&) {
                  return std::vector<te::mcp_prompt_message>{{"user", te::mcp_text_content("plain")}};
                }});
}
}  // namespace

// Nothing registered: no capability, and the methods are not found (the control for the capabilities below).
TEST(McpServerResources, NothingRegisteredDeclaresAndServesNothing) {
  registry reg;
  te::json_tool_host host(reg);
  boost::asio::thread_pool pool(1);
  server_type server(pool, host);
  EXPECT_EQ(server.initialize_result("2025-11-25")["capabilities"],
            json::parse(R"({"tools": {"listChanged": false}, "logging": {}})"));
  EXPECT_EQ(answer(server, "resources/list", json::object()), "-32601 Method not found: \"resources/list\"");
  EXPECT_EQ(answer(server, "prompts/get", {{"name", "plain"}}), "-32601 Method not found: \"prompts/get\"");
  EXPECT_EQ(answer(server, "completion/complete", json::object()), "-32601 Method not found: \"completion/complete\"");
  server.add_prompt({.name = "plain", .get = [](const std::map<std::string, std::string>&) {
                       return std::vector<te::mcp_prompt_message>{};
                     }});
  EXPECT_EQ(server.initialize_result("2025-11-25")["capabilities"],
            json::parse(R"({"tools": {"listChanged": false}, "logging": {}, "prompts": {"listChanged": false},
                            "completions": {}})"));
  EXPECT_EQ(answer(server, "resources/list", json::object()), "-32601 Method not found: \"resources/list\"");
}

TEST(McpServerResources, ListsAndReadsInBothEras) {
  registry reg;
  te::json_tool_host host(reg);
  boost::asio::thread_pool pool(1);
  server_type server(pool, host);
  register_catalog(server);
  EXPECT_EQ(server.initialize_result("2025-11-25")["capabilities"],
            json::parse(R"({"tools": {"listChanged": false}, "logging": {},
                            "resources": {"listChanged": false, "subscribe": true},
                            "prompts": {"listChanged": false}, "completions": {}})"));
  // No subscriptions in the 2026-07-28 era.
  EXPECT_EQ(server.discover_result()["capabilities"]["resources"], json::parse(R"({"listChanged": false})"));
  EXPECT_EQ(answer(server, "resources/list", json::object()), json::parse(R"({"resources": [
      {"uri": "note://readme", "name": "readme", "title": "Read me", "description": "The first note.",
       "mimeType": "text/plain"},
      {"uri": "note://logo", "name": "logo", "mimeType": "image/png"}]})"));
  EXPECT_EQ(answer(server, "resources/templates/list", json::object()), json::parse(R"({"resourceTemplates": [
      {"uriTemplate": "note://users/{user}/notes/{id}", "name": "user-note", "mimeType": "text/plain"}]})"));
  EXPECT_EQ(answer(server, "resources/read", {{"uri", "note://readme"}}),
            json::parse(R"({"contents": [{"uri": "note://readme", "mimeType": "text/plain", "text": "hello"}]})"));
  EXPECT_EQ(answer(server, "resources/read", {{"uri", "note://logo"}}),
            json::parse(R"({"contents": [{"uri": "note://logo", "mimeType": "image/png", "blob": "iVBORw0K"}]})"));
  EXPECT_EQ(answer(server, "resources/read", {{"uri", "note://users/ada/notes/7"}}),
            json::parse(R"({"contents": [{"uri": "note://users/ada/notes/7", "mimeType": "text/plain",
                                          "text": "ada/7"}]})"));
  // Unknown: the template does not match (a variable takes no '/', none is empty), or its read finds nothing.
  for (const char* uri : {"note://nope", "note://users/a/b/notes/7", "note://users//notes/7", "note://users/ada/notes/missing"})
    EXPECT_EQ(answer(server, "resources/read", {{"uri", uri}}),
              json(std::string("-32002 Resource not found: \"") + uri + "\" {\"uri\":\"" + uri + "\"}"));
  // 2026-07-28: SEP-2164's code; lists and reads are cacheable, prompts/get is not.
  EXPECT_EQ(answer(server, "resources/read", {{"uri", "note://nope"}, {"_meta", modern_meta()}}),
            "-32602 Resource not found: \"note://nope\" {\"uri\":\"note://nope\"}");
  for (const char* m : {"resources/list", "resources/templates/list", "prompts/list"}) {
    const json r = answer(server, m, {{"_meta", modern_meta()}});
    EXPECT_EQ(r["resultType"], "complete") << m;
    EXPECT_EQ(r["ttlMs"], 0) << m;
    EXPECT_EQ(r["cacheScope"], "private") << m;
  }
  const json read = answer(server, "resources/read", {{"uri", "note://readme"}, {"_meta", modern_meta()}});
  EXPECT_EQ(read["cacheScope"], "private");
  const json got = answer(server, "prompts/get", {{"name", "plain"}, {"_meta", modern_meta()}});
  EXPECT_EQ(got, json::parse(R"({"messages": [{"role": "user", "content": {"type": "text", "text": "plain"}}],
                                 "resultType": "complete"})"));
  EXPECT_EQ(answer(server, "resources/subscribe", {{"uri", "note://readme"}, {"_meta", modern_meta()}}),
            "-32601 Method not found: \"resources/subscribe\" (not in the 2026-07-28 era; its requests need no "
            "initialize)");
  // Bad requests fail alone, naming the member.
  EXPECT_EQ(answer(server, "resources/read", json::object()), "-32602 Invalid params: missing required key \"uri\"");
  EXPECT_EQ(answer(server, "resources/read", {{"uri", 7}}), "-32602 Invalid params: at /uri: expected a string, got number: 7");
  EXPECT_EQ(answer(server, "resources/read", {{"uri", ""}}), "-32602 Invalid params: at /uri: expected a non-empty string");
  const json too_long = answer(server, "resources/read", {{"uri", "note://" + std::string(2042, 'x')}});
  EXPECT_EQ(too_long.get<std::string>().substr(0, 56), "-32602 Invalid params: at /uri: longer than 2048 bytes: ");
  EXPECT_EQ(answer(server, "resources/read", {{"uri", "note://" + std::string(2041, 'x')}}).get<std::string>().substr(0, 32),
            "-32002 Resource not found: \"note");
}

// Template values reach `read` percent-decoded (RFC 3986: "%2F" is a '/' inside a value, '+' stays), the URI as
// sent; a broken escape or one decoding to NUL is refused before `read`, naming the reason, the URI and the
// variable. (Control checked by hand: without the decoding in template_variables, the first expectation gets
// "a%2Fb+c/%37" and the refusals are "Resource not found" or reach `read`.)
TEST(McpServerResources, TemplateValuesArePercentDecoded) {
  registry reg;
  te::json_tool_host host(reg);
  boost::asio::thread_pool pool(1);
  server_type server(pool, host);
  register_catalog(server);
  EXPECT_EQ(answer(server, "resources/read", {{"uri", "note://users/a%2Fb+c/notes/%37"}}),
            json::parse(R"({"contents": [{"uri": "note://users/a%2Fb+c/notes/%37", "mimeType": "text/plain",
                                          "text": "a/b+c/7"}]})"));
  EXPECT_EQ(answer(server, "resources/read", {{"uri", "note://users/%c3%A9/notes/1"}})["contents"][0]["text"],
            "\u00e9/1");
  EXPECT_EQ(answer(server, "resources/read", {{"uri", "note://users/%zz/notes/1"}}),
            "-32602 Invalid params: at /uri: bad_percent: bad URL \"note://users/%zz/notes/1\": a % not followed by "
            "two hex digits (in the value of \"user\")");
  EXPECT_EQ(answer(server, "resources/read", {{"uri", "note://users/ada/notes/1%4"}}),
            "-32602 Invalid params: at /uri: bad_percent: bad URL \"note://users/ada/notes/1%4\": a % not followed by "
            "two hex digits (in the value of \"id\")");
  EXPECT_EQ(answer(server, "resources/read", {{"uri", "note://users/a%00/notes/1"}}),
            "-32602 Invalid params: at /uri: bad_character: bad URL \"note://users/a%00/notes/1\": an escape that "
            "decodes to NUL (%00) (in the value of \"user\")");
  te::mcp_server_request r;
  r.subscriptions = std::make_shared<te::detail::mcp_resource_subscriptions>();
  EXPECT_EQ(answer(server, "resources/subscribe", {{"uri", "note://users/%zz/notes/1"}}, r),
            "-32602 Invalid params: at /uri: bad_percent: bad URL \"note://users/%zz/notes/1\": a % not followed by "
            "two hex digits (in the value of \"user\")");
}

TEST(McpServerResources, PromptsGetReadsItsArgumentsStrictly) {
  registry reg;
  te::json_tool_host host(reg);
  boost::asio::thread_pool pool(1);
  server_type server(pool, host);
  register_catalog(server);
  EXPECT_EQ(answer(server, "prompts/list", json::object()), json::parse(R"({"prompts": [
      {"name": "greet", "title": "Greeting", "description": "Greets someone.", "arguments": [
        {"name": "who", "description": "Whom to greet", "required": true}, {"name": "style", "required": false}]},
      {"name": "plain", "arguments": []}]})"));
  EXPECT_EQ(answer(server, "prompts/get", {{"name", "greet"}, {"arguments", {{"who", "Ada"}, {"style", "warm"}}}}),
            json::parse(R"x({"description": "Greets someone.", "messages": [
      {"role": "user", "content": {"type": "text", "text": "Hello, Ada (warm)"}},
      {"role": "assistant", "content": {"type": "image", "data": "iVBORw0K", "mimeType": "image/png"}},
      {"role": "user", "content": {"type": "resource", "resource":
        {"uri": "note://readme", "mimeType": "text/plain", "text": "hello"}}}]})x"));
  EXPECT_EQ(answer(server, "prompts/get", {{"name", "greet"}}),
            "-32602 Invalid params: at /arguments: missing required argument \"who\" of prompt \"greet\"");
  EXPECT_EQ(answer(server, "prompts/get", {{"name", "greet"}, {"arguments", {{"style", "warm"}}}}),
            "-32602 Invalid params: at /arguments: missing required argument \"who\" of prompt \"greet\"");
  EXPECT_EQ(answer(server, "prompts/get", {{"name", "greet"}, {"arguments", {{"who", "Ada"}, {"a/b", "x"}}}}),
            "-32602 Invalid params: at /arguments/a~1b: not an argument of prompt \"greet\"");
  EXPECT_EQ(answer(server, "prompts/get", {{"name", "greet"}, {"arguments", {{"who", 3}}}}),
            "-32602 Invalid params: at /arguments/who: expected a string, got number: 3");
  EXPECT_EQ(answer(server, "prompts/get", {{"name", "greet"}, {"arguments", "who=Ada"}}),
            "-32602 Invalid params: at /arguments: expected an object, got string: who=Ada");
  EXPECT_EQ(answer(server, "prompts/get", {{"name", "nope"}}), "-32602 Invalid params: at /name: unknown prompt \"nope\"");
  EXPECT_EQ(answer(server, "prompts/get", {{"name", "greet"}, {"arguments", {{"who", std::string(65537, 'a')}}}}),
            "-32602 Invalid params: at /arguments/who: longer than 65536 bytes");
  json many = json::object();
  for (int i = 0; i < 65; ++i) many["a" + std::to_string(i)] = "x";
  EXPECT_EQ(answer(server, "prompts/get", {{"name", "greet"}, {"arguments", many}}),
            "-32602 Invalid params: at /arguments: more than 64 arguments (65)");
}

TEST(McpServerResources, CompletionAnswersBoundedValuesPerArgument) {
  registry reg;
  te::json_tool_host host(reg);
  boost::asio::thread_pool pool(1);
  server_type server(pool, host);
  register_catalog(server);
  const json many = answer(server, "completion/complete",
                           {{"ref", {{"type", "ref/prompt"}, {"name", "greet"}}}, {"argument", {{"name", "who"}, {"value", "p"}}},
                            {"context", {{"arguments", {{"style", "warm"}}}}}});
  ASSERT_EQ(many["completion"]["values"].size(), 100u);
  EXPECT_EQ(many["completion"]["values"][0], "p01") << "the context reached the completer";
  EXPECT_EQ(many["completion"]["values"][99], "p991");
  EXPECT_EQ(many["completion"]["total"], 150);
  EXPECT_EQ(many["completion"]["hasMore"], true);
  EXPECT_EQ(answer(server, "completion/complete", {{"ref", {{"type", "ref/resource"}, {"uri", "note://users/{user}/notes/{id}"}}},
                                                   {"argument", {{"name", "user"}, {"value", "a"}}}}),
            json::parse(R"({"completion": {"values": ["ada", "alan"], "total": 2, "hasMore": false}})"));
  // An argument or variable without a completer: no values.
  EXPECT_EQ(answer(server, "completion/complete", {{"ref", {{"type", "ref/resource"}, {"uri", "note://users/{user}/notes/{id}"}}},
                                                   {"argument", {{"name", "id"}, {"value", "1"}}}}),
            json::parse(R"({"completion": {"values": [], "total": 0, "hasMore": false}})"));
  auto complete = [&](json ref, json argument) {
    return answer(server, "completion/complete", {{"ref", std::move(ref)}, {"argument", std::move(argument)}});
  };
  const json who = {{"name", "who"}, {"value", ""}};
  EXPECT_EQ(complete({{"type", "ref/tool"}, {"name", "greet"}}, who),
            "-32602 Invalid params: at /ref/type: expected \"ref/prompt\" or \"ref/resource\": \"ref/tool\"");
  EXPECT_EQ(complete({{"type", "ref/prompt"}, {"name", "nope"}}, who),
            "-32602 Invalid params: at /ref/name: unknown prompt \"nope\"");
  EXPECT_EQ(complete({{"type", "ref/prompt"}, {"name", "greet"}}, {{"name", "whom"}, {"value", ""}}),
            "-32602 Invalid params: at /argument/name: not an argument of prompt \"greet\": \"whom\"");
  EXPECT_EQ(complete({{"type", "ref/resource"}, {"uri", "note://readme"}}, who),
            "-32602 Invalid params: at /ref/uri: unknown resource template \"note://readme\"");
  EXPECT_EQ(complete({{"type", "ref/prompt"}}, who), "-32602 Invalid params: at /ref: missing required key \"name\"");
  EXPECT_EQ(complete({{"type", "ref/prompt"}, {"name", "greet"}}, {{"name", "who"}}),
            "-32602 Invalid params: at /argument: missing required key \"value\"");
  EXPECT_EQ(complete({{"type", "ref/prompt"}, {"name", "greet"}}, {{"name", "who"}, {"value", 1}}),
            "-32602 Invalid params: at /argument/value: expected a string, got number: 1");
}

TEST(McpServerResources, RegistrationRefusesWhatCannotBeServed) {
  registry reg;
  te::json_tool_host host(reg);
  boost::asio::thread_pool pool(1);
  server_type server(pool, host);
  register_catalog(server);
  auto refusal = [](auto&& f) -> std::string {
    try {
      f();
    } catch (const std::invalid_argument& e) {
      return e.what();
    }
    return "accepted";
  };
  auto read = [](const std::string&, const std::map<std::string, std::string>&) {
    return std::vector<te::mcp_resource_content>{};
  };
  EXPECT_EQ(refusal([&] { server.add_resource({.uri = "note://readme", .name = "again"}); }),
            "mcp_resource: URI \"note://readme\" is already registered");
  EXPECT_EQ(refusal([&] { server.add_resource({.uri = "", .name = "x"}); }), "mcp_resource: uri and name must not be empty");
  EXPECT_EQ(refusal([&] { server.add_resource_template({.uri_template = "a://{x", .name = "t", .read = read}); }),
            "mcp_resource_template: bad variable at byte 4 of \"a://{x\" (expected {name}, RFC 6570 level 1)");
  EXPECT_EQ(refusal([&] { server.add_resource_template({.uri_template = "a://{+x}", .name = "t", .read = read}); }),
            "mcp_resource_template: bad variable at byte 4 of \"a://{+x}\" (expected {name}, RFC 6570 level 1)");
  EXPECT_EQ(refusal([&] { server.add_resource_template({.uri_template = "a://{x}{y}", .name = "t", .read = read}); }),
            "mcp_resource_template: two variables without text between them in \"a://{x}{y}\"");
  EXPECT_EQ(refusal([&] { server.add_resource_template({.uri_template = "a://{x}", .name = "t", .read = {}}); }),
            "mcp_resource_template \"a://{x}\": read is empty");
  EXPECT_EQ(refusal([&] {
              server.add_resource_template(
                  {.uri_template = "a://{x}", .name = "t", .read = read, .complete = {{"y", te::mcp_completer{}}}});
            }),
            "mcp_resource_template \"a://{x}\": completion for \"y\", which is not one of its variables");
  EXPECT_EQ(refusal([&] { server.add_prompt({.name = "plain", .get = [](const auto&) { return std::vector<te::mcp_prompt_message>{}; }}); }),
            "mcp_prompt: \"plain\" is already registered");
  EXPECT_EQ(refusal([&] {
              server.add_prompt({.name = "p", .arguments = {{.name = "a"}, {.name = "a"}},
                                 .get = [](const auto&) { return std::vector<te::mcp_prompt_message>{}; }});
            }),
            "mcp_prompt \"p\": argument names must be non-empty and unique");
  EXPECT_EQ(refusal([&] { server.add_prompt({.name = "q", .get = {}}); }), "mcp_prompt \"q\": get is empty");
}

// A session holds at most mcp_max_subscriptions; a request without a session cannot subscribe; an unknown URI
// cannot be subscribed to. Checked by hand: without the bound in catalog_request, the 257th subscription is
// accepted and the expectation fails.
TEST(McpServerResources, SubscriptionsAreBoundedPerSession) {
  registry reg;
  te::json_tool_host host(reg);
  boost::asio::thread_pool pool(1);
  server_type server(pool, host);
  register_catalog(server);
  auto subs = std::make_shared<te::detail::mcp_resource_subscriptions>();
  auto subscribe = [&](const std::string& uri) {
    te::mcp_server_request r;
    r.subscriptions = subs;
    return answer(server, "resources/subscribe", {{"uri", uri}}, std::move(r));
  };
  for (int i = 0; i < 256; ++i)
    ASSERT_EQ(subscribe("note://users/ada/notes/" + std::to_string(i)), json::object()) << i;
  EXPECT_EQ(subscribe("note://users/ada/notes/256"),
            "-32602 Invalid params: at /uri: the session already has 256 subscriptions (mcp_max_subscriptions)");
  EXPECT_EQ(subscribe("note://users/ada/notes/0"), json::object()) << "subscribing again is no new subscription";
  EXPECT_EQ(subs->uris.size(), 256u);
  EXPECT_EQ(subscribe("note://nope"), "-32002 Resource not found: \"note://nope\" {\"uri\":\"note://nope\"}");
  EXPECT_EQ(answer(server, "resources/subscribe", {{"uri", "note://readme"}}),
            "-32600 Invalid Request: resources/subscribe needs a session to hold the subscription");
}

// The catalog's list of subscribed sessions does not grow with sessions that ended, even when no update is ever
// sent (a server up for months with clients that come and go). Checked by hand: without the pruning in
// list_subscriber the count is 1000.
TEST(McpServerResources, EndedSessionsLeaveTheSubscriptionList) {
  te::detail::mcp_catalog catalog;
  catalog.add(te::mcp_resource{.uri = "note://readme", .name = "readme"});
  for (int i = 0; i < 1000; ++i) {
    auto subs = std::make_shared<te::detail::mcp_resource_subscriptions>();
    subs->uris.insert(catalog.subscribable_uri({{"uri", "note://readme"}}));
    catalog.list_subscriber(subs);
  }  // each session ends here
  EXPECT_LE(catalog.subscriber_count(), 1u);
  auto live = std::make_shared<te::detail::mcp_resource_subscriptions>();
  catalog.list_subscriber(live);
  EXPECT_EQ(catalog.subscriber_count(), 1u);
}

namespace {
using pipe_client = mcp_test::pipe_peer;
using mcp_test::rpc;
}  // namespace

// Over stdio: resource_updated reaches the session subscribed to that URI, not for another URI, and no longer
// after it unsubscribed (a ping's response comes next instead: the control that nothing was sent).
TEST(McpServerResources, AnUpdateReachesTheSubscribedSessionOnly) {
  registry reg;
  te::json_tool_host host(reg);
  boost::asio::thread_pool pool(1);
  server_type server(pool, host);
  register_catalog(server);
  pipe_client c;
  std::thread serving([&] { server.serve_fds(c.to_server[0], c.from_server[1]); });
  c.initialize();
  c.send(rpc(2, "resources/subscribe", {{"uri", "note://readme"}}));
  EXPECT_EQ(c.next(), (json{{"jsonrpc", "2.0"}, {"id", 2}, {"result", json::object()}}));
  server.resource_updated("note://logo");  // not subscribed: nothing
  server.resource_updated("note://readme");
  EXPECT_EQ(c.next(), (json{{"jsonrpc", "2.0"}, {"method", "notifications/resources/updated"},
                            {"params", {{"uri", "note://readme"}}}}));
  c.send(rpc(3, "resources/unsubscribe", {{"uri", "note://readme"}}));
  EXPECT_EQ(c.next(), (json{{"jsonrpc", "2.0"}, {"id", 3}, {"result", json::object()}}));
  server.resource_updated("note://readme");
  c.send(rpc(4, "ping", json::object()));
  EXPECT_EQ(c.next(), (json{{"jsonrpc", "2.0"}, {"id", 4}, {"result", json::object()}}));
  c.close_input();
  serving.join();
  server.resource_updated("note://readme");  // the session is gone: nothing, no crash
}

// Over HTTP with our client: the subscribed session gets notifications/resources/updated (on its GET stream,
// unrelated to any request); another session of the same server, not subscribed, gets none; the prompts and
// resources methods answer as in-process.
TEST(McpServerResources, AnUpdateReachesTheSubscribedHttpSession) {
  registry reg;
  te::json_tool_host host(reg);
  boost::asio::thread_pool pool(2);
  std::optional<server_type> server;
  server.emplace(pool, host);
  register_catalog(*server);
  const unsigned short port = server->listen_http("127.0.0.1", 0, "/mcp");
  const std::string url = "http://127.0.0.1:" + std::to_string(port) + "/mcp";
  std::mutex m;
  std::condition_variable cv;
  std::vector<json> a_updates, b_updates;
  auto collect = [&](std::vector<json>& into) {
    return [&m, &cv, &into](const std::string& method, const json& params) {
      if (method != "notifications/resources/updated") return;
      std::lock_guard lock(m);
      into.push_back(params);
      cv.notify_all();
    };
  };
  {
    te::mcp_client_options ao;
    ao.protocol_versions = {"2025-11-25"};  // subscriptions are of the legacy era (sessions)
    ao.on_notification = collect(a_updates);
    te::mcp_client_options bo = ao;
    bo.on_notification = collect(b_updates);
    auto a = te::mcp_client::connect(pool, te::mcp_http_endpoint{.url = url}, ao);
    auto b = te::mcp_client::connect(pool, te::mcp_http_endpoint{.url = url}, bo);
    EXPECT_EQ(a.request("resources/read", {{"uri", "note://readme"}})["contents"][0]["text"], "hello");
    EXPECT_EQ(a.request("prompts/get", {{"name", "plain"}})["messages"][0]["content"]["text"], "plain");
    EXPECT_EQ(a.request("resources/subscribe", {{"uri", "note://readme"}}), json::object());
    EXPECT_EQ(b.request("resources/subscribe", {{"uri", "note://logo"}}), json::object());
    server->resource_updated("note://readme");
    {
      std::unique_lock lock(m);
      ASSERT_TRUE(cv.wait_for(lock, std::chrono::seconds(10), [&] { return !a_updates.empty(); }))
          << "the subscribed session got no notifications/resources/updated";
      EXPECT_EQ(a_updates, (std::vector<json>{{{"uri", "note://readme"}}}));
      EXPECT_TRUE(b_updates.empty()) << "a session subscribed to another resource";
    }
    server->resource_updated("note://logo");
    std::unique_lock lock(m);
    ASSERT_TRUE(cv.wait_for(lock, std::chrono::seconds(10), [&] { return !b_updates.empty(); }));
    EXPECT_EQ(b_updates, (std::vector<json>{{{"uri", "note://logo"}}}));
    EXPECT_EQ(a_updates.size(), 1u);
  }
  server.reset();
  pool.join();
}

}  // namespace mcp_server_resources_test_ns
