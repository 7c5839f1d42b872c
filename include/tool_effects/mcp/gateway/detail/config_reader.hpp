// tool_effects/mcp/gateway/detail/config_reader.hpp — internal to <tool_effects/mcp/gateway/config.hpp>: the
// reader of a gateway configuration document, every error naming the file, the server, the tool and the field.
// The public header first, outside the guard: it includes this one after its declarations, so that either
// header may be included first.
#include <tool_effects/mcp/gateway/config.hpp>

#ifndef TOOL_EFFECTS_MCP_GATEWAY_DETAIL_CONFIG_READER_HPP
#define TOOL_EFFECTS_MCP_GATEWAY_DETAIL_CONFIG_READER_HPP

namespace tool_effects {

namespace detail {

inline std::optional<std::string> gateway_getenv(const std::string& name) {
  if (const char* v = std::getenv(name.c_str())) return std::string(v);
  return std::nullopt;
}

// Reads one gateway configuration document; every error names `file_`, the server and tool it is in, and the
// pointer. Keys of objects come sorted (nlohmann::json), so servers and tools are in name order.
class gateway_config_reader {
 public:
  gateway_config_reader(std::string file, std::filesystem::path base, gateway_env env)
      : file_(std::move(file)), base_(std::move(base)), env_(env ? std::move(env) : gateway_env(gateway_getenv)) {}

  gateway_config read(const nlohmann::json& j) {
    gateway_config c;
    c.file = file_;
    object(j, "", {"mcpServers", "gateway"});
    const auto servers = j.find("mcpServers");
    if (servers == j.end()) fail("", "missing required key", "mcpServers");
    object(*servers, "/mcpServers", {});
    for (auto it = servers->begin(); it != servers->end(); ++it) {
      server_ = it.key();
      if (auto s = server(*it, str_cat("/mcpServers/", pointer_token(it.key())))) c.servers.push_back(std::move(*s));
      server_.clear();
    }
    if (const auto g = j.find("gateway"); g != j.end()) gateway(*g, c);
    return c;
  }

 private:
  [[noreturn]] void fail(const std::string& at, std::string message, std::string_view input) const {
    throw gateway_config_error(file_, server_, tool_, at, std::move(message), input);
  }
  void object(const nlohmann::json& v, const std::string& at, std::initializer_list<std::string_view> known) const {
    if (!v.is_object()) fail(at, expected("an object", v), preview(v));
    if (known.size() == 0) return;
    for (auto it = v.begin(); it != v.end(); ++it) {
      bool ok = false;
      for (const auto k : known) ok = ok || it.key() == k;
      if (!ok) fail(str_cat(at, "/", pointer_token(it.key())), suggestion_message("unknown key", it.key(), known), it.key());
    }
  }
  // A string, with ${VAR} and ${VAR:-default} taken from the environment (as Claude Code expands them).
  std::string text(const nlohmann::json& v, const std::string& at, bool expand = true) const {
    if (!v.is_string()) fail(at, expected("a string", v), preview(v));
    const std::string& s = v.get_ref<const std::string&>();
    if (!expand) return s;
    std::string out;
    for (std::size_t i = 0; i < s.size();) {
      if (s.compare(i, 2, "${") != 0) {
        out += s[i++];
        continue;
      }
      const auto close = s.find('}', i + 2);
      if (close == std::string::npos) fail(at, "unterminated ${...}", s);
      const std::string inner = s.substr(i + 2, close - i - 2);
      const auto dash = inner.find(":-");
      const std::string name = inner.substr(0, dash);
      if (name.empty()) fail(at, "empty variable name in ${...}", s);
      if (auto value = env_(name)) out += *value;
      else if (dash != std::string::npos) out += inner.substr(dash + 2);
      else fail(at, str_cat("environment variable ", quote_input(name), " is not set (give a default: ${",
                            name, ":-...})"), s);
      i = close + 1;
    }
    return out;
  }
  // A secret (an introspection client_secret, an etcd password): text(), but its refusals, whatever they are,
  // quote "[redacted]" where they would quote the value, so neither what() nor input() carries any of it.
  std::string secret(const nlohmann::json& v, const std::string& at) const {
    try {
      return text(v, at);
    } catch (const gateway_config_error& e) {
      fail(e.pointer(), e.message(), "[redacted]");
    }
  }
  std::map<std::string, std::string> strings(const nlohmann::json& v, const std::string& at) const {
    object(v, at, {});
    std::map<std::string, std::string> out;
    for (auto it = v.begin(); it != v.end(); ++it) out[it.key()] = text(*it, str_cat(at, "/", pointer_token(it.key())));
    return out;
  }
  std::vector<std::string> list(const nlohmann::json& v, const std::string& at, bool expand = true) const {
    if (!v.is_array()) fail(at, expected("an array of strings", v), preview(v));
    std::vector<std::string> out;
    for (std::size_t i = 0; i < v.size(); ++i) out.push_back(text(v[i], str_cat(at, "/", std::to_string(i)), expand));
    return out;
  }
  std::uint64_t number(const nlohmann::json& v, const std::string& at, std::uint64_t min, std::uint64_t max) const {
    if (!v.is_number_unsigned() || v.get<std::uint64_t>() < min || v.get<std::uint64_t>() > max)
      fail(at, str_cat("expected an integer from ", std::to_string(min), " to ", std::to_string(max)), preview(v));
    return v.get<std::uint64_t>();
  }
  gateway_approval approval(const nlohmann::json& v, const std::string& at) const {
    const std::string s = text(v, at, false);
    if (s == "ask") return gateway_approval::ask;
    if (s == "allow") return gateway_approval::allow;
    if (s == "deny") return gateway_approval::deny;
    fail(at, suggestion_message("unknown approval", s, std::initializer_list<std::string_view>{"ask", "allow", "deny"}),
         s);
  }

