{{/* Names, labels, images and the addresses every template agrees on. */}}

{{- define "odradek.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 40 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 40 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "odradek.clusterAlias" -}}
{{- .Values.clusterAlias | default .Release.Name -}}
{{- end -}}

{{/* Labels of every object; `component` (broker, controller, combined, mirror, ...) when
given in a dict with the root as "root". */}}
{{- define "odradek.labels" -}}
{{- $root := .root | default . -}}
helm.sh/chart: {{ printf "%s-%s" $root.Chart.Name $root.Chart.Version }}
app.kubernetes.io/managed-by: {{ $root.Release.Service }}
app.kubernetes.io/version: {{ $root.Chart.AppVersion | quote }}
{{ include "odradek.selectorLabels" . }}
{{- end -}}

{{- define "odradek.selectorLabels" -}}
{{- $root := .root | default . -}}
app.kubernetes.io/name: odradek
app.kubernetes.io/instance: {{ $root.Release.Name }}
{{- with .component }}
app.kubernetes.io/component: {{ . }}
{{- end }}
{{- end -}}

{{/* Pod labels: the selector labels and the cluster alias the PodMonitor turns into the
`cluster` label of every series (observability/prometheus/kubernetes/podmonitor.yaml). */}}
{{- define "odradek.podLabels" -}}
{{ include "odradek.labels" . }}
odradek.io/cluster: {{ include "odradek.clusterAlias" .root }}
{{- end -}}

{{- define "odradek.image" -}}
{{- $image := index .root.Values.image.repositories .component -}}
{{- with .root.Values.image.registry }}{{ $image = printf "%s/%s" . $image }}{{ end -}}
{{- printf "%s:%s" $image (.root.Values.image.tag | default .root.Chart.AppVersion) -}}
{{- end -}}

{{/* A pod spec's imagePullSecrets, empty without image.pullSecrets: callers indent it
inside a `with`, so that nothing is written when there are none. */}}
{{- define "odradek.imagePullSecrets" -}}
{{- with .Values.image.pullSecrets -}}
imagePullSecrets:
{{- range . }}
  - name: {{ . }}
{{- end }}
{{- end -}}
{{- end -}}

{{/* The pool whose pods are the brokers: `broker`, or `combined` in combined mode. */}}
{{- define "odradek.brokerPool" -}}
{{- if eq .Values.mode "combined" }}combined{{ else }}broker{{ end -}}
{{- end -}}

{{/* The pool whose pods are the controllers. */}}
{{- define "odradek.controllerPool" -}}
{{- if eq .Values.mode "combined" }}combined{{ else }}controller{{ end -}}
{{- end -}}

{{- define "odradek.poolName" -}}
{{ include "odradek.fullname" .root }}-{{ .pool }}
{{- end -}}

{{- define "odradek.headlessName" -}}
{{ include "odradek.fullname" .root }}-{{ .pool }}-headless
{{- end -}}

{{/* The stable DNS name of pod `index` of a pool:
<statefulset>-<i>.<headless service>.<namespace>.svc.<cluster domain>. */}}
{{- define "odradek.podHost" -}}
{{ include "odradek.poolName" . }}-{{ .index }}.{{ include "odradek.headlessName" . }}.{{ .root.Release.Namespace }}.svc.{{ .root.Values.clusterDomain }}
{{- end -}}

{{- define "odradek.controllerReplicas" -}}
{{- if eq .Values.mode "combined" }}{{ .Values.brokers.replicas }}{{ else }}{{ .Values.controllers.replicas }}{{ end -}}
{{- end -}}

{{- define "odradek.controllerIdBase" -}}
{{- if eq .Values.mode "combined" }}{{ .Values.brokers.nodeIdBase }}{{ else }}{{ .Values.controllers.nodeIdBase }}{{ end -}}
{{- end -}}

{{/* controller.quorum.voters: id@host:port of every controller pod, from the replica count
and the pods' stable DNS names. */}}
{{- define "odradek.quorumVoters" -}}
{{- $pool := include "odradek.controllerPool" . -}}
{{- $base := include "odradek.controllerIdBase" . | int -}}
{{- $voters := list -}}
{{- range $i := until (include "odradek.controllerReplicas" . | int) -}}
{{- $host := include "odradek.podHost" (dict "root" $ "pool" $pool "index" $i) -}}
{{- $voters = append $voters (printf "%d@%s:%d" (add $base $i) $host (int $.Values.controllers.port)) -}}
{{- end -}}
{{- join "," $voters -}}
{{- end -}}

{{- define "odradek.bootstrapService" -}}
{{ include "odradek.fullname" . }}-bootstrap
{{- end -}}

{{/* This release's bootstrap.servers, for clients inside the cluster. */}}
{{- define "odradek.bootstrapServers" -}}
{{ include "odradek.bootstrapService" . }}.{{ .Release.Namespace }}.svc.{{ .Values.clusterDomain }}:{{ .Values.brokers.port }}
{{- end -}}

{{- define "odradek.clusterIdSecret" -}}
{{ include "odradek.fullname" . }}-cluster-id
{{- end -}}

{{/* A Kafka config name as the image's environment variable (odradek/config/env.py):
`_` -> `__`, `-` -> `___`, `.` -> `_`, upper case, ODRADEK_ in front. */}}
{{- define "odradek.configVariable" -}}
ODRADEK_{{ . | replace "_" "__" | replace "-" "___" | replace "." "_" | upper }}
{{- end -}}

{{/* The hardened security contexts of every pod and container. */}}
{{- define "odradek.podSecurityContext" -}}
runAsNonRoot: true
runAsUser: {{ . }}
runAsGroup: {{ . }}
fsGroup: {{ . }}
fsGroupChangePolicy: OnRootMismatch
seccompProfile:
  type: RuntimeDefault
{{- end -}}

{{- define "odradek.containerSecurityContext" -}}
allowPrivilegeEscalation: false
readOnlyRootFilesystem: true
runAsNonRoot: true
capabilities:
  drop: [ALL]
{{- end -}}

{{/* Does the broker pool run the node-info init container (rack from the node's zone
label, or the node's address for NodePort without advertisedHosts)? */}}
{{- define "odradek.nodeInfo" -}}
{{- $external := .Values.brokers.external -}}
{{- if or .Values.brokers.rack.enabled (and $external.enabled (eq $external.type "NodePort") (not $external.advertisedHosts)) }}true{{ end -}}
{{- end -}}

{{/* The security protocol of the client listeners (INTERNAL, EXTERNAL) from tls.enabled
and sasl.scram.enabled. */}}
{{- define "odradek.clientProtocol" -}}
{{- $tls := .Values.tls.enabled -}}
{{- $sasl := .Values.sasl.scram.enabled -}}
{{- if and $tls $sasl }}SASL_SSL{{ else if $tls }}SSL{{ else if $sasl }}SASL_PLAINTEXT{{ else }}PLAINTEXT{{ end -}}
{{- end -}}

{{/* "true" when the client listeners are secured: the brokers then replicate over a
REPLICATION listener of their own. */}}
{{- define "odradek.secured" -}}
{{- if ne (include "odradek.clientProtocol" .) "PLAINTEXT" }}true{{ end -}}
{{- end -}}

{{/* The Secret holding ca.crt, tls.crt and tls.key of a pool's pods. */}}
{{- define "odradek.tlsSecret" -}}
{{- if .root.Values.tls.certManager.enabled -}}
{{ include "odradek.poolName" . }}-tls
{{- else -}}
{{ .root.Values.tls.existingSecret }}
{{- end -}}
{{- end -}}

{{/* Values that do not go together, refused with one line each. */}}
{{- define "odradek.checkSecurity" -}}
{{- $tls := .Values.tls -}}
{{- if $tls.enabled -}}
{{- if and $tls.certManager.enabled $tls.existingSecret -}}
{{- fail "tls: set tls.existingSecret or tls.certManager.enabled, not both" -}}
{{- end -}}
{{- if not (or $tls.certManager.enabled $tls.existingSecret) -}}
{{- fail "tls.enabled needs tls.existingSecret (a Secret with ca.crt, tls.crt and tls.key) or tls.certManager.enabled" -}}
{{- end -}}
{{- if and $tls.certManager.enabled (not $tls.certManager.issuerRef.name) -}}
{{- fail "tls.certManager.enabled needs tls.certManager.issuerRef.name" -}}
{{- end -}}
{{- end -}}
{{- if and .Values.sasl.scram.enabled (not .Values.sasl.users.existingSecret) -}}
{{- fail "sasl.scram.enabled needs sasl.users.existingSecret (a Secret: user name -> password)" -}}
{{- end -}}
{{- if and .Values.authorization.enabled (not (include "odradek.secured" .)) -}}
{{- fail "authorization.enabled needs tls.enabled or sasl.scram.enabled: on PLAINTEXT every client is User:ANONYMOUS" -}}
{{- end -}}
{{- if and .Values.authorization.enabled (not .Values.sasl.scram.enabled) (ne .Values.tls.clientAuth "required") -}}
{{- fail "authorization.enabled with TLS alone needs tls.clientAuth=required: a client without a certificate is User:ANONYMOUS" -}}
{{- end -}}
{{- if and (or .Values.spark.audit.enabled .Values.spark.compaction.enabled) $tls.enabled (eq $tls.clientAuth "required") (not .Values.sasl.scram.enabled) -}}
{{- fail "spark jobs with tls.clientAuth=required need sasl.scram.enabled: they log in as spark.user and hold no client certificate" -}}
{{- end -}}
{{- end -}}

{{/* "true" when the `helm test` Pod is rendered: tests.enabled, unless TLS alone requires
client certificates (the Pod has none). */}}
{{- define "odradek.testPod" -}}
{{- $tls := .Values.tls -}}
{{- if and .Values.tests.enabled (or .Values.sasl.scram.enabled (not $tls.enabled) (ne $tls.clientAuth "required")) }}true{{ end -}}
{{- end -}}

{{/* The brokers' principal on the REPLICATION listener: with TLS, the CN of their
certificate (tls.replicationPrincipal, default the broker pool's name, the CN the
cert-manager Certificates carry); without, ANONYMOUS (PLAINTEXT). */}}
{{- define "odradek.replicationPrincipal" -}}
{{- if .Values.tls.enabled -}}
{{ .Values.tls.replicationPrincipal | default (include "odradek.poolName" (dict "root" . "pool" (include "odradek.brokerPool" .))) }}
{{- else -}}
ANONYMOUS
{{- end -}}
{{- end -}}
