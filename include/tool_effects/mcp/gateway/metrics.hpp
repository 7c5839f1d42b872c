// tool_effects/mcp/gateway/metrics.hpp — what a gateway has done, counted from its audit records and written in
// the Prometheus text exposition format (version 0.0.4): what `tool-effects-gateway --listen` serves at
// `/metrics` (docs/gateway.md, "Metrics").
//
// The audit record of a call is the one account of it: the metrics are that record counted, so the log and the
// counters cannot disagree. Label values are the configuration's server names and the tools served, never
// anything a client sends, so a client cannot grow the exposition.
#ifndef TOOL_EFFECTS_MCP_GATEWAY_METRICS_HPP
#define TOOL_EFFECTS_MCP_GATEWAY_METRICS_HPP

#include <array>
#include <charconv>
#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace tool_effects {

namespace detail {
// The `approval` of an audit record whose call needed none (detail/calls.hpp writes it; not an approval counted).
inline constexpr std::string_view gateway_approval_not_needed = "not_needed";
}  // namespace detail

/// The counters of a gateway: calls by outcome, their waits for conflicting calls, approvals, retries and
/// durations, per server and tool. Thread-safe.
class gateway_metrics {
 public:
  /// The upper bounds (seconds) of the call-duration histogram's buckets (and +Inf).
  static constexpr std::array<double, 12> duration_buckets{0.005, 0.01, 0.025, 0.05, 0.1, 0.25,
                                                           0.5,   1,    2.5,   5,    10,  30};

  /// Counts one audit record (docs/gateway.md, "The audit log"): its `outcome`, `waited_for` and `waited_ms`,
  /// `approval`, `attempts` and `duration_ms`, under its `server` and `tool`. A field that is absent or of
  /// another type is not counted.
  void observe(const nlohmann::json& record) {
    if (!record.is_object()) return;
    const std::string* server = string_at(record, "server");
    const std::string* tool = string_at(record, "tool");
    if (!server || !tool) return;
    const std::lock_guard l(m_);
    // Found through views of the record's strings: a row already counted costs no copy of its names.
    const key_view k{*server, *tool};
    auto row = tools_.lower_bound(k);
    if (row == tools_.end() || tools_.key_comp()(k, row->first))
      row = tools_.emplace_hint(row, key{*server, *tool}, per_tool{});
    per_tool& t = row->second;
    if (const std::string* outcome = string_at(record, "outcome")) ++t.outcomes[*outcome];
    if (const std::string* approval = string_at(record, "approval");
        approval && *approval != detail::gateway_approval_not_needed)
      ++t.approvals[*approval];
    if (const auto w = record.find("waited_for"); w != record.end() && w->is_array() && !w->empty()) {
      ++t.waits;
      t.waited_for += w->size();
    }
    if (const auto w = record.find("waited_ms"); w != record.end() && w->is_number()) t.wait_seconds += w->get<double>() / 1000;
    if (const auto a = record.find("attempts"); a != record.end() && a->is_number_integer() && a->get<std::int64_t>() > 1)
      t.retries += static_cast<std::uint64_t>(a->get<std::int64_t>() - 1);
    if (const auto d = record.find("duration_ms"); d != record.end() && d->is_number()) {
      const double s = d->get<double>() / 1000;
      for (std::size_t b = 0; b < duration_buckets.size(); ++b)
        if (s <= duration_buckets[b]) ++t.buckets[b];
      ++t.durations;
      t.duration_seconds += s;
    }
  }

