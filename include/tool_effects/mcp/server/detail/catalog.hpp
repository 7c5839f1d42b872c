// tool_effects/mcp/server/detail/catalog.hpp — internal to <tool_effects/mcp/server.hpp>: the resources,
// resource templates and prompts an mcp_server serves besides its tools, and `completion/complete` for their
// arguments. The public types below are what an application registers (mcp_server::add_resource, ...); the
// catalog reads every request strictly (errors name the member by JSON pointer) and bounds every input.
// See docs/mcp-server.md ("Resources, prompts and completion").
#ifndef TOOL_EFFECTS_MCP_SERVER_DETAIL_CATALOG_HPP
#define TOOL_EFFECTS_MCP_SERVER_DETAIL_CATALOG_HPP

#include <algorithm>
#include <cstddef>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <boost/asio/awaitable.hpp>

#include <nlohmann/json.hpp>

#include <tool_effects/detail/str_cat.hpp>
#include <tool_effects/json.hpp>
#include <tool_effects/mcp/server/detail/core.hpp>
#include <tool_effects/mcp/server/resources.hpp>
#include <tool_effects/net/url.hpp>

namespace tool_effects {

namespace detail {

// JSON-RPC code of an unknown resource before 2026-07-28 (the 2025 specifications' "Resource not found"); the
// 2026-07-28 era (SEP-2164) answers -32602. Both carry the URI as data.uri.
inline constexpr int rpc_resource_not_found = -32002;
inline constexpr int rpc_invalid_request = -32600;

// The subscriptions of one session (resources/subscribe), and how to tell it that a resource changed.
struct mcp_resource_subscriptions {
  std::mutex m;
  std::set<std::string> uris;
  bool listed = false;  // in its server's list (set once, under the server's catalog mutex)
  std::function<void(nlohmann::json params)> send_updated;  // notifications/resources/updated; thread-safe
};

// The literal parts and variables of a level-1 URI template, alternating: literal, variable, literal, ...
// (first and last literals possibly empty). Throws std::invalid_argument for an unclosed or empty `{}`, a
// variable with an operator (`{+x}`, ...) or two variables next to each other (ambiguous).
struct uri_template_parts {
  std::vector<std::string> literals;
  std::vector<std::string> variables;
};
inline uri_template_parts parse_uri_template(std::string_view t) {
  uri_template_parts p;
  p.literals.emplace_back();
  for (std::size_t i = 0; i < t.size(); ++i) {
    if (t[i] == '{') {
      const std::size_t end = t.find('}', i);
      const std::string_view name = end == std::string_view::npos ? std::string_view() : t.substr(i + 1, end - i - 1);
      if (end == std::string_view::npos || name.empty() || name.find_first_of("+#./;?&=,!@|{") != std::string_view::npos)
        throw std::invalid_argument(str_cat("mcp_resource_template: bad variable at byte ", std::to_string(i),
                                            " of ", quote_input(t), " (expected {name}, RFC 6570 level 1)"));
      if (!p.variables.empty() && p.literals.back().empty())
        throw std::invalid_argument(str_cat("mcp_resource_template: two variables without text between them in ",
                                            quote_input(t)));
      p.variables.emplace_back(name);
      p.literals.emplace_back();
      i = end;
    } else {
      p.literals.back() += t[i];
    }
  }
  return p;
}

// The variables of `uri` when it matches the template, else nothing.
inline std::optional<std::map<std::string, std::string>> match_uri_template(const uri_template_parts& p,
                                                                            std::string_view uri) {
  if (uri.substr(0, p.literals[0].size()) != p.literals[0]) return std::nullopt;
  std::size_t at = p.literals[0].size();
  std::map<std::string, std::string> vars;
  for (std::size_t v = 0; v < p.variables.size(); ++v) {
    const std::string& next = p.literals[v + 1];
    std::size_t end;
    if (next.empty()) {  // the last variable: the rest
      end = uri.size();
    } else {
      end = uri.find(next, at);
      if (end == std::string_view::npos) return std::nullopt;
    }
    const std::string_view value = uri.substr(at, end - at);
    if (value.empty() || value.find('/') != std::string_view::npos) return std::nullopt;
    vars[p.variables[v]] = std::string(value);
    at = end + next.size();
  }
  if (at != uri.size()) return std::nullopt;
  return vars;
}

inline mcp_server_error invalid_params(std::string_view at, std::string_view message) {
  return mcp_server_error(rpc_invalid_params, str_cat("Invalid params: at ", at, ": ", message));
}

// The variables of `uri` when it matches the template, percent-decoded (RFC 3986, net::percent_decode: "%2F" is
// a '/' inside a value); else nothing. A value with a broken escape or one decoding to NUL is invalid params at
// /uri, with the URL error's stable reason (bad_percent, bad_character) and the URI.
inline std::optional<std::map<std::string, std::string>> template_variables(const uri_template_parts& p,
                                                                            std::string_view uri) {
  auto v = match_uri_template(p, uri);
  if (!v) return v;
  for (auto& [name, value] : *v) try {
      value = net::percent_decode(value, uri);
    } catch (const net::url_error& e) {
      throw invalid_params("/uri", str_cat(e.reason(), ": ", e.what(), " (in the value of ", quote_input(name), ")"));
    }
  return v;
}

// A string member `key` of `params` (an object), required, non-empty, at most `max` bytes.
inline std::string read_string_member(const nlohmann::json& params, std::string_view key, std::size_t max) {
  if (!params.is_object()) throw invalid_params("", str_cat(expected("an object", params), ": ", preview(params)));
  const auto it = params.find(key);
  if (it == params.end()) throw mcp_server_error(rpc_invalid_params, str_cat("Invalid params: missing required key \"", key, "\""));
  const std::string at = str_cat("/", pointer_token(key));
  if (!it->is_string()) throw invalid_params(at, str_cat(expected("a string", *it), ": ", preview(*it)));
  const auto& s = it->get_ref<const std::string&>();
  if (s.empty()) throw invalid_params(at, "expected a non-empty string");
  if (s.size() > max)
    throw invalid_params(at, str_cat("longer than ", std::to_string(max), " bytes: ", preview(*it)));
  return s;
}

// An optional object of string values `params`[key] (arguments of prompts/get, a completion's context): at
// most mcp_max_prompt_arguments of at most mcp_max_argument_bytes each.
inline std::map<std::string, std::string> read_string_map(const nlohmann::json& v, const std::string& at) {
  std::map<std::string, std::string> out;
  if (v.is_null()) return out;
  if (!v.is_object()) throw invalid_params(at, str_cat(expected("an object", v), ": ", preview(v)));
  if (v.size() > mcp_max_prompt_arguments)
    throw invalid_params(at, str_cat("more than ", std::to_string(mcp_max_prompt_arguments), " arguments (",
                                     std::to_string(v.size()), ")"));
  for (const auto& [k, x] : v.items()) {
    const std::string here = str_cat(at, "/", pointer_token(k));
    if (!x.is_string()) throw invalid_params(here, str_cat(expected("a string", x), ": ", preview(x)));
    if (x.get_ref<const std::string&>().size() > mcp_max_argument_bytes)
      throw invalid_params(here, str_cat("longer than ", std::to_string(mcp_max_argument_bytes), " bytes"));
    out.emplace(k, x.get<std::string>());
  }
  return out;
}

// What an mcp_server serves besides its tools. Thread-safe: registration may happen while requests are served;
// the application's callbacks run outside the lock.
class mcp_catalog {
 public:
  void add(mcp_resource r) {
    if (r.uri.empty() || r.name.empty()) throw std::invalid_argument("mcp_resource: uri and name must not be empty");
    std::lock_guard lock(m_);
    for (const auto& x : resources_)
      if (x.uri == r.uri) throw std::invalid_argument(str_cat("mcp_resource: URI ", quote_input(r.uri), " is already registered"));
    resources_.push_back(std::move(r));
  }
  void add(mcp_resource_template t) {
    if (t.uri_template.empty() || t.name.empty())
      throw std::invalid_argument("mcp_resource_template: uri_template and name must not be empty");
    if (!t.read) throw std::invalid_argument(str_cat("mcp_resource_template ", quote_input(t.uri_template), ": read is empty"));
    uri_template_parts parts = parse_uri_template(t.uri_template);
    for (const auto& [var, f] : t.complete)
      if (std::find(parts.variables.begin(), parts.variables.end(), var) == parts.variables.end())
        throw std::invalid_argument(str_cat("mcp_resource_template ", quote_input(t.uri_template), ": completion for ",
                                            quote_input(var), ", which is not one of its variables"));
    std::lock_guard lock(m_);
    for (const auto& x : templates_)
      if (x.t.uri_template == t.uri_template)
        throw std::invalid_argument(str_cat("mcp_resource_template: ", quote_input(t.uri_template), " is already registered"));
    templates_.push_back({std::move(t), std::move(parts)});
  }
  void add(mcp_prompt p) {
    if (p.name.empty()) throw std::invalid_argument("mcp_prompt: name must not be empty");
    if (!p.get && !p.get_asking)
      throw std::invalid_argument(str_cat("mcp_prompt ", quote_input(p.name), ": get is empty"));
    std::set<std::string> seen;
    for (const auto& a : p.arguments)
      if (a.name.empty() || !seen.insert(a.name).second)
        throw std::invalid_argument(str_cat("mcp_prompt ", quote_input(p.name), ": argument names must be non-empty and unique"));
    std::lock_guard lock(m_);
    for (const auto& x : prompts_)
      if (x.name == p.name) throw std::invalid_argument(str_cat("mcp_prompt: ", quote_input(p.name), " is already registered"));
    prompts_.push_back(std::move(p));
  }