  std::optional<gateway_server_config> server(const nlohmann::json& v, const std::string& at) {
    for (const char* k : {"autoApprove", "alwaysAllow"})  // other clients' approval lists: said the gateway's way
      if (v.is_object() && v.contains(k))
        fail(str_cat(at, "/", k),
             "unknown key (the gateway approves per tool: \"tools\": {\"<tool>\": {\"approval\": \"allow\"}})", k);
    object(v, at, {"command", "args", "env", "cwd", "url", "headers", "type", "trust", "overlay", "tools", "prefix",
                   "approval", "disabled", "max_restarts", "timeout_ms"});
    if (const auto d = v.find("disabled"); d != v.end()) {
      if (!d->is_boolean()) fail(at + "/disabled", expected("a boolean", *d), preview(*d));
      if (d->get<bool>()) return std::nullopt;
    }
    gateway_server_config s;
    s.name = server_;
    s.pointer = at;
    std::string type;
    if (const auto t = v.find("type"); t != v.end()) {
      type = text(*t, at + "/type", false);
      if (type == "sse")
        fail(at + "/type", "the HTTP+SSE transport of 2024-11-05 is not supported (use Streamable HTTP: \"http\")", type);
      if (type != "stdio" && type != "http" && type != "streamable-http" && type != "streamableHttp")
        fail(at + "/type", suggestion_message("unknown transport", type, std::initializer_list<std::string_view>{
                                                                        "stdio", "http", "streamable-http"}),
             type);
    }
    const bool has_command = v.contains("command"), has_url = v.contains("url");
    if (has_command == has_url)
      fail(at, has_command ? "give either \"command\" (stdio) or \"url\" (Streamable HTTP), not both"
                           : "missing required key (\"command\" for stdio, or \"url\" for Streamable HTTP)",
           has_command ? "url" : "command");
    if (has_command) {
      if (type != "" && type != "stdio") fail(at + "/type", "a server with \"command\" speaks stdio", type);
      for (const char* k : {"url", "headers"})
        if (v.contains(k)) fail(str_cat(at, "/", k), "only for a server with \"url\"", k);
      s.command.push_back(text(v["command"], at + "/command"));
      if (s.command.front().empty()) fail(at + "/command", "expected a non-empty program", "");
      if (const auto a = v.find("args"); a != v.end())
        for (auto& arg : list(*a, at + "/args")) s.command.push_back(std::move(arg));
      if (const auto e = v.find("env"); e != v.end()) s.env = strings(*e, at + "/env");
      if (const auto w = v.find("cwd"); w != v.end()) s.cwd = resolve(text(*w, at + "/cwd"));
    } else {
      if (type == "stdio") fail(at + "/type", "a server with \"url\" speaks Streamable HTTP", type);
      for (const char* k : {"args", "env", "cwd"})
        if (v.contains(k)) fail(str_cat(at, "/", k), "only for a server with \"command\"", k);
      s.url = text(v["url"], at + "/url");
      if (s.url.rfind("http://", 0) != 0 && s.url.rfind("https://", 0) != 0)
        fail(at + "/url", "expected an http:// or https:// URL", s.url);
      if (const auto h = v.find("headers"); h != v.end()) s.headers = strings(*h, at + "/headers");
    }
    if (const auto t = v.find("trust"); t != v.end()) {
      const std::string trust = text(*t, at + "/trust", false);
      if (trust != "trusted" && trust != "untrusted")
        fail(at + "/trust", suggestion_message("expected \"trusted\" or \"untrusted\"", trust,
                                               std::initializer_list<std::string_view>{"trusted", "untrusted"}),
             trust);
      s.trust = trust == "trusted" ? server_trust::trusted : server_trust::untrusted;
    }
    if (const auto p = v.find("prefix"); p != v.end()) s.prefix = text(*p, at + "/prefix", false);
    if (const auto a = v.find("approval"); a != v.end()) s.approval = approval(*a, at + "/approval");
    if (const auto m = v.find("max_restarts"); m != v.end()) s.max_restarts = number(*m, at + "/max_restarts", 0, 1000);
    if (const auto m = v.find("timeout_ms"); m != v.end())
      s.request_timeout = std::chrono::milliseconds(number(*m, at + "/timeout_ms", 1, 86'400'000));
    if (const auto o = v.find("overlay"); o != v.end()) overlay(*o, at + "/overlay", s);
    if (const auto t = v.find("tools"); t != v.end()) tools(*t, at + "/tools", s);
    return s;
  }

