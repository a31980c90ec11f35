#!/usr/bin/env bash
# Test certificates for the secured shape (TLS to Kafka, the schema registry
# and PostgreSQL), made with openssl into <dir>, once (kept when present):
#
#   ca.crt, ca.key          the test CA
#   server.crt, server.key  signed by it, for 127.0.0.1 and localhost
#   server.pem              server.key + server.crt (Kafka's PEM keystore)
#   client.crt, client.key  signed by it, CN=svc (mTLS)
#   other-ca.crt            an unrelated CA: trusting it instead must fail
#   wrong-name.crt/.key     signed by the test CA for another host only
#
# Usage: certs.sh <dir>
set -euo pipefail
dir="${1:?usage: certs.sh <dir>}"
mkdir -p "$dir"
cd "$dir"
[[ -s server.pem && -s client.crt && -s other-ca.crt && -s wrong-name.crt ]] && exit 0

days=3650
ca() { # <name> <subject>
  openssl req -x509 -newkey rsa:2048 -nodes -sha256 -days "$days" -subj "$2" \
    -keyout "$1.key" -out "$1.crt" -addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign,cRLSign 2>/dev/null
}
leaf() { # <name> <subject> <extensions>
  openssl req -newkey rsa:2048 -nodes -sha256 -subj "$2" -keyout "$1.key" -out "$1.csr" 2>/dev/null
  printf '%s\n' "$3" >"$1.ext"
  openssl x509 -req -in "$1.csr" -CA ca.crt -CAkey ca.key -CAcreateserial -days "$days" -sha256 -extfile "$1.ext" -out "$1.crt" 2>/dev/null
  rm -f "$1.csr" "$1.ext"
  # PKCS#8, as Kafka's PEM keystore and Node both read it.
  openssl pkcs8 -topk8 -nocrypt -in "$1.key" -out "$1.key.p8" && mv "$1.key.p8" "$1.key"
}

ca ca '/CN=svc test CA'
ca other-ca '/CN=some other CA'
leaf server '/CN=127.0.0.1' $'subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth,clientAuth'
leaf client '/CN=svc' $'extendedKeyUsage=clientAuth'
leaf wrong-name '/CN=elsewhere.invalid' $'subjectAltName=DNS:elsewhere.invalid\nextendedKeyUsage=serverAuth'
cat server.key server.crt >server.pem
rm -f other-ca.key ca.srl
chmod 644 ./*.crt
chmod 600 ./*.key server.pem
