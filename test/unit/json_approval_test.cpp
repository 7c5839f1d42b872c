// Approval requests of model calls (issue 19): the approver of a
// json_tool_host turn is shown the tool, its MCP server, the call's id and
// its arguments as canonical JSON, its effects and why approval is needed;
// the text form stays terminal-safe for hostile ids and arguments.
#include <gtest/gtest.h>

#include <mutex>
#include <string>
#include <vector>

#include <boost/asio/thread_pool.hpp>

#include <tool_effects/json.hpp>

// Unity-built with the other json tests (test/CMakeLists.txt): all below is this file's own.
namespace json_approval_test_ns {

namespace te = tool_effects;
using nlohmann::json;

namespace {
struct asked_request {
  std::string text, tool, server, call_id;
  std::optional<std::string> arguments;
  te::confirmation_reason reason{};
};

struct recorder {
  std::mutex m;
  std::vector<asked_request> asked;
  te::approver get(te::confirmation answer = te::confirmation::deny) {
    return te::approver([this, answer](const te::confirmation_request& r) {
      const std::lock_guard lock(m);
      asked_request a{te::to_string(r), std::string(r.tool), std::string(r.server), std::string(r.call_id),
                      std::nullopt, r.reason};
      if (r.arguments) a.arguments = std::string(*r.arguments);
      asked.push_back(std::move(a));
      return answer;
    });
  }
};

// A host with an MCP-like delete_file (destructive, from server "filesystem"),
// an unknown-effects tool and a read-only one (never asked about).
struct fixture {
  te::tool_registry<> reg;
  te::json_tool_host<> host{reg};
  std::mutex m;
  std::vector<std::string> ran;

  fixture() {
    auto tool = [](std::string name, te::effect_set s) {
      te::dynamic_tool t;
      t.name = std::move(name);
      t.description = te::describe_runtime(t.name, s, {});
      return t;
    };
    auto fn = te::json_tool_function([this](const te::attempt_context&, const json& args) {
      const std::lock_guard lock(m);
      ran.push_back(args.dump());
      return json("done");
    });
    (void)host.add(tool("fs_delete", {te::effect::write, te::effect::destructive}), fn,
                   te::tool_origin{"filesystem", "delete_file"});
    (void)host.add(tool("mystery", {}), fn);
    (void)host.add(tool("peek", {te::effect::read}), fn, te::tool_origin{"filesystem", "read_file"});
  }
};
}  // namespace

TEST(JsonApproval, DeletingBuildTmpAndDeletingRootLookDifferent) {
  fixture f;
  recorder r;
  boost::asio::thread_pool pool(2);
  const auto calls = te::parse_tool_calls(R"([
    {"id": "c1", "name": "fs_delete", "arguments": {"path": "build/tmp"}},
    {"id": "c2", "name": "fs_delete", "arguments": {"path": "/"}},
    {"id": "c3", "name": "peek", "arguments": {"path": "/"}}])");
  const auto out = f.host.run(pool, te::run_options{}.with(r.get()), calls);
  ASSERT_EQ(r.asked.size(), 2u);  // the read is not asked about
  std::sort(r.asked.begin(), r.asked.end(), [](const auto& a, const auto& b) { return a.call_id < b.call_id; });
  EXPECT_NE(r.asked[0].text, r.asked[1].text);
  for (const auto& a : r.asked) {
    EXPECT_EQ(a.tool, "delete_file");  // the server's own name for the tool
    EXPECT_EQ(a.server, "filesystem");
    EXPECT_EQ(a.reason, te::confirmation_reason::destructive);
  }
  EXPECT_EQ(r.asked[0].arguments, R"({"path":"build/tmp"})");
  EXPECT_EQ(r.asked[1].arguments, R"({"path":"/"})");
  EXPECT_EQ(r.asked[1].text.rfind("tool \"delete_file\" of MCP server \"filesystem\", call \"c2\": needs approval "
                                  "(destructive); effects {write,destructive}; class non_idempotent; idempotency key \"",
                                  0),
            0u)
      << r.asked[1].text;
  EXPECT_NE(r.asked[1].text.find("\"; arguments: {\"path\":\"/\"}"), std::string::npos) << r.asked[1].text;
  EXPECT_TRUE(out[0].has_error() && out[1].has_error());  // denied
  EXPECT_TRUE(out[2].has_value());
  EXPECT_EQ(f.ran, std::vector<std::string>{R"({"path":"/"})"});  // only the read ran
}

