// tool_effects/mcp/server/detail/mrtr.hpp — internal to <tool_effects/mcp/server.hpp>: how a call of the
// 2026-07-28 era asks its client (MRTR, SEP-2322). The era has no server-to-client request: the server answers
// the call with an InputRequiredResult (`inputRequests`, `requestState`) and the client sends the request again
// with `inputResponses` and the `requestState` echoed. A C++ tool runs once and may have had effects before it
// asks, so the call is PARKED (its asker waits), not re-run: `requestState` names the parked call under a random
// id, authenticated by HMAC-SHA256 with a key drawn per server; the retry resumes the call where it waits.
// Parked calls are bounded (`mcp_server_options::max_parked_calls`) and each waits at most its ask's timeout.
// See docs/mcp-capabilities.md ("MRTR").
#ifndef TOOL_EFFECTS_MCP_SERVER_DETAIL_MRTR_HPP
#define TOOL_EFFECTS_MCP_SERVER_DETAIL_MRTR_HPP

#include <array>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <nlohmann/json.hpp>

#include <tool_effects/detail/str_cat.hpp>
#include <tool_effects/mcp/protocol/detail/mrtr_wire.hpp>
#include <tool_effects/mcp/protocol/detail/crypto.hpp>  // mcp_hmac_sha256, mcp_random_bytes, mcp_base64
#include <tool_effects/mcp/server/asker.hpp>
#include <tool_effects/mcp/server/detail/core.hpp>

namespace tool_effects::detail {


// The params of a retry that MRTR reads, strictly: `inputResponses` (an object of objects, at most
// mcp_max_input_requests; absent: none) and `requestState` (a string; absent: a first request).
struct mcp_input_params {
  nlohmann::json responses = nlohmann::json::object();
  std::optional<std::string> state;
};
inline mcp_input_params read_input_params(const nlohmann::json& params) {
  mcp_input_params out;
  if (!params.is_object()) return out;
  auto bad = [](const std::string& at, const std::string& what) {
    return mcp_server_error(rpc_invalid_params, str_cat("Invalid params: at ", at, ": ", what));
  };
  if (const auto r = params.find("inputResponses"); r != params.end()) {
    if (!r->is_object()) throw bad("/inputResponses", expected("an object", *r));
    if (r->size() > mcp_max_input_requests)
      throw bad("/inputResponses", str_cat(std::to_string(r->size()), " input responses, more than ",
                                           std::to_string(mcp_max_input_requests)));
    for (const auto& [k, v] : r->items())
      if (!v.is_object()) throw bad(str_cat("/inputResponses/", pointer_token(k)), expected("an object", v));
    out.responses = *r;
  }
  if (const auto s = params.find("requestState"); s != params.end()) {
    if (!s->is_string()) throw bad("/requestState", expected("a string", *s));
    out.state = s->get<std::string>();
  }
  return out;
}

// The InputRequiredResult asking `asks`, resumed by `state`.
inline nlohmann::json mcp_input_required_result(const std::vector<mcp_input_request>& asks,
                                                const std::vector<bool>& answered, const std::string& state) {
  nlohmann::json requests = nlohmann::json::object();
  for (std::size_t i = 0; i < asks.size(); ++i)
    if (!answered[i]) requests[asks[i].key] = {{"method", asks[i].method}, {"params", asks[i].params}};
  return {{"resultType", mcp_input_required}, {"inputRequests", std::move(requests)}, {"requestState", state}};
}

template <class Unused = void>
class basic_mcp_mrtr_call;
using mcp_mrtr_call = basic_mcp_mrtr_call<>;  // a class template: see basic_mcp_session

// The parked calls of one server, by requestState: "<id>.<HMAC-SHA256(key, id)>" (both base64url), the id
// random (128 bits) and the key drawn when the server is made (256 bits). Thread-safe.
class mcp_mrtr_parking {
 public:
  explicit mcp_mrtr_parking(std::size_t max) : key_(mcp_random_bytes(32)), max_(max) {}

