#!/bin/sh
# Creates the certificates the TLS tests use, in DIR (created if needed):
#
#   ca.crt ca.key                 the test CA ("tinybroker test CA")
#   server.crt server.key         server cert for DNS localhost and IP
#                                 127.0.0.1 (subjectAltName), signed by ca
#   client.crt client.key         client cert CN=client-a,O=tinybroker-test,
#                                 signed by ca
#   expired-client.crt/.key       client cert signed by ca, valid only on
#                                 2020-01-01 (already expired)
#   other-ca.crt other-ca.key     a second CA, unrelated to ca
#   other-client.crt/.key         client cert signed by other-ca
#   expired-server.crt/.key       server cert as server.crt, but valid only
#                                 on 2020-01-01 (already expired)
#   special-client.crt/.key       client cert signed by ca whose subject
#                                 needs escaping: O=Exämple, Inc. (UTF-8)
#   renewed-server.crt/.key       server cert as server.crt, but
#                                 CN=renewed (a renewal, for SIGHUP tests)
#   expiring-server.crt/.key      server cert as server.crt, CN=expiring,
#                                 valid for 5 more days only
#
# Keys are P-256 EC keys without a passphrase. Usage: make_test_certs.sh DIR
set -eu

dir=${1:?usage: make_test_certs.sh DIR}
mkdir -p "$dir"
cd "$dir"

# new_key NAME: writes NAME.key.
new_key() {
  openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 \
    -out "$1.key" 2>/dev/null
}

# new_ca NAME SUBJECT: a self-signed CA, NAME.crt and NAME.key.
new_ca() {
  new_key "$1"
  openssl req -x509 -new -key "$1.key" -subj "$2" -days 3650 \
    -addext "basicConstraints=critical,CA:TRUE" \
    -addext "keyUsage=critical,keyCertSign,cRLSign" -out "$1.crt"
}

# sign NAME CA SUBJECT EXTENSIONS [START END]: NAME.key and NAME.crt signed
# by CA; with START and END (YYYYMMDDHHMMSSZ) the certificate is valid only
# between them (`openssl ca` takes explicit dates; `openssl x509 -req`
# cannot set a start date in OpenSSL 3.0).
sign() {
  new_key "$1"
  openssl req -new -utf8 -key "$1.key" -subj "$3" -out "$1.csr"
  printf '%s\n' "$4" > "$1.ext"
  if [ $# -ge 6 ]; then
    rm -rf "ca-$1" && mkdir "ca-$1" && : > "ca-$1/index.txt"
    cat > "ca-$1/ca.cnf" <<CNF
[ca]
default_ca = test_ca
[test_ca]
database = ca-$1/index.txt
new_certs_dir = ca-$1
serial = ca-$1/serial
default_md = sha256
policy = any
unique_subject = no
[any]
commonName = optional
organizationName = optional
CNF
    echo 01 > "ca-$1/serial"
    openssl ca -batch -preserveDN -config "ca-$1/ca.cnf" -cert "$2.crt" -keyfile "$2.key" \
      -startdate "$5" -enddate "$6" -extfile "$1.ext" -notext \
      -in "$1.csr" -out "$1.crt" 2>/dev/null
    rm -rf "ca-$1"
  else
    openssl x509 -req -in "$1.csr" -CA "$2.crt" -CAkey "$2.key" \
      -CAcreateserial -days "${days:-825}" -extfile "$1.ext" -out "$1.crt" 2>/dev/null
  fi
  rm -f "$1.csr" "$1.ext"
}

server_ext='subjectAltName=DNS:localhost,IP:127.0.0.1
extendedKeyUsage=serverAuth'
client_ext='extendedKeyUsage=clientAuth'
old_start=20200101000000Z
old_end=20200102000000Z

new_ca ca "/O=tinybroker-test/CN=tinybroker test CA"
new_ca other-ca "/O=tinybroker-other/CN=unrelated test CA"
sign server ca "/O=tinybroker-test/CN=localhost" "$server_ext"
sign client ca "/O=tinybroker-test/CN=client-a" "$client_ext"
sign other-client other-ca "/O=tinybroker-test/CN=client-a" "$client_ext"
sign expired-client ca "/O=tinybroker-test/CN=client-expired" "$client_ext" \
  "$old_start" "$old_end"
sign expired-server ca "/O=tinybroker-test/CN=localhost" "$server_ext" \
  "$old_start" "$old_end"
sign special-client ca "/O=Exämple, Inc./CN=orders" "$client_ext"
sign renewed-server ca "/O=tinybroker-test/CN=renewed" "$server_ext"
days=5 sign expiring-server ca "/O=tinybroker-test/CN=expiring" "$server_ext"
rm -f ca.srl other-ca.srl

# The expired ones must be expired, the others not.
for name in expired-client expired-server; do
  if openssl x509 -in "$name.crt" -noout -checkend 0 >/dev/null; then
    echo "make_test_certs.sh: $name.crt is not expired" >&2
    exit 1
  fi
done
for name in ca other-ca server client other-client special-client \
  renewed-server expiring-server; do
  openssl x509 -in "$name.crt" -noout -checkend 86400 >/dev/null
done