  // The capabilities to declare besides tools and logging (`subscribe`: whether resources/subscribe is served).
  void add_capabilities(nlohmann::json& caps, bool subscribe) const {
    std::lock_guard lock(m_);
    if (!resources_.empty() || !templates_.empty()) {
      caps["resources"] = {{"listChanged", false}};
      if (subscribe) caps["resources"]["subscribe"] = true;
    }
    if (!prompts_.empty()) caps["prompts"] = {{"listChanged", false}};
    if (!prompts_.empty() || !templates_.empty()) caps["completions"] = nlohmann::json::object();
  }

  // Whether `method` is one this catalog answers now: resources/* once a resource or template is registered,
  // prompts/* once a prompt is, completion/complete once either prompts or templates are (the capabilities
  // declared); before that, the method is not found (-32601), as for a server without them.
  bool serves(std::string_view method) const {
    std::lock_guard lock(m_);
    const bool resources = !resources_.empty() || !templates_.empty();
    if (method == "resources/list" || method == "resources/templates/list" || method == "resources/read" ||
        method == "resources/subscribe" || method == "resources/unsubscribe")
      return resources;
    if (method == "prompts/list" || method == "prompts/get") return !prompts_.empty();
    if (method == "completion/complete") return !prompts_.empty() || !templates_.empty();
    return false;
  }