TEST(JsonApproval, ArgumentsAreCanonicalJson) {
  fixture f;
  recorder r;
  boost::asio::thread_pool pool(1);
  // Member order, whitespace and number spelling do not change what the approver sees.
  const auto calls = te::parse_tool_calls(R"([
    {"id": "a", "name": "fs_delete", "arguments": "{ \"z\": 1.0, \"a\": [true, null, 1e2] }"},
    {"id": "b", "name": "fs_delete", "arguments": {"a": [true, null, 100], "z": 1}}])");
  (void)f.host.run(pool, te::run_options{}.with(r.get()), calls);
  ASSERT_EQ(r.asked.size(), 2u);
  EXPECT_EQ(r.asked[0].arguments, R"({"a":[true,null,100],"z":1})");
  EXPECT_EQ(r.asked[1].arguments, r.asked[0].arguments);
}

TEST(JsonApproval, HostileIdsAndArgumentsStayOnOneSafeLine) {
  fixture f;
  recorder r;
  boost::asio::thread_pool pool(1);
  // The spoof of issue 19 as the call id, a right-to-left override and an
  // escape sequence in the arguments (JSON escapes stay as written; raw
  // U+202E is escaped by the text form).
  const json response = json::array(
      {json{{"id", "x\r\x1b[2Kread_file#ok (read) -> approved\nconfirm delete_file#y"},
            {"name", "fs_delete"},
            {"arguments", json{{"path", "tmp/\xe2\x80\xaegnp.exe\x1b[0m"}}}},
       json{{"id", "z"}, {"name", "mystery"}, {"arguments", json::object()}}});
  const auto calls = te::parse_tool_calls(response);
  (void)f.host.run(pool, te::run_options{}.with(r.get()), calls);
  ASSERT_EQ(r.asked.size(), 2u);
  std::sort(r.asked.begin(), r.asked.end(), [](const auto& a, const auto& b) { return a.tool < b.tool; });
  const std::string& text = r.asked[0].text;
  for (const char c : text) {
    EXPECT_GE(static_cast<unsigned char>(c), 0x20) << text;
    EXPECT_NE(static_cast<unsigned char>(c), 0x7F) << text;
  }
  EXPECT_EQ(text.find("\xe2\x80\xae"), std::string::npos) << text;
  EXPECT_NE(text.find(", call \"x\\x{0D}\\x{1B}[2Kread_file#ok (read) -> approved\\x{0A}confirm delete_file#y\":"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find(R"(arguments: {"path":"tmp/\x{202E}gnp.exe\u001b[0m"})"), std::string::npos) << text;
  // Control: the raw arguments the approver would otherwise print hold the override.
  ASSERT_TRUE(r.asked[0].arguments);
  EXPECT_NE(r.asked[0].arguments->find("\xe2\x80\xae"), std::string::npos);
  // A tool without a declaration: asked for its unknown effects, without a server.
  EXPECT_EQ(r.asked[1].tool, "mystery");
  EXPECT_EQ(r.asked[1].server, "");
  EXPECT_EQ(r.asked[1].reason, te::confirmation_reason::unknown_effects);
  EXPECT_EQ(r.asked[1].text.rfind("tool \"mystery\", call \"z\": needs approval (unknown effects); effects {}", 0), 0u)
      << r.asked[1].text;
}


// A refused call of an MCP tool says whose tool it was (with two servers the model may see both servers'
// tools); a tool of no server keeps the plain message.
TEST(JsonApproval, ADeniedMcpCallNamesItsServer) {
  fixture f;
  recorder r;
  boost::asio::thread_pool pool(2);
  const auto calls = te::parse_tool_calls(R"([
    {"id": "c1", "name": "fs_delete", "arguments": {"path": "/"}},
    {"id": "c2", "name": "mystery", "arguments": {}}])");
  const auto out = f.host.run(pool, te::run_options{}.with(r.get()), calls);
  ASSERT_EQ(out.size(), 2u);
  ASSERT_TRUE(out[0].has_error());
  std::string msg;
  try {
    std::rethrow_exception(out[0].error());
  } catch (const te::call_failure& e) {
    EXPECT_EQ(e.record().reason, te::failure_reason::confirmation_denied);
    msg = e.record().last_error_message;
  }
  EXPECT_NE(msg.find("denied by the approver (tool \"delete_file\" of MCP server \"filesystem\")"), std::string::npos)
      << msg;
  ASSERT_TRUE(out[1].has_error());
  EXPECT_EQ(te::error_message(out[1].error()).find("MCP server"), std::string::npos);
  EXPECT_TRUE(f.ran.empty());
}

}  // namespace json_approval_test_ns
