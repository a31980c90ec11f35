#!/usr/bin/env bash
# A one-node Kubernetes cluster on this machine, from sources and Debian's
# packages only (no container registry is reachable here), for trying the
# Helm chart for real (tools/deploy/src/helm-cluster.integration.test.ts).
#
#   Kubernetes  kube-apiserver, -controller-manager, -scheduler, kubelet,
#               kube-proxy and kubectl, built from the k8s.io/kubernetes Go
#               module (K8S_VERSION); its state in Debian's etcd
#   runtime     Debian's containerd and runc; pods on a bridge from Debian's
#               CNI plugins (host-local addresses, masquerade, portmap)
#   images      pause (Kubernetes' own pause.c, compiled static), CoreDNS and
#               Traefik (the ingress controller) built from their Go modules,
#               each a one-file image made with podman and imported into
#               containerd; never pulled
#
# Usage:
#   kube.sh build               build everything once into the cache (idempotent)
#   kube.sh up <dir>            start the cluster with its state in <dir>; waits
#                               until the node, DNS and the ingress controller are
#                               ready. Last stdout line: KUBECONFIG=<dir>/kubeconfig
#   kube.sh import <dir> <image>...   copy images from podman's storage into the cluster
#   kube.sh kubectl <dir> <args>...   kubectl against the cluster
#   kube.sh down <dir>          stop it and remove every trace: pods, processes,
#                               mounts, interfaces, iptables chains, kernel settings
#
# Addresses (override with the environment, all on this machine):
#   KUBE_NODE_IP     10.213.0.1     the node, on an interface of its own
#   KUBE_POD_CIDR    10.214.0.0/24  pod addresses, on the bridge svc-kube0
#   KUBE_SVC_CIDR    10.215.0.0/24  Service addresses (DNS at .10)
#   KUBE_INGRESS_HTTPS_PORT 30443   the ingress controller's HTTPS NodePort
#
# Needs root, go, gcc, openssl, podman, and Debian's containerd, runc,
# containernetworking-plugins, conntrack, iptables and etcd-server.
set -euo pipefail