  nlohmann::json list_resources() const {
    nlohmann::json out = nlohmann::json::array();
    std::lock_guard lock(m_);
    for (const auto& r : resources_) {
      nlohmann::json e = described(r.name, r.title, r.description, r.mime_type);
      e["uri"] = r.uri;
      out.push_back(std::move(e));
    }
    return {{"resources", std::move(out)}};
  }
  nlohmann::json list_templates() const {
    nlohmann::json out = nlohmann::json::array();
    std::lock_guard lock(m_);
    for (const auto& x : templates_) {
      nlohmann::json e = described(x.t.name, x.t.title, x.t.description, x.t.mime_type);
      e["uriTemplate"] = x.t.uri_template;
      out.push_back(std::move(e));
    }
    return {{"resourceTemplates", std::move(out)}};
  }
  nlohmann::json list_prompts() const {
    nlohmann::json out = nlohmann::json::array();
    std::lock_guard lock(m_);
    for (const auto& p : prompts_) {
      nlohmann::json e = described(p.name, p.title, p.description, "");
      nlohmann::json args = nlohmann::json::array();
      for (const auto& a : p.arguments) {
        nlohmann::json j = described(a.name, a.title, a.description, "");
        j["required"] = a.required;
        args.push_back(std::move(j));
      }
      e["arguments"] = std::move(args);
      out.push_back(std::move(e));
    }
    return {{"prompts", std::move(out)}};
  }

