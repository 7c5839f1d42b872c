// tool_effects/mcp/client/impl/client.ipp — the definitions of `mcp_client`'s members and of the free helpers
// declared in <tool_effects/mcp/client.hpp> and <tool_effects/mcp/capabilities.hpp>, but for those that start a
// child process (impl/stdio.ipp) or connect over HTTP (impl/http.ipp): included at the end of client.hpp
// (header-only, the default), or compiled once by <tool_effects/mcp/client/impl/src.hpp>
// (TOOL_EFFECTS_SEPARATE_COMPILATION).
#ifndef TOOL_EFFECTS_MCP_CLIENT_IMPL_CLIENT_IPP
#define TOOL_EFFECTS_MCP_CLIENT_IMPL_CLIENT_IPP

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <filesystem>
#include <future>
#include <memory>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/use_future.hpp>

#include <tool_effects/detail/executor.hpp>
#include <tool_effects/detail/str_cat.hpp>
#include <tool_effects/json/detail/dump.hpp>
#include <tool_effects/mcp/client.hpp>
#include <tool_effects/mcp/client/detail/handlers.hpp>
#include <tool_effects/mcp/client/detail/state.hpp>
#include <tool_effects/mcp/errors.hpp>

namespace tool_effects {

TOOL_EFFECTS_DECL mcp_client::state_ptr mcp_client::make_state(boost::asio::any_io_executor ex,
                                                    std::shared_ptr<detail::mcp_shared> shared) {
  return state_ptr(new detail::mcp_client_state(std::move(ex), std::move(shared)), closer{});
}

TOOL_EFFECTS_DECL void mcp_client::start() { blocking(async_restart()); }
TOOL_EFFECTS_DECL boost::asio::awaitable<void> mcp_client::async_start() { return async_restart(); }

TOOL_EFFECTS_DECL void mcp_client::restart() { blocking(async_restart()); }
TOOL_EFFECTS_DECL boost::asio::awaitable<void> mcp_client::async_restart() {
  return boost::asio::co_spawn(state_->strand, detail::mcp_client_state::restart(state_), boost::asio::use_awaitable);
}

TOOL_EFFECTS_DECL void mcp_client::close() { blocking(async_close()); }
TOOL_EFFECTS_DECL boost::asio::awaitable<void> mcp_client::async_close() {
  return boost::asio::co_spawn(state_->strand, detail::mcp_client_state::close(state_), boost::asio::use_awaitable);
}

TOOL_EFFECTS_DECL std::future<void> mcp_client::start_close() {
  return boost::asio::co_spawn(state_->strand, detail::mcp_client_state::close(state_), boost::asio::use_future);
}

TOOL_EFFECTS_DECL void mcp_close_all(std::span<const mcp_client> clients) {
  for (const auto& c : clients)
    detail::check_not_inside(detail::mcp_strand_probe{c.state_->strand}, "mcp_close_all",
                             "use async_close on the client's own strand");
  std::vector<std::future<void>> closing;
  closing.reserve(clients.size());
  for (const auto& c : clients)
    closing.push_back(boost::asio::co_spawn(c.state_->strand, detail::mcp_client_state::close(c.state_),
                                            boost::asio::use_future));
  std::exception_ptr first;
  for (auto& f : closing) {
    try {
      f.get();
    } catch (...) {
      if (!first) first = std::current_exception();
    }
  }
  if (first) std::rethrow_exception(first);
}

TOOL_EFFECTS_DECL boost::asio::awaitable<nlohmann::json> mcp_client::async_request(std::string method, nlohmann::json params,
                                                                        std::optional<std::chrono::milliseconds> timeout) {
  return request_op(state_, std::move(method), std::move(params), timeout);
}
TOOL_EFFECTS_DECL nlohmann::json mcp_client::request(std::string method, nlohmann::json params,
                                          std::optional<std::chrono::milliseconds> timeout) {
  return blocking(async_request(std::move(method), std::move(params), timeout));
}

TOOL_EFFECTS_DECL boost::asio::awaitable<void> mcp_client::async_ping() { return ping_op(state_); }
TOOL_EFFECTS_DECL void mcp_client::ping() { blocking(async_ping()); }

TOOL_EFFECTS_DECL boost::asio::awaitable<nlohmann::json> mcp_client::async_list_tools() { return list_tools_op(state_); }
TOOL_EFFECTS_DECL nlohmann::json mcp_client::list_tools() { return blocking(async_list_tools()); }

TOOL_EFFECTS_DECL boost::asio::awaitable<nlohmann::json> mcp_client::async_call(std::string tool, nlohmann::json arguments,
                                                                     std::optional<std::chrono::milliseconds> timeout,
                                                                     mcp_call_progress on_progress) {
  return call_op(state_, std::move(tool), std::move(arguments), timeout, std::move(on_progress));
}
TOOL_EFFECTS_DECL nlohmann::json mcp_client::call(std::string tool, nlohmann::json arguments,
                                       std::optional<std::chrono::milliseconds> timeout, mcp_call_progress on_progress) {
  return blocking(async_call(std::move(tool), std::move(arguments), timeout, std::move(on_progress)));
}

TOOL_EFFECTS_DECL void mcp_client::notify_roots_list_changed() {
  if (!state_->shared->options.roots)
    throw std::logic_error("mcp_client::notify_roots_list_changed: options.roots is not set (no roots capability)");
  boost::asio::co_spawn(state_->strand, detail::mcp_client_state::notify(state_, "notifications/roots/list_changed"),
                        boost::asio::detached);
}

TOOL_EFFECTS_DECL const std::string& mcp_client::name() const noexcept { return state_->shared->name; }
TOOL_EFFECTS_DECL int mcp_client::pid() const noexcept { return state_->shared->pid.load(); }
TOOL_EFFECTS_DECL std::vector<std::string> mcp_client::stderr_tail() const { return state_->shared->stderr_ring.lines(); }
TOOL_EFFECTS_DECL std::uint64_t mcp_client::unknown_responses() const noexcept {
  return state_->shared->counters->unknown_responses.load();
}
TOOL_EFFECTS_DECL std::uint64_t mcp_client::timeouts() const noexcept { return state_->shared->counters->timeouts.load(); }
TOOL_EFFECTS_DECL std::uint64_t mcp_client::ignored_messages() const noexcept { return state_->shared->counters->ignored_messages.load(); }
TOOL_EFFECTS_DECL nlohmann::json mcp_client::server_info() const { return state_->shared->info.server_info(); }
TOOL_EFFECTS_DECL std::string mcp_client::protocol_version() const { return state_->shared->info.protocol_version(); }
TOOL_EFFECTS_DECL std::size_t mcp_client::restarts() const { return state_->shared->info.restarts(); }

TOOL_EFFECTS_DECL boost::asio::awaitable<nlohmann::json> mcp_client::request_op(const state_ptr& s, std::string method,
                                                                     nlohmann::json params,
                                                                     std::optional<std::chrono::milliseconds> timeout) {
  return boost::asio::co_spawn(s->strand,
                               detail::mcp_client_state::request(s, std::move(method), std::move(params),
                                                                 timeout.value_or(s->shared->options.request_timeout)),
                               boost::asio::use_awaitable);
}

TOOL_EFFECTS_DECL boost::asio::awaitable<void> mcp_client::ping_op(state_ptr s) {
  // 2026-07-28 removed ping; server/discover is the cheapest request there.
  const bool modern = mcp_version_is_modern(s->shared->info.protocol_version());
  (void)co_await request_op(s, modern ? "server/discover" : "ping", nlohmann::json::object(), std::nullopt);
}

TOOL_EFFECTS_DECL boost::asio::awaitable<nlohmann::json> mcp_client::list_tools_op(state_ptr s) {
  const std::string& name = s->shared->name;
  const std::size_t max_pages = s->shared->options.max_list_tools_pages;
  const std::size_t max_bytes = s->shared->options.max_list_tools_bytes;
  nlohmann::json tools = nlohmann::json::array();
  std::size_t bytes = 0;
  std::optional<std::string> cursor;
  for (std::size_t page = 0;; ++page) {
    if (page == max_pages) {
      throw mcp_error(mcp_error_kind::protocol_error, name,
                      detail::str_cat("tools/list: more than ", std::to_string(max_pages), " pages (options.max_list_tools_pages)"));
    }
    nlohmann::json params = nlohmann::json::object();
    if (cursor) params["cursor"] = *cursor;
    nlohmann::json r = co_await request_op(s, "tools/list", std::move(params), std::nullopt);
    if (!r.is_object() || !r.contains("tools") || !r["tools"].is_array()) {
      throw mcp_error(mcp_error_kind::protocol_error, name,
                      detail::str_cat("tools/list result has no \"tools\" array: ", detail::quote_text(detail::mcp_dump(r))));
    }
    bytes += detail::mcp_dump(r["tools"]).size();
    if (bytes > max_bytes) {
      throw mcp_error(mcp_error_kind::protocol_error, name,
                      detail::str_cat("tools/list: the tools of ", std::to_string(page + 1), " pages take ",
                                      std::to_string(bytes), " bytes, more than ", std::to_string(max_bytes),
                                      " (options.max_list_tools_bytes)"));
    }
    for (auto& t : r["tools"]) tools.push_back(std::move(t));
    const auto next = r.find("nextCursor");
    if (next == r.end() || !next->is_string()) break;
    cursor = next->get<std::string>();
  }
  co_return nlohmann::json{{"tools", std::move(tools)}};
}

TOOL_EFFECTS_DECL boost::asio::awaitable<nlohmann::json> mcp_client::call_op(state_ptr s, std::string tool,
                                                                  nlohmann::json arguments,
                                                                  std::optional<std::chrono::milliseconds> timeout,
                                                                  mcp_call_progress on_progress) {
  nlohmann::json params = {{"name", tool}, {"arguments", std::move(arguments)}};
  std::optional<detail::mcp_progress_routes::registration> progress;  // unregistered when the call ends
  if (on_progress) {
    progress.emplace(s->shared->caps.progress, std::move(on_progress));
    params["_meta"] = {{"progressToken", progress->token()}};
  }
  nlohmann::json r = co_await request_op(s, "tools/call", std::move(params), timeout);
  if (!r.is_object()) {
    throw mcp_error(mcp_error_kind::protocol_error, s->shared->name,
                    detail::str_cat("tools/call result is not an object: ", detail::quote_text(detail::mcp_dump(r))));
  }
  if (const auto e = r.find("isError"); e != r.end() && e->is_boolean() && e->get<bool>()) {
    std::string text = mcp_text(r);  // what() quotes at most 2000 bytes; result() has it all
    if (text.size() > 2000) {
      text.resize(2000);
      text += "...";
    }
    throw mcp_tool_error(s->shared->name, tool, text, std::move(r));
  }
  co_return r;
}

TOOL_EFFECTS_DECL void mcp_client::closer::operator()(detail::mcp_client_state* p) const {
  std::shared_ptr<detail::mcp_client_state> s(p);
  auto strand = s->strand;
  try {
    boost::asio::co_spawn(strand, detail::mcp_client_state::close(std::move(s)), boost::asio::detached);
  } catch (...) {  // the state, and with it the child, dies here
  }
}

template <class T>
T mcp_client::blocking(boost::asio::awaitable<T> op) {
  detail::check_not_inside(detail::mcp_strand_probe{state_->strand}, "mcp_client",
                           "use the async_* members on the client's own strand");
  return boost::asio::co_spawn(detail::mcp_inner_executor(state_->strand), std::move(op), boost::asio::use_future).get();
}

TOOL_EFFECTS_DECL std::string mcp_text(const nlohmann::json& result) {
  std::string out;
  const auto c = result.is_object() ? result.find("content") : result.end();
  if (!result.is_object() || c == result.end() || !c->is_array()) return out;
  for (const auto& item : *c) {
    if (!out.empty()) out += '\n';
    if (item.is_object() && item.value("type", "") == "text" && item.contains("text") && item["text"].is_string())
      out += item["text"].get<std::string>();
    else
      detail::json_dump_to(out, item);
  }
  return out;
}

TOOL_EFFECTS_DECL nlohmann::json mcp_elicitation_content(const nlohmann::json& requested_schema, nlohmann::json content) {
  return detail::elicit::content_of(detail::elicit::form_of(requested_schema), std::move(content));
}

TOOL_EFFECTS_DECL std::vector<mcp_url_elicitation_request> mcp_url_elicitations(const mcp_rpc_error& e) {
  namespace el = detail::elicit;
  std::vector<mcp_url_elicitation_request> out;
  if (e.code() != mcp_url_elicitation_required_code) return out;
  const nlohmann::json& data = e.data();
  const std::string base = "/error/data";
  if (!data.is_object()) el::fail(base, detail::expected("an object", data));
  const nlohmann::json* list = el::member(data, "elicitations");
  if (!list || !list->is_array())
    el::fail(base + "/elicitations", list ? detail::expected("an array", *list) : std::string("missing"));
  if (list->empty()) el::fail(base + "/elicitations", "empty (a URLElicitationRequiredError lists what to do)");
  if (list->size() > detail::mcp_max_required_elicitations)
    el::fail(base + "/elicitations", detail::str_cat(std::to_string(list->size()), " elicitations, more than ",
                                                     std::to_string(detail::mcp_max_required_elicitations)));
  for (std::size_t i = 0; i < list->size(); ++i) {
    const std::string at = detail::str_cat(base, "/elicitations/", std::to_string(i));
    const nlohmann::json& one = (*list)[i];
    const nlohmann::json* mode = one.is_object() ? el::member(one, "mode") : nullptr;
    if (!mode || *mode != "url")
      el::fail(at + "/mode", "a URLElicitationRequiredError lists URL-mode elicitations only (mode \"url\")");
    out.push_back(el::url_request_of(e.server(), one, at));
  }
  return out;
}

}  // namespace tool_effects

#endif  // TOOL_EFFECTS_MCP_CLIENT_IMPL_CLIENT_IPP