  // `overlay`: a manifest (docs/runtime.md), inline or the path of a file (relative to this file's directory).
  void overlay(const nlohmann::json& v, const std::string& at, gateway_server_config& s) {
    std::string file = file_;
    std::string base = at;
    nlohmann::json doc;
    if (v.is_string()) {
      const std::filesystem::path path = resolve(text(v, at));
      std::ifstream in(path, std::ios::binary);
      if (!in) fail(at, "cannot read the overlay file", path.string());
      std::ostringstream ss;
      ss << in.rdbuf();
      if (ss.str().size() > (std::size_t{16} << 20)) fail(at, "the overlay file is larger than 16 MiB", path.string());
      file = str_cat(path.string(), " (overlay of server ", quote_input(server_, 100), ", ", file_, " at ", at, ")");
      base.clear();
      try {
        doc = parse_untrusted_json(ss.str(), json_limits{}, "");
      } catch (const json_error& e) {
        throw gateway_config_error(file, server_, "", e.pointer(), e.message(), e.input(), e.reason());
      }
    } else {
      doc = v;
    }
    std::vector<dynamic_tool> entries;
    try {
      entries = manifest_from_json(doc);
    } catch (const manifest_error& e) {
      throw gateway_config_error(file, server_, e.tool_name().value_or(""), base + e.pointer(), e.message(), e.input(),
                                 e.reason());
    }
    for (std::size_t i = 0; i < entries.size(); ++i) {
      gateway_tool_config t;
      t.name = entries[i].name;
      t.declaration = std::move(entries[i]);
      t.file = file;
      t.pointer = str_cat(base, "/tools/", std::to_string(i));
      s.tools.push_back(std::move(t));
    }
  }

