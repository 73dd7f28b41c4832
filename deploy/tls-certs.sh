#!/bin/sh
# Makes a CA and two certificates it signs, for TLS between gphkv clients and
# servers (docs/deploy.md, "TLS"), in DIR:
#
#   ca.crt, ca.key          the CA: clients trust ca.crt (--tls_ca), servers
#                           require client certificates it signed (--tls_client_ca)
#   tls.crt, tls.key        the servers' certificate (--tls_cert, --tls_key), for
#                           localhost, 127.0.0.1 and every NAME given
#   client.crt, client.key  a client's certificate (mTLS: --tls_cert, --tls_key)
#
# P-256 keys, unencrypted (gphkv-server reads them at start), valid DAYS days
# (default 365); the certificates carry no extended key usage, so the
# servers' one also serves the healthcheck as a client certificate.
#
#   deploy/tls-certs.sh certs                                     # loopback only
#   deploy/tls-certs.sh certs gphkv-shards gphkv-shards.prod.svc.cluster.local \
#     '*.gphkv-shards.prod.svc.cluster.local'                     # Kubernetes
set -eu
[ $# -ge 1 ] || { echo "usage: $0 DIR [NAME...]" >&2; exit 64; }
dir=$1
shift
days=${DAYS:-365}
mkdir -p "$dir"
san="DNS:localhost,IP:127.0.0.1"
for name in "$@"; do san="$san,DNS:$name"; done

key() { openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$1" 2>/dev/null; }
key "$dir/ca.key"
openssl req -x509 -key "$dir/ca.key" -out "$dir/ca.crt" -days "$days" -subj "/CN=gphkv CA" \
  -addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign,cRLSign
# issue NAME SUBJECT_ALT_NAMES: NAME.key and NAME.crt, signed by the CA.
issue() {
  key "$dir/$1.key"
  openssl req -new -key "$dir/$1.key" -out "$dir/$1.csr" -subj "/CN=gphkv $1"
  printf 'subjectAltName=%s\nbasicConstraints=CA:FALSE\n' "$2" >"$dir/$1.ext"
  openssl x509 -req -in "$dir/$1.csr" -CA "$dir/ca.crt" -CAkey "$dir/ca.key" -CAcreateserial -days "$days" \
    -extfile "$dir/$1.ext" -out "$dir/$1.crt" 2>/dev/null
  rm -f "$dir/$1.csr" "$dir/$1.ext"
}
issue tls "$san"
issue client "DNS:gphkv-client"
chmod 600 "$dir"/*.key
echo "$dir: ca.crt, tls.crt (for $san), client.crt and their keys"
