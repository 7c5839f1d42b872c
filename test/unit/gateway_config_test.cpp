// The gateway's configuration (<tool_effects/mcp/gateway/config.hpp>): the mcpServers shape of Claude Desktop,
// Claude Code and Cursor, read strictly. Each bad field is refused with the file, the server, the tool and the
// field (a JSON pointer) named; each refusal's control is the same document with that one field corrected, which
// is accepted. And the program: a refused configuration starts nothing (no upstream server, no port), a tool the
// server does not have is refused once the server is listed, and nothing is served.
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <tool_effects/mcp/gateway/config.hpp>

#include "gateway_test_support.hpp"

namespace gateway_config_test_ns {

namespace te = tool_effects;
using namespace gateway_test;

namespace {
// The error `text` is refused with, "" when it is accepted.
std::string refusal(const std::string& text, const std::string& file = "gateway.json") {
  try {
    (void)te::parse_gateway_config(json::parse(text), file, {}, [](const std::string& name) -> std::optional<std::string> {
      if (name == "TOKEN") return std::string("s3cret");
      return std::nullopt;
    });
    return "";
  } catch (const te::gateway_config_error& e) {
    return e.what();
  }
}
}  // namespace

// Each row: a document with one bad field, the exact error, and the same document with the field corrected.
TEST(GatewayConfig, EachBadFieldIsRefusedNamingTheFileTheServerTheToolAndThePointer) {
  struct row {
    std::string bad, error, good;
  };
  const std::vector<row> rows = {
      {R"({"mcpServers": {"fs": {"command": "npx", "trust": "trustd"}}})",
       R"(gateway.json: server "fs": at /mcpServers/fs/trust: expected "trusted" or "untrusted" (did you mean "trusted"?): "trustd")",
       R"({"mcpServers": {"fs": {"command": "npx", "trust": "trusted"}}})"},
      {R"({"mcpServers": {"fs": {"command": "npx", "tools": {"write_file": {"writes": ["fs"], "effects": ["destructive", "bogus"]}}}}})",
       R"(gateway.json: server "fs", tool "write_file": at /mcpServers/fs/tools/write_file/effects/1: unknown side-effect tag: "bogus")",
       R"({"mcpServers": {"fs": {"command": "npx", "tools": {"write_file": {"writes": ["fs"], "effects": ["destructive", "idempotent"]}}}}})"},
      {R"({"mcpServers": {"fs": {"command": "npx", "tools": {"read": {"reads": ["/etc"]}}}}})",
       R"(gateway.json: server "fs", tool "read": at /mcpServers/fs/tools/read/reads/0: invalid resource path (segments separated by single '/', no leading or trailing '/'): "/etc")",
       R"({"mcpServers": {"fs": {"command": "npx", "tools": {"read": {"reads": ["etc"]}}}}})"},
      {R"({"mcpServers": {"fs": {"command": "npx", "tools": {"read": {"reads": ["fs"], "target": "path"}}}}})",
       R"(gateway.json: server "fs", tool "read": at /mcpServers/fs/tools/read/target: unknown key (did you mean "target_arg"?): "target")",
       R"({"mcpServers": {"fs": {"command": "npx", "tools": {"read": {"reads": ["fs"], "target_arg": "path"}}}}})"},
      {R"({"mcpServers": {"fs": {"command": "npx", "tools": {"rm": {"approval": "alow"}}}}})",
       R"(gateway.json: server "fs", tool "rm": at /mcpServers/fs/tools/rm/approval: unknown approval (did you mean "allow"?): "alow")",
       R"({"mcpServers": {"fs": {"command": "npx", "tools": {"rm": {"approval": "allow"}}}}})"},
      {R"({"mcpServers": {"fs": {"command": "npx", "overlay": {"tools": [{"name": "a", "reads": ["x"], "identity": {"target": "p"}}]}}}})",
       R"(gateway.json: server "fs", tool "a": at /mcpServers/fs/overlay/tools/0/identity/target: unknown key (did you mean "target_arg"?): "target")",
       R"({"mcpServers": {"fs": {"command": "npx", "overlay": {"tools": [{"name": "a", "reads": ["x"], "identity": {"target_arg": "p"}}]}}}})"},
      {R"({"mcpServers": {"fs": {"command": "npx", "overlay": {"tools": [{"name": "a", "reads": ["x"]}]}, "tools": {"a": {"writes": ["x"]}}}}})",
       R"(gateway.json: server "fs", tool "a": at /mcpServers/fs/tools/a: the tool is declared twice (also at /mcpServers/fs/overlay/tools/0): "a")",
       R"({"mcpServers": {"fs": {"command": "npx", "overlay": {"tools": [{"name": "a", "reads": ["x"]}]}, "tools": {"a": {"approval": "deny"}}}}})"},
      {R"({"mcpServers": {"fs": {"command": "npx", "tools": {"a": {"reads": ["x"], "target_arg": "p", "identity": {"target_arg": "q"}}}}}})",
       R"(gateway.json: server "fs", tool "a": at /mcpServers/fs/tools/a/target_arg: given twice (also /identity/target_arg): "p")",
       R"({"mcpServers": {"fs": {"command": "npx", "tools": {"a": {"reads": ["x"], "identity": {"target_arg": "q"}}}}}})"},
      {R"({"mcpServers": {"fs": {"command": "npx", "url": "http://localhost/mcp"}}})",
       R"(gateway.json: server "fs": at /mcpServers/fs: give either "command" (stdio) or "url" (Streamable HTTP), not both: "url")",
       R"({"mcpServers": {"fs": {"url": "http://localhost/mcp"}}})"},
      {R"({"mcpServers": {"fs": {"args": ["x"]}}})",
       R"(gateway.json: server "fs": at /mcpServers/fs: missing required key ("command" for stdio, or "url" for Streamable HTTP): "command")",
       R"({"mcpServers": {"fs": {"command": "npx", "args": ["x"]}}})"},
      {R"({"mcpServers": {"web": {"url": "http://x/mcp", "headers": {"Authorization": "Bearer ${NO_SUCH_TOKEN}"}}}})",
       R"(gateway.json: server "web": at /mcpServers/web/headers/Authorization: environment variable "NO_SUCH_TOKEN" is not set (give a default: ${NO_SUCH_TOKEN:-...}): "Bearer ${NO_SUCH_TOKEN}")",
       R"({"mcpServers": {"web": {"url": "http://x/mcp", "headers": {"Authorization": "Bearer ${TOKEN}"}}}})"},
      {R"({"mcpServers": {"web": {"url": "http://x/mcp", "type": "sse"}}})",
       R"(gateway.json: server "web": at /mcpServers/web/type: the HTTP+SSE transport of 2024-11-05 is not supported (use Streamable HTTP: "http"): "sse")",
       R"({"mcpServers": {"web": {"url": "http://x/mcp", "type": "http"}}})"},
      {R"({"mcpServers": {"fs": {"command": "npx", "autoApprove": ["x"]}}})",
       R"(gateway.json: server "fs": at /mcpServers/fs/autoApprove: unknown key (the gateway approves per tool: "tools": {"<tool>": {"approval": "allow"}}): "autoApprove")",
       R"({"mcpServers": {"fs": {"command": "npx", "approval": "allow"}}})"},
      {R"({"mcpServers": {}, "gatway": {}})", R"(gateway.json: at /gatway: unknown key (did you mean "gateway"?): "gatway")",
       R"({"mcpServers": {}, "gateway": {}})"},
      {R"({"mcpServers": {}, "gateway": {"journal": {"type": "postgres"}}})",
       R"(gateway.json: at /gateway/journal/type: unknown journal (known: sqlite etcd): "postgres")",
       R"({"mcpServers": {}, "gateway": {"journal": {"type": "sqlite", "path": "j.db"}}})"},
      {R"({"mcpServers": {}, "gateway": {"coordinator": {"type": "etcd"}}})",
       R"(gateway.json: at /gateway/coordinator: missing required key: "endpoints")",
       R"({"mcpServers": {}, "gateway": {"coordinator": {"type": "etcd", "endpoints": ["http://127.0.0.1:2379"]}}})"},
      {R"({"mcpServers": {}, "gateway": {"max_concurrent_calls": 0}})",
       R"(gateway.json: at /gateway/max_concurrent_calls: expected an integer from 1 to 4096: "0")",
       R"({"mcpServers": {}, "gateway": {"max_concurrent_calls": 8}})"},
      {R"({"mcpServers": {}, "gateway": {"http": {"metrics_path": "metrics"}}})",
       R"(gateway.json: at /gateway/http/metrics_path: expected a path starting with '/', or "" for none: "metrics")",
       R"({"mcpServers": {}, "gateway": {"http": {"metrics_path": ""}}})"},
      {R"({"mcpServers": {}, "gateway": {"http": {"path": "/m", "metrics_path": "/m"}}})",
       R"(gateway.json: at /gateway/http/metrics_path: is the MCP endpoint's path: "/m")",
       R"({"mcpServers": {}, "gateway": {"http": {"path": "/m", "metrics_path": "/stats"}}})"},
      {R"({"mcpServers": {}, "gateway": {"http": {"authorization": {"jwt": {"issuer": "i", "jwks_url": "u"}}}}})",
       R"(gateway.json: at /gateway/http/authorization: missing required key (the gateway's canonical URI, e.g. "https://gw.example.com/mcp"): "resource")",
       R"({"mcpServers": {}, "gateway": {"http": {"authorization": {"resource": "r", "jwt": {"issuer": "i", "jwks_url": "u"}}}}})"},
      {R"({"mcpServers": {}, "gateway": {"http": {"authorization": {"resource": "r", "jwt": {"issuer": "i"}}}}})",
       R"(gateway.json: at /gateway/http/authorization/jwt: missing required key: "jwks_url")",
       R"({"mcpServers": {}, "gateway": {"http": {"authorization": {"resource": "r", "jwt": {"issuer": "i", "jwks_url": "u"}}}}})"},
      {R"({"mcpServers": {}, "gateway": {"http": {"authorization": {"resource": "r", "jwt": {"issuer": "i", "jwks_url": "u"}, "introspection": {}}}}})",
       R"(gateway.json: at /gateway/http/authorization: give either "jwt" (a key set) or "introspection" (RFC 7662), not both: "jwt")",
       R"({"mcpServers": {}, "gateway": {"http": {"authorization": {"resource": "r", "introspection": {"endpoint": "e", "client_id": "c", "client_secret": "${TOKEN}"}}}}})"},
      {R"({"mcpServers": {}, "gateway": {"http": {"authorization": {"resource": "r"}}}})",
       R"(gateway.json: at /gateway/http/authorization: missing required key ("jwt" for a key set, or "introspection" for RFC 7662): "jwt")",
       R"({"mcpServers": {}, "gateway": {"http": {"authorization": {"resource": "r", "jwt": {"issuer": "i", "jwks_url": "u"}}}}})"},
      {R"({"mcpServers": {}, "gateway": {"http": {"authorization": {"resource": "r", "introspection": {"endpoint": "e", "client_id": "c", "client_secret": 123456789}}}}})",
       R"(gateway.json: at /gateway/http/authorization/introspection/client_secret: expected a string, got number: "[redacted]")",
       R"({"mcpServers": {}, "gateway": {"http": {"authorization": {"resource": "r", "introspection": {"endpoint": "e", "client_id": "c", "client_secret": "${TOKEN}"}}}}})"},
      {R"({"mcpServers": {}, "gateway": {"coordinator": {"type": "etcd", "endpoints": ["http://127.0.0.1:2379"], "password": 123456789}}})",
       R"(gateway.json: at /gateway/coordinator/password: expected a string, got number: "[redacted]")",
       R"({"mcpServers": {}, "gateway": {"coordinator": {"type": "etcd", "endpoints": ["http://127.0.0.1:2379"], "password": "${TOKEN}"}}})"},
      {R"({"mcpServers": {}, "gateway": {"http": {"authorization": {"resource": "r", "scopes": "efects", "jwt": {"issuer": "i", "jwks_url": "u"}}}}})",
       R"(gateway.json: at /gateway/http/authorization/scopes: expected "effects" or "none" (did you mean "effects"?): "efects")",
       R"({"mcpServers": {}, "gateway": {"http": {"authorization": {"resource": "r", "scopes": "effects", "jwt": {"issuer": "i", "jwks_url": "u"}}}}})"},
      {R"({"servers": {}})", R"(gateway.json: at /servers: unknown key (known: mcpServers gateway): "servers")",
       R"({"mcpServers": {}})"},
  };
  for (const auto& r : rows) {
    EXPECT_EQ(refusal(r.bad), r.error) << r.bad;
    EXPECT_EQ(refusal(r.good), "") << "the control: " << r.good;
  }
}

// A secret given as something other than a string, or as a string the reader refuses, is refused naming the
// field and what is wrong, never quoting the value: "[redacted]" stands where the value would be, in what() and
// in input(). The control: a field that is not a secret (client_id, the etcd user) refused the same way is quoted.
TEST(GatewayConfig, ASecretIsRefusedWithoutItsValue) {
  struct row {
    std::string document, pointer, message, value;
  };
  const std::string intro = R"({"mcpServers": {}, "gateway": {"http": {"authorization": {"resource": "r", "introspection": )";
  const std::string etcd = R"({"mcpServers": {}, "gateway": {"coordinator": {"type": "etcd", "endpoints": ["http://e:2379"], )";
  const std::string journal = R"({"mcpServers": {}, "gateway": {"journal": {"type": "etcd", "endpoints": ["http://e:2379"], )";
  const auto refused = [](const std::string& document) -> std::optional<te::gateway_config_error> {
    try {
      (void)te::parse_gateway_config(json::parse(document), "gateway.json", {},
                                     [](const std::string&) -> std::optional<std::string> { return std::nullopt; });
    } catch (const te::gateway_config_error& e) {
      return e;
    }
    return std::nullopt;
  };
  const std::vector<row> secrets = {
      {intro + R"({"endpoint": "e", "client_id": "c", "client_secret": 123456789}}}}})",
       "/gateway/http/authorization/introspection/client_secret", "expected a string, got number", "123456789"},
      {intro + R"({"endpoint": "e", "client_id": "c", "client_secret": "hunter2${"}}}}})",
       "/gateway/http/authorization/introspection/client_secret", "unterminated ${...}", "hunter2"},
      {etcd + R"("password": 123456789}}})", "/gateway/coordinator/password", "expected a string, got number",
       "123456789"},
      {journal + R"("password": 123456789}}})", "/gateway/journal/password", "expected a string, got number",
       "123456789"},
      {journal + R"("password": "hunter2${"}}})", "/gateway/journal/password", "unterminated ${...}", "hunter2"},
  };
  for (const auto& r : secrets) {
    const auto e = refused(r.document);
    ASSERT_TRUE(e) << "accepted: " << r.document;
    const std::string what = e->what();
    EXPECT_EQ(e->pointer(), r.pointer) << what;
    EXPECT_EQ(e->message(), r.message) << what;
    EXPECT_EQ(to_string(e->reason()), "invalid_value") << what;
    EXPECT_EQ(what.find(r.value), std::string::npos) << "the secret is quoted: " << what;
    EXPECT_EQ(e->input().find(r.value), std::string::npos) << "the secret is in input(): " << e->input();
    EXPECT_EQ(e->input(), "[redacted]");
  }
  // The control: the same mistakes in fields that are not secrets quote the value.
  const std::vector<row> others = {
      {intro + R"({"endpoint": "e", "client_id": 123456789, "client_secret": "s"}}}}})",
       "/gateway/http/authorization/introspection/client_id", "expected a string, got number", "123456789"},
      {intro + R"({"endpoint": "e", "client_id": "c", "client_secret": "s", "issuer": "hunter2${"}}}}})",
       "/gateway/http/authorization/introspection/issuer", "unterminated ${...}", "hunter2"},
      {etcd + R"("user": 123456789}}})", "/gateway/coordinator/user", "expected a string, got number", "123456789"},
  };
  for (const auto& r : others) {
    const auto e = refused(r.document);
    ASSERT_TRUE(e) << "accepted: " << r.document;
    const std::string what = e->what();
    EXPECT_EQ(e->pointer(), r.pointer) << what;
    EXPECT_EQ(e->message(), r.message) << what;
    EXPECT_NE(what.find(r.value), std::string::npos) << "the control quotes the value: " << what;
  }
}

// What the reader makes of a good document: every field lands where the gateway reads it.
TEST(GatewayConfig, AGoodDocumentGivesEveryFieldItsValue) {
  const auto c = te::parse_gateway_config(json::parse(R"({"mcpServers": {
      "fs": {"command": "npx", "args": ["-y", "server-filesystem", "${HOME_DIR:-/srv}"], "env": {"A": "1"},
             "trust": "trusted", "prefix": "files", "approval": "deny", "max_restarts": 3, "timeout_ms": 5000,
             "tools": {"write_file": {"writes": ["fs"], "effects": ["destructive"], "target_arg": "path", "approval": "allow"}}},
      "old": {"command": "x", "disabled": true},
      "web": {"type": "http", "url": "https://example.com/mcp", "headers": {"X": "${TOKEN}"}}},
    "gateway": {"journal": "j.db", "audit": "stderr", "coordinator": "local", "wait_limit_ms": 100,
                "retry": {"max_attempts": 5}, "shutdown_grace_ms": 50, "http": {"path": "/gw"}}})"),
                                          "g.json", "/etc/gw", [](const std::string& n) -> std::optional<std::string> {
                                            if (n == "TOKEN") return std::string("t");
                                            return std::nullopt;
                                          });
  ASSERT_EQ(c.servers.size(), 2u) << "a disabled server is left out";
  const auto& fs = c.servers[0];
  EXPECT_EQ(fs.name, "fs");
  EXPECT_EQ(fs.command, (std::vector<std::string>{"npx", "-y", "server-filesystem", "/srv"}));
  EXPECT_EQ(fs.env.at("A"), "1");
  EXPECT_EQ(fs.trust, te::server_trust::trusted);
  EXPECT_EQ(fs.prefix, "files");
  EXPECT_EQ(fs.approval, te::gateway_approval::deny);
  EXPECT_EQ(fs.max_restarts, 3u);
  ASSERT_EQ(fs.tools.size(), 1u);
  EXPECT_EQ(fs.tools[0].approval, te::gateway_approval::allow);
  ASSERT_TRUE(fs.tools[0].declaration);
  EXPECT_EQ(fs.tools[0].declaration->identity.target_arg, "path");
  EXPECT_TRUE(fs.tools[0].declaration->description.effects.contains(te::effect::destructive));
  const auto& web = c.servers[1];
  EXPECT_EQ(web.url, "https://example.com/mcp");
  EXPECT_EQ(web.headers.at("X"), "t");
  EXPECT_EQ(web.trust, te::server_trust::untrusted) << "untrusted unless said";
  EXPECT_EQ(c.sqlite_journal, "/etc/gw/j.db") << "relative to the configuration's directory";
  EXPECT_EQ(c.audit, "stderr");
  EXPECT_EQ(c.wait_limit.count(), 100);
  EXPECT_EQ(c.retry_attempts, 5u);
  EXPECT_EQ(c.http_path, "/gw");
  EXPECT_EQ(c.metrics_path, "/metrics") << "served unless said";
}

// An overlay in a file of its own: its errors name that file and where the configuration refers to it.
TEST(GatewayConfig, AnOverlayFileIsNamedInItsErrors) {
  const auto dir = fresh_dir("overlay_file");
  write_file(dir / "fs-overlay.json", R"({"version": 1, "tools": [{"name": "read", "reads": ["fs"]},
                                                                  {"name": "write", "writes": ["fs//x"]}]})");
  write_file(dir / "gateway.json", R"({"mcpServers": {"fs": {"command": "npx", "overlay": "fs-overlay.json"}}})");
  try {
    (void)te::load_gateway_config(dir / "gateway.json");
    FAIL() << "accepted";
  } catch (const te::gateway_config_error& e) {
    EXPECT_EQ(std::string(e.what()),
              (dir / "fs-overlay.json").string() + " (overlay of server \"fs\", " + (dir / "gateway.json").string() +
                  " at /mcpServers/fs/overlay): server \"fs\", tool \"write\": at /tools/1/writes/0: invalid resource "
                  "path (segments separated by single '/', no leading or trailing '/'): \"fs//x\"");
    EXPECT_EQ(e.server(), "fs");
    EXPECT_EQ(e.tool(), "write");
    EXPECT_EQ(e.pointer(), "/tools/1/writes/0");
  }
  write_file(dir / "fs-overlay.json", R"({"version": 1, "tools": [{"name": "read", "reads": ["fs"]},
                                                                  {"name": "write", "writes": ["fs/x"]}]})");
  const auto c = te::load_gateway_config(dir / "gateway.json");  // the control
  ASSERT_EQ(c.servers.at(0).tools.size(), 2u);
  EXPECT_EQ(c.servers[0].tools[1].file, (dir / "fs-overlay.json").string() + " (overlay of server \"fs\", " +
                                            (dir / "gateway.json").string() + " at /mcpServers/fs/overlay)");
}

// The program: a refused configuration starts no upstream server and serves nothing (no port on stdout),
// exit status 1 with the error on stderr. The control, the same configuration corrected, starts the upstream
// and prints its port.
TEST(GatewayProgram, ARefusedConfigurationStartsNothing) {
  const auto dir = fresh_dir("refused");
  json up = upstream(dir / "effects.log", {{"tools", {{"append", {{"writes", json::array({"log"})}, {"effects", {"bogus"}}}}}}},
                     dir / "started");
  write_file(dir / "bad.json", json{{"mcpServers", {{"up", up}}}}.dump());
  const auto [status, out] = run(gateway() + " --config " + (dir / "bad.json").string() + " --listen 127.0.0.1:0 2> " +
                                 (dir / "stderr").string());
  EXPECT_EQ(status, 1);
  EXPECT_EQ(out, "") << "no port";
  EXPECT_NE(read_file(dir / "stderr").find("bad.json: server \"up\", tool \"append\": at /mcpServers/up/tools/append/effects/0: "
                                           "unknown side-effect tag: \"bogus\""),
            std::string::npos)
      << read_file(dir / "stderr");
  EXPECT_FALSE(fs::exists(dir / "started")) << "no upstream server was started";

  up["tools"]["append"]["effects"] = json::array();
  write_file(dir / "good.json", json{{"mcpServers", {{"up", up}}}}.dump());
  http_gateway g(dir / "good.json");
  EXPECT_GT(g.port(), 0);
  EXPECT_EQ(lines_of(dir / "started").size(), 1u);
}

// The HTTP listener's authorization is made at start, before anything is served: a key set over plain http to a
// host that is not loopback is refused, naming the field (exit 1, no port). The control: the same on loopback
// serves. A build without OpenSSL refuses any authorization the same way.
TEST(GatewayProgram, AnAuthorizationThatCannotVerifyTokensIsRefusedAtStart) {
  const auto dir = fresh_dir("authorization");
  auto config = [&](const std::string& jwks) {
    return json{{"mcpServers", {{"up", upstream(dir / "effects.log")}}},
                {"gateway",
                 {{"http",
                   {{"authorization",
                     {{"resource", "http://127.0.0.1:1/mcp"}, {"jwt", {{"issuer", "https://as.example.com"}, {"jwks_url", jwks}}}}}}}}}}
        .dump();
  };
  write_file(dir / "bad.json", config("http://as.example.com/jwks"));
  const auto [status, out] = run(gateway() + " --config " + (dir / "bad.json").string() + " --listen 127.0.0.1:0 2> " +
                                 (dir / "stderr").string());
  EXPECT_EQ(status, 1);
  EXPECT_EQ(out, "") << "no port";
#ifdef TOOL_EFFECTS_GATEWAY_HAS_AUTHORIZATION
  EXPECT_NE(read_file(dir / "stderr").find("bad.json: at /gateway/http/authorization/jwt: cannot verify tokens so: "
                                           "mcp_jwt_options::jwks_url: \"http://as.example.com/jwks\" is plain http to a host "
                                           "that is not loopback (https is required)"),
            std::string::npos)
      << read_file(dir / "stderr");
  write_file(dir / "good.json", config("http://127.0.0.1:1/jwks"));
  http_gateway g(dir / "good.json");
  EXPECT_GT(g.port(), 0);
#else
  EXPECT_NE(read_file(dir / "stderr").find("built without OpenSSL: no authorization"), std::string::npos)
      << read_file(dir / "stderr");
#endif
}

// A tool the upstream server does not have is known only once the server is listed: the gateway then stops it
// again and serves nothing, naming the file, the server, the tool and the field (with the nearest tool).
TEST(GatewayProgram, AToolTheServerDoesNotHaveIsRefusedAndNothingIsServed) {
  const auto dir = fresh_dir("no_such_tool");
  write_file(dir / "gateway.json",
             json{{"mcpServers", {{"up", upstream(dir / "effects.log", {{"tools", {{"apend", {{"writes", {"log"}}}}}}})}}}}.dump());
  const auto [status, out] = run(gateway() + " --config " + (dir / "gateway.json").string() +
                                 " --listen 127.0.0.1:0 2> " + (dir / "stderr").string());
  EXPECT_EQ(status, 1);
  EXPECT_EQ(out, "");
  EXPECT_NE(read_file(dir / "stderr").find("gateway.json: server \"up\", tool \"apend\": at /mcpServers/up/tools/apend: not a "
                                           "tool of the server (it has 5 tools) (did you mean \"append\"?): \"apend\""),
            std::string::npos)
      << read_file(dir / "stderr");
  // --check says the same, and of a good configuration prints every tool's declaration.
  const auto [check_status, check_out] = run(gateway() + " --check " + (dir / "gateway.json").string() + " 2>&1");
  EXPECT_EQ(check_status, 1);
  EXPECT_NE(check_out.find("not a tool of the server"), std::string::npos) << check_out;
}

}  // namespace gateway_config_test_ns
