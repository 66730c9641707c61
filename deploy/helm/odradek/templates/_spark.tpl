{{/* The Spark jobs: their application files and arguments, shared by the CronJobs
(spark-submit) and the ScheduledSparkApplications (Spark operator). */}}

{{- define "odradek.spark.jobs" -}}
{{- $s := .Values.spark -}}
{{- $jobs := dict -}}
{{- if $s.audit.enabled -}}
{{- $a := $s.audit -}}
{{- $args := list "--source-bootstrap" (required "spark.audit.sourceBootstrap is required" $a.sourceBootstrap) "--target-bootstrap" ($a.targetBootstrap | default (include "odradek.bootstrapServers" .)) "--source-alias" (required "spark.audit.sourceAlias is required" $a.sourceAlias) "--topics" $a.topics "--window" $a.window "--bucket" $a.bucket "--grace" $a.grace "--output" $a.output -}}
{{- if and (include "odradek.secured" .) (not $a.targetBootstrap) }}{{ $args = concat $args (list "--target-command-config" (include "odradek.spark.clientProperties" .)) }}{{ end -}}
{{- $_ := set $jobs "audit" (dict "file" "mirror_audit.py" "schedule" $a.schedule "args" $args) -}}
{{- end -}}
{{- if $s.compaction.enabled -}}
{{- $c := $s.compaction -}}
{{- $args := list "--bootstrap" ($c.bootstrap | default (include "odradek.bootstrapServers" .)) "--topics" (required "spark.compaction.topics is required" $c.topics) "--output" $c.output -}}
{{- if and (include "odradek.secured" .) (not $c.bootstrap) }}{{ $args = concat $args (list "--command-config" (include "odradek.spark.clientProperties" .)) }}{{ end -}}
{{- if $c.verify }}{{ $args = append $args "--verify" }}{{ end -}}
{{- with $c.mirrorBootstrap }}{{ $args = concat $args (list "--mirror-bootstrap" .) }}{{ end -}}
{{- with $c.sourceAlias }}{{ $args = concat $args (list "--source-alias" .) }}{{ end -}}
{{- $_ := set $jobs "compaction" (dict "file" "compact.py" "schedule" $c.schedule "args" $args) -}}
{{- end -}}
{{- if and $jobs (not (include "odradek.certificateFreeClients" .)) -}}
{{- fail "the Spark jobs hold no client certificate: with tls.clientAuth=required they need sasl.scram.enabled" -}}
{{- end -}}
{{- toYaml $jobs -}}
{{- end -}}

{{/* Where the driver's init container writes the client properties of this release's
brokers (TLS, SCRAM as spark.user), which the jobs take as their command config for the
brokers of this release (the audit's target, the snapshot's cluster) when those bootstrap
values are left empty. The executors get the login from the driver, and mount the CA. */}}
{{- define "odradek.spark.clientProperties" -}}
/tmp/odradek-client.properties
{{- end -}}

{{/* The driver's init container writing its client properties (none when the client
listeners are PLAINTEXT). */}}
{{- define "odradek.spark.initContainers" -}}
{{- $root := .root -}}
{{- if and (include "odradek.secured" $root) (eq .role "driver") -}}
{{- $client := dict "root" $root "user" $root.Values.spark.user }}
- name: client-properties
  image: {{ include "odradek.image" (dict "root" $root "component" "spark") }}
  imagePullPolicy: {{ $root.Values.image.pullPolicy }}
  env:
    {{- with include "odradek.client.env" $client | trim }}{{ . | nindent 4 }}{{ end }}
  command:
    - sh
    - -c
    - |
      set -eu
      umask 077
      config={{ include "odradek.spark.clientProperties" $root }}
      {{- include "odradek.client.writeProperties" $client | nindent 6 }}
  securityContext:
    {{- include "odradek.containerSecurityContext" $root | nindent 4 }}
  volumeMounts:
    - {name: tmp, mountPath: /tmp}
    {{- with include "odradek.client.volumeMounts" $client | trim }}{{ . | nindent 4 }}{{ end }}
{{- end -}}
{{- end -}}

{{- define "odradek.spark.serviceAccount" -}}
{{ include "odradek.fullname" .root }}-spark-{{ .role }}
{{- end -}}

{{/* The pod security of the driver and executor pods (Spark's image runs as uid 185). */}}
{{- define "odradek.spark.podSecurityContext" -}}
runAsNonRoot: true
runAsUser: 185
runAsGroup: 185
fsGroup: 185
seccompProfile:
  type: RuntimeDefault
{{- end -}}
