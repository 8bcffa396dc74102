/**
 * The fake `nvidia-smi`, a POSIX shell script mounted into containers. It reads the device views under
 * /var/run/fakegpu/devices (one directory per device the container was given) and prints them in the
 * formats of the real tool. Only `sh`, `ls`, `sort`, `sed` and `awk` are used.
 */
export const DEVICES_DIR = '/var/run/fakegpu/devices';

export const NVIDIA_SMI = `#!/bin/sh
# nvidia-smi of fakegpu: shows the GPUs and MIG devices this container was given.
D=\${FAKEGPU_DEVICES_DIR:-${DEVICES_DIR}}
devs() { ls -1 "$D" 2>/dev/null | sort; }
gpus() { last=""; for d in $(devs); do b=\${d%%_*}; [ "$b" = "$last" ] || { echo "$d"; last=$b; }; done; }
first=$(devs | head -n 1)
if [ -z "$first" ]; then
  echo "No devices were found"
  exit 6
fi
drv=$(cut -f1 "$D/$first/header"); cuda=$(cut -f2 "$D/$first/header")

list() {
  i=-1; last=""; m=0
  for d in $(devs); do
    b=\${d%%_*}
    if [ "$b" != "$last" ]; then i=$((i+1)); m=0; last=$b; sed -n "1s/@I@/$i/p" "$D/$d/L"; fi
    if [ -f "$D/$d/MIG" ]; then sed -n "2s/@M@/$m/p" "$D/$d/L"; m=$((m+1)); fi
  done
}

query() {
  echo
  echo "==============NVSMI LOG=============="
  echo
  echo "Timestamp                                 : $(date)"
  echo "Driver Version                            : $drv"
  echo "CUDA Version                              : $cuda"
  echo
  echo "Attached GPUs                             : $(gpus | wc -l | tr -d ' ')"
  m=0; last=""
  for d in $(devs); do
    b=\${d%%_*}
    if [ "$b" != "$last" ]; then m=0; last=$b; sed "s/@M@/$m/" "$D/$d/q"; echo
    elif [ -f "$D/$d/MIG" ]; then m=$((m+1)); sed -n '/^    MIG Devices/,$p' "$D/$d/q" | sed "s/@M@/$m/"; echo; fi
  done
}

table() {
  date
  echo "+-----------------------------------------------------------------------------------------+"
  printf "| NVIDIA-SMI %-22s Driver Version: %-14s CUDA Version: %-9s|\\n" "$drv" "$drv" "$cuda"
  echo "+-----------------------------------------+------------------------+----------------------+"
  echo "| GPU  Name                 Persistence-M | Bus-Id          Disp.A | Volatile Uncorr. ECC |"
  echo "| Fan  Temp   Perf          Pwr:Usage/Cap |           Memory-Usage | GPU-Util  Compute M. |"
  echo "|                                         |                        |               MIG M. |"
  echo "|=========================================+========================+======================|"
  i=0
  for d in $(gpus); do sed "s/@I@/$(printf '%3d' $i)/" "$D/$d/table"; i=$((i+1)); done
  echo
  echo "+-----------------------------------------------------------------------------------------+"
  echo "| Processes:                                                                              |"
  echo "|  GPU   GI   CI              PID   Type   Process name                        GPU Memory |"
  echo "|        ID   ID                                                               Usage      |"
  echo "|=========================================================================================|"
  echo "|  No running processes found                                                             |"
  echo "+-----------------------------------------------------------------------------------------+"
}

query_gpu() {
  fields=$1; format=$2
  noheader=0; nounits=0
  case ",$format," in *,noheader,*) noheader=1;; esac
  case ",$format," in *,nounits,*) nounits=1;; esac
  case ",$format," in *,csv,*) ;; *) echo "Invalid format. See nvidia-smi --help-query-gpu."; exit 2;; esac
  i=0
  for d in $(gpus); do
    awk -F '\\t' -v want="$fields" -v idx="$i" -v nounits="$nounits" -v header=$([ $i -eq 0 ] && [ $noheader -eq 0 ] && echo 1 || echo 0) '
      { v[$1] = $2; u[$1] = $3 }
      END {
        n = split(want, f, ",")
        for (k = 1; k <= n; k++) { gsub(/^ +| +$/, "", f[k]); if (f[k] != "index" && !(f[k] in v)) { printf "Field \\"%s\\" is not a valid field to query.\\n", f[k]; exit 2 } }
        if (header) { line = ""; for (k = 1; k <= n; k++) { h = f[k]; if (!nounits && u[f[k]] != "") h = h " [" u[f[k]] "]"; line = line (k > 1 ? ", " : "") h }; print line }
        line = ""
        for (k = 1; k <= n; k++) { x = (f[k] == "index") ? idx : v[f[k]]; if (!nounits && u[f[k]] != "") x = x " " u[f[k]]; line = line (k > 1 ? ", " : "") x }
        print line
      }' "$D/$d/fields" || exit $?
    i=$((i+1))
  done
}

fields=""; format=""; mode=table
for a in "$@"; do
  case "$a" in
    -L|--list-gpus) mode=list;;
    -q|--query) mode=query;;
    --query-gpu=*) mode=query_gpu; fields=\${a#--query-gpu=};;
    --format=*) format=\${a#--format=};;
    -h|--help) echo "NVIDIA System Management Interface -- fakegpu ($drv)"; echo "Supported: (no option), -L, -q, --query-gpu=<fields> --format=csv[,noheader][,nounits]"; exit 0;;
    *) echo "Invalid combination of input arguments. Please run 'nvidia-smi -h' for help."; exit 2;;
  esac
done
case $mode in
  list) list;;
  query) query;;
  query_gpu) query_gpu "$fields" "$format";;
  *) table;;
esac
`;