  /// The exposition (`Content-Type: text/plain; version=0.0.4`), with `restarts`: each upstream server's
  /// restarts after it died.
  [[nodiscard]] std::string text(const std::vector<std::pair<std::string, std::size_t>>& restarts = {}) const {
    std::string out;
    const std::lock_guard l(m_);
    family(out, "calls_total", "counter", "Calls answered, by server, tool and outcome.");
    for (const auto& [k, t] : tools_)
      for (const auto& [outcome, n] : t.outcomes) sample(out, "calls_total", k, {"outcome", outcome}, n);
    family(out, "call_waits_total", "counter", "Calls that waited for a conflicting call before they ran.");
    for (const auto& [k, t] : tools_) sample(out, "call_waits_total", k, {}, t.waits);
    family(out, "conflicts_total", "counter", "Conflicting calls waited for (a call that waited for two counts two).");
    for (const auto& [k, t] : tools_) sample(out, "conflicts_total", k, {}, t.waited_for);
    family(out, "wait_seconds_total", "counter", "Time calls spent waiting for conflicting calls.");
    for (const auto& [k, t] : tools_) sample(out, "wait_seconds_total", k, {}, t.wait_seconds);
    family(out, "approvals_total", "counter", "Calls that needed approval, by decision.");
    for (const auto& [k, t] : tools_)
      for (const auto& [decision, n] : t.approvals) sample(out, "approvals_total", k, {"decision", decision}, n);
    family(out, "retries_total", "counter", "Attempts after a transient upstream failure.");
    for (const auto& [k, t] : tools_) sample(out, "retries_total", k, {}, t.retries);
    family(out, "call_duration_seconds", "histogram", "Time from a call's start (its grant held) to its answer.");
    for (const auto& [k, t] : tools_) {
      for (std::size_t b = 0; b < duration_buckets.size(); ++b)
        sample(out, "call_duration_seconds_bucket", k, {"le", number(duration_buckets[b])}, t.buckets[b]);
      sample(out, "call_duration_seconds_bucket", k, {"le", "+Inf"}, t.durations);
      sample(out, "call_duration_seconds_sum", k, {}, t.duration_seconds);
      sample(out, "call_duration_seconds_count", k, {}, t.durations);
    }
    family(out, "upstream_restarts_total", "counter", "Restarts of an upstream server after it died.");
    for (const auto& [server, n] : restarts) {
      out += prefix;
      out += "upstream_restarts_total{server=\"";
      escape(out, server);
      out += "\"} ";
      out += number(n);
      out += '\n';
    }
    return out;
  }

 private:
  static constexpr std::string_view prefix = "tool_effects_gateway_";
  struct per_tool {
    std::map<std::string, std::uint64_t> outcomes, approvals;
    std::uint64_t waits = 0, waited_for = 0, retries = 0, durations = 0;
    double wait_seconds = 0, duration_seconds = 0;
    std::array<std::uint64_t, duration_buckets.size()> buckets{};
  };
  using key = std::pair<std::string, std::string>;  // server, tool
  using key_view = std::pair<std::string_view, std::string_view>;
  // The order of `key` (std::pair's), also between a key and a key_view: a row is found without a key's copy.
  struct key_less {
    using is_transparent = void;
    static key_view view(const key& k) noexcept { return {k.first, k.second}; }
    static key_view view(const key_view& k) noexcept { return k; }
    template <class A, class B>
    bool operator()(const A& a, const B& b) const noexcept {
      return view(a) < view(b);
    }
  };

  static const std::string* string_at(const nlohmann::json& j, const char* k) {
    const auto it = j.find(k);
    return it != j.end() && it->is_string() ? &it->get_ref<const std::string&>() : nullptr;
  }
  // A label value as the format quotes it: backslash, double quote and line feed escaped.
  static void escape(std::string& out, std::string_view v) {
    for (const char c : v) {
      if (c == '\\') out += "\\\\";
      else if (c == '"') out += "\\\"";
      else if (c == '\n') out += "\\n";
      else out += c;
    }
  }
  template <class T>
  static std::string number(T v) {
    char buf[32];
    const auto r = std::to_chars(buf, buf + sizeof buf, v);
    return std::string(buf, r.ptr);
  }
  static void family(std::string& out, std::string_view name, std::string_view type, std::string_view help) {
    out += "# HELP ";
    out += prefix;
    out += name;
    out += ' ';
    out += help;
    out += "\n# TYPE ";
    out += prefix;
    out += name;
    out += ' ';
    out += type;
    out += '\n';
  }
  template <class T>
  static void sample(std::string& out, std::string_view name, const key& k,
                     std::pair<std::string_view, std::string_view> extra, T value) {
    out += prefix;
    out += name;
    out += "{server=\"";
    escape(out, k.first);
    out += "\",tool=\"";
    escape(out, k.second);
    out += '"';
    if (!extra.first.empty()) {
      out += ',';
      out += extra.first;
      out += "=\"";
      escape(out, extra.second);
      out += '"';
    }
    out += "} ";
    out += number(value);
    out += '\n';
  }

  mutable std::mutex m_;
  std::map<key, per_tool, key_less> tools_;
};

}  // namespace tool_effects

#endif  // TOOL_EFFECTS_MCP_GATEWAY_METRICS_HPP
