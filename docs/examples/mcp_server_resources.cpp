// Resources, prompts and completion on our MCP server (ctest example.mcp_server_resources; docs/mcp.md,
// "Resources, prompts and completion"): a notes server with one declared tool (add_note), a static resource
// (note://about), a resource template (note://notes/{title}) and a prompt (summarize, its `title` argument
// completed from the notes' titles). The program starts itself as that server over stdio
// (`mcp_server_resources --serve`) and, as a client, lists and reads the resources, completes and gets the
// prompt, subscribes to one note and sees notifications/resources/updated when the tool rewrites it.
// Exit status 0 only if every answer is the expected one.
//
//   ./example_mcp_server_resources --serve   # the MCP server on stdin/stdout
//   ./example_mcp_server_resources           # the demonstration
#include <chrono>
#include <condition_variable>
#include <functional>
#include <iostream>
#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include <boost/asio/thread_pool.hpp>

#include <tool_effects/mcp.hpp>
#include <tool_effects/mcp/server.hpp>

namespace te = tool_effects;
using nlohmann::json;

namespace {
struct notes {
  static constexpr std::string_view resource_name = "notes";
};

// The notes, shared by the tool and the resources; `changed` tells the server's subscribers.
struct notebook {
  std::mutex m;
  std::map<std::string, std::string> by_title{{"groceries", "milk, bread"}, {"garden", "water the roses"}};
  std::function<void(const std::string& uri)> changed;
};

struct add_note {
  static constexpr std::string_view name = "add_note";
  static constexpr std::string_view description = "Adds or replaces the note `title`.";
  static constexpr std::string_view target_arg = "title";
  using side_effects = te::effects<te::writes<notes>, te::idempotent>;
  notebook* book = nullptr;
  json operator()(const json& args) const {
    {
      const std::lock_guard l(book->m);
      book->by_title[args.at("title").get<std::string>()] = args.at("text").get<std::string>();
    }
    book->changed("note://notes/" + args.at("title").get<std::string>());
    return "added";
  }
};

int serve() {
  notebook book;
  te::tool_registry<add_note> registry(add_note{&book});
  te::json_tool_host host(registry);
  boost::asio::thread_pool pool(2);
  te::mcp_server server(pool, host, te::mcp_server_options{.name = "notes", .version = "1.0.0"});
  book.changed = [&server](const std::string& uri) { server.resource_updated(uri); };

  server.add_resource({.uri = "note://about",
                       .name = "about",
                       .title = "About this notebook",
                       .description = "",
                       .mime_type = "text/plain",
                       .text = "Notes by title: note://notes/{title}.",
                       .blob = std::nullopt});
  auto titles = [&book](const std::string& prefix, const std::map<std::string, std::string>&) {
    const std::lock_guard l(book.m);
    std::vector<std::string> out;
    for (const auto& [title, text] : book.by_title)
      if (title.starts_with(prefix)) out.push_back(title);
    return out;
  };
  server.add_resource_template(
      {.uri_template = "note://notes/{title}",
       .name = "note",
       .mime_type = "text/plain",
       .read = [&book](const std::string& uri, const std::map<std::string, std::string>& v) {
         const std::lock_guard l(book.m);
         const auto it = book.by_title.find(v.at("title"));
         if (it == book.by_title.end()) return std::vector<te::mcp_resource_content>{};  // not found
         return std::vector<te::mcp_resource_content>{{.uri = uri, .mime_type = "text/plain", .text = it->second}};
       },
       .complete = {{"title", titles}}});
  server.add_prompt({.name = "summarize",
                     .description = "Asks the model to summarize one note.",
                     .arguments = {{.name = "title", .required = true, .complete = titles}},
                     .get = [&book](const std::map<std::string, std::string>& a) {
                       const std::lock_guard l(book.m);
                       const auto it = book.by_title.find(a.at("title"));
                       const std::string text = it == book.by_title.end() ? "(no such note)" : it->second;
                       return std::vector<te::mcp_prompt_message>{
                           {"user", te::mcp_text_content("Summarize the note \"" + a.at("title") + "\": " + text)}};
                     }});
  server.serve_stdio();  // until the client closes our stdin
  return 0;
}
}  // namespace

int main(int argc, char** argv) {
  if (argc > 1 && std::string_view(argv[1]) == "--serve") return serve();

  std::mutex m;
  std::condition_variable cv;
  std::vector<json> updates;
  te::mcp_client_options options;
  options.protocol_versions = {"2025-11-25"};  // subscriptions belong to the session era
  options.on_notification = [&](const std::string& method, const json& params) {
    if (method != "notifications/resources/updated") return;
    const std::lock_guard l(m);
    updates.push_back(params);
    cv.notify_all();
  };
  boost::asio::thread_pool pool(2);
  auto client = te::mcp_client::launch(pool, {argv[0], "--serve"}, options);
  bool ok = true;
  auto show = [&](std::string_view what, const json& got, const json& expected) {
    std::cout << what << ": " << got.dump() << "\n";
    if (got != expected) {
      std::cout << "  expected " << expected.dump() << "\n";
      ok = false;
    }
  };

  const json caps = client.server_info()["capabilities"];
  // Declared because something of each kind is registered (listChanged aside).
  show("capabilities: resources.subscribe, prompts, completions",
       json{caps["resources"]["subscribe"], caps.contains("prompts"), caps.contains("completions")}, json{true, true, true});
  show("resources/list", client.request("resources/list")["resources"][0]["uri"], "note://about");
  show("resources/read note://about", client.request("resources/read", {{"uri", "note://about"}})["contents"][0]["text"],
       "Notes by title: note://notes/{title}.");
  show("resources/templates/list", client.request("resources/templates/list")["resourceTemplates"][0]["uriTemplate"],
       "note://notes/{title}");
  show("resources/read note://notes/garden",
       client.request("resources/read", {{"uri", "note://notes/garden"}})["contents"][0]["text"], "water the roses");
  try {
    client.request("resources/read", {{"uri", "note://notes/nothing"}});
    ok = false;
  } catch (const std::exception& e) {
    std::cout << "resources/read note://notes/nothing: " << e.what() << "\n";  // not found: -32002
  }
  show("completion/complete title=g",
       client.request("completion/complete", {{"ref", {{"type", "ref/prompt"}, {"name", "summarize"}}},
                                              {"argument", {{"name", "title"}, {"value", "g"}}}})["completion"]["values"],
       json{"garden", "groceries"});
  show("prompts/get summarize",
       client.request("prompts/get", {{"name", "summarize"}, {"arguments", {{"title", "groceries"}}}})["messages"][0]["content"]["text"],
       "Summarize the note \"groceries\": milk, bread");

  show("resources/subscribe note://notes/groceries",
       client.request("resources/subscribe", {{"uri", "note://notes/groceries"}}), json::object());
  show("tools/call add_note groceries",
       client.call("add_note", {{"title", "groceries"}, {"text", "milk, bread, eggs"}})["content"][0]["text"], "added");
  {
    std::unique_lock l(m);
    cv.wait_for(l, std::chrono::seconds(10), [&] { return !updates.empty(); });
    show("notifications/resources/updated", updates.empty() ? json() : updates.front(), json{{"uri", "note://notes/groceries"}});
  }
  show("resources/read note://notes/groceries",
       client.request("resources/read", {{"uri", "note://notes/groceries"}})["contents"][0]["text"], "milk, bread, eggs");
  client.close();
  return ok ? 0 : 1;
}