  // `tools`: {"<server's tool name>": {effects, reads, writes, appends, identity, target_arg, approval}}. An entry
  // with only `approval` may name a tool the overlay declares; two declarations of one tool are an error.
  void tools(const nlohmann::json& v, const std::string& at, gateway_server_config& s) {
    object(v, at, {});
    for (auto it = v.begin(); it != v.end(); ++it) {
      tool_ = it.key();
      const std::string tat = str_cat(at, "/", pointer_token(it.key()));
      object(*it, tat, {"effects", "reads", "writes", "appends", "identity", "target_arg", "approval"});
      if (tool_.empty()) fail(tat, "expected a non-empty tool name", "");
      gateway_tool_config t;
      t.name = tool_;
      t.file = file_;
      t.pointer = tat;
      if (const auto a = it->find("approval"); a != it->end()) t.approval = approval(*a, tat + "/approval");
      nlohmann::json entry = *it;
      entry.erase("approval");
      if (const auto ta = entry.find("target_arg"); ta != entry.end()) {
        const std::string arg = text(*ta, tat + "/target_arg", false);
        if (arg.empty()) fail(tat + "/target_arg", "expected a non-empty argument name", "");
        if (entry.contains("identity") && entry["identity"].is_object() && entry["identity"].contains("target_arg"))
          fail(tat + "/target_arg", "given twice (also /identity/target_arg)", arg);
        if (!entry.contains("identity")) entry["identity"] = nlohmann::json::object();
        if (entry["identity"].is_object()) entry["identity"]["target_arg"] = arg;
        entry.erase("target_arg");
      }
      if (!entry.empty()) {
        entry["name"] = tool_;
        try {
          t.declaration = manifest_reader(0, tat).read(entry);
        } catch (const manifest_error& e) {
          fail(e.pointer(), e.message(), e.input());
        }
      }
      gateway_tool_config* earlier = nullptr;
      for (auto& e : s.tools)
        if (e.name == tool_) earlier = &e;
      if (earlier && t.declaration)
        fail(tat, str_cat("the tool is declared twice (also ", earlier->file == file_ ? "" : earlier->file + " ", "at ",
                          earlier->pointer, ")"),
             tool_);
      if (earlier) earlier->approval = t.approval;  // an approval for a tool the overlay declares
      else s.tools.push_back(std::move(t));
      tool_.clear();
    }
  }