  // resources/read: a static resource, else the first template that matches; none (or a template's empty
  // contents): the not-found error of the era (`modern`: -32602, else -32002), data {uri}.
  nlohmann::json read(const nlohmann::json& params, bool modern) const {
    const std::string uri = read_string_member(params, "uri", mcp_max_uri_bytes);
    std::function<std::vector<mcp_resource_content>(const std::string&, const std::map<std::string, std::string>&)> f;
    std::map<std::string, std::string> vars;
    {
      std::lock_guard lock(m_);
      for (const auto& r : resources_)
        if (r.uri == uri) {
          mcp_resource_content c{r.uri, r.mime_type, r.text, r.blob};
          return {{"contents", nlohmann::json::array({mcp_resource_content_json(c)})}};
        }
      for (const auto& x : templates_)
        if (auto v = template_variables(x.parts, uri)) {
          f = x.t.read;
          vars = std::move(*v);
          break;
        }
    }
    std::vector<mcp_resource_content> contents;
    if (f) contents = f(uri, vars);
    if (contents.empty()) throw not_found(uri, modern);
    nlohmann::json out = nlohmann::json::array();
    for (const auto& c : contents) out.push_back(mcp_resource_content_json(c));
    return {{"contents", std::move(out)}};
  }

  // The URI of resources/subscribe or unsubscribe, which must name a resource of this catalog (a static one, or
  // one a template matches): else the not-found error.
  std::string subscribable_uri(const nlohmann::json& params) const {
    const std::string uri = read_string_member(params, "uri", mcp_max_uri_bytes);
    std::lock_guard lock(m_);
    for (const auto& r : resources_)
      if (r.uri == uri) return uri;
    for (const auto& x : templates_)
      if (template_variables(x.parts, uri)) return uri;
    throw not_found(uri, false);
  }

  // The prompt prompts/get names and its arguments, read strictly (strings; every required one; no other).
  std::pair<mcp_prompt, std::map<std::string, std::string>> checked_prompt(const nlohmann::json& params) const {
    const std::string name = read_string_member(params, "name", mcp_max_uri_bytes);
    std::map<std::string, std::string> args =
        read_string_map(params.contains("arguments") ? params["arguments"] : nlohmann::json(), "/arguments");
    mcp_prompt p;
    {
      std::lock_guard lock(m_);
      const mcp_prompt* found = find_prompt(name);
      if (!found) throw mcp_server_error(rpc_invalid_params, str_cat("Invalid params: at /name: unknown prompt ", quote_input(name)));
      p = *found;
    }
    for (const auto& a : p.arguments)
      if (a.required && !args.contains(a.name))
        throw invalid_params("/arguments", str_cat("missing required argument ", quote_input(a.name), " of prompt ",
                                                   quote_input(name)));
    for (const auto& [k, v] : args) {
      bool known = false;
      for (const auto& a : p.arguments) known = known || a.name == k;
      if (!known)
        throw invalid_params(str_cat("/arguments/", pointer_token(k)),
                             str_cat("not an argument of prompt ", quote_input(name)));
    }
    return {std::move(p), std::move(args)};
  }
  // The GetPromptResult of `p` with `messages`.
  static nlohmann::json prompt_result(const mcp_prompt& p, std::vector<mcp_prompt_message> messages) {
    nlohmann::json out = nlohmann::json::array();
    for (auto& m : messages) out.push_back({{"role", std::move(m.role)}, {"content", std::move(m.content)}});
    nlohmann::json r = {{"messages", std::move(out)}};
    if (!p.description.empty()) r["description"] = p.description;
    return r;
  }
  // Whether prompts/get of `params` names a prompt that asks its client (`get_asking`).
  bool prompt_asks(const nlohmann::json& params) const {
    const auto n = params.is_object() ? params.find("name") : params.end();
    if (n == params.end() || !n->is_string()) return false;
    std::lock_guard lock(m_);
    const mcp_prompt* found = find_prompt(n->get<std::string>());
    return found && !found->get && found->get_asking;
  }