  // A new state naming `c`; "" when `max` calls are parked already.
  std::string park(const std::shared_ptr<mcp_mrtr_call>& c) {
    const std::string id = mcp_base64(mcp_random_bytes(16), true);
    std::string state = str_cat(id, ".", mac(id));
    std::lock_guard lock(m_);
    if (parked_.size() >= max_) return {};
    parked_.emplace(state, c);
    return state;
  }
  void forget(const std::string& state) {
    std::lock_guard lock(m_);
    parked_.erase(state);
  }
  // The call `state` names. Throws mcp_server_error (-32602) for a state this server did not issue (or one
  // altered), or one whose call waits no more.
  [[nodiscard]] std::shared_ptr<mcp_mrtr_call> find(const std::string& state) const {
    const auto dot = state.rfind('.');
    bool ok = dot != std::string::npos;
    if (ok) {
      const std::string want = mac(state.substr(0, dot));
      const std::string_view got = std::string_view(state).substr(dot + 1);
      unsigned diff = want.size() == got.size() ? 0U : 1U;
      for (std::size_t i = 0; i < want.size() && i < got.size(); ++i)
        diff |= static_cast<unsigned>(static_cast<unsigned char>(want[i]) ^ static_cast<unsigned char>(got[i]));
      ok = diff == 0;
    }
    if (!ok)
      throw mcp_server_error(rpc_invalid_params,
                             "Invalid params: at /requestState: fails its integrity check (not a state this server "
                             "issued, or one altered)");
    std::lock_guard lock(m_);
    const auto it = parked_.find(state);
    if (it == parked_.end())
      throw mcp_server_error(rpc_invalid_params,
                             "Invalid params: at /requestState: no call waits under this state (it was resumed "
                             "already, or its ask expired after client_request_timeout)");
    return it->second;
  }
  // Every parked call's ask fails now (the server stops).
  void abandon_all();
  [[nodiscard]] std::size_t size() const {
    std::lock_guard lock(m_);
    return parked_.size();
  }

 private:
  [[nodiscard]] std::string mac(std::string_view id) const {
    const auto h = mcp_hmac_sha256(key_, id);
    return mcp_base64(std::string_view(reinterpret_cast<const char*>(h.data()), h.size()), true);
  }
  const std::string key_;
  const std::size_t max_;
  mutable std::mutex m_;
  std::map<std::string, std::shared_ptr<mcp_mrtr_call>> parked_;
};

// One call of the 2026-07-28 era that may ask its client. Its requests (the first, then each retry) wait for
// its next outcome: its result, or an InputRequiredResult when it asks what no request has answered yet. Every
// state change runs on the call's strand, but a call that never asks: its first request's waiter is set before
// the call starts, and its end, when no ask came first (one atomic step decides which), completes that waiter on
// the call's own thread. So a call that asks nothing never crosses to the asks thread.
template <class Unused>
class basic_mcp_mrtr_call : public std::enable_shared_from_this<basic_mcp_mrtr_call<Unused>> {
 public:
  // Of the request waiting: the call's result or an InputRequiredResult, or the error that ends the request.
  using outcome_handler = std::function<void(std::exception_ptr, nlohmann::json)>;

  basic_mcp_mrtr_call(boost::asio::any_io_executor ex, std::shared_ptr<mcp_mrtr_parking> parking, std::string method,
                std::string name, std::string owner = {})
      : strand_(boost::asio::make_strand(ex)), parking_(std::move(parking)), method_(std::move(method)),
        name_(std::move(name)), owner_(std::move(owner)) {}

  [[nodiscard]] const std::string& method() const noexcept { return method_; }
  [[nodiscard]] const std::string& name() const noexcept { return name_; }
  // The caller the call belongs to (mcp_server_request::caller): only its retries resume it.
  [[nodiscard]] const std::string& owner() const noexcept { return owner_; }