K8S_VERSION=v1.34.4
COREDNS_VERSION=v1.15.0
TRAEFIK_VERSION=v3.5.4
PAUSE_IMAGE=registry.k8s.io/pause:3.10
COREDNS_IMAGE=localhost/svc-kube/coredns:${COREDNS_VERSION#v}
TRAEFIK_IMAGE=localhost/svc-kube/traefik:${TRAEFIK_VERSION#v}

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
CACHE="${SVC_DEPLOY_CACHE:-$HOME/.cache/svc-deploy}/kube"
BIN="$CACHE/kubernetes-$K8S_VERSION"
export CONTAINERS_CONF="$HERE/podman/containers.conf"

NODE_NAME=svc-kube
NODE_IP="${KUBE_NODE_IP:-10.213.0.1}"
POD_CIDR="${KUBE_POD_CIDR:-10.214.0.0/24}"
SVC_CIDR="${KUBE_SVC_CIDR:-10.215.0.0/24}"
INGRESS_HTTPS_PORT="${KUBE_INGRESS_HTTPS_PORT:-30443}"
NODE_LINK=svc-kube-node
BRIDGE=svc-kube0
svc_ip() { local base="${SVC_CIDR%/*}"; printf '%s.%s\n' "${base%.*}" "$1"; }
API_SVC_IP="$(svc_ip 1)"
DNS_IP="$(svc_ip 10)"
API_PORT=6443
ETCD_PORT=2479

log() { printf '[kube] %s\n' "$*" >&2; }
die() { log "$*"; exit 1; }

GO="$(command -v go || true)"
[[ -n "$GO" ]] || GO=/usr/local/go/bin/go

# ---------------------------------------------------------------- build

build_kubernetes() {
  [[ -x "$BIN/kubectl" ]] && return
  log "building Kubernetes $K8S_VERSION from its Go module (about five minutes, once)"
  # k8s.io/kubernetes replaces its staging modules with directories its module
  # zip does not carry: a module of our own requires it and names the
  # published staging modules of the same release instead.
  local mod="$CACHE/.kubernetes-build" staging="v0${K8S_VERSION#v1}"
  rm -rf "$mod"
  mkdir -p "$mod" "$BIN.tmp"
  {
    printf 'module svc.local/kubernetes-build\n\ngo 1.24.0\n\nreplace (\n'
    for m in api apiextensions-apiserver apimachinery apiserver cli-runtime client-go cloud-provider cluster-bootstrap \
      code-generator component-base component-helpers controller-manager cri-api cri-client csi-translation-lib \
      dynamic-resource-allocation endpointslice externaljwt kms kube-aggregator kube-controller-manager kube-proxy \
      kube-scheduler kubectl kubelet metrics mount-utils pod-security-admission sample-apiserver sample-cli-plugin \
      sample-controller; do
      printf '\tk8s.io/%s => k8s.io/%s %s\n' "$m" "$m" "$staging"
    done
    printf ')\n'
  } >"$mod/go.mod"
  (cd "$mod" && GOFLAGS=-mod=mod "$GO" get "k8s.io/kubernetes@$K8S_VERSION" >/dev/null 2>&1)
  # The version every component reports (and Helm's kubeVersion checks), as
  # the release's own build stamps it.
  local minor="${K8S_VERSION#v1.}" ldflags="-s -w" pkg
  minor="${minor%%.*}"
  for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    ldflags+=" -X $pkg.gitVersion=$K8S_VERSION -X $pkg.gitMajor=1 -X $pkg.gitMinor=$minor -X $pkg.gitTreeState=clean"
  done
  for cmd in kube-apiserver kube-controller-manager kube-scheduler kubelet kube-proxy kubectl; do
    (cd "$mod" && CGO_ENABLED=0 GOFLAGS=-mod=mod "$GO" build -trimpath -ldflags "$ldflags" -o "$BIN.tmp/$cmd" "k8s.io/kubernetes/cmd/$cmd")
  done
  # pause: the container that holds each pod's namespaces, from the release's own source.
  local src
  src="$(cd "$mod" && "$GO" list -m -f '{{.Dir}}' k8s.io/kubernetes)"
  gcc -Os -static -o "$BIN.tmp/pause" -DVERSION="\"svc-kube\"" "$src/build/pause/linux/pause.c"
  rm -rf "$BIN"
  mv "$BIN.tmp" "$BIN"
}

# build_go_module <module> <version> <package dir> <output>: inside the module's
# own directory, since their go.mod files carry replace directives.
build_go_module() {
  local module="$1" version="$2" pkg="$3" out="$4"
  [[ -x "$out" ]] && return
  log "building $module $version (a few minutes, once)"
  local dir
  dir="$("$GO" mod download -json "$module@$version" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')"
  [[ -d "$dir" ]] || die "go mod download $module@$version gave no directory"
  mkdir -p "$(dirname "$out")"
  (cd "$dir" && CGO_ENABLED=0 GOFLAGS=-mod=mod "$GO" build -trimpath -ldflags "-s -w" -o "$out.tmp" "$pkg")
  mv "$out.tmp" "$out"
}

# one_file_image <image> <binary> [<entrypoint args>...]: FROM scratch with one static binary.
one_file_image() {
  local image="$1" binary="$2"
  shift 2
  podman image exists "$image" && return
  local ctx
  ctx="$(mktemp -d)"
  cp "$binary" "$ctx/"
  local name entry
  name="$(basename "$binary")"
  entry="$(printf '"/%s"' "$name")"
  for arg in "$@"; do entry+=", $(printf '"%s"' "$arg")"; done
  printf 'FROM scratch\nCOPY %s /%s\nUSER 65532:65532\nENTRYPOINT [%s]\n' "$name" "$name" "$entry" >"$ctx/Containerfile"
  log "building image $image"
  podman build --quiet -t "$image" "$ctx" >/dev/null
  rm -rf "$ctx"
}

do_build() {
  for tool in podman gcc openssl containerd runc etcd conntrack iptables; do
    command -v "$tool" >/dev/null || die "$tool not found (apt-get install -y podman gcc openssl containerd runc etcd-server conntrack iptables)"
  done
  [[ -x /usr/lib/cni/bridge ]] || die "no CNI plugins in /usr/lib/cni (apt-get install -y containernetworking-plugins)"
  mkdir -p "$CACHE"
  exec 9>"$CACHE/.lock"
  flock 9
  build_kubernetes
  build_go_module github.com/coredns/coredns "$COREDNS_VERSION" . "$CACHE/coredns-$COREDNS_VERSION/coredns"
  build_go_module github.com/traefik/traefik/v3 "$TRAEFIK_VERSION" ./cmd/traefik "$CACHE/traefik-$TRAEFIK_VERSION/traefik"
  one_file_image "$PAUSE_IMAGE" "$BIN/pause"
  one_file_image "$COREDNS_IMAGE" "$CACHE/coredns-$COREDNS_VERSION/coredns"
  one_file_image "$TRAEFIK_IMAGE" "$CACHE/traefik-$TRAEFIK_VERSION/traefik"
  flock -u 9
}

# ---------------------------------------------------------------- certificates

# cert <dir> <name> <subject> [<subjectAltName>]: a key and a certificate signed by <dir>/ca.
cert() {
  local dir="$1" name="$2" subject="$3" san="${4:-}"
  openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout "$dir/$name.key" -subj "$subject" -out "$dir/$name.csr" 2>/dev/null
  local ext="$dir/$name.ext"
  printf 'basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature,keyEncipherment\nextendedKeyUsage=serverAuth,clientAuth\n' >"$ext"
  [[ -n "$san" ]] && printf 'subjectAltName=%s\n' "$san" >>"$ext"
  openssl x509 -req -in "$dir/$name.csr" -CA "$dir/ca.crt" -CAkey "$dir/ca.key" -CAcreateserial -days 30 -extfile "$ext" -out "$dir/$name.crt" 2>/dev/null
  rm -f "$dir/$name.csr" "$ext"
}

make_pki() {
  local pki="$1"
  mkdir -p "$pki"
  chmod 700 "$pki"
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 30 -subj "/CN=svc-kube-ca" \
    -keyout "$pki/ca.key" -out "$pki/ca.crt" 2>/dev/null
  cert "$pki" apiserver "/CN=kube-apiserver" \
    "DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local,IP:$API_SVC_IP,IP:$NODE_IP,IP:127.0.0.1"
  cert "$pki" admin "/O=system:masters/CN=kubernetes-admin"
  cert "$pki" controller-manager "/CN=system:kube-controller-manager"
  cert "$pki" scheduler "/CN=system:kube-scheduler"
  cert "$pki" kube-proxy "/CN=system:kube-proxy"
  cert "$pki" kubelet "/O=system:nodes/CN=system:node:$NODE_NAME" "DNS:$NODE_NAME,IP:$NODE_IP"
  cert "$pki" apiserver-kubelet-client "/O=system:masters/CN=kube-apiserver-kubelet-client"
  openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -out "$pki/sa.key" 2>/dev/null
  openssl pkey -in "$pki/sa.key" -pubout -out "$pki/sa.pub" 2>/dev/null
}

# kubeconfig <dir> <name>: a kubeconfig for the client certificate <name>.
kubeconfig() {
  local dir="$1" name="$2"
  cat >"$dir/$name.kubeconfig" <<EOF
apiVersion: v1
kind: Config
clusters:
  - name: svc-kube
    cluster: { server: "https://$NODE_IP:$API_PORT", certificate-authority: "$dir/pki/ca.crt" }
users:
  - name: $name
    user: { client-certificate: "$dir/pki/$name.crt", client-key: "$dir/pki/$name.key" }
contexts:
  - name: svc-kube
    context: { cluster: svc-kube, user: $name }
current-context: svc-kube
EOF
}

# ---------------------------------------------------------------- processes

# start <dir> <name> <command...>: in the background, logging to <dir>/logs/<name>.log.
start() {
  local dir="$1" name="$2"
  shift 2
  setsid "$@" >>"$dir/logs/$name.log" 2>&1 </dev/null &
  echo $! >"$dir/pids/$name"
}

stop() {
  local dir="$1" name="$2" pid
  [[ -f "$dir/pids/$name" ]] || return 0
  pid="$(cat "$dir/pids/$name")"
  if kill -0 "$pid" 2>/dev/null; then
    kill -TERM "$pid" 2>/dev/null || true
    for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.2; done
    kill -KILL "$pid" 2>/dev/null || true
  fi
  rm -f "$dir/pids/$name"
}

# wait_for <seconds> <what> <command...>: until the command succeeds.
wait_for() {
  local seconds="$1" what="$2"
  shift 2
  local deadline=$((SECONDS + seconds))
  until "$@" >/dev/null 2>&1; do
    ((SECONDS < deadline)) || die "$what: not within ${seconds} s"
    sleep 1
  done
}

kctl() { local dir="$1"; shift; "$BIN/kubectl" --kubeconfig "$dir/kubeconfig" "$@"; }

# The kernel settings kubelet and kube-proxy change: saved at up, restored at down.
SYSCTLS=(vm.overcommit_memory kernel.panic kernel.panic_on_oops net.ipv4.conf.all.route_localnet net.ipv4.ip_forward net.bridge.bridge-nf-call-iptables)

do_up() {
  local dir="$1"
  [[ $(id -u) -eq 0 ]] || die "run as root"
  do_build
  mkdir -p "$dir"
  dir="$(cd "$dir" && pwd)"
  [[ -f "$dir/pids/kubelet" ]] && die "$dir already holds a cluster (kube.sh down $dir first)"
  mkdir -p "$dir"/{logs,pids,etcd,containerd,kubelet,cni/net.d,run}
  chmod 700 "$dir"
  for s in "${SYSCTLS[@]}"; do printf '%s=%s\n' "$s" "$(sysctl -n "$s")"; done >"$dir/sysctl.saved"
  sysctl -qw net.ipv4.ip_forward=1 net.bridge.bridge-nf-call-iptables=1

  # The node's address, on an interface of the cluster's own: a bridge with no
  # ports, standing in for a dummy interface (this kernel has no dummy driver).
  ip link show "$NODE_LINK" >/dev/null 2>&1 || ip link add "$NODE_LINK" type bridge
  ip addr replace "$NODE_IP/32" dev "$NODE_LINK"
  ip link set "$NODE_LINK" up

  make_pki "$dir/pki"
  for name in admin controller-manager scheduler kube-proxy kubelet; do kubeconfig "$dir" "$name"; done
  cp "$dir/admin.kubeconfig" "$dir/kubeconfig"

  log "etcd"
  start "$dir" etcd etcd --name svc-kube --data-dir "$dir/etcd" \
    --listen-client-urls "http://127.0.0.1:$ETCD_PORT" --advertise-client-urls "http://127.0.0.1:$ETCD_PORT" \
    --listen-peer-urls http://127.0.0.1:2480 --initial-advertise-peer-urls http://127.0.0.1:2480 \
    --initial-cluster svc-kube=http://127.0.0.1:2480 --quota-backend-bytes 1073741824
  wait_for 30 etcd bash -c "exec 3<>/dev/tcp/127.0.0.1/$ETCD_PORT"

  log "kube-apiserver"
  local pki="$dir/pki"
  start "$dir" kube-apiserver "$BIN/kube-apiserver" \
    --etcd-servers "http://127.0.0.1:$ETCD_PORT" \
    --bind-address "$NODE_IP" --advertise-address "$NODE_IP" --secure-port "$API_PORT" \
    --service-cluster-ip-range "$SVC_CIDR" --service-node-port-range 30000-32767 \
    --tls-cert-file "$pki/apiserver.crt" --tls-private-key-file "$pki/apiserver.key" \
    --client-ca-file "$pki/ca.crt" \
    --kubelet-client-certificate "$pki/apiserver-kubelet-client.crt" --kubelet-client-key "$pki/apiserver-kubelet-client.key" \
    --kubelet-certificate-authority "$pki/ca.crt" --kubelet-preferred-address-types InternalIP \
    --service-account-issuer https://kubernetes.default.svc.cluster.local \
    --service-account-key-file "$pki/sa.pub" --service-account-signing-key-file "$pki/sa.key" \
    --authorization-mode Node,RBAC --allow-privileged=true --profiling=false
  wait_for 90 "kube-apiserver" kctl "$dir" get --raw /readyz

  log "kube-controller-manager, kube-scheduler"
  start "$dir" kube-controller-manager "$BIN/kube-controller-manager" \
    --kubeconfig "$dir/controller-manager.kubeconfig" --leader-elect=false --bind-address 127.0.0.1 \
    --use-service-account-credentials --service-account-private-key-file "$pki/sa.key" --root-ca-file "$pki/ca.crt" \
    --cluster-signing-cert-file "$pki/ca.crt" --cluster-signing-key-file "$pki/ca.key" \
    --service-cluster-ip-range "$SVC_CIDR" --profiling=false
  start "$dir" kube-scheduler "$BIN/kube-scheduler" \
    --kubeconfig "$dir/scheduler.kubeconfig" --leader-elect=false --bind-address 127.0.0.1 --profiling=false

  log "containerd"
  cat >"$dir/containerd.toml" <<EOF
version = 2
root = "$dir/containerd/root"
state = "$dir/run/containerd"
[grpc]
  address = "$dir/run/containerd.sock"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "$PAUSE_IMAGE"
  # Never below containerd's own oom_score_adj: lowering it needs
  # CAP_SYS_RESOURCE, which this machine's root may not have.
  restrict_oom_score_adj = true
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "$dir/cni/net.d"
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        BinaryName = "$(command -v runc)"
        SystemdCgroup = false
EOF
  cat >"$dir/cni/net.d/10-svc-kube.conflist" <<EOF
{
  "cniVersion": "1.0.0",
  "name": "svc-kube",
  "plugins": [
    { "type": "bridge", "bridge": "$BRIDGE", "isGateway": true, "ipMasq": true, "hairpinMode": true,
      "ipam": { "type": "host-local", "ranges": [[{ "subnet": "$POD_CIDR" }]], "routes": [{ "dst": "0.0.0.0/0" }],
                "dataDir": "$dir/cni/ipam" } },
    { "type": "portmap", "capabilities": { "portMappings": true } },
    { "type": "loopback" }
  ]
}
EOF
  start "$dir" containerd containerd --config "$dir/containerd.toml"
  wait_for 30 containerd ctr --address "$dir/run/containerd.sock" version
  import_images "$dir" "$PAUSE_IMAGE" "$COREDNS_IMAGE" "$TRAEFIK_IMAGE"

  log "kubelet"
  cat >"$dir/kubelet.yaml" <<EOF
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: $NODE_IP
authentication:
  anonymous: { enabled: false }
  webhook: { enabled: true }
  x509: { clientCAFile: "$pki/ca.crt" }
authorization: { mode: Webhook }
tlsCertFile: "$pki/kubelet.crt"
tlsPrivateKeyFile: "$pki/kubelet.key"
containerRuntimeEndpoint: "unix://$dir/run/containerd.sock"
cgroupDriver: cgroupfs
cgroupRoot: /svc-kube
failCgroupV1: false
failSwapOn: false
# As it is (0): lowering it needs CAP_SYS_RESOURCE (restrict_oom_score_adj above).
oomScoreAdj: 0
clusterDomain: cluster.local
clusterDNS: [$DNS_IP]
resolvConf: ""
podCIDR: "$POD_CIDR"
maxPods: 60
serializeImagePulls: false
# This machine's disk is shared: evict only when it is nearly full.
evictionHard: { memory.available: 200Mi, nodefs.available: 2%, imagefs.available: 2% }
imageGCHighThresholdPercent: 99
imageGCLowThresholdPercent: 98
EOF
  # The cgroup every pod lives under (cgroupRoot), in each hierarchy; a v1
  # cpuset starts with no CPUs and no memory nodes until given its parent's.
  for controller in /sys/fs/cgroup/*/; do
    [[ -d "$controller" && "$controller" != */unified/ ]] || continue
    mkdir -p "$controller/svc-kube"
  done
  if [[ -f /sys/fs/cgroup/cpuset/cpuset.cpus ]]; then
    cat /sys/fs/cgroup/cpuset/cpuset.cpus >/sys/fs/cgroup/cpuset/svc-kube/cpuset.cpus
    cat /sys/fs/cgroup/cpuset/cpuset.mems >/sys/fs/cgroup/cpuset/svc-kube/cpuset.mems
  fi
  start "$dir" kubelet "$BIN/kubelet" --config "$dir/kubelet.yaml" --kubeconfig "$dir/kubelet.kubeconfig" \
    --root-dir "$dir/kubelet" --hostname-override "$NODE_NAME" --node-ip "$NODE_IP"

  log "kube-proxy"
  cat >"$dir/kube-proxy.yaml" <<EOF
apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
clientConnection: { kubeconfig: "$dir/kube-proxy.kubeconfig" }
hostnameOverride: $NODE_NAME
bindAddress: $NODE_IP
clusterCIDR: "$POD_CIDR"
mode: iptables
oomScoreAdj: 0
nodePortAddresses: ["$NODE_IP/32"]
# Leave the machine's conntrack table as it is.
conntrack: { maxPerCore: 0, min: 0, tcpEstablishedTimeout: 0s, tcpCloseWaitTimeout: 0s }
metricsBindAddress: 127.0.0.1:10249
healthzBindAddress: 127.0.0.1:10256
EOF
  start "$dir" kube-proxy "$BIN/kube-proxy" --config "$dir/kube-proxy.yaml"

  wait_for 120 "node Ready" bash -c "'$BIN/kubectl' --kubeconfig '$dir/kubeconfig' get node $NODE_NAME -o jsonpath='{.status.conditions[?(@.type==\"Ready\")].status}' | grep -qx True"

  log "CoreDNS and Traefik"
  sed -e "s|@DNS_IP@|$DNS_IP|g" -e "s|@COREDNS_IMAGE@|$COREDNS_IMAGE|g" "$HERE/kube/coredns.yaml" | kctl "$dir" apply -f - >/dev/null
  sed -e "s|@TRAEFIK_IMAGE@|$TRAEFIK_IMAGE|g" -e "s|@HTTPS_PORT@|$INGRESS_HTTPS_PORT|g" "$HERE/kube/traefik.yaml" | kctl "$dir" apply -f - >/dev/null
  kctl "$dir" -n kube-system rollout status deployment/coredns --timeout 180s >/dev/null
  kctl "$dir" -n ingress rollout status deployment/traefik --timeout 180s >/dev/null
  log "up: kubectl --kubeconfig $dir/kubeconfig; ingress https://$NODE_IP:$INGRESS_HTTPS_PORT"
  echo "KUBECONFIG=$dir/kubeconfig"
}

