// json_tool_host::run derives a call's identity key (RFC 8785 canonical arguments + SHA-1, linear in the
// arguments' size) only when something uses it (issue 20: it was 37% of the client's CPU for large calls):
// a tool that reads its context's key, the recovery layer (retry policy, approver), a loop guard. Counted
// through the identity policy's key_fn, which `identify` calls once per identity it computes.
#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include <boost/asio/thread_pool.hpp>

#include <tool_effects/json.hpp>

// Unity-built with the other json tests (test/CMakeLists.txt): all below is this file's own.
namespace json_lazy_identity_test_ns {

namespace te = tool_effects;
using nlohmann::json;

namespace {

struct counted_tool {
  std::shared_ptr<std::atomic<int>> identities = std::make_shared<std::atomic<int>>(0);
  std::shared_ptr<std::vector<std::string>> keys_seen = std::make_shared<std::vector<std::string>>();

  te::dynamic_tool tool() const {
    te::dynamic_tool t{"store", te::describe_runtime("store", te::effect_set{te::effect::read}, {}), {}};
    t.identity.key_fn = [n = identities](std::string_view, const json&) -> std::optional<std::string> {
      ++*n;
      return std::nullopt;  // the default key: canonical arguments + SHA-1
    };
    return t;
  }
  te::json_tool_function fn() const {
    return [k = keys_seen](const te::attempt_context& ctx, const json& args) {
      k->push_back(ctx.idempotency_key);
      return json(args.at("blob").get_ref<const std::string&>().size());
    };
  }
};

std::vector<te::tool_call> large_call() {
  te::tool_call c{"c1", "store", json{{"blob", std::string(1 << 20, 'x')}, {"n", 1}}};
  return {c};
}

std::string expected_key(const counted_tool& t, const te::tool_call& c, const std::string& scope) {
  const te::dynamic_tool d = t.tool();  // its own counter: not counted below
  return te::idempotency_key(te::identify(d.name, d.identity, c.arguments), scope + "/" + c.id);
}

}  // namespace

TEST(LazyIdentityKey, ATurnThatNothingKeysDerivesNoKey) {
  counted_tool t;
  te::tool_registry<> reg;
  te::json_tool_host<> host(reg);
  host.add(t.tool(), t.fn(), {}, te::idempotency_key_use::unused);
  boost::asio::thread_pool pool(1);
  const auto calls = large_call();
  const auto out = host.run(pool, te::run_options{}, calls, "turn-1");
  ASSERT_TRUE(out[0].has_value());
  EXPECT_EQ(out[0].value(), json(1 << 20));
  EXPECT_EQ(t.identities->load(), 0);
  EXPECT_EQ(*t.keys_seen, std::vector<std::string>{""});
}

// Controls: each user of the key gets it, derived once per call, the same key as before it was lazy.
TEST(LazyIdentityKey, AToolThatReadsTheKeyGetsItDerivedOnce) {
  counted_tool t;
  te::tool_registry<> reg;
  te::json_tool_host<> host(reg);
  host.add(t.tool(), t.fn());  // idempotency_key_use::used, the default
  boost::asio::thread_pool pool(1);
  const auto calls = large_call();
  (void)host.run(pool, te::run_options{}, calls, "turn-1");
  EXPECT_EQ(t.identities->load(), 1);
  EXPECT_EQ(*t.keys_seen, std::vector<std::string>{expected_key(t, calls[0], "turn-1")});
}

TEST(LazyIdentityKey, TheRecoveryLayerDerivesTheKeyOfItsAttempts) {
  counted_tool t;
  te::tool_registry<> reg;
  te::json_tool_host<> host(reg);
  host.add(t.tool(), t.fn(), {}, te::idempotency_key_use::unused);
  boost::asio::thread_pool pool(1);
  const auto calls = large_call();
  (void)host.run(pool, te::run_options{}.with(te::retry_policy{.max_attempts = 2}), calls, "turn-1");
  EXPECT_EQ(t.identities->load(), 1);
  ASSERT_EQ(t.keys_seen->size(), 1u);
}

TEST(LazyIdentityKey, ALoopGuardIdentifiesEveryCallOnce) {
  counted_tool t;
  te::tool_registry<> reg;
  te::json_tool_host<> host(reg);
  host.add(t.tool(), t.fn());
  te::repeat_detector detector;
  boost::asio::thread_pool pool(1);
  const auto calls = large_call();
  (void)host.run(pool, te::run_options{}.with(te::loop_guard{&detector, false}), calls, "turn-1");
  EXPECT_EQ(t.identities->load(), 1);  // the guard's identity also gives the key the tool reads
  EXPECT_EQ(*t.keys_seen, std::vector<std::string>{expected_key(t, calls[0], "turn-1")});
}

TEST(LazyIdentityKey, APlanStillListsEveryIdentity) {
  counted_tool t;
  te::tool_registry<> reg;
  te::json_tool_host<> host(reg);
  host.add(t.tool(), t.fn(), {}, te::idempotency_key_use::unused);
  const auto calls = large_call();
  const te::turn_plan p = host.plan(calls);
  EXPECT_EQ(t.identities->load(), 1);
  ASSERT_EQ(p.identities.size(), 1u);
  EXPECT_EQ(p.identities[0].key.size(), 36u);
}

// Static tools: one that takes no attempt_context cannot read its key, so none is derived for it (issue 28's
// server: a SHA-1 of the arguments on every call, 12% of its CPU on small calls); the control takes the context
// and gets the same key as a dynamic tool would.
namespace {
struct blobs {};
std::atomic<int> static_identities{0};
te::identity_policy counting_policy() {
  te::identity_policy p;
  p.key_fn = [](std::string_view, const json&) -> std::optional<std::string> {
    ++static_identities;
    return std::nullopt;
  };
  return p;
}
struct size_plain {
  static constexpr std::string_view name = "size_plain";
  using side_effects = te::effects<te::reads<blobs>>;
  static te::identity_policy identity() { return counting_policy(); }
  json operator()(const json& args) const { return args.at("blob").get_ref<const std::string&>().size(); }
};
std::string static_key_seen;
struct size_keyed {
  static constexpr std::string_view name = "size_keyed";
  using side_effects = te::effects<te::reads<blobs>>;
  static te::identity_policy identity() { return counting_policy(); }
  json operator()(const te::attempt_context& ctx, const json& args) const {
    static_key_seen = ctx.idempotency_key;
    return args.at("blob").get_ref<const std::string&>().size();
  }
};
}  // namespace

TEST(LazyIdentityKey, AStaticToolWithoutAContextDerivesNoKey) {
  te::tool_registry<size_plain, size_keyed> reg;
  te::json_tool_host<size_plain, size_keyed> host(reg);
  boost::asio::thread_pool pool(1);
  const json args{{"blob", std::string(1 << 16, 'x')}};
  static_identities = 0;
  const std::vector<te::tool_call> plain{{"c1", "size_plain", args}};
  auto out = host.run(pool, te::run_options{}, plain, "turn-1");
  ASSERT_TRUE(out[0].has_value());
  EXPECT_EQ(out[0].value(), json(1 << 16));
  EXPECT_EQ(static_identities.load(), 0);

  const std::vector<te::tool_call> keyed{{"c1", "size_keyed", args}};
  out = host.run(pool, te::run_options{}, keyed, "turn-1");
  ASSERT_TRUE(out[0].has_value());
  EXPECT_EQ(static_identities.load(), 1);
  EXPECT_EQ(static_key_seen,
            te::idempotency_key(te::identify("size_keyed", counting_policy(), args), "turn-1/c1"));
}

}  // namespace json_lazy_identity_test_ns
