// tool_effects/mcp/client/detail/handlers.hpp — internal to <tool_effects/mcp/client.hpp>: how the client
// answers the server's requests — the capabilities it declares (only what has a handler), the work of the
// application's handler for elicitation/create, sampling/createMessage and roots/list (checked by
// elicitation_schema.hpp and sampling_checks.hpp), which the session (session.hpp) runs bounded in number
// and time, and the same handlers answering a modern server's input requests (MRTR). See docs/mcp.md
// ("Client capabilities").
#ifndef TOOL_EFFECTS_MCP_CLIENT_DETAIL_HANDLERS_HPP
#define TOOL_EFFECTS_MCP_CLIENT_DETAIL_HANDLERS_HPP

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/use_awaitable.hpp>


#include <tool_effects/mcp/client/options.hpp>
#include <tool_effects/detail/str_cat.hpp>
#include <tool_effects/json/error.hpp>
#include <tool_effects/mcp/capabilities.hpp>
#include <tool_effects/mcp/protocol/detail/elicitation_schema.hpp>
#include <tool_effects/mcp/protocol/detail/mrtr_wire.hpp>
#include <tool_effects/mcp/protocol/detail/sampling_checks.hpp>
#include <tool_effects/mcp/protocol/detail/session.hpp>
#include <tool_effects/mcp/errors.hpp>

namespace tool_effects {
namespace detail {

// The `capabilities` of initialize: only what has a handler.
inline nlohmann::json mcp_client_capabilities(const mcp_client_options& o) {
  nlohmann::json c = nlohmann::json::object();
  if (o.on_elicitation || o.on_url_elicitation) {
    nlohmann::json modes = nlohmann::json::object();
    if (o.on_elicitation) modes["form"] = nlohmann::json::object();
    if (o.on_url_elicitation) modes["url"] = nlohmann::json::object();
    c["elicitation"] = std::move(modes);
  }
  if (o.on_sampling)
    c["sampling"] = o.sampling_tools ? nlohmann::json{{"tools", nlohmann::json::object()}} : nlohmann::json::object();
  if (o.roots) c["roots"] = {{"listChanged", true}};
  return c;
}

inline nlohmann::json mcp_roots_result(const std::vector<mcp_root>& roots) {
  nlohmann::json list = nlohmann::json::array();
  for (std::size_t i = 0; i < roots.size(); ++i) {
    if (roots[i].uri.rfind("file://", 0) != 0)
      elicit::fail(str_cat("/roots/", std::to_string(i), "/uri"), str_cat("\"", roots[i].uri.substr(0, 60), "\" is not a file:// URI"));
    nlohmann::json r = {{"uri", roots[i].uri}};
    if (!roots[i].name.empty()) r["name"] = roots[i].name;
    list.push_back(std::move(r));
  }
  return {{"roots", std::move(list)}};
}

// The client side's state shared by a client's connections (mcp_shared::caps):
// the progress tokens of calls in flight, and how many handlers are running
// (a hung handler keeps counting after its connection died, so restarts do
// not make room for more: a shared_ptr, held by the running handlers).
// The URL elicitations the application accepted and whose completion is
// awaited (notifications/elicitation/complete), at most
// mcp_max_pending_elicitations (the oldest is forgotten first); shared by a
// client's connections, used by handlers (any thread) and the strand.
class mcp_url_elicitation_ids {
 public:
  void accepted(const std::string& id) {
    const std::lock_guard lock(m_);
    if (std::find(ids_.begin(), ids_.end(), id) != ids_.end()) return;
    if (ids_.size() >= mcp_max_pending_elicitations) ids_.erase(ids_.begin());
    ids_.push_back(id);
  }
  // Whether `id` was accepted and not completed yet; it is completed now.
  bool complete(const std::string& id) {
    const std::lock_guard lock(m_);
    const auto it = std::find(ids_.begin(), ids_.end(), id);
    if (it == ids_.end()) return false;
    ids_.erase(it);
    return true;
  }

