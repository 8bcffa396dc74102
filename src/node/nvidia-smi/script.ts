/**
 * The fake `nvidia-smi`, a POSIX shell script mounted into containers. It reads the device views under
 * /var/run/fakegpu/devices (one directory per device the container was given) and prints them in the
 * formats of the real tool. Only `sh`, `ls`, `sort`, `sed`, `awk`, `cut`, `head`, `wc`, `tr` and
 * `date` are used.
 */
export const DEVICES_DIR = '/var/run/fakegpu/devices';

export const NVIDIA_SMI = `#!/bin/sh
# nvidia-smi of fakegpu: shows the GPUs and MIG devices this container was given.
D=\${FAKEGPU_DEVICES_DIR:-${DEVICES_DIR}}
devs() { ls -1 "$D" 2>/dev/null | sort; }
gpus() { last=""; for d in $(devs); do b=\${d%%_*}; [ "$b" = "$last" ] || { echo "$d"; last=$b; }; done; }
# A lost GPU keeps its index, so the GPUs after it are numbered as before; it is just not shown.
lost() { [ -s "$D/$1/lost" ]; }
first=$(devs | head -n 1)
if [ -z "$first" ]; then
  echo "No devices were found"
  exit 6
fi
drv=$(cut -f1 "$D/$first/header"); cuda=$(cut -f2 "$D/$first/header")

list() {
  i=-1; last=""; m=0; gone=0
  for d in $(devs); do
    b=\${d%%_*}
    if [ "$b" != "$last" ]; then
      i=$((i+1)); m=0; last=$b; gone=0
      if lost "$d"; then gone=1; else sed -n "1s/@I@/$i/p" "$D/$d/L"; fi
    fi
    if [ $gone -eq 0 ] && [ -f "$D/$d/MIG" ]; then sed -n "2s/@M@/$m/p" "$D/$d/L"; m=$((m+1)); fi
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
  m=0; last=""; gone=0
  for d in $(devs); do
    b=\${d%%_*}
    if [ "$b" != "$last" ]; then
      m=0; last=$b; gone=0
      if lost "$d"; then gone=1; else sed "s/@M@/$m/" "$D/$d/q"; echo; fi
    elif [ $gone -eq 0 ] && [ -f "$D/$d/MIG" ]; then m=$((m+1)); sed -n '/^    MIG Devices/,$p' "$D/$d/q" | sed "s/@M@/$m/"; echo; fi
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
  for d in $(gpus); do lost "$d" || sed "s/@I@/$(printf '%3d' $i)/" "$D/$d/table"; i=$((i+1)); done
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
  i=0; header=$((1 - noheader))
  for d in $(gpus); do
    if lost "$d"; then i=$((i+1)); continue; fi
    awk -F '\\t' -v want="$fields" -v idx="$i" -v nounits="$nounits" -v header=$header '
      { v[$1] = $2; u[$1] = $3 }
      END {
        n = split(want, f, ",")
        for (k = 1; k <= n; k++) { gsub(/^ +| +$/, "", f[k]); if (f[k] != "index" && !(f[k] in v)) { printf "Field \\"%s\\" is not a valid field to query.\\n", f[k]; exit 2 } }
        if (header) { line = ""; for (k = 1; k <= n; k++) { h = f[k]; if (!nounits && u[f[k]] != "") h = h " [" u[f[k]] "]"; line = line (k > 1 ? ", " : "") h }; print line }
        line = ""
        for (k = 1; k <= n; k++) { x = (f[k] == "index") ? idx : v[f[k]]; if (!nounits && u[f[k]] != "") x = x " " u[f[k]]; line = line (k > 1 ? ", " : "") x }
        print line
      }' "$D/$d/fields" || exit $?
    i=$((i+1)); header=0
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
# NVML fails on a lost GPU while nvidia-smi opens the devices, before it prints anything else. With
# other GPUs left it goes on and exits 0; with none, the error lines are all, and the exit code is 15
# (NVML_ERROR_GPU_IS_LOST).
i=0; alive=0
for d in $(gpus); do
  if lost "$d"; then sed "s/@I@/$i/" "$D/$d/lost"; else alive=$((alive+1)); fi
  i=$((i+1))
done
[ $alive -gt 0 ] || exit 15
case $mode in
  list) list;;
  query) query;;
  query_gpu) query_gpu "$fields" "$format";;
  *) table;;
esac
`;