  // Tool side (an mcp_client_asker's input_function): the answers to `asks`, in order, from the responses a
  // request carried or the retry will carry; throws mcp_ask_error (client_ask_timeout past `timeout`,
  // client_ask_too_many_parked when the server parks its most).
  boost::asio::awaitable<std::vector<nlohmann::json>> ask(std::vector<mcp_input_request> asks,
                                                          std::chrono::milliseconds timeout) {
    co_return co_await boost::asio::co_spawn(strand_, ask_on_strand(this->shared_from_this(), std::move(asks), timeout),
                                             boost::asio::use_awaitable);
  }

  // Request side: `h` gets the call's next outcome. `first`: the request that starts the call (its
  // inputResponses answer the asks of the same keys); else a retry under `state` carrying `responses`.
  // The first request waits before the call starts: nothing else can touch the call yet.
  void wait(bool first, std::string state, nlohmann::json responses, outcome_handler h) {
    if (first) {
      supplied_ = std::move(responses);
      waiter_ = std::move(h);
      return;
    }
    boost::asio::post(
        strand_, [self = this->shared_from_this(), state = std::move(state), responses = std::move(responses),
                  h = std::move(h)]() mutable { self->wait_on_strand(state, std::move(responses), std::move(h)); });
  }

  // The server stops: an ask waiting fails at once (client_ask_failed) instead of at its timeout.
  void abandon() {
    boost::asio::post(strand_, [self = this->shared_from_this()] {
      if (!self->group_) return;
      self->group_->abandoned = true;
      self->group_->timer.cancel();
    });
  }

  // The call ended with the error `e` (of a prompt that asks: its request gets the error).
  void fail(std::exception_ptr e) { end(std::move(e), nullptr); }

  // The call ended with `result` (no request waits: the result is dropped, its ask having expired).
  void finish(nlohmann::json result) { end(nullptr, std::move(result)); }

 private:
  enum : int { fresh, asked, ended_unasked };
  // At the call's end: whether no ask came first. Then the strand never touches waiter_ or finished_ again
  // (an ask that comes later fails at once), so the caller may complete the waiter itself.
  bool end_unasked() {
    int expected = fresh;
    if (!phase_.compare_exchange_strong(expected, ended_unasked, std::memory_order_acq_rel)) return false;
    finished_ = true;
    return true;
  }

  // The call's one end, `e` or `result`: completed here when no ask came first, else on the strand.
  void end(std::exception_ptr e, nlohmann::json result) {
    if (end_unasked()) {
      if (auto h = std::exchange(waiter_, {})) h(e, std::move(result));
      return;
    }
    boost::asio::post(strand_, [self = this->shared_from_this(), e, result = std::move(result)]() mutable {
      self->finished_ = true;
      if (auto h = std::exchange(self->waiter_, {})) h(e, std::move(result));
    });
  }

  struct group {
    explicit group(const boost::asio::strand<boost::asio::any_io_executor>& s) : timer(s) {}
    std::vector<mcp_input_request> asks;
    std::vector<nlohmann::json> answers;
    std::vector<bool> answered;
    std::string state;  // the state it is parked under; "" when none
    bool done = false;
    bool abandoned = false;
    boost::asio::steady_timer timer;
  };

  // Takes the answers `responses` holds for the group's open asks (keys not asked are ignored).
  static void take(group& g, nlohmann::json& responses) {
    for (std::size_t i = 0; i < g.asks.size(); ++i) {
      if (g.answered[i]) continue;
      if (const auto it = responses.find(g.asks[i].key); it != responses.end()) {
        g.answers[i] = std::move(*it);
        g.answered[i] = true;
        responses.erase(it);
      }
    }
  }
  static bool complete(const group& g) {
    for (const bool a : g.answered)
      if (!a) return false;
    return true;
  }

  // Parks the group under a new state and answers the waiting request with what is still open.
  bool park(group& g) {
    if (!g.state.empty()) parking_->forget(g.state);
    g.state = parking_->park(this->shared_from_this());
    if (g.state.empty()) return false;
    if (auto h = std::exchange(waiter_, {})) h(nullptr, mcp_input_required_result(g.asks, g.answered, g.state));
    return true;
  }