 private:
  std::mutex m_;
  std::vector<std::string> ids_;  // oldest first
};

struct mcp_client_side {
  mcp_progress_routes progress;
  mcp_url_elicitation_ids elicitations;
  std::shared_ptr<std::atomic<std::size_t>> busy = std::make_shared<std::atomic<std::size_t>>(0);
};

namespace answer {

using json = nlohmann::json;

inline json action_only(mcp_elicitation_action a) {
  switch (a) {
    case mcp_elicitation_action::accept: return {{"action", "accept"}};
    case mcp_elicitation_action::decline: return {{"action", "decline"}};
    case mcp_elicitation_action::cancel: return {{"action", "cancel"}};
  }
  throw std::invalid_argument("unknown elicitation action");
}

// Each takes its handler and request by value: they live in the coroutine.
inline boost::asio::awaitable<json> form(mcp_elicitation_handler h, mcp_elicitation_request r,
                                         std::shared_ptr<const elicit::form> f) {
  mcp_elicitation_response a = co_await h(r);
  if (a.action == mcp_elicitation_action::accept)
    co_return json{{"action", "accept"}, {"content", elicit::content_of(*f, std::move(a.content))}};
  co_return action_only(a.action);
}

inline boost::asio::awaitable<json> url(mcp_url_elicitation_handler h, mcp_url_elicitation_request r,
                                        mcp_url_elicitation_ids* ids) {
  const mcp_elicitation_action a = co_await h(r);
  if (a == mcp_elicitation_action::accept && ids) ids->accepted(r.elicitation_id);
  co_return action_only(a);
}

inline boost::asio::awaitable<json> sampling(mcp_sampling_handler h, mcp_sampling_request r) {
  json result = co_await h(r);
  mcp_check_sampling_result(result, r.params);
  co_return result;
}

inline boost::asio::awaitable<json> roots(mcp_roots_provider h) { co_return mcp_roots_result(h()); }

}  // namespace answer

// Whether the application serves the server's request `method` (its handler
// is set); an elicitation's mode is checked later, with its params.
inline bool mcp_serves(const mcp_client_options& o, const std::string& method) {
  return (method == "elicitation/create" && (o.on_elicitation || o.on_url_elicitation)) ||
         (method == "sampling/createMessage" && o.on_sampling) || (method == "roots/list" && o.roots);
}

// Checks a server's request `method` with `params` (found at `base` of the
// message: pointers in the json_error it throws start there) and returns the
// work of the application's handler for it. The handler must be set. A
// URL-mode elicitation the handler accepts is recorded in `ids` (if given)
// for its completion notification.
inline mcp_handler_work_fn mcp_handler_work(const mcp_client_options& o, const std::string& server,
                                            const std::string& method, const nlohmann::json& params,
                                            const std::string& base, mcp_url_elicitation_ids* ids = nullptr) {
  try {
    if (method == "elicitation/create") {
      if (!params.is_object()) elicit::fail("", expected("an object", params));
      const auto mode = params.find("mode");
      const bool url = mode != params.end() && *mode == "url";
      if (mode != params.end() && !url && *mode != "form")
        elicit::fail("/mode", str_cat("\"", preview(*mode), "\" is not a mode of elicitation (form or url)"));
      if (url && !o.on_url_elicitation)
        elicit::fail("/mode", "\"url\" is not supported (this client declares form mode only)");
      if (!url && !o.on_elicitation)
        elicit::fail("/mode", "form mode is not supported (this client declares url mode only)");
      if (url) {
        return [h = o.on_url_elicitation, r = elicit::url_request_of(server, params, ""), ids] {
          return answer::url(h, r, ids);
        };
      }
      const auto msg = params.find("message");
      if (msg == params.end() || !msg->is_string()) elicit::fail("/message", "expected a string");
      const auto schema = params.find("requestedSchema");
      if (schema == params.end()) elicit::fail("", "missing requestedSchema");
      auto f = std::make_shared<const elicit::form>(elicit::form_of(*schema));
      return [h = o.on_elicitation, r = mcp_elicitation_request{server, msg->get<std::string>(), *schema, params}, f] {
        return answer::form(h, r, f);
      };
    }
    if (method == "sampling/createMessage") {
      mcp_check_sampling_request(params, o.sampling_tools);
      return [h = o.on_sampling, r = mcp_sampling_request{server, params}] { return answer::sampling(h, r); };
    }
    return [h = o.roots] { return answer::roots(h); };
  } catch (const json_error& e) {
    throw json_error(base + e.pointer(), e.message(), "", method);
  }
}

// Whether the client serves input requests at all (some handler is set).
inline bool mcp_serves_input(const mcp_client_options& o) {
  return static_cast<bool>(o.on_elicitation) || static_cast<bool>(o.on_url_elicitation) ||
         static_cast<bool>(o.on_sampling) || static_cast<bool>(o.roots);
}

// The answer to a server's request `ctx.method` that the application serves
// (mcp_serves): called on the client's strand, it checks the request (a bad
// one: -32602 "Invalid params: ..." with the JSON pointer) and returns the
// work of the application's handler, which the session runs.
template <class Shared>
boost::asio::awaitable<nlohmann::json> mcp_answer_server_request(Shared& shared, const mcp_request_context& ctx) {
  mcp_handler_work_fn work;
  try {
    work = mcp_handler_work(shared.options, shared.name, ctx.method, ctx.params, "/params", &shared.caps.elicitations);
  } catch (const json_error& e) {
    throw mcp_handler_error(-32602, str_cat("Invalid params: ", elicit::cut(e.what(), 1000)));
  }
  return work();
}

// Runs `work` on the strand's inner executor and waits for it on the strand
// (the caller runs there) at most `timeout`. Returns its result; throws
// mcp_error (protocol_error) naming `what` when it throws or is late.
template <class Strand>
boost::asio::awaitable<nlohmann::json> mcp_run_handler(Strand strand, mcp_handler_work_fn work,
                                                       std::chrono::milliseconds timeout, std::string server,
                                                       std::string what) {
  struct state {
    explicit state(const Strand& s) : timer(s) {}
    boost::asio::steady_timer timer;
    std::optional<nlohmann::json> result;
    std::string error;
    bool done = false;
  };
  auto st = std::make_shared<state>(strand);
  auto run = mcp_start_handler(strand, boost::asio::any_io_executor(), work, [st](std::exception_ptr e, nlohmann::json r) {
    if (st->done) return;
    if (e) {
      try {
        std::rethrow_exception(e);
      } catch (const std::exception& x) {
        st->error = elicit::cut(x.what(), 1000);
      } catch (...) {
        st->error = "it threw something that is not a std::exception";
      }
    } else {
      st->result = std::move(r);
    }
    st->done = true;
    st->timer.cancel();
  });
  st->timer.expires_after(timeout);
  (void)co_await st->timer.async_wait(boost::asio::as_tuple(boost::asio::use_awaitable));
  if (!st->done) {
    st->done = true;
    mcp_cancel_handler(run);
    throw mcp_error(mcp_error_kind::protocol_error, server,
                    str_cat(what, ": the handler gave no answer within ", std::to_string(timeout.count()),
                            " ms (options.handler_timeout)"));
  }
  if (!st->result) throw mcp_error(mcp_error_kind::protocol_error, server, str_cat(what, ": the handler failed: ", st->error));
  co_return std::move(*st->result);
}

// A request to a modern server whose InputRequiredResults (MRTR,
// basic/patterns/mrtr.mdx) the application's handlers answer: each input
// request is checked as the server's own request would be, served by its
// handler, and the request is sent again with `inputResponses` and the
// `requestState` echoed, at most mcp_max_input_rounds times. A request for
// what the client does not declare, a bad one, or a handler that fails ends
// the request with mcp_error (protocol_error) naming the JSON pointer.
template <class Connection, class Strand>
boost::asio::awaitable<nlohmann::json> mcp_request_with_input(std::shared_ptr<Connection> c, Strand strand,
                                                              const mcp_client_options& o, std::string server,
                                                              std::string method, nlohmann::json params,
                                                              std::chrono::milliseconds timeout) {
  using json = nlohmann::json;
  const auto refuse = [&](const std::string& pointer, const std::string& message) {
    return mcp_error(mcp_error_kind::protocol_error, server, str_cat(method, " at ", pointer, ": ", message));
  };
  for (std::size_t round = 1;; ++round) {
    json r = co_await Connection::request(c, method, params, timeout);
    if (!mcp_is_input_required(r)) co_return r;
    if (!mcp_method_takes_input(method))
      throw refuse("/result/resultType", "\"input_required\" is not allowed here (only on tools/call, prompts/get "
                                         "and resources/read)");
    if (round >= mcp_max_input_rounds)
      throw refuse("/result", str_cat("the server asked for input ", std::to_string(round),
                                      " times in a row (the most this client answers for one request)"));
    if (!params.is_object()) params = json::object();
    params.erase("inputResponses");
    params.erase("requestState");
    if (const auto ir = r.find("inputRequests"); ir != r.end()) {
      if (!ir->is_object()) throw refuse("/result/inputRequests", expected("an object", *ir));
      if (ir->size() > mcp_max_input_requests)
        throw refuse("/result/inputRequests", str_cat(std::to_string(ir->size()), " input requests, more than ",
                                                      std::to_string(mcp_max_input_requests)));
      json responses = json::object();
      for (const auto& [k, req] : ir->items()) {
        const std::string at = str_cat("/result/inputRequests/", pointer_token(k));
        const auto m = req.is_object() ? req.find("method") : req.end();
        if (m == req.end() || !m->is_string()) throw refuse(at + "/method", "expected a string");
        const std::string name = m->template get<std::string>();
        if (!mcp_serves(o, name))
          throw refuse(at + "/method", str_cat("\"", elicit::cut(name, 60), "\" is not a capability this client declares"));
        static const json no_params = json::object();
        const auto p = req.find("params");
        mcp_handler_work_fn work;
        try {
          work = mcp_handler_work(o, server, name, p == req.end() ? no_params : *p, at + "/params");
        } catch (const json_error& e) {
          throw mcp_error(mcp_error_kind::protocol_error, server, str_cat(method, ": ", e.what()));
        }
        responses[k] = co_await mcp_run_handler(strand, std::move(work), o.handler_timeout, server,
                                                str_cat(method, ": input request \"", elicit::cut(k, 60), "\" (", name, ")"));
      }
      params["inputResponses"] = std::move(responses);
    }
    if (const auto rs = r.find("requestState"); rs != r.end()) {
      if (!rs->is_string()) throw refuse("/result/requestState", expected("a string", *rs));
      params["requestState"] = *rs;
    }
  }
}

}  // namespace detail

}  // namespace tool_effects

#endif  // TOOL_EFFECTS_MCP_CLIENT_DETAIL_HANDLERS_HPP
