// Failure records: stable reason slugs (to_string / strict and try_ parse),
// records and call_failure, and the ledger-only rollback rule.
#include <tool_effects/failure.hpp>

#include <gtest/gtest.h>

#include <set>
#include <sstream>
#include <stdexcept>
#include <string>

// Unity-built with the other recovery tests (test/CMakeLists.txt): all below is this file's own.
namespace failure_test_ns {

namespace te = tool_effects;

namespace {
constexpr te::failure_reason all_reasons[] = {
    te::failure_reason::unsafe_to_retry, te::failure_reason::non_idempotent_side_effect,
    te::failure_reason::rollback_not_supported_for_side_effects, te::failure_reason::confirmation_denied,
    te::failure_reason::retries_exhausted, te::failure_reason::invalid_arguments, te::failure_reason::unknown_tool,
    te::failure_reason::repeated_call, te::failure_reason::turn_too_large, te::failure_reason::coordination_timeout,
    te::failure_reason::in_doubt, te::failure_reason::lease_lost};
constexpr te::side_effect_class all_classes[] = {te::side_effect_class::none, te::side_effect_class::idempotent,
                                                 te::side_effect_class::non_idempotent};
}  // namespace

TEST(FailureReason, SlugsAreTheDocumentedStableStrings) {
  EXPECT_EQ(te::to_string(te::failure_reason::unsafe_to_retry), "unsafe_to_retry");
  EXPECT_EQ(te::to_string(te::failure_reason::non_idempotent_side_effect), "non_idempotent_side_effect");
  EXPECT_EQ(te::to_string(te::failure_reason::rollback_not_supported_for_side_effects),
            "rollback_not_supported_for_side_effects");
  EXPECT_EQ(te::to_string(te::failure_reason::confirmation_denied), "confirmation_denied");
  EXPECT_EQ(te::to_string(te::failure_reason::retries_exhausted), "retries_exhausted");
  EXPECT_EQ(te::to_string(te::failure_reason::invalid_arguments), "invalid_arguments");
  EXPECT_EQ(te::to_string(te::failure_reason::unknown_tool), "unknown_tool");
  EXPECT_EQ(te::to_string(te::failure_reason::repeated_call), "repeated_call");
  EXPECT_EQ(te::to_string(te::failure_reason::turn_too_large), "turn_too_large");
  EXPECT_EQ(te::to_string(te::failure_reason::coordination_timeout), "coordination_timeout");
  EXPECT_EQ(te::to_string(te::failure_reason::in_doubt), "in_doubt");
  EXPECT_EQ(te::to_string(te::failure_reason::lease_lost), "lease_lost");
}

TEST(FailureReason, EverySlugRoundTripsAndSlugsAreDistinct) {
  std::set<std::string> seen;
  for (const auto r : all_reasons) {
    const auto slug = te::to_string(r);
    EXPECT_TRUE(seen.insert(std::string(slug)).second) << slug;
    EXPECT_EQ(te::try_parse_failure_reason(slug), r);
    EXPECT_EQ(te::parse_failure_reason(slug), r);
  }
  EXPECT_EQ(seen.size(), te::failure_reason_count);
}

TEST(FailureReason, UnknownSlugsAreRejectedNamingTheInput) {
  for (const char* bad : {"", "UNSAFE_TO_RETRY", "unsafe-to-retry", " unsafe_to_retry", "retries_exhausted "}) {
    EXPECT_FALSE(te::try_parse_failure_reason(bad).has_value()) << bad;
    try {
      (void)te::parse_failure_reason(bad);
      ADD_FAILURE() << "parse_failure_reason accepted " << bad;
    } catch (const te::parse_error& e) {
      EXPECT_EQ(e.input(), bad);
      EXPECT_NE(std::string(e.what()).find("unknown failure reason"), std::string::npos) << e.what();
    }
  }
}

TEST(FailureReason, StreamsItsSlug) {
  std::ostringstream os;
  os << te::failure_reason::confirmation_denied;
  EXPECT_EQ(os.str(), "confirmation_denied");
}

TEST(Rollback, OnlyClassNoneIsLedgerRollbackEligible) {
  for (const auto c : all_classes) {
    const auto refusal = te::rollback_refusal(c);
    EXPECT_EQ(te::is_rollback_eligible(c), c == te::side_effect_class::none) << te::to_string(c);
    EXPECT_EQ(refusal.has_value(), c != te::side_effect_class::none) << te::to_string(c);
    if (refusal) {
      EXPECT_EQ(*refusal, te::failure_reason::rollback_not_supported_for_side_effects);
    }
  }
}

TEST(FailureRecord, MakeTakesTheMessageOfTheLastError) {
  const auto e = std::make_exception_ptr(std::runtime_error("connection reset"));
  const auto r = te::make_failure_record("fetch_user", 3, te::side_effect_class::idempotent,
                                         te::failure_reason::retries_exhausted, e);
  EXPECT_EQ(r.tool, "fetch_user");
  EXPECT_EQ(r.attempts, 3u);
  EXPECT_EQ(r.effect_class, te::side_effect_class::idempotent);
  EXPECT_EQ(r.reason, te::failure_reason::retries_exhausted);
  EXPECT_EQ(r.last_error, e);
  EXPECT_EQ(r.last_error_message, "connection reset");
}

TEST(FailureRecord, NonStandardExceptionsAndNoErrorHaveMessages) {
  EXPECT_EQ(te::make_failure_record("t", 1, te::side_effect_class::none, te::failure_reason::unsafe_to_retry,
                                    std::make_exception_ptr(42))
                .last_error_message,
            "unknown exception");
  EXPECT_EQ(te::make_failure_record("t", 0, te::side_effect_class::none, te::failure_reason::confirmation_denied)
                .last_error_message,
            "");
}

TEST(FailureRecord, ToStringNamesToolReasonClassAttemptsAndError) {
  const auto r = te::make_failure_record("send_email", 1, te::side_effect_class::non_idempotent,
                                         te::failure_reason::unsafe_to_retry,
                                         std::make_exception_ptr(std::runtime_error("timeout \"smtp\"")));
  EXPECT_EQ(te::to_string(r),
            "tool 'send_email' failed: reason=unsafe_to_retry class=non_idempotent attempts=1 error=\"timeout "
            "\\\"smtp\\\"\"");
  std::ostringstream os;
  os << r;
  EXPECT_EQ(os.str(), te::to_string(r));
}

TEST(CallFailure, CarriesTheRecordAndDescribesIt) {
  auto r = te::make_failure_record("delete_account", 0, te::side_effect_class::non_idempotent,
                                   te::failure_reason::confirmation_denied);
  r.last_error_message = "denied by the approver";
  try {
    throw te::call_failure(r);
  } catch (const std::runtime_error& e) {
    const auto* f = dynamic_cast<const te::call_failure*>(&e);
    ASSERT_NE(f, nullptr);
    EXPECT_EQ(f->reason(), te::failure_reason::confirmation_denied);
    EXPECT_EQ(f->record().tool, "delete_account");
    EXPECT_EQ(f->record().attempts, 0u);
    EXPECT_EQ(std::string(e.what()), te::to_string(r));
  }
}
}  // namespace failure_test_ns
