// tool_effects/mcp/auth/detail/jose.hpp — internal to the JWT verifier (mcp/auth/jwt.hpp): the JOSE signatures it
// accepts, RS256 (RSASSA-PKCS1-v1_5 with SHA-256) and ES256 (ECDSA P-256 with SHA-256) on OpenSSL 3's EVP
// interface, and the public keys of a JWK Set (RFC 7517 / RFC 7518 section 6: kty RSA n/e, kty EC crv P-256 x/y).
// Needs OpenSSL 3.0 or later, linked (OpenSSL::Crypto).
#ifndef TOOL_EFFECTS_MCP_AUTH_DETAIL_JOSE_HPP
#define TOOL_EFFECTS_MCP_AUTH_DETAIL_JOSE_HPP

#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include <openssl/opensslv.h>
#if OPENSSL_VERSION_NUMBER < 0x30000000L
#error "<tool_effects/mcp/auth/jwt.hpp> needs OpenSSL 3.0 or later"
#endif
#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/ec.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/param_build.h>

#include <tool_effects/mcp/protocol/detail/crypto.hpp>  // mcp_base64url_decode

namespace tool_effects::detail {

// The signature algorithms the verifier knows; every other `alg` is refused before any key is looked at.
enum class mcp_jose_alg { rs256, es256 };

inline std::optional<mcp_jose_alg> mcp_jose_alg_of(std::string_view alg) noexcept {
  if (alg == "RS256") return mcp_jose_alg::rs256;
  if (alg == "ES256") return mcp_jose_alg::es256;
  return std::nullopt;
}

struct mcp_evp_pkey_free {
  void operator()(EVP_PKEY* p) const noexcept { EVP_PKEY_free(p); }
};
using mcp_evp_pkey = std::unique_ptr<EVP_PKEY, mcp_evp_pkey_free>;

// One usable verification key of a JWK Set.
struct mcp_jwk {
  std::optional<std::string> kid;  // `kid`, when the JWK has one
  mcp_jose_alg family{};           // what its type verifies: rs256 for kty RSA, es256 for kty EC crv P-256
  std::string alg;                 // the JWK's `alg`, "" when absent: then any algorithm of its type
  mcp_evp_pkey key;
};

// Clears OpenSSL's error queue of this thread on leaving a scope (failures of verification push errors there,
// which another OpenSSL user on the thread, the TLS layer, must not read as its own).
struct mcp_openssl_errors_cleared {
  mcp_openssl_errors_cleared() = default;
  mcp_openssl_errors_cleared(const mcp_openssl_errors_cleared&) = delete;
  mcp_openssl_errors_cleared& operator=(const mcp_openssl_errors_cleared&) = delete;
  ~mcp_openssl_errors_cleared() { ERR_clear_error(); }
};

// A public key from OSSL_PARAMs built by `build` (given the builder; false: failed; what it pushes by reference must
// outlive this call), of key type `type`, and
// checked by OpenSSL's public-key validation (an EC point on the curve and of the group's order; RSA's n and e).
template <class Build>
mcp_evp_pkey mcp_public_key(const char* type, Build build) {
  mcp_openssl_errors_cleared cleared;
  std::unique_ptr<OSSL_PARAM_BLD, decltype(&OSSL_PARAM_BLD_free)> bld(OSSL_PARAM_BLD_new(), &OSSL_PARAM_BLD_free);
  if (!bld || !build(bld.get())) return nullptr;
  std::unique_ptr<OSSL_PARAM, decltype(&OSSL_PARAM_free)> params(OSSL_PARAM_BLD_to_param(bld.get()), &OSSL_PARAM_free);
  std::unique_ptr<EVP_PKEY_CTX, decltype(&EVP_PKEY_CTX_free)> ctx(EVP_PKEY_CTX_new_from_name(nullptr, type, nullptr),
                                                                  &EVP_PKEY_CTX_free);
  if (!params || !ctx || EVP_PKEY_fromdata_init(ctx.get()) != 1) return nullptr;
  EVP_PKEY* raw = nullptr;
  if (EVP_PKEY_fromdata(ctx.get(), &raw, EVP_PKEY_PUBLIC_KEY, params.get()) != 1) return nullptr;
  mcp_evp_pkey key(raw);
  std::unique_ptr<EVP_PKEY_CTX, decltype(&EVP_PKEY_CTX_free)> check(EVP_PKEY_CTX_new_from_pkey(nullptr, raw, nullptr),
                                                                    &EVP_PKEY_CTX_free);
  if (!check || EVP_PKEY_public_check(check.get()) != 1) return nullptr;
  return key;
}

// The base64url member `name` of a JWK, decoded (nullopt: absent, not a string, or not strict base64url).
inline std::optional<std::string> mcp_jwk_bytes(const nlohmann::json& k, const char* name) {
  const auto it = k.find(name);
  if (it == k.end() || !it->is_string()) return std::nullopt;
  return mcp_base64url_decode(it->get_ref<const std::string&>());
}

// Reads one member of a JWK Set's `keys`. nullopt with `why` empty for a key that is not for this verifier (another
// type or curve, `use` other than "sig", `key_ops` without "verify"): skipped quietly; nullopt with `why` saying
// what is wrong for a key of a known type that cannot be used (bad base64url, an RSA modulus under 2048 or over
// 16384 bits, a point not on P-256, a member of the wrong type).
inline std::optional<mcp_jwk> mcp_jwk_of(const nlohmann::json& k, std::string& why) {
  why.clear();
  if (!k.is_object()) {
    why = "a key that is not a JSON object";
    return std::nullopt;
  }
  const auto kty = k.find("kty");
  if (kty == k.end() || !kty->is_string()) {
    why = "a key without a string `kty`";
    return std::nullopt;
  }
  if (const auto use = k.find("use"); use != k.end() && !(use->is_string() && *use == "sig")) return std::nullopt;
  if (const auto ops = k.find("key_ops"); ops != k.end()) {
    if (!ops->is_array()) {
      why = "a key whose `key_ops` is not an array";
      return std::nullopt;
    }
    bool verify = false;
    for (const auto& op : *ops) verify = verify || (op.is_string() && op == "verify");
    if (!verify) return std::nullopt;
  }
  mcp_jwk out;
  if (const auto kid = k.find("kid"); kid != k.end()) {
    if (!kid->is_string()) {
      why = "a key whose `kid` is not a string";
      return std::nullopt;
    }
    out.kid = kid->get<std::string>();
  }
  if (const auto alg = k.find("alg"); alg != k.end()) {
    if (!alg->is_string()) {
      why = "a key whose `alg` is not a string";
      return std::nullopt;
    }
    out.alg = alg->get<std::string>();
  }
  if (*kty == "RSA") {
    out.family = mcp_jose_alg::rs256;
    const auto n = mcp_jwk_bytes(k, "n");
    const auto e = mcp_jwk_bytes(k, "e");
    if (!n || !e || n->empty() || e->empty() || n->size() > 2048 || e->size() > 8) {
      why = "an RSA key whose `n` or `e` is missing or not strict base64url";
      return std::nullopt;
    }
    // The builder keeps pointers to the numbers until it makes the parameters: they outlive mcp_public_key.
    const std::unique_ptr<BIGNUM, decltype(&BN_free)> bn_n(
        BN_bin2bn(reinterpret_cast<const unsigned char*>(n->data()), static_cast<int>(n->size()), nullptr), &BN_free);
    const std::unique_ptr<BIGNUM, decltype(&BN_free)> bn_e(
        BN_bin2bn(reinterpret_cast<const unsigned char*>(e->data()), static_cast<int>(e->size()), nullptr), &BN_free);
    out.key = mcp_public_key("RSA", [&](OSSL_PARAM_BLD* b) {
      return bn_n && bn_e && OSSL_PARAM_BLD_push_BN(b, OSSL_PKEY_PARAM_RSA_N, bn_n.get()) == 1 &&
             OSSL_PARAM_BLD_push_BN(b, OSSL_PKEY_PARAM_RSA_E, bn_e.get()) == 1;
    });
    if (!out.key || EVP_PKEY_get_bits(out.key.get()) < 2048 || EVP_PKEY_get_bits(out.key.get()) > 16384) {
      why = "an RSA key that is not a valid public key of 2048 to 16384 bits";
      return std::nullopt;
    }
    return out;
  }
  if (*kty == "EC") {
    const auto crv = k.find("crv");
    if (crv == k.end() || !crv->is_string() || *crv != "P-256") return std::nullopt;  // another curve: not ours
    out.family = mcp_jose_alg::es256;
    const auto x = mcp_jwk_bytes(k, "x");
    const auto y = mcp_jwk_bytes(k, "y");
    if (!x || !y || x->size() != 32 || y->size() != 32) {
      why = "a P-256 key whose `x` or `y` is missing, not strict base64url, or not 32 bytes";
      return std::nullopt;
    }
    const std::string point = std::string(1, '\x04') + *x + *y;  // SEC 1 uncompressed form
    out.key = mcp_public_key("EC", [&](OSSL_PARAM_BLD* b) {
      return OSSL_PARAM_BLD_push_utf8_string(b, OSSL_PKEY_PARAM_GROUP_NAME, "prime256v1", 0) == 1 &&
             OSSL_PARAM_BLD_push_octet_string(b, OSSL_PKEY_PARAM_PUB_KEY, point.data(), point.size()) == 1;
    });
    if (!out.key) {
      why = "a P-256 key whose point is not on the curve";
      return std::nullopt;
    }
    return out;
  }
  return std::nullopt;  // oct, OKP, ...: not a key of RS256 or ES256
}

// The DER form (X9.62 ECDSA-Sig-Value) OpenSSL verifies of a JOSE ES256 signature, r || s of 32 bytes each
// (RFC 7518 section 3.4); nullopt when it is not 64 bytes.
inline std::optional<std::string> mcp_es256_der(std::string_view rs) {
  if (rs.size() != 64) return std::nullopt;
  mcp_openssl_errors_cleared cleared;
  const auto* p = reinterpret_cast<const unsigned char*>(rs.data());
  std::unique_ptr<ECDSA_SIG, decltype(&ECDSA_SIG_free)> sig(ECDSA_SIG_new(), &ECDSA_SIG_free);
  BIGNUM* r = BN_bin2bn(p, 32, nullptr);
  BIGNUM* s = BN_bin2bn(p + 32, 32, nullptr);
  if (!sig || !r || !s || ECDSA_SIG_set0(sig.get(), r, s) != 1) {  // set0 takes r and s only when it succeeds
    BN_free(r);
    BN_free(s);
    return std::nullopt;
  }
  const int n = i2d_ECDSA_SIG(sig.get(), nullptr);
  if (n <= 0) return std::nullopt;
  std::string der(static_cast<std::size_t>(n), '\0');
  auto* out = reinterpret_cast<unsigned char*>(der.data());
  if (i2d_ECDSA_SIG(sig.get(), &out) != n) return std::nullopt;
  return der;
}

// Whether `signature` (as the JWS carries it, decoded) is `alg`'s signature of `signing_input` under `key`, a key of
// `alg`'s type. Safe to call from several threads on the same key.
inline bool mcp_jose_verify(mcp_jose_alg alg, EVP_PKEY* key, std::string_view signing_input,
                            std::string_view signature) {
  mcp_openssl_errors_cleared cleared;
  std::string der;
  if (alg == mcp_jose_alg::es256) {
    if (!EVP_PKEY_is_a(key, "EC")) return false;
    auto d = mcp_es256_der(signature);
    if (!d) return false;
    der = std::move(*d);
    signature = der;
  } else if (!EVP_PKEY_is_a(key, "RSA") || signature.size() != static_cast<std::size_t>(EVP_PKEY_get_size(key))) {
    return false;
  }
  std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)> md(EVP_MD_CTX_new(), &EVP_MD_CTX_free);
  if (!md || EVP_DigestVerifyInit(md.get(), nullptr, EVP_sha256(), nullptr, key) != 1) return false;
  return EVP_DigestVerify(md.get(), reinterpret_cast<const unsigned char*>(signature.data()), signature.size(),
                          reinterpret_cast<const unsigned char*>(signing_input.data()), signing_input.size()) == 1;
}

}  // namespace tool_effects::detail

#endif  // TOOL_EFFECTS_MCP_AUTH_DETAIL_JOSE_HPP