  // prompts/get: the prompt's messages for its arguments.
  nlohmann::json get_prompt(const nlohmann::json& params) const {
    auto [p, args] = checked_prompt(params);
    if (!p.get)  // a prompt that asks its client is served by mcp_server (prompt_asks)
      throw mcp_server_error(rpc_invalid_params, str_cat("Invalid params: at /name: prompt ", quote_input(p.name),
                                                         " asks its client, which this request cannot"));
    return prompt_result(p, p.get(args));
  }

  // completion/complete: ref {type "ref/prompt", name} or {type "ref/resource", uri (a registered template)},
  // argument {name, value}, context {arguments} optional. An argument without a completer: no values.
  nlohmann::json complete(const nlohmann::json& params) const {
    if (!params.is_object()) throw invalid_params("", str_cat(expected("an object", params), ": ", preview(params)));
    const auto ref = params.find("ref");
    if (ref == params.end()) throw mcp_server_error(rpc_invalid_params, "Invalid params: missing required key \"ref\"");
    const std::string type = str_at("/ref", *ref, "type", 64);
    const auto arg = params.find("argument");
    if (arg == params.end()) throw mcp_server_error(rpc_invalid_params, "Invalid params: missing required key \"argument\"");
    const std::string arg_name = str_at("/argument", *arg, "name", mcp_max_uri_bytes);
    if (!arg->contains("value")) throw invalid_params("/argument", "missing required key \"value\"");
    const nlohmann::json& value = (*arg)["value"];
    if (!value.is_string()) throw invalid_params("/argument/value", str_cat(expected("a string", value), ": ", preview(value)));
    if (value.get_ref<const std::string&>().size() > mcp_max_argument_bytes)
      throw invalid_params("/argument/value", str_cat("longer than ", std::to_string(mcp_max_argument_bytes), " bytes"));
    std::map<std::string, std::string> context;
    if (const auto c = params.find("context"); c != params.end() && !c->is_null()) {
      if (!c->is_object()) throw invalid_params("/context", str_cat(expected("an object", *c), ": ", preview(*c)));
      if (c->contains("arguments")) context = read_string_map((*c)["arguments"], "/context/arguments");
    }
    mcp_completer f;
    {
      std::lock_guard lock(m_);
      if (type == "ref/prompt") {
        const std::string name = str_at("/ref", *ref, "name", mcp_max_uri_bytes);
        const mcp_prompt* p = find_prompt(name);
        if (!p) throw invalid_params("/ref/name", str_cat("unknown prompt ", quote_input(name)));
        const mcp_prompt_argument* a = nullptr;
        for (const auto& x : p->arguments)
          if (x.name == arg_name) a = &x;
        if (!a) throw invalid_params("/argument/name", str_cat("not an argument of prompt ", quote_input(name), ": ", quote_input(arg_name)));
        f = a->complete;
      } else if (type == "ref/resource") {
        const std::string uri = str_at("/ref", *ref, "uri", mcp_max_uri_bytes);
        const template_entry* t = nullptr;
        for (const auto& x : templates_)
          if (x.t.uri_template == uri) t = &x;
        if (!t) throw invalid_params("/ref/uri", str_cat("unknown resource template ", quote_input(uri)));
        if (std::find(t->parts.variables.begin(), t->parts.variables.end(), arg_name) == t->parts.variables.end())
          throw invalid_params("/argument/name", str_cat("not a variable of resource template ", quote_input(uri), ": ",
                                                         quote_input(arg_name)));
        if (const auto it = t->t.complete.find(arg_name); it != t->t.complete.end()) f = it->second;
      } else {
        throw invalid_params("/ref/type", str_cat("expected \"ref/prompt\" or \"ref/resource\": ", quote_input(type)));
      }
    }
    std::vector<std::string> all;
    if (f) all = f(value.get<std::string>(), context);
    nlohmann::json values = nlohmann::json::array();
    for (std::size_t i = 0; i < all.size() && i < mcp_max_completion_values; ++i) values.push_back(valid_utf8(all[i]));
    return {{"completion",
             {{"values", std::move(values)}, {"total", all.size()}, {"hasMore", all.size() > mcp_max_completion_values}}}};
  }

