// tool_effects/mcp/protocol/detail/crypto.hpp — internal: the few primitives both roles need without a TLS
// library: SHA-256 and HMAC-SHA256 (the client's PKCE challenge, the server's signed MRTR state, the key of a
// verified bearer token), random bytes from the kernel, Base64 and base64url (and a strict base64url decoder, for
// JOSE). In a build with TLS, where OpenSSL is linked anyway, SHA-256 is OpenSSL's.
#ifndef TOOL_EFFECTS_MCP_PROTOCOL_DETAIL_CRYPTO_HPP
#define TOOL_EFFECTS_MCP_PROTOCOL_DETAIL_CRYPTO_HPP

#include <array>
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>

#include <sys/random.h>

#include <tool_effects/detail/config.hpp>
#if TOOL_EFFECTS_MCP_HAS_TLS
#include <openssl/evp.h>
#endif

namespace tool_effects::detail {

// SHA-256 (FIPS 180-4), portable; tested against the FIPS vectors and OpenSSL's. About 60 instructions per byte:
// fine for a PKCE verifier or an MRTR state, not for every request's bearer token (mcp_sha256).
inline std::array<std::uint8_t, 32> mcp_sha256_portable(std::string_view data) {
  static constexpr std::array<std::uint32_t, 64> k{
      0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
      0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
      0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
      0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
      0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
      0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
      0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
      0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2};
  std::array<std::uint32_t, 8> h{0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
                                 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
  auto rotr = [](std::uint32_t x, unsigned n) { return (x >> n) | (x << (32 - n)); };
  std::string m(data);
  const std::uint64_t bits = static_cast<std::uint64_t>(data.size()) * 8;
  m += static_cast<char>(0x80);
  while (m.size() % 64 != 56) m += '\0';
  for (int i = 7; i >= 0; --i) m += static_cast<char>((bits >> (i * 8)) & 0xFF);
  for (std::size_t off = 0; off < m.size(); off += 64) {
    std::array<std::uint32_t, 64> w{};
    for (std::size_t i = 0; i < 16; ++i) {
      const auto b = [&](std::size_t j) {
        return static_cast<std::uint32_t>(static_cast<unsigned char>(m[off + 4 * i + j]));
      };
      w[i] = (b(0) << 24) | (b(1) << 16) | (b(2) << 8) | b(3);
    }
    for (std::size_t i = 16; i < 64; ++i) {
      const std::uint32_t s0 = rotr(w[i - 15], 7) ^ rotr(w[i - 15], 18) ^ (w[i - 15] >> 3);
      const std::uint32_t s1 = rotr(w[i - 2], 17) ^ rotr(w[i - 2], 19) ^ (w[i - 2] >> 10);
      w[i] = w[i - 16] + s0 + w[i - 7] + s1;
    }
    std::uint32_t a = h[0], b = h[1], c = h[2], d = h[3], e = h[4], f = h[5], g = h[6], hh = h[7];
    for (std::size_t i = 0; i < 64; ++i) {
      const std::uint32_t S1 = rotr(e, 6) ^ rotr(e, 11) ^ rotr(e, 25);
      const std::uint32_t ch = (e & f) ^ (~e & g);
      const std::uint32_t t1 = hh + S1 + ch + k[i] + w[i];
      const std::uint32_t S0 = rotr(a, 2) ^ rotr(a, 13) ^ rotr(a, 22);
      const std::uint32_t maj = (a & b) ^ (a & c) ^ (b & c);
      const std::uint32_t t2 = S0 + maj;
      hh = g;
      g = f;
      f = e;
      e = d + t1;
      d = c;
      c = b;
      b = a;
      a = t1 + t2;
    }
    h[0] += a;
    h[1] += b;
    h[2] += c;
    h[3] += d;
    h[4] += e;
    h[5] += f;
    h[6] += g;
    h[7] += hh;
  }
  std::array<std::uint8_t, 32> out{};
  for (std::size_t i = 0; i < 8; ++i)
    for (std::size_t j = 0; j < 4; ++j) out[4 * i + j] = static_cast<std::uint8_t>((h[i] >> (24 - 8 * j)) & 0xFF);
  return out;
}

// SHA-256: OpenSSL's in a build with TLS (TOOL_EFFECTS_MCP_TLS=1), else the portable one. An authorizing HTTP
// server hashes every request's bearer token (the key of its verified tokens): OpenSSL's uses the CPU's SHA
// extensions, about a tenth of the portable code's instructions on a 650-byte token (scripts/bench-auth).
inline std::array<std::uint8_t, 32> mcp_sha256(std::string_view data) {
#if TOOL_EFFECTS_MCP_HAS_TLS
  static EVP_MD* const md = EVP_MD_fetch(nullptr, "SHA256", nullptr);  // fetched once, kept for the process
  std::array<std::uint8_t, 32> out{};
  unsigned int n = 0;
  if (md && EVP_Digest(data.data(), data.size(), out.data(), &n, md, nullptr) == 1 && n == out.size()) return out;
#endif
  return mcp_sha256_portable(data);
}

// `n` bytes from the kernel's CSPRNG (getrandom); throws std::runtime_error when none is to be had.
inline std::string mcp_random_bytes(std::size_t n) {
  std::string out(n, '\0');
  std::size_t got = 0;
  while (got < n) {
    const auto r = ::getrandom(out.data() + got, n - got, 0);
    if (r < 0) {
      if (errno == EINTR) continue;
      throw std::runtime_error("no random bytes to be had (getrandom failed)");
    }
    got += static_cast<std::size_t>(r);
  }
  return out;
}

// Base64 (RFC 4648 section 4), or its URL-safe alphabet without padding (section 5, as PKCE wants).
inline std::string mcp_base64(std::string_view in, bool url) {
  const char* alphabet = url ? "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
                             : "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  std::size_t i = 0;
  auto byte = [&](std::size_t j) { return static_cast<std::uint32_t>(static_cast<unsigned char>(in[j])); };
  for (; i + 3 <= in.size(); i += 3) {
    const std::uint32_t v = (byte(i) << 16) | (byte(i + 1) << 8) | byte(i + 2);
    for (int s = 18; s >= 0; s -= 6) out += alphabet[(v >> s) & 63];
  }
  if (const std::size_t rest = in.size() - i; rest > 0) {
    const std::uint32_t v = (byte(i) << 16) | (rest == 2 ? byte(i + 1) << 8 : 0);
    out += alphabet[(v >> 18) & 63];
    out += alphabet[(v >> 12) & 63];
    if (rest == 2) out += alphabet[(v >> 6) & 63];
    if (!url) out.append(3 - rest, '=');
  }
  return out;
}

// Strict base64url (RFC 4648 section 5; RFC 7515 section 2, as JOSE writes it): the URL-safe alphabet only, no
// padding, no whitespace, no length that leaves a lone character (n % 4 == 1), and the unused bits of the last
// character zero, so that every byte string has exactly one encoding. nullopt for anything else.
inline std::optional<std::string> mcp_base64url_decode(std::string_view in) {
  auto value = [](char c) -> int {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == '-') return 62;
    if (c == '_') return 63;
    return -1;
  };
  if (in.size() % 4 == 1) return std::nullopt;
  std::string out;
  out.reserve(in.size() / 4 * 3 + 2);
  std::uint32_t acc = 0;
  unsigned bits = 0;
  for (const char c : in) {
    const int v = value(c);
    if (v < 0) return std::nullopt;
    acc = (acc << 6) | static_cast<std::uint32_t>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out += static_cast<char>((acc >> bits) & 0xFF);
    }
  }
  if ((acc & ((1u << bits) - 1)) != 0) return std::nullopt;  // non-zero unused bits: not the canonical encoding
  return out;
}

// HMAC-SHA256 (RFC 2104, FIPS 198-1) over mcp_sha256; tested against RFC 4231's vectors.
inline std::array<std::uint8_t, 32> mcp_hmac_sha256(std::string_view key, std::string_view data) {
  std::string k(key);
  if (k.size() > 64) {
    const auto d = mcp_sha256(k);
    k.assign(reinterpret_cast<const char*>(d.data()), d.size());
  }
  k.resize(64, '\0');
  std::string inner(64, '\0');
  std::string outer(64, '\0');
  for (std::size_t i = 0; i < 64; ++i) {
    inner[i] = static_cast<char>(k[i] ^ 0x36);
    outer[i] = static_cast<char>(k[i] ^ 0x5c);
  }
  inner.append(data);
  const auto ih = mcp_sha256(inner);
  outer.append(reinterpret_cast<const char*>(ih.data()), ih.size());
  return mcp_sha256(outer);
}

}  // namespace tool_effects::detail

#endif  // TOOL_EFFECTS_MCP_PROTOCOL_DETAIL_CRYPTO_HPP
