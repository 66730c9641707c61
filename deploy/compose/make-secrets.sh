#!/usr/bin/env bash
# The certificates and users of the secure compose stack (compose.secure.yaml), made with
# openssl into deploy/compose/secrets/ (git-ignored), or into the directory given:
#   bash deploy/compose/make-secrets.sh [DIR]
# What exists is kept (delete DIR to start over):
#   ca.crt ca.key            a CA of its own (ca.key never leaves this directory)
#   tls/<node>/              ca.crt, tls.crt, tls.key of each node (and of the mirror, with
#                            keystore.pem: key then chain), as a kubernetes.io/tls Secret
#                            holds them: the node's name, localhost and 127.0.0.1
#   clients/<user>/          ca.crt, tls.crt, tls.key: a client certificate, CN=<user>
#   users/<user>             the password of each SCRAM user, one file each (the
#                            controllers format their storage with these on first start)
# Users: admin (a super user) and alice (what ACLs allow her).
# The containers run as uid 10001, so the files are readable by all; the directory itself
# is private to you (0700).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out=${1:-$here/secrets}
nodes=(controller-1 controller-2 controller-3 broker-1 broker-2 broker-3 west mirror)
users=(admin alice)
clients=(alice)
days=825

mkdir -p "$out"
chmod 700 "$out"
cd "$out"
umask 022
if [[ ! -s ca.crt ]]; then
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout ca.key \
    -out ca.crt -days "$days" -subj "/CN=Odradek compose CA" \
    -addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign,cRLSign \
    2>/dev/null
  chmod 600 ca.key
fi

# issue DIR CN SAN: DIR/{ca.crt,tls.crt,tls.key} signed by the CA
issue() {
  local dir=$1 cn=$2 san=$3
  [[ -s $dir/tls.crt ]] && return
  mkdir -p "$dir"
  openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout "$dir/tls.key" \
    -out "$dir/tls.csr" -subj "/CN=$cn" 2>/dev/null
  openssl x509 -req -in "$dir/tls.csr" -CA ca.crt -CAkey ca.key -CAcreateserial \
    -days "$days" -out "$dir/tls.crt" -extfile <(printf '%s\n' "subjectAltName=$san" \
    "extendedKeyUsage=serverAuth,clientAuth" "keyUsage=critical,digitalSignature") 2>/dev/null
  rm "$dir/tls.csr"
  cp ca.crt "$dir/ca.crt"
  chmod 644 "$dir/tls.key"
}

for node in "${nodes[@]}"; do
  issue "tls/$node" "$node" "DNS:$node,DNS:localhost,IP:127.0.0.1"
done
# the mirror's own clients read one PEM key store (KIP-651): the key, then the chain
[[ -s tls/mirror/keystore.pem ]] || cat tls/mirror/tls.key tls/mirror/tls.crt >tls/mirror/keystore.pem
for user in "${clients[@]}"; do
  issue "clients/$user" "$user" "DNS:$user"
done
mkdir -p users
for user in "${users[@]}"; do
  [[ -s users/$user ]] || openssl rand -hex 16 >"users/$user"
done
echo "make-secrets: CA, certificates and users in $out"
