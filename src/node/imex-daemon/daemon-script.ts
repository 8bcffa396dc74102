/**
 * The in-pod half of fakegpu's IMEX daemon stand-in, shipped as `compute-domain-daemon` in a busybox
 * image. It keeps NVIDIA's contract (compute-domains.md §4): `run` refuses to start without the daemon
 * claim's CDI environment, idles without a clique, otherwise writes `/imexd/imexd.cfg` from the
 * plugin's template (the pod's IP filled in) and the DNS-name `nodes.cfg`, and serves; `check` passes
 * with no clique, else only once the daemon reports READY, as `nvidia-imex-ctl -q` would. The clique
 * entry itself is written from outside by `DaemonStandIn` (daemon.ts).
 */
export const DAEMON_SCRIPT = `#!/bin/sh
ready=/run/fakegpu-imex/status
case "\${1:-}" in
run)
  if [ -z "\${COMPUTE_DOMAIN_UUID:-}" ]; then
    echo "COMPUTE_DOMAIN_UUID is not set: CDI container edits did not apply (is the daemon claim prepared by compute-domain.nvidia.com?)" >&2
    exit 1
  fi
  mkdir -p /run/fakegpu-imex
  trap 'rm -f "$ready"; exit 0' TERM INT
  if [ -z "\${CLIQUE_ID:-}" ]; then
    echo "no NVLink clique on this node: no IMEX daemon to run"
  else
    sed "s/{{ .IMEX_CMD_BIND_INTERFACE_IP }}/\${POD_IP:-}/" /imexd/imexd.cfg.tmpl > /imexd/imexd.cfg
    : > /imexd/nodes.cfg
    i=0
    while [ "$i" -lt "\${MAX_NODES_PER_IMEX_DOMAIN:-18}" ]; do
      printf 'compute-domain-daemon-%04d\\n' "$i" >> /imexd/nodes.cfg
      i=$((i + 1))
    done
    echo READY > "$ready"
    echo "IMEX daemon (fakegpu stand-in) READY: domain $COMPUTE_DOMAIN_NAMESPACE/$COMPUTE_DOMAIN_NAME ($COMPUTE_DOMAIN_UUID), clique $CLIQUE_ID"
  fi
  while :; do sleep 3600 & wait $!; done
  ;;
check)
  [ -z "\${CLIQUE_ID:-}" ] && exit 0
  [ "$(cat "$ready" 2>/dev/null)" = READY ] && exit 0
  echo "IMEX daemon not READY" >&2
  exit 1
  ;;
*)
  echo "usage: compute-domain-daemon run|check" >&2
  exit 2
  ;;
esac
`;
