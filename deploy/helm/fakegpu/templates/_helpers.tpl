{{- define "fakegpu.labels" -}}
app.kubernetes.io/name: fakegpu
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{/* The chart's own image. */}}
{{- define "fakegpu.image" -}}
{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}
{{- end -}}

{{/* The IMEX daemon stand-in's image: computeDomains.daemonImage, else the chart's own. */}}
{{- define "fakegpu.daemonImage" -}}
{{ .Values.computeDomains.daemonImage.repository | default .Values.image.repository }}:{{ .Values.computeDomains.daemonImage.tag | default .Values.image.tag | default .Chart.AppVersion }}
{{- end -}}

{{/* The plugin container's requests and limits: `resources` without the driver halves' switches. */}}
{{- define "fakegpu.pluginResources" -}}
{{ toYaml (omit .Values.resources "computeDomains" "gpus") }}
{{- end -}}

{{/*
The fleet's environment that decides which nodes it serves and which drivers it writes their slices
under: its Deployment and the post-delete cleanup share it, so the cleanup removes what the fleet
published and nothing else. A list of env entries, to be indented by the caller.
*/}}
{{- define "fakegpu.fleetScopeEnv" -}}
- name: FAKEGPU_PROFILE_LABEL
  value: {{ .Values.profileLabel | quote }}
{{- with .Values.fleet.nodeSelector }}
- name: FAKEGPU_NODE_SELECTOR
  value: {{ . | quote }}
{{- end }}
- name: DRIVER_NAME
  value: {{ .Values.driverName | quote }}
{{- if .Values.fleet.nics }}
- name: FAKEGPU_NICS
  value: "true"
- name: NIC_DRIVER_NAME
  value: {{ .Values.nics.driverName | quote }}
{{- end }}
{{- if .Values.resources.computeDomains.enabled }}
- name: POD_NAMESPACE
  valueFrom:
    fieldRef:
      fieldPath: metadata.namespace
{{- else }}
- name: FAKEGPU_NO_COMPUTE_DOMAINS
  value: "true"
{{- end }}
{{- end -}}

{{/*
NVIDIA's chart takes featureGates as a map (`--set featureGates.ConsumableShares=true`); fakegpu's
string (`A=true,B=false`) is kept. Both reach the plugin and the fleet as FEATURE_GATES, NVIDIA's form.
*/}}
{{- define "fakegpu.featureGates" -}}
{{- if kindIs "map" .Values.featureGates -}}
{{- range $k, $v := .Values.featureGates }}{{ $k }}={{ $v }},{{ end -}}
{{- else -}}
{{- .Values.featureGates -}}
{{- end -}}
{{- end -}}

{{/*
NVIDIA's rules that `dynamicMig` (its gate DynamicMIG) can break, refused when the chart renders: a
`helm upgrade --set dynamicMig=true` over the demo's MPSSupport=true then fails at once, naming the gate,
rather than after --wait on a plugin that exits. The plugin checks every rule again when it starts.
*/}}
{{- define "fakegpu.checkDynamicMig" -}}
{{- if .Values.dynamicMig -}}
{{- $gates := include "fakegpu.featureGates" . -}}
{{- range $g := list "PassthroughSupport" "NVMLDeviceHealthCheck" "MPSSupport" -}}
{{- if regexMatch (printf "(^|,)\\s*%s\\s*=\\s*(1|t|T|true|TRUE|True)\\s*(,|$)" $g) $gates -}}
{{- fail (printf "dynamicMig: feature gate DynamicMIG is currently mutually exclusive with %s (featureGates sets %s=true)" $g $g) -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/*
NVIDIA's chart's values (values.yaml, "NVIDIA's chart's own values"): each takes NVIDIA's meaning or
fails here in one line naming it and what fakegpu takes, never dropped in silence. Durations are the
controller's fixed Lease timings, which are NVIDIA's defaults.
*/}}
{{- define "fakegpu.checkNvidiaValues" -}}
{{- if not .Values.resources.gpus.enabled -}}
{{- fail "resources.gpus.enabled=false: fakegpu's plugin always serves GPUs; allowed: true" -}}
{{- end -}}
{{- if not .Values.gpuResourcesEnabledOverride -}}
{{- fail "gpuResourcesEnabledOverride=false: NVIDIA's chart and fakegpu's publish GPUs only with it true; allowed: true" -}}
{{- end -}}
{{- if ne (toString .Values.nvidiaDriverRoot) "/" -}}
{{- fail (printf "nvidiaDriverRoot=%s: fakegpu's driver files come from its plugin, not the host; allowed: /" (toString .Values.nvidiaDriverRoot)) -}}
{{- end -}}
{{- with .Values.altProcDevices -}}
{{- fail (printf "altProcDevices=%s: fakegpu reads no /proc/devices; allowed: empty" .) -}}
{{- end -}}
{{- if not (regexMatch "^([0-9]|10)$" (toString .Values.logVerbosity)) -}}
{{- fail (printf "logVerbosity=%s: NVIDIA's klog verbosity; allowed: an integer 0-10" (toString .Values.logVerbosity)) -}}
{{- end -}}
{{- $le := .Values.controller.leaderElection -}}
{{- range $k, $want := dict "leaseDuration" "15s" "renewDeadline" "10s" "retryPeriod" "2s" -}}
{{- if ne (toString (index $le $k)) $want -}}
{{- fail (printf "controller.leaderElection.%s=%s: fakegpu takes NVIDIA's default timings only; allowed: %s" $k (toString (index $le $k)) $want) -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/* NVIDIA's `logVerbosity`, as the plugin and the controller read it (LOG_VERBOSITY, as NVIDIA's). */}}
{{- define "fakegpu.logVerbosityEnv" -}}
- name: LOG_VERBOSITY
  value: {{ toString .Values.logVerbosity | quote }}
{{- end -}}