# import_images <dir> <image>...: from podman's storage into the cluster's containerd.
import_images() {
  local dir="$1"
  shift
  local archive="$dir/run/images.tar"
  podman save --quiet --format docker-archive -m -o "$archive" "$@"
  ctr --address "$dir/run/containerd.sock" -n k8s.io images import "$archive" >/dev/null
  rm -f "$archive"
}

do_down() {
  local dir="$1"
  [[ -d "$dir" ]] || return 0
  dir="$(cd "$dir" && pwd)"
  # No controller may replace a pod while they go: stop those first, then let
  # the kubelet stop every pod (its network torn down by the CNI plugins).
  stop "$dir" kube-controller-manager
  stop "$dir" kube-scheduler
  if [[ -f "$dir/pids/kubelet" ]] && kctl "$dir" get --raw /readyz >/dev/null 2>&1; then
    kctl "$dir" delete pods --all --all-namespaces --grace-period 10 --wait=false >/dev/null 2>&1 || true
    local deadline=$((SECONDS + 60))
    while ((SECONDS < deadline)) && [[ -n "$(kctl "$dir" get pods -A -o name 2>/dev/null)" ]]; do sleep 1; done
  fi
  stop "$dir" kubelet
  [[ -x "$BIN/kube-proxy" && -f "$dir/kube-proxy.yaml" ]] && "$BIN/kube-proxy" --cleanup --config "$dir/kube-proxy.yaml" >/dev/null 2>&1 || true
  stop "$dir" kube-proxy
  stop "$dir" containerd
  stop "$dir" kube-apiserver
  stop "$dir" etcd
  # What outlives them: containers' shims (reparented away from containerd).
  local pid
  for pid in $(pgrep -f "containerd-shim.*-address $dir/run/containerd.sock" || true); do kill -KILL "$pid" 2>/dev/null || true; done
  sleep 1
  # Mounts under the state directory (pods' volumes, snapshots, sandboxes' namespaces), deepest first.
  awk -v d="$dir/" 'index($5, d) == 1 { print $5 }' /proc/self/mountinfo | sort -r | while read -r m; do umount -l "$m" 2>/dev/null || true; done
  for ns in $(ip netns list 2>/dev/null | awk '/^cni-/ { print $1 }'); do
    ip netns pids "$ns" 2>/dev/null | grep -q . || ip netns delete "$ns" 2>/dev/null || true
  done
  ip link delete "$BRIDGE" 2>/dev/null || true
  ip link delete "$NODE_LINK" 2>/dev/null || true
  # The bridge plugin's masquerade chains, when a pod's teardown did not remove them.
  iptables -t nat -S POSTROUTING 2>/dev/null | awk '/CNI-/ && /svc-kube/ { sub(/^-A/, "-D"); print }' | while read -r rule; do eval "iptables -t nat $rule" 2>/dev/null || true; done
  if [[ -f "$dir/sysctl.saved" ]]; then
    while IFS= read -r setting; do sysctl -qw "$setting" 2>/dev/null || true; done <"$dir/sysctl.saved"
  fi
  # The cgroups the kubelet made for pods.
  for controller in /sys/fs/cgroup/*/; do
    [[ -d "$controller/svc-kube" ]] && find "$controller/svc-kube" -depth -type d -exec rmdir {} + 2>/dev/null || true
  done
  rm -rf "$dir"
  log "down: $dir removed"
}

cmd="${1:-}"
case "$cmd" in
  build) do_build ;;
  up) [[ $# -eq 2 ]] || die "usage: $0 up <dir>"; do_up "$2" ;;
  down) [[ $# -eq 2 ]] || die "usage: $0 down <dir>"; do_down "$2" ;;
  import) [[ $# -ge 3 ]] || die "usage: $0 import <dir> <image>..."; import_images "$(cd "$2" && pwd)" "${@:3}" ;;
  kubectl) [[ $# -ge 2 ]] || die "usage: $0 kubectl <dir> <args>..."; d="$(cd "$2" && pwd)"; shift 2; kctl "$d" "$@" ;;
  *) die "usage: $0 build | up <dir> | import <dir> <image>... | kubectl <dir> <args>... | down <dir>" ;;
esac
