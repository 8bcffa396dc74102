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
{{ toYaml (omit .Values.resources "computeDomains") }}
{{- end -}}
