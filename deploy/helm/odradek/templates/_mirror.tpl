{{/* mm2.properties from (dict "clusters" alias->bootstrap.servers "mirror" .Values.mirror),
in MirrorMaker 2's names: clusters, <alias>.bootstrap.servers, <src>-><dst>.enabled, then each
other key of a flow as <src>-><dst>.<key> (topics, topics.exclude, groups, groups.exclude,
...), then mirror.properties as they are, and metrics.port (/metrics and /health). */}}
{{- define "odradek.mirrorProperties" -}}
clusters={{ keys .clusters | sortAlpha | join "," }}
{{- range $alias := keys .clusters | sortAlpha }}
{{ $alias }}.bootstrap.servers={{ index $.clusters $alias }}
{{- end }}
{{- range .mirror.flows }}
{{- $flow := printf "%s->%s" .source .target }}
{{ $flow }}.enabled=true
{{- range $key, $value := omit . "source" "target" }}
{{ $flow }}.{{ $key }}={{ $value }}
{{- end }}
{{- end }}
{{- range $key, $value := .mirror.properties }}
{{ $key }}={{ $value }}
{{- end }}
metrics.port={{ .metricsPort }}
{{- end -}}