  // Subscriptions: a session's set joins the list on its first subscription; `updated` tells every live session
  // subscribed to `uri` (sessions that ended drop out of the list here).
  void list_subscriber(const std::shared_ptr<mcp_resource_subscriptions>& s) {
    std::lock_guard lock(m_);
    if (s->listed) return;
    s->listed = true;
    // Sessions that ended drop out here too, so the list stays within the live sessions (plus those that ended
    // since the last subscription) even when the application never calls resource_updated.
    std::erase_if(subscribers_, [](const auto& w) { return w.expired(); });
    subscribers_.push_back(s);
  }
  // The sessions in the subscription list (live or not yet pruned).
  std::size_t subscriber_count() const {
    std::lock_guard lock(m_);
    return subscribers_.size();
  }
  void updated(std::string_view uri) {
    std::vector<std::shared_ptr<mcp_resource_subscriptions>> live;
    {
      std::lock_guard lock(m_);
      std::erase_if(subscribers_, [](const auto& w) { return w.expired(); });
      for (const auto& w : subscribers_)
        if (auto s = w.lock()) live.push_back(std::move(s));
    }
    const nlohmann::json params = {{"uri", std::string(uri)}};
    for (const auto& s : live) {
      bool subscribed;
      {
        std::lock_guard lock(s->m);
        subscribed = s->uris.contains(std::string(uri));
      }
      if (subscribed && s->send_updated) s->send_updated(params);
    }
  }

 private:
  struct template_entry {
    mcp_resource_template t;
    uri_template_parts parts;
  };

  static nlohmann::json described(const std::string& name, const std::string& title, const std::string& description,
                                  const std::string& mime_type) {
    nlohmann::json e = {{"name", name}};
    if (!title.empty()) e["title"] = title;
    if (!description.empty()) e["description"] = description;
    if (!mime_type.empty()) e["mimeType"] = mime_type;
    return e;
  }
  static mcp_server_error not_found(const std::string& uri, bool modern) {
    return mcp_server_error(modern ? rpc_invalid_params : rpc_resource_not_found,
                            str_cat("Resource not found: ", quote_input(uri)),
                            nlohmann::json{{"uri", valid_utf8(uri)}});
  }
  // The string member `key` of the object `v` found at `at` (required, non-empty, at most `max` bytes).
  static std::string str_at(const std::string& at, const nlohmann::json& v, std::string_view key, std::size_t max) {
    if (!v.is_object()) throw invalid_params(at, str_cat(expected("an object", v), ": ", preview(v)));
    const auto it = v.find(key);
    if (it == v.end()) throw invalid_params(at, str_cat("missing required key \"", key, "\""));
    const std::string here = str_cat(at, "/", pointer_token(key));
    if (!it->is_string()) throw invalid_params(here, str_cat(expected("a string", *it), ": ", preview(*it)));
    const auto& s = it->get_ref<const std::string&>();
    if (s.empty()) throw invalid_params(here, "expected a non-empty string");
    if (s.size() > max) throw invalid_params(here, str_cat("longer than ", std::to_string(max), " bytes"));
    return s;
  }
  const mcp_prompt* find_prompt(const std::string& name) const {
    for (const auto& p : prompts_)
      if (p.name == name) return &p;
    return nullptr;
  }

  mutable std::mutex m_;
  std::vector<mcp_resource> resources_;
  std::vector<template_entry> templates_;
  std::vector<mcp_prompt> prompts_;
  std::vector<std::weak_ptr<mcp_resource_subscriptions>> subscribers_;
};

}  // namespace detail
}  // namespace tool_effects

#endif  // TOOL_EFFECTS_MCP_SERVER_DETAIL_CATALOG_HPP