  gateway_etcd_config etcd(const nlohmann::json& v, const std::string& at) const {
    object(v, at, {"type", "endpoints", "prefix", "ttl_seconds", "request_timeout_ms", "user", "password", "ca_file",
                   "cert_file", "key_file"});
    gateway_etcd_config e;
    const auto ep = v.find("endpoints");
    if (ep == v.end()) fail(at, "missing required key", "endpoints");
    e.endpoints = list(*ep, at + "/endpoints");
    if (e.endpoints.empty()) fail(at + "/endpoints", "expected at least one endpoint", "");
    if (const auto p = v.find("prefix"); p != v.end()) e.prefix = text(*p, at + "/prefix");
    if (const auto t = v.find("ttl_seconds"); t != v.end()) e.ttl = std::chrono::seconds(number(*t, at + "/ttl_seconds", 1, 3600));
    if (const auto t = v.find("request_timeout_ms"); t != v.end())
      e.request_timeout = std::chrono::milliseconds(number(*t, at + "/request_timeout_ms", 1, 600'000));
    for (auto [key, field] : {std::pair{"user", &e.user}, {"ca_file", &e.ca_file}, {"cert_file", &e.cert_file},
                              {"key_file", &e.key_file}})
      if (const auto f = v.find(key); f != v.end()) *field = text(*f, str_cat(at, "/", key));
    if (const auto f = v.find("password"); f != v.end()) e.password = secret(*f, at + "/password");
    return e;
  }
  gateway_authorization_config authorization(const nlohmann::json& v, const std::string& at) const {
    object(v, at, {"resource", "authorization_servers", "required_scopes", "scopes", "jwt", "introspection", "ca_file",
                   "require_https"});
    gateway_authorization_config a;
    const auto r = v.find("resource");
    if (r == v.end()) fail(at, "missing required key (the gateway's canonical URI, e.g. \"https://gw.example.com/mcp\")", "resource");
    a.resource = text(*r, at + "/resource");
    if (const auto l = v.find("authorization_servers"); l != v.end())
      a.authorization_servers = list(*l, at + "/authorization_servers");
    if (const auto l = v.find("required_scopes"); l != v.end()) a.required_scopes = list(*l, at + "/required_scopes");
    if (const auto s = v.find("scopes"); s != v.end()) {
      const std::string rule = text(*s, at + "/scopes", false);
      if (rule != "effects" && rule != "none")
        fail(at + "/scopes", suggestion_message("expected \"effects\" or \"none\"", rule, std::initializer_list<std::string_view>{"effects", "none"}), rule);
      a.scopes_from_effects = rule == "effects";
    }
    if (const auto f = v.find("ca_file"); f != v.end()) a.ca_file = text(*f, at + "/ca_file");
    if (const auto b = v.find("require_https"); b != v.end()) {
      if (!b->is_boolean()) fail(at + "/require_https", expected("a boolean", *b), preview(*b));
      a.require_https = b->get<bool>();
    }
    const auto jwt = v.find("jwt");
    const auto intro = v.find("introspection");
    if ((jwt == v.end()) == (intro == v.end()))
      fail(at, jwt != v.end() ? "give either \"jwt\" (a key set) or \"introspection\" (RFC 7662), not both"
                              : "missing required key (\"jwt\" for a key set, or \"introspection\" for RFC 7662)",
           "jwt");
    const std::string ka = at + (jwt != v.end() ? "/jwt" : "/introspection");
    const nlohmann::json& k = jwt != v.end() ? *jwt : *intro;
    const auto required = [&](const char* key, std::string& field, bool is_secret = false) {
      const auto f = k.find(key);
      if (f == k.end()) fail(ka, "missing required key", key);
      field = is_secret ? secret(*f, str_cat(ka, "/", key)) : text(*f, str_cat(ka, "/", key));
      if (field.empty()) fail(str_cat(ka, "/", key), "expected a non-empty string", "");
    };
    if (jwt != v.end()) {
      object(k, ka, {"issuer", "jwks_url", "algorithms"});
      a.verifier = "jwt";
      required("issuer", a.issuer);
      required("jwks_url", a.jwks_url);
      if (const auto l = k.find("algorithms"); l != k.end()) a.algorithms = list(*l, ka + "/algorithms", false);
    } else {
      object(k, ka, {"endpoint", "client_id", "client_secret", "issuer"});
      a.verifier = "introspection";
      required("endpoint", a.endpoint);
      required("client_id", a.client_id);
      required("client_secret", a.client_secret, true);
      if (const auto f = k.find("issuer"); f != k.end()) a.issuer = text(*f, ka + "/issuer");
    }
    if (a.authorization_servers.empty() && !a.issuer.empty()) a.authorization_servers = {a.issuer};
    return a;
  }
  // A backend: "local"/"none", a string (the sqlite journal's path), or {"type": ..., ...}.
  void gateway(const nlohmann::json& g, gateway_config& c) const {
    const std::string at = "/gateway";
    object(g, at, {"name", "coordinator", "wait_limit_ms", "journal", "retry", "audit", "max_concurrent_calls", "threads",
                   "shutdown_grace_ms", "http"});
    if (const auto n = g.find("name"); n != g.end()) c.name = text(*n, at + "/name", false);
    if (const auto v = g.find("coordinator"); v != g.end()) {
      const std::string ca = at + "/coordinator";
      if (v->is_string()) {
        if (text(*v, ca, false) != "local") fail(ca, "expected \"local\" or {\"type\": \"etcd\", ...}", preview(*v));
      } else {
        object(*v, ca, {});
        const auto t = v->find("type");
        if (t == v->end()) fail(ca, "missing required key", "type");
        const std::string kind = text(*t, ca + "/type", false);
        if (kind == "etcd") c.etcd_coordinator = etcd(*v, ca);
        else if (kind != "local" || v->size() != 1)
          fail(ca + "/type", "expected \"local\" (no other key) or \"etcd\"", kind);
      }
    }
    if (const auto w = g.find("wait_limit_ms"); w != g.end())
      c.wait_limit = std::chrono::milliseconds(number(*w, at + "/wait_limit_ms", 0, 86'400'000));
    if (const auto v = g.find("journal"); v != g.end()) {
      const std::string ja = at + "/journal";
      if (v->is_string()) {  // the SQLite journal's path, or "none"
        const std::string p = text(*v, ja);
        if (p.empty()) fail(ja, "expected the SQLite journal's path, \"none\", or {\"type\": ...}", "");
        if (p != "none") c.sqlite_journal = resolve(p).string();
      } else {
        object(*v, ja, {});
        const auto t = v->find("type");
        if (t == v->end()) fail(ja, "missing required key", "type");
        const std::string kind = text(*t, ja + "/type", false);
        if (kind == "etcd") {
          c.etcd_journal = etcd(*v, ja);
        } else if (kind == "sqlite") {
          object(*v, ja, {"type", "path"});
          if (!v->contains("path")) fail(ja, "missing required key", "path");
          c.sqlite_journal = resolve(text((*v)["path"], ja + "/path")).string();
          if ((*v)["path"].get_ref<const std::string&>().empty()) fail(ja + "/path", "expected a path", "");
        } else {
          fail(ja + "/type", suggestion_message("unknown journal", kind,
                                                std::initializer_list<std::string_view>{"sqlite", "etcd"}),
               kind);
        }
      }
    }
    if (const auto r = g.find("retry"); r != g.end()) {
      object(*r, at + "/retry", {"max_attempts", "base_delay_ms"});
      if (const auto m = r->find("max_attempts"); m != r->end()) c.retry_attempts = number(*m, at + "/retry/max_attempts", 1, 100);
      if (const auto b = r->find("base_delay_ms"); b != r->end())
        c.retry_base_delay = std::chrono::milliseconds(number(*b, at + "/retry/base_delay_ms", 0, 600'000));
    }
    if (const auto a = g.find("audit"); a != g.end()) {
      c.audit = text(*a, at + "/audit");
      if (c.audit != "stderr" && !c.audit.empty()) c.audit = resolve(c.audit).string();
    }
    if (const auto m = g.find("max_concurrent_calls"); m != g.end())
      c.max_concurrent_calls = number(*m, at + "/max_concurrent_calls", 1, 4096);
    if (const auto t = g.find("threads"); t != g.end()) c.threads = number(*t, at + "/threads", 0, 256);
    if (const auto s = g.find("shutdown_grace_ms"); s != g.end())
      c.shutdown_grace = std::chrono::milliseconds(number(*s, at + "/shutdown_grace_ms", 0, 3'600'000));
    if (const auto h = g.find("http"); h != g.end()) {
      object(*h, at + "/http", {"path", "metrics_path", "allowed_hosts", "allowed_origins", "authorization"});
      if (const auto a = h->find("authorization"); a != h->end()) c.authorization = authorization(*a, at + "/http/authorization");
      if (const auto p = h->find("path"); p != h->end()) {
        c.http_path = text(*p, at + "/http/path", false);
        if (c.http_path.empty() || c.http_path.front() != '/') fail(at + "/http/path", "expected a path starting with '/'", c.http_path);
      }
      if (const auto p = h->find("metrics_path"); p != h->end()) {
        c.metrics_path = text(*p, at + "/http/metrics_path", false);
        if (!c.metrics_path.empty() && c.metrics_path.front() != '/')
          fail(at + "/http/metrics_path", "expected a path starting with '/', or \"\" for none", c.metrics_path);
      }
      if (!c.metrics_path.empty() && c.metrics_path == c.http_path)
        fail(at + "/http/metrics_path", "is the MCP endpoint's path", c.metrics_path);
      if (const auto l = h->find("allowed_hosts"); l != h->end()) c.allowed_hosts = list(*l, at + "/http/allowed_hosts", false);
      if (const auto l = h->find("allowed_origins"); l != h->end())
        c.allowed_origins = list(*l, at + "/http/allowed_origins", false);
    }
  }
  std::filesystem::path resolve(const std::string& p) const {
    const std::filesystem::path path(p);
    return path.is_relative() && !base_.empty() ? base_ / path : path;
  }

  std::string file_;
  std::filesystem::path base_;
  gateway_env env_;
  std::string server_, tool_;  // where the reader is, for errors
};

}  // namespace detail

}  // namespace tool_effects

#endif  // TOOL_EFFECTS_MCP_GATEWAY_DETAIL_CONFIG_READER_HPP
