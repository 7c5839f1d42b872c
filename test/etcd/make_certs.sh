#!/usr/bin/env bash
# test/etcd/make_certs.sh DIR — a throwaway CA, a server certificate for 127.0.0.1 and a client certificate
# (PEM, in DIR: ca.pem, server.pem, server-key.pem, client.pem, client-key.pem) for the TLS test.
set -euo pipefail
dir=$1
mkdir -p "$dir"
cd "$dir"
openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj "/CN=tool_effects test CA" -keyout ca-key.pem -out ca.pem 2>/dev/null
for who in server client; do
  openssl req -newkey rsa:2048 -nodes -subj "/CN=$who" -keyout "$who-key.pem" -out "$who.csr" 2>/dev/null
  if [[ $who == server ]]; then
    printf 'subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth,clientAuth\n' >"$who.ext"
  else
    printf 'extendedKeyUsage=clientAuth\n' >"$who.ext"
  fi
  openssl x509 -req -in "$who.csr" -CA ca.pem -CAkey ca-key.pem -CAcreateserial -days 2 -extfile "$who.ext" \
    -out "$who.pem" 2>/dev/null
done