  static boost::asio::awaitable<std::vector<nlohmann::json>> ask_on_strand(std::shared_ptr<basic_mcp_mrtr_call> self,
                                                                           std::vector<mcp_input_request> asks,
                                                                           std::chrono::milliseconds timeout) {
    int expected = fresh;
    if (!self->phase_.compare_exchange_strong(expected, asked, std::memory_order_acq_rel) && expected != asked)
      throw mcp_ask_error(mcp_ask_failed, str_cat(asks.empty() ? std::string("ask") : asks.front().method,
                                                  ": the call has ended"));
    if (self->group_)
      throw mcp_ask_error(mcp_ask_failed, "one ask of a 2026-07-28 call at a time (ask several with ask_all)");
    auto g = std::make_shared<group>(self->strand_);
    g->asks = std::move(asks);
    g->answers.resize(g->asks.size());
    g->answered.assign(g->asks.size(), false);
    take(*g, self->supplied_);
    if (!complete(*g)) {
      self->group_ = g;
      if (!self->park(*g)) {
        self->group_.reset();
        throw mcp_ask_error(mcp_ask_too_many_parked,
                            str_cat(g->asks.front().method, ": ", std::to_string(self->parking_->size()),
                                    " calls wait for their client already (max_parked_calls)"));
      }
      g->timer.expires_after(timeout);
      (void)co_await g->timer.async_wait(boost::asio::as_tuple(boost::asio::use_awaitable));
      if (!g->done) {
        self->parking_->forget(g->state);
        self->group_.reset();
        if (g->abandoned)
          throw mcp_ask_error(mcp_ask_failed, str_cat(g->asks.front().method, ": the server stopped"));
        throw mcp_ask_error(mcp_ask_timeout,
                            str_cat(g->asks.front().method, ": no request resumed the call within ",
                                    std::to_string(timeout.count()), " ms (the InputRequiredResult's requestState)"));
      }
    }
    co_return std::move(g->answers);
  }

  // A retry's wait.
  void wait_on_strand(const std::string& state, nlohmann::json responses, outcome_handler h) {
    const std::shared_ptr<group> g = group_;
    if (finished_ || !g || g->state != state) {
      h(std::make_exception_ptr(mcp_server_error(
            rpc_invalid_params, "Invalid params: at /requestState: no call waits under this state (it was resumed "
                                "already, or its ask expired after client_request_timeout)")),
        nullptr);
      return;
    }
    take(*g, responses);
    waiter_ = std::move(h);
    if (!complete(*g)) {
      // Some input is still missing: ask for it again, under a new state.
      if (!park(*g)) {
        parking_->forget(g->state);
        g->state.clear();
        if (auto w = std::exchange(waiter_, {}))
          w(std::make_exception_ptr(mcp_server_error(rpc_internal_error, "Internal error: too many parked calls "
                                                                         "(max_parked_calls)")),
            nullptr);
      }
      return;
    }
    parking_->forget(g->state);
    group_.reset();
    g->done = true;
    g->timer.cancel();
  }

  boost::asio::strand<boost::asio::any_io_executor> strand_;
  std::shared_ptr<mcp_mrtr_parking> parking_;
  std::string method_;
  std::string name_;
  std::string owner_;
  nlohmann::json supplied_ = nlohmann::json::object();  // the first request's inputResponses
  outcome_handler waiter_{};
  std::shared_ptr<group> group_{};
  bool finished_ = false;
  std::atomic<int> phase_{fresh};  // fresh until the first ask (asked) or an end without one (ended_unasked)
};

inline void mcp_mrtr_parking::abandon_all() {
  std::map<std::string, std::shared_ptr<mcp_mrtr_call>> all;
  {
    std::lock_guard lock(m_);
    all = parked_;
  }
  for (auto& [state, c] : all) c->abandon();
}

}  // namespace tool_effects::detail

#endif  // TOOL_EFFECTS_MCP_SERVER_DETAIL_MRTR_HPP
