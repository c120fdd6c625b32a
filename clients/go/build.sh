#!/usr/bin/env bash
# Build curio-client into OUT (default: ./build) from proto/cuzk/v1/proving.proto with Debian's
# protoc-gen-go / protoc-gen-go-grpc against Debian's Go packages, in GOPATH mode: no module
# proxy, nothing downloaded. Needs: golang-go protobuf-compiler protoc-gen-go protoc-gen-go-grpc
# golang-google-protobuf-dev golang-google-grpc-dev.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
out="$(mkdir -p "${1:-$here/build}" && cd "${1:-$here/build}" && pwd)"
gopath="$out/gopath"
rm -rf "$gopath" && mkdir -p "$gopath/src/cuzkclient"
map="Mcuzk/v1/proving.proto=cuzkclient/cuzkpb"
protoc -I "$root/proto" --go_out="$gopath/src" --go_opt="$map" \
  --go-grpc_out="$gopath/src" --go-grpc_opt="$map" "$root/proto/cuzk/v1/proving.proto"
cp -r "$here/curio-client" "$gopath/src/cuzkclient/"
cd "$gopath/src/cuzkclient/curio-client"
GO111MODULE=off GOPATH="$gopath:/usr/share/gocode" GOCACHE="$out/gocache" \
  GOPROXY=off go build -o "$out/curio-client" .
echo "$out/curio-client"
